/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldplan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/names"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/internal/patchplan"
	"github.com/fieldops/fieldops/internal/patchtarget"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
	"github.com/fieldops/fieldops/ownershipcore/redact"
)

// DeletionFieldPlan is one field of a deletion's plan.
type DeletionFieldPlan struct {
	// Path in the ownership core's form (.spec.replicas).
	Path string `json:"path"`
	// Action: restored, handed back, left without an owner, removed,
	// kept without an owner (could not be removed), or not restored
	// (written since by another manager).
	Action string `json:"action"`
	// Why says why, when the action is not what the policy asks.
	Why string `json:"why,omitempty"`
	// OwnersAfter are the entries that own the field after the deletion.
	OwnersAfter []string `json:"ownersAfter,omitempty"`
	// ValueAfter is the field's value after the deletion as JSON,
	// "(removed)", or "(masked)" for a Secret's data.
	ValueAfter string `json:"valueAfter"`
}

// ActionDelete is a deletion plan's action.
const ActionDelete = "Delete"

// planDelete plans the deletion of the patch obj names as it is on the
// cluster: what its deletionPolicy would do now, field by field, with the
// controller's decision (patchintent.DeletionLetGo, the record followed to
// the target) computed by the model (Model.LetGo), nothing written. A
// Restore's previous values are read from the patch's Secret with the
// user's rights; a user who may not read it sees the restore as
// unknown.
func (p *Planner) planDelete(ctx context.Context, obj, existing v1alpha1.Patcher, cluster bool) (Plan, error) {
	plan := Plan{Kind: map[bool]string{false: "FieldPatch", true: "ClusterFieldPatch"}[cluster], Namespace: obj.GetNamespace(), Name: obj.GetName(), Action: ActionDelete}
	if err := p.Client.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		if apierrors.IsNotFound(err) {
			plan.Action, plan.Message = ActionTargetNotFound, "the patch is not on the cluster: deleting it does nothing"
			return plan, nil
		}
		return Plan{}, err
	}
	plan.Exists = true
	spec, st := existing.PatchSpec(), existing.PatchStatus()
	manager := st.FieldManager
	if manager == "" {
		manager = names.FieldPatch(cluster, existing.GetNamespace(), existing.GetName())
	}
	plan.FieldManager = manager
	pp := &PatchPlan{Type: string(patchintent.TypeOrApply(spec.Type)), DeletionPolicy: string(deletionPolicy(spec.DeletionPolicy)), ConflictPolicy: string(spec.ConflictPolicy)}
	plan.Patch = pp
	pp.Target = ObjectRef{APIVersion: spec.Target.APIVersion, Kind: spec.Target.Kind, Namespace: existing.TargetNamespace(), Name: spec.Target.Name}
	live, err := p.deletionTarget(ctx, existing, cluster)
	if err != nil || live == nil {
		plan.Action, plan.Message = "Unchanged", "the target is not there: deleting the patch lets it go at once"
		if err != nil {
			plan.Message = "the target cannot be resolved (" + redact.Message(err) + "): deleting the patch lets it go at once"
		}
		return plan, nil
	}
	rows, notes, writes, err := p.deletionRows(ctx, existing, cluster, live, manager)
	if err != nil {
		plan.Action, plan.Message = ActionFailed, redact.Message(err)
		return plan, nil
	}
	pp.Deletion, pp.Notes, pp.Writes = rows, notes, writes
	if len(rows) == 0 {
		plan.Action, plan.Message = "Unchanged", "the patch owns no field of the target: deleting it changes nothing there"
	}
	return plan, nil
}

// deletionTarget reads the patch's target as the controller resolves it.
func (p *Planner) deletionTarget(ctx context.Context, obj v1alpha1.Patcher, cluster bool) (*unstructured.Unstructured, error) {
	ref, err := patchtarget.Resolve(p.Client.RESTMapper(), obj, cluster, p.OwnNamespace)
	if err != nil {
		return nil, err
	}
	live, err := p.Applier.Get(ctx, ref)
	if err != nil || live == nil {
		return nil, err
	}
	if uid := obj.PatchStatus().TargetUID; uid != "" && string(live.GetUID()) != uid {
		return nil, nil // replaced: the object the patch wrote to is gone
	}
	return live, nil
}

// deletionRows computes the deletion over the model and describes each
// field the patch owns, or has a previous value of; writes are the
// requests the controller sends for it (patchplan.Outcome.Sent).
func (p *Planner) deletionRows(ctx context.Context, obj v1alpha1.Patcher, cluster bool, live *unstructured.Unstructured, manager string) (_ []DeletionFieldPlan, notes []string, writes []patchplan.Write, _ error) {
	owners, err := ownershipcore.Owners(live)
	if err != nil {
		return nil, nil, nil, err
	}
	ours := owners.Applied(manager)
	if ours == nil {
		return nil, nil, nil, nil
	}
	policy := obj.PatchSpec().DeletionPolicy
	// The controller's own plan of the deletion (patchplan.MakeDeletion),
	// run by the same executor with the model's give-back (dryRun).
	var previous *unstructured.Unstructured
	if policy == v1alpha1.DeletionPolicyRestore {
		var note string
		if previous, note = p.previousValues(ctx, obj, cluster, string(live.GetUID())); note != "" {
			notes = append(notes, note)
		}
	}
	plan, err := patchplan.MakeDeletion(p.Applier, patchplan.DeletionInput{Policy: policy, Status: obj.PatchStatus(), Live: live, Manager: manager, PreviousValues: previous})
	if err != nil {
		return nil, nil, nil, err
	}
	w := &dryRun{applier: p.Applier, manager: manager, live: live}
	res, err := patchplan.Execute(ctx, plan, w)
	if err != nil {
		return nil, nil, nil, err
	}
	notes = append(notes, w.notes...)
	g, out, m := plan.GiveBack, res.GaveBack, p.Applier.Model()
	s, err := ownershipcore.NewState(live, true)
	if err != nil {
		return nil, nil, nil, err
	}
	next, err := ownershipcore.NewState(res.Given, true)
	if err != nil {
		return nil, nil, nil, err
	}
	changed := map[string]*fieldset.Set{}
	if g.Restore != nil {
		if changed, err = m.ChangedSince(s, manager, g.Restore); err != nil {
			return nil, nil, nil, err
		}
	}
	return describeDeletion(live, next, ours.Fields, out, changed), notes, res.Sent, nil
}

// previousValues reads a Restore patch's previous values with the user's
// rights; note says what the plan cannot know.
func (p *Planner) previousValues(ctx context.Context, obj v1alpha1.Patcher, cluster bool, uid string) (*unstructured.Unstructured, string) {
	key := client.ObjectKey{Namespace: obj.GetNamespace(), Name: patchintent.PreviousValuesName(obj.GetUID())}
	if obj.PatchSpec().TargetSelector != nil {
		key.Name = patchintent.PreviousValuesTargetName(obj.GetUID(), types.UID(uid))
	}
	if cluster {
		key.Namespace = p.OwnNamespace
	}
	secret := &corev1.Secret{}
	switch err := p.Client.Get(ctx, key, secret); {
	case apierrors.IsNotFound(err):
		return nil, "no previous values are kept (the patch forced no field): fields go back as under HandBack"
	case err != nil:
		return nil, fmt.Sprintf("the previous values in Secret %s cannot be read (%s): fields are shown handed back without them", key, redact.Message(err))
	}
	u, err := patchintent.DecodePreviousValues(secret, uid)
	switch {
	case err != nil:
		return nil, redact.Message(err)
	case u == nil:
		return nil, "the previous values kept are of another object of that name: fields go back as under HandBack"
	}
	return u, ""
}

// describeDeletion is one row per leaf the patch owns (ours) or wrote
// since (changed), sorted by path.
func describeDeletion(live *unstructured.Unstructured, next ownershipcore.State, ours *fieldset.Set, out ownershipcore.Outcome, changed map[string]*fieldset.Set) []DeletionFieldPlan {
	after := next.Owners
	since := map[string]string{}
	for manager, fields := range changed {
		for _, p := range patchintent.Leaves(fields) {
			since[p] = manager
		}
	}
	paths := patchintent.Leaves(ours)
	for p := range since {
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	secret := live.GetKind() == "Secret" && live.GetAPIVersion() == "v1"
	var rows []DeletionFieldPlan
	for _, path := range paths {
		row := DeletionFieldPlan{Path: path, OwnersAfter: ownersOf(after, path), ValueAfter: valueAfter(next.Object, path, secret)}
		switch {
		case since[path] != "":
			row.Action, row.Why = "not restored", "written since by "+ownershipcore.DescribeManager(since[path])
		case inSet(out.Restored, path):
			row.Action = "restored"
		case inSet(out.Moved, path):
			row.Action = "handed back"
		case inSet(out.Released, path):
			row.Action = "left without an owner"
		case inSet(out.Kept, path):
			row.Action, row.Why = "kept without an owner", out.Why
		case inSet(out.Removed, path):
			row.Action = "removed"
		default:
			row.Action = "left to " + strings.Join(row.OwnersAfter, ", ")
		}
		rows = append(rows, row)
	}
	return rows
}

// inSet reports whether s holds the leaf path p (core form).
func inSet(s *fieldset.Set, p string) bool {
	return s != nil && slices.Contains(ownershipcore.FormatSet(s), p)
}

// ownersOf lists the entries of mf that own path.
func ownersOf(mf ownershipcore.ManagedFields, path string) []string {
	var out []string
	for _, e := range mf {
		if inSet(e.Fields, path) {
			out = append(out, DescribeEntry(e.ManagerKey))
		}
	}
	return out
}

// valueAfter is the JSON of the value at path in obj, "(removed)" when
// obj holds none, "(masked)" for a Secret.
func valueAfter(obj *unstructured.Unstructured, path string, secret bool) string {
	p, err := ownershipcore.ParsePath(path)
	if err != nil {
		return "?"
	}
	v, ok := ownershipcore.ValueAt(obj, p)
	switch {
	case !ok:
		return "(removed)"
	case secret:
		return "(masked)"
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return string(raw)
}

// ErrDeleteKinds refuses what plan --delete does not plan.
var ErrDeleteKinds = errors.New("plan --delete knows FieldPatch and ClusterFieldPatch")
