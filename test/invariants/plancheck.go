/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package invariants

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/fieldpatch"
	"github.com/fieldops/fieldops/internal/fieldplan"
	"github.com/fieldops/fieldops/ownershipcore"
)

// planned is the plan of a step's FieldPatch, made before the step as
// kubectl fieldops plan makes it (fieldplan.Planner), for invariant (10).
type planned struct {
	name  string
	plans []fieldplan.Plan
	// deletion: the plans are of the patch's deletion; selector: of a
	// selector patch.
	deletion, selector bool
	// from is the length of fieldops' write log when the plan was made
	// (the step's writes follow), uid the patch's UID when it existed.
	from int
	uid  types.UID
}

// planner is the Env's planner: an administrator's, reading without a
// cache, as the runs' managers act (with the manager's own rights).
func (e *Env) planner(ns string) (*fieldplan.Planner, error) {
	pred, err := e.predictor()
	if err != nil {
		return nil, err
	}
	return &fieldplan.Planner{Client: e.Client, Config: e.Config, Applier: pred.applier, Namespace: ns}, nil
}

// planFor plans the FieldPatch step s changes: created or edited (as it
// will be after the step), or deleted or expired (its deletion). Other
// steps plan nothing.
func (r *run) planFor(ctx context.Context, s Step) (*planned, error) {
	switch s.Op {
	case OpPatchCreate:
		fp, err := r.newPatch(s)
		if err != nil {
			return nil, err
		}
		return r.planStep(ctx, s, fp)
	case OpPatchEdit:
		fp := &v1alpha1.FieldPatch{}
		if err := r.env.Client.Get(ctx, types.NamespacedName{Namespace: r.ns, Name: s.Who}, fp); err != nil {
			return nil, err
		}
		if err := r.fillPatch(fp, s); err != nil {
			return nil, err
		}
		return r.planStep(ctx, s, fp)
	case OpPatchDelete:
		return r.planStep(ctx, s, nil)
	}
	return nil, nil
}

// planStep plans the FieldPatch a create, edit, delete or expiry step
// changes, as it will be after the step (fp: created or edited by the
// step; nil: the patch as it is, whose deletion is planned). Steps of
// sequences with faults are not planned: a failed write is no decision.
func (r *run) planStep(ctx context.Context, s Step, fp *v1alpha1.FieldPatch) (*planned, error) {
	if r.faults != nil {
		return nil, nil
	}
	p, err := r.env.planner(r.ns)
	if err != nil {
		return nil, err
	}
	if fp == nil {
		fp = &v1alpha1.FieldPatch{}
		if err := r.env.Client.Get(ctx, types.NamespacedName{Namespace: r.ns, Name: s.Who}, fp); err != nil {
			return nil, err
		}
		p.Delete = true
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fp)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: raw}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind("FieldPatch")
	plans, err := p.Plan(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", s.Who, err)
	}
	return &planned{name: s.Who, plans: plans, deletion: p.Delete, selector: fp.Spec.TargetSelector != nil,
		from: r.mgr.log.Len(), uid: fp.UID}, nil
}

// checkPlan is invariant (10): the controller did what the plan said.
// For an apply: the Ready reason, the record of previous owners saved and
// the fields the patch's field manager owns. For a deletion: each field's
// value and owners once the patch is gone. For both, when that holds, the
// order of the patch's writes (checkWrites). It says in a note, rather
// than fail, when the step's outcome is one no plan can see: another
// fieldops object wrote the target while fieldops settled, or a contest
// (the manager's history of repairs) decided the reconcile.
func (r *run) checkPlan(ctx context.Context, pl *planned, before, after *snapshot) ([]Violation, string) {
	if pl == nil {
		return nil, ""
	}
	vs, note := r.comparePlan(ctx, pl, before, after)
	switch {
	case note != "":
		r.env.plans.unchecked.Add(1)
	case len(vs) == 0 && pl.deletion:
		r.env.plans.deletions.Add(1)
	case len(vs) == 0:
		r.env.plans.applies.Add(1)
	}
	if len(vs) == 0 && note == "" && len(pl.plans) > 0 && pl.plans[0].Patch != nil && pl.selector {
		r.env.plans.selector.Add(1)
	}
	if len(vs) == 0 && note == "" {
		// The outcome is what the plan said: then the order of writes.
		return r.checkWrites(ctx, pl)
	}
	return vs, note
}

// comparePlan is checkPlan's comparison.
func (r *run) comparePlan(ctx context.Context, pl *planned, before, after *snapshot) ([]Violation, string) {
	manager := ownershipcore.ManagerName(fieldpatch.ManagerPrefix, r.ns, pl.name)
	if who := othersWrote(manager, before, after); who != "" {
		return nil, fmt.Sprintf("plan of %s not checked: %s wrote the target too", pl.name, who)
	}
	for _, p := range pl.plans {
		if p.Patch == nil {
			continue
		}
		if pl.deletion {
			if d := deletionDiff(p, after); d != "" {
				return []Violation{{10, fmt.Sprintf("the deletion of %s is not what its plan said: %s", pl.name, d)}}, ""
			}
			continue
		}
		d, note, err := r.applyDiff(ctx, pl.name, p)
		if err != nil {
			return []Violation{{0, "harness: " + err.Error()}}, ""
		}
		if d == "" && note == "" && p.Action == string(ownershipcore.ActionUnchanged) && before.rv != after.rv && !before.sameEntry(after, manager) {
			d = "the plan said Unchanged, and the patch's field manager's entry changed"
		}
		if d != "" {
			return []Violation{{10, fmt.Sprintf("%s did not do what its plan said (%s %s): %s", pl.name, p.Action, p.ReadyReason, d)}}, ""
		}
		if note != "" {
			return nil, note
		}
	}
	return nil, ""
}

// entries are the field sets (as strings) of the managed fields entries
// of s whose manager keep accepts.
func (s *snapshot) entries(keep func(manager string) bool) map[owner]string {
	out := map[owner]string{}
	for o, set := range s.owners {
		if keep(o.Manager) {
			out[o] = set.String()
		}
	}
	return out
}

// sameEntry reports whether manager's entries hold the same fields in s
// and o.
func (s *snapshot) sameEntry(o *snapshot, manager string) bool {
	is := func(m string) bool { return m == manager }
	return maps.Equal(s.entries(is), o.entries(is))
}

// othersWrote names a fieldops field manager other than manager whose
// managed fields changed between before and after ("" for none).
func othersWrote(manager string, before, after *snapshot) string {
	others := func(m string) bool { return isFieldops(m) && m != manager }
	b, a := before.entries(others), after.entries(others)
	for o, f := range a {
		if b[o] != f {
			return o.Manager
		}
	}
	for o := range b {
		if _, ok := a[o]; !ok {
			return o.Manager
		}
	}
	return ""
}

// applyDiff compares the FieldPatch name as the controller left it with
// plan p: the Ready reason, and when applied the record and the owned
// fields (of the one target, or of p's target in a selector patch's
// records).
func (r *run) applyDiff(ctx context.Context, name string, p fieldplan.Plan) (diff, note string, _ error) {
	fp := &v1alpha1.FieldPatch{}
	if err := r.env.Client.Get(ctx, types.NamespacedName{Namespace: r.ns, Name: name}, fp); err != nil {
		return "", "", err
	}
	selector := fp.Spec.TargetSelector != nil
	c := meta.FindStatusCondition(fp.Status.Conditions, fieldpatch.ConditionReady)
	reason := ""
	if c != nil {
		reason = c.Reason
	}
	switch {
	case reason == fieldpatch.ReasonContested || reason == fieldpatch.ReasonContestTimeout:
		return "", fmt.Sprintf("plan of %s not checked: %s (the manager's history of repairs decides it)", name, reason), nil
	case !selector && reason != p.ReadyReason:
		return fmt.Sprintf("Ready reason %s (%s), the plan said %s (%s)", reason, conditionMessage(c), p.ReadyReason, p.Message), "", nil
	case p.ReadyReason != "Applied":
		return "", "", nil
	}
	st := fp.Status
	if selector {
		uid := ""
		if live := r.target(); r.env.Client.Get(ctx, types.NamespacedName{Namespace: r.ns, Name: targetName}, live) == nil {
			uid = string(live.GetUID())
		}
		st = fp.Status.Targets.RecordStatus(uid)
	}
	if a, b := ownerLeaves(p.Patch.PreviousOwners), ownerLeaves(fieldplan.PlannedOwners(st.PreviousOwners)); a != b {
		return fmt.Sprintf("previous owners %s, the plan said %s", b, a), "", nil
	}
	if !selector && !slices.Equal(p.Patch.ManagedFields, fp.Status.ManagedFields) {
		return fmt.Sprintf("managed fields %v, the plan said %v", fp.Status.ManagedFields, p.Patch.ManagedFields), "", nil
	}
	return "", "", nil
}

// ownerLeaves prints each previous owner with the leaf paths of its
// fields and shared fields together: which of them an owner still
// co-owns is what fieldops saw when it last looked, which a plan and the
// controller may see at different times.
func ownerLeaves(owners []fieldplan.PlannedOwner) string {
	var out []string
	for _, o := range owners {
		leaves, err := o.Leaves()
		if err != nil {
			leaves = []string{"?" + err.Error()}
		}
		out = append(out, fmt.Sprintf("%s %s %s %s via %q: %v", o.Manager, o.Operation, o.APIVersion, o.Subresource, o.Via, leaves))
	}
	return mustJSON(out)
}

// deletionDiff compares the target after a patch's deletion with the
// plan of that deletion: each field's value and owners.
func deletionDiff(p fieldplan.Plan, after *snapshot) string {
	var diffs []string
	for _, row := range p.Patch.Deletion {
		path, err := ownershipcore.ParsePath(row.Path)
		if err != nil {
			continue
		}
		value := "(removed)"
		if v, ok := after.value(path); ok {
			raw, _ := json.Marshal(v)
			value = string(raw)
		}
		if value != row.ValueAfter {
			diffs = append(diffs, fmt.Sprintf("%s is %s, the plan said %s (%s)", row.Path, value, row.ValueAfter, row.Action))
		}
		var owners []string
		for _, o := range after.ownersOf(path) {
			owners = append(owners, fieldplan.DescribeEntry(ownershipcore.ManagerKey{Manager: o.Manager, Operation: o.Operation}))
		}
		slices.Sort(owners)
		// The snapshot keys owners by manager and operation alone.
		var want []string
		for _, o := range row.OwnersAfter {
			if i := strings.Index(o, " /"); i >= 0 {
				o = o[:i] + ")"
			}
			want = append(want, o)
		}
		slices.Sort(want)
		if !slices.Equal(owners, want) {
			diffs = append(diffs, fmt.Sprintf("%s is owned by %v, the plan said %v (%s)", row.Path, owners, want, row.Action))
		}
	}
	return strings.Join(diffs, "; ")
}

func conditionMessage(c *metav1.Condition) string {
	if c == nil {
		return ""
	}
	return c.Message
}

func mustJSON(v interface{}) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
