/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldplan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/internal/workloadspec"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
	"github.com/fieldops/fieldops/ownershipcore/redact"
)

// fieldConflict is a conflict of the apply at one path and what the plan
// does with it: take, yield or fail.
type fieldConflict struct {
	plan string
	c    ownershipcore.Conflict
}

// conflictsByPath are the apply's conflicts by formatted path.
func conflictsByPath(res ownershipcore.Result) map[string]fieldConflict {
	at := map[string]fieldConflict{}
	for plan, cs := range map[string][]ownershipcore.Conflict{"take": res.Forced, "yield": res.Yielded, "fail": res.Failed} {
		for _, c := range cs {
			at[ownershipcore.FormatPath(c.Path)] = fieldConflict{plan, c}
		}
	}
	return at
}

// givenBackPaths are the fields that left the patch, by formatted path,
// with the plan's words for them: handed back to an owner, or released.
func givenBackPaths(dropped ownershipcore.LetGo) map[string]string {
	givenBack := map[string]string{}
	for _, e := range dropped.Previous {
		for _, p := range patchintent.Leaves(e.Fields) {
			givenBack[p] = "give back to " + DescribeEntry(e.ManagerKey)
		}
	}
	for _, p := range patchintent.Leaves(dropped.Release) {
		givenBack[p] = "give back (leave without an owner)"
	}
	return givenBack
}

// fieldPaths are the leaves the patch sets or owns after the apply, those
// it conflicts on and those it gives back, sorted.
func (in fieldRows) fieldPaths(conflictsAt map[string]fieldConflict, givenBack map[string]string) []string {
	paths := patchintent.Leaves(in.intent.Union(in.oursAfter))
	for p := range conflictsAt {
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	for p := range givenBack {
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return paths
}

// hasPath reports whether the formatted path p is in s (nil is empty).
func hasPath(s *fieldset.Set, p string) bool {
	return s != nil && slices.Contains(ownershipcore.FormatSet(s), p)
}

// othersOwning are the entries of mf other than the patch's that own p.
func (in fieldRows) othersOwning(mf ownershipcore.ManagedFields, p string) []string {
	var out []string
	for _, e := range mf {
		if e.Manager != in.manager && hasPath(e.Fields, p) {
			out = append(out, DescribeEntry(e.ManagerKey))
		}
	}
	return out
}

// fieldPlan is what the apply does with p (owned now by owners) and the
// decision behind a conflict on it: the first that holds of give back,
// release on orphan, the conflict's plan, keep, share, take and add.
func (in fieldRows) fieldPlan(p string, owners []string, c fieldConflict, givenBack string, rules ownershipcore.ManagerRules) (plan, decision string) {
	switch {
	case givenBack != "":
		return givenBack, ""
	case in.policy == v1alpha1.DeletionPolicyOrphan && in.oursBefore != nil && hasPath(in.oursBefore.Fields, p) && !hasPath(in.intent, p):
		return "give back (leave without an owner)", ""
	case c.plan != "":
		return c.plan, conflictDecision(c.c, in.conflictPolicy, rules)
	case in.oursBefore != nil && hasPath(in.oursBefore.Fields, p):
		return "keep", ""
	case len(owners) > 0 && len(in.othersOwning(in.after, p)) > 0:
		return "share", ""
	case len(owners) > 0:
		return "take", ""
	}
	return "add", ""
}

// conflictDecision names what decided c: the manager rule that matches
// its manager, or else the conflict policy.
func conflictDecision(c ownershipcore.Conflict, conflictPolicy string, rules ownershipcore.ManagerRules) string {
	if d, ok := rules.Decides(c.Manager, c.Operation); ok {
		return map[ownershipcore.Decision]string{ownershipcore.DecisionYield: "yieldTo", ownershipcore.DecisionForce: "forceOver"}[d] + " " + c.Manager
	}
	return "conflictPolicy " + conflictPolicy
}

// fieldOnDelete is what deletionPolicy does with p, a field the patch
// owns after the apply, given the controller's deletion let-go.
func (in fieldRows) fieldOnDelete(deletion ownershipcore.LetGo, p string) string {
	onDel := onDelete(in, deletion, p, hasPath)
	// A field another manager co-owns stays with it, whatever the
	// patch lets go (SSA shared ownership).
	if others := in.othersOwning(in.after, p); len(others) > 0 && !strings.HasPrefix(onDel, "hand back") {
		return "leave to " + strings.Join(others, ", ")
	}
	return onDel
}

// planResource is the plan of one entry of a ManagedWorkload's
// spec.resources: the dry-run apply's action, the fields taken and
// yielded, and how many fields the workload owns after it.
func (p *Planner) planResource(ctx context.Context, r workloadspec.Resource, opts ownershipcore.ApplyOptions) ObjectPlan {
	op := ObjectPlan{}
	if r.Intent != nil {
		op.ObjectRef = ObjectRef{APIVersion: r.Intent.GetAPIVersion(), Kind: r.Intent.GetKind(), Namespace: r.Intent.GetNamespace(), Name: r.Intent.GetName()}
	}
	if r.Err != nil {
		op.Action, op.Message = ActionFailed, r.Err.Error()
		return op
	}
	res, err := p.Applier.Apply(ctx, r.Intent, opts)
	var conflictErr *ownershipcore.ConflictError
	switch {
	case errors.As(err, &conflictErr):
		op.Action, op.Message = string(ownershipcore.ActionConflicted), fmt.Sprintf("%v (conflictPolicy Fail)", conflictErr)
	case err != nil:
		op.Action, op.Message = ActionFailed, redact.Message(err)
	default:
		op.Action = string(res.Action)
	}
	for _, c := range res.Forced {
		op.Taken = append(op.Taken, fmt.Sprintf("%s from %s", ownershipcore.FormatPath(c.Path), DescribeEntry(ownershipcore.ManagerKey{Manager: c.Manager, Operation: c.Operation})))
	}
	for _, c := range res.Yielded {
		op.Yielded = append(op.Yielded, fmt.Sprintf("%s to %s", ownershipcore.FormatPath(c.Path), DescribeEntry(ownershipcore.ManagerKey{Manager: c.Manager, Operation: c.Operation})))
	}
	if err == nil && res.Object != nil {
		op.OwnedFields = ownedFieldCount(res.Object, opts.FieldManager)
	}
	return op
}

// ownedFieldCount is how many fields manager's apply entry of obj owns;
// 0 when it has none or its managed fields do not decode.
func ownedFieldCount(obj metav1.Object, manager string) int {
	after, err := ownershipcore.Owners(obj)
	if err != nil {
		return 0
	}
	if ours := after.Applied(manager); ours != nil {
		return len(ownershipcore.FormatSet(ours.Fields))
	}
	return 0
}

// workloadAction is a workload's action from its objects' (conflicted
// before failed before configured before unchanged) and a message
// counting each action.
func workloadAction(counts map[string]int) (action, message string) {
	switch {
	case counts[string(ownershipcore.ActionConflicted)] > 0:
		action = string(ownershipcore.ActionConflicted)
	case counts[ActionFailed] > 0:
		action = ActionFailed
	case counts[string(ownershipcore.ActionCreated)]+counts[string(ownershipcore.ActionConfigured)] > 0:
		action = string(ownershipcore.ActionConfigured)
	default:
		action = string(ownershipcore.ActionUnchanged)
	}
	var parts []string
	for _, a := range []string{string(ownershipcore.ActionCreated), string(ownershipcore.ActionConfigured), string(ownershipcore.ActionUnchanged), string(ownershipcore.ActionConflicted), ActionFailed} {
		if counts[a] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[a], strings.ToLower(a)))
		}
	}
	return action, strings.Join(parts, ", ")
}
