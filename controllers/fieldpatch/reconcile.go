/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/conditions"
	"github.com/fieldops/fieldops/internal/conflicts"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/ownershipcore"
)

// contestKey names the contest over one target: a recreated target (a new
// UID) starts with none, whatever happened to the object it replaces.
func contestKey(obj v1alpha1.Patcher, targetUID string) string {
	return string(obj.GetUID()) + "/" + targetUID
}

// DefaultContestTimeout is spec.contestTimeout's default.
const DefaultContestTimeout = 5 * time.Minute

// contestTimeout is spec.contestTimeout, or its default when unset or not
// positive.
func contestTimeout(spec *v1alpha1.FieldPatchSpec) time.Duration {
	if spec.ContestTimeout != nil && spec.ContestTimeout.Duration > 0 {
		return spec.ContestTimeout.Duration
	}
	return DefaultContestTimeout
}

// restoredNote says how many fields got their previous values back.
func restoredNote(out ownershipcore.Outcome) string {
	if n := patchintent.CountLeaves(out.Restored); n > 0 {
		return fmt.Sprintf(", %d restored to their previous values", n)
	}
	return ""
}

func policyOrDefault(p v1alpha1.DeletionPolicy) v1alpha1.DeletionPolicy {
	if p == "" {
		return v1alpha1.DeletionPolicyHandBack
	}
	return p
}

// firstN returns at most n items, with a count of the rest.
func firstN(items []string, n int) []string {
	if len(items) <= n {
		return items
	}
	return append(append([]string{}, items[:n]...), fmt.Sprintf("and %d more", len(items)-n))
}

// pluginCondition sets PluginFailure after the ignorable-paths plugins
// answered: True with their failure; gone when they answered and no
// conflict plugin is configured, or when the patch names no plugin at all.
// With a conflict plugin whose last answer is not known yet, it is left
// to strategy, which sets it when that plugin is asked.
func pluginCondition(u *unit, ignoreFailure string) {
	spec, conds, gen := u.spec, &u.st.Conditions, u.gen()
	conflictPlugin := spec.ConflictPolicy == v1alpha1.ConflictPolicyPlugin
	switch {
	case ignoreFailure != "":
		conditions.SetPluginFailure(conds, gen, ignoreFailure)
	case !conflictPlugin:
		conditions.SetPluginFailure(conds, gen, "")
	}
}

// yieldsTo says which managers' fields the patch leaves to them once they
// take them: those of yieldTo, and under conflictPolicy Yield every
// manager but those of forceOver.
func yieldsTo(spec *v1alpha1.FieldPatchSpec) func(string, metav1.ManagedFieldsOperationType) bool {
	return conflicts.Yields(spec.ConflictRules, spec.ConflictPolicy == v1alpha1.ConflictPolicyYield)
}

// reportFields writes the fields manager owns, as owners (the target's
// managed fields after the apply; nil without a target) say, into status.
func reportFields(st *v1alpha1.FieldPatchStatus, owners ownershipcore.ManagedFields, manager string) {
	st.ManagedFields, st.FieldCount = nil, 0
	if ours := owners.Applied(manager); ours != nil {
		st.ManagedFields = patchintent.Leaves(ours.Fields)
		st.FieldCount = len(st.ManagedFields)
	}
}

// askedStrategy calls asked after each Resolve of its ConflictStrategy.
type askedStrategy struct {
	ownershipcore.ConflictStrategy
	asked func()
}

// Resolve implements ownershipcore.ConflictStrategy.
func (s askedStrategy) Resolve(ctx context.Context, obj *unstructured.Unstructured, manager string, cs []ownershipcore.Conflict) ([]ownershipcore.Resolution, error) {
	defer s.asked()
	return s.ConflictStrategy.Resolve(ctx, obj, manager, cs)
}

func describeConflicts(cs []ownershipcore.Conflict) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s owned by %q (%s)", ownershipcore.FormatPath(c.Path), c.Manager, c.Operation)
	}
	return fmt.Sprintf("%d conflict(s): %s", len(cs), strings.Join(parts, ", "))
}

func objectName(o client.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
