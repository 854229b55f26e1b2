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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/conflicts"
	"github.com/fieldops/fieldops/internal/names"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/internal/patchplan"
	"github.com/fieldops/fieldops/internal/patchtarget"
	"github.com/fieldops/fieldops/internal/tenancy"
	"github.com/fieldops/fieldops/internal/workloadspec"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
	"github.com/fieldops/fieldops/ownershipcore/redact"
	"github.com/fieldops/fieldops/plugins/host"
)

// Plan is what one FieldPatch, ClusterFieldPatch or ManagedWorkload of
// the file would do; -o json and -o yaml print a list of them.
type Plan struct {
	Kind         string `json:"kind"`
	Namespace    string `json:"namespace,omitempty"`
	Name         string `json:"name"`
	FieldManager string `json:"fieldManager"`
	// ActingAs is the account the plan acted as ("ServiceAccount
	// ns/name"), as the controller acts as it; empty when the plan used
	// the caller's own rights (the patch acts with the manager's, or the
	// caller may not impersonate its account: a note then says so).
	ActingAs string `json:"actingAs,omitempty"`
	// account is the account ActingAs names (the zero Account: none).
	account tenancy.Account
	// ReadyReason is the reason of the Ready condition the controller
	// sets for this plan (Applied, Conflict, TargetNotFound, Forbidden,
	// or the reason it stalls with); empty for a workload or a deletion.
	// A contest over the target (Contested, ContestTimeout) depends on
	// the history of repairs the manager keeps, which no plan sees.
	ReadyReason string `json:"readyReason,omitempty"`
	// Exists says the object exists: the plan is of a change.
	Exists bool `json:"exists"`
	// Action is what the apply would do: Created, Configured, Unchanged,
	// or, when it would fail, Conflicted, Invalid, TargetNotFound, Failed.
	Action  string `json:"action"`
	Message string `json:"message,omitempty"`
	// Reason is the reason the controller would stall with when it
	// refuses the target (ForbiddenTarget, CrossNamespaceTarget,
	// InvalidTarget, UnknownKind); Message then ends with its message.
	Reason string `json:"reason,omitempty"`
	// Patch is the plan of a FieldPatch or ClusterFieldPatch.
	Patch *PatchPlan `json:"patch,omitempty"`
	// Objects is the plan of a ManagedWorkload, in apply order.
	Objects []ObjectPlan `json:"objects,omitempty"`
}

// PatchPlan is the plan of a FieldPatch or ClusterFieldPatch.
type PatchPlan struct {
	Target         ObjectRef   `json:"target"`
	Type           string      `json:"type"`
	ConflictPolicy string      `json:"conflictPolicy"`
	DeletionPolicy string      `json:"deletionPolicy"`
	Fields         []FieldPlan `json:"fields"`
	// PreviousOwners is status.previousOwners as the controller would
	// record it, in the status's form (fields, shared).
	PreviousOwners []PlannedOwner `json:"previousOwners,omitempty"`
	// AddedFields is status.addedFields as the controller would record it:
	// the fields the patch adds, which no other manager owned.
	AddedFields []string `json:"addedFields,omitempty"`
	// ManagedFields is status.managedFields after the apply: the fields
	// the patch's field manager would own.
	ManagedFields []string `json:"managedFields,omitempty"`
	// Notes are what the plan cannot know (ignorePlugins, a plugin's
	// decisions).
	Notes []string `json:"notes,omitempty"`
	// Deletion is the plan of the patch's deletion (plan --delete).
	Deletion []DeletionFieldPlan `json:"deletion,omitempty"`
	// Writes are the writes the controller sends, in order
	// (patchplan.Write); the status write that ends a reconcile is not
	// listed.
	Writes []patchplan.Write `json:"writes,omitempty"`
	// Events are the reasons of the events the controller records for
	// the plan, in order (patchplan.Plan.Expected).
	Events []string `json:"events,omitempty"`
}

// ObjectRef names an object.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// FieldPlan is one field of a patch's plan.
type FieldPlan struct {
	// Path in the ownership core's form (.spec.replicas).
	Path string `json:"path"`
	// Owners are the managers that own the field now, other than the
	// patch ("hpa (Update)").
	Owners []string `json:"owners,omitempty"`
	// Plan: take, share, add, keep, yield, fail or give back.
	Plan string `json:"plan"`
	// Decision says what decided a conflict.
	Decision string `json:"decision,omitempty"`
	// OnDelete: what deletionPolicy would do with the field.
	OnDelete string `json:"onDelete,omitempty"`
}

// PlannedOwner is one entry of status.previousOwners.
type PlannedOwner struct {
	Manager     string                            `json:"manager"`
	Operation   metav1.ManagedFieldsOperationType `json:"operation"`
	APIVersion  string                            `json:"apiVersion,omitempty"`
	Subresource string                            `json:"subresource,omitempty"`
	// Via is the field manager of the patch the owner's fields are taken
	// from, when the owner comes from that patch's record.
	Via string `json:"via,omitempty"`
	// Fields are the fields taken from the owner, and Shared those it
	// still co-owns, as status.previousOwners lists them
	// (fieldset.FormatMembers: every member of the field set, a list item
	// owned as a whole included).
	Fields []string `json:"fields,omitempty"`
	Shared []string `json:"shared,omitempty"`
}

// ObjectPlan is one object of a workload's plan.
type ObjectPlan struct {
	ObjectRef `json:",inline"`
	Action    string `json:"action"`
	Message   string `json:"message,omitempty"`
	// Taken are the fields taken from other managers with force
	// ("path from \"hpa\" (Update)").
	Taken []string `json:"taken,omitempty"`
	// Yielded are the conflicts left to their owners.
	Yielded []string `json:"yielded,omitempty"`
	// OwnedFields is how many fields the workload would own on it.
	OwnedFields int `json:"ownedFields"`
}

// Plan actions besides ownershipcore's.
const (
	ActionInvalid        = "Invalid"
	ActionTargetNotFound = "TargetNotFound"
	ActionFailed         = "Failed"
	// ActionForbidden: the account the patch acts as may not read or
	// write its target (the controller's reason Forbidden).
	ActionForbidden = "Forbidden"
)

func (p *Plan) Failed() bool {
	switch p.Action {
	case string(ownershipcore.ActionConflicted), ActionInvalid, ActionTargetNotFound, ActionFailed, ActionForbidden:
		return true
	}
	return false
}

// Planner plans FieldPatches, ClusterFieldPatches and ManagedWorkloads
// with the controllers' own decisions, reading the cluster and sending
// only dry runs. It is what kubectl fieldops plan runs, and what
// test/invariants checks the controller against.
type Planner struct {
	// Client reads and dry-runs as the caller; Config is its rest config,
	// which a patch's plan copies to impersonate the patch's account.
	Client client.Client
	Config *rest.Config
	// Applier reads targets without a cache (the plan sees the object as
	// it is now).
	Applier *ownershipcore.Applier
	// Namespace is the namespace of objects that name none.
	Namespace string
	// OwnNamespace is the manager's namespace: the controller refuses
	// targets in it (patchtarget.Protected).
	OwnNamespace string
	// Plugins runs the plugins of the manager's --plugin-config; nil
	// without it (a conflict plugin's fallback then stands in).
	Plugins *host.Host
	// Delete plans deletions (plan --delete) instead of applies.
	Delete bool
	// Tenancy are the manager's settings that say which account a patch
	// acts as (--default-service-account, --manager-rights-namespaces).
	Tenancy tenancy.Options
}

// Plan plans u, a FieldPatch, ClusterFieldPatch or ManagedWorkload as a
// manifest holds it (namespace defaulted to Namespace): one Plan, or one
// per matching target of a selector patch (spec.targetSelector); with
// Delete, the patch's deletion. Nothing is written. Errors are those of
// reading the cluster; what the controller would refuse is a Plan whose
// Action says so.
func (p *Planner) Plan(ctx context.Context, u *unstructured.Unstructured) ([]Plan, error) {
	plans, err := p.plan(ctx, u)
	for i := range plans {
		// A plan that ran has the reason its run came to
		// (patchplan.Expect); one refused before has its action's.
		if pl := plans[i].Patch; pl != nil && pl.Deletion == nil && plans[i].Action != ActionDelete && !p.Delete && plans[i].ReadyReason == "" {
			plans[i].ReadyReason = plans[i].readyReason()
		}
	}
	return plans, err
}

// readyReason is the Ready reason the controller sets for a patch's plan
// refused before its plan ran (target not found, forbidden, refused by
// the controller's rules, invalid).
func (p *Plan) readyReason() string {
	switch p.Action {
	case string(ownershipcore.ActionCreated), string(ownershipcore.ActionConfigured), string(ownershipcore.ActionUnchanged):
		return "Applied"
	case string(ownershipcore.ActionConflicted):
		return "Conflict"
	case ActionTargetNotFound, ActionForbidden:
		return p.Action
	}
	if p.Reason != "" {
		return p.Reason
	}
	return "InvalidPatch"
}

// plan is Plan without the expected Ready reasons.
func (p *Planner) plan(ctx context.Context, u *unstructured.Unstructured) ([]Plan, error) {
	one := func(plan Plan, err error) ([]Plan, error) {
		if err != nil {
			return nil, err
		}
		return []Plan{plan}, nil
	}
	var obj client.Object
	switch u.GetKind() {
	case "FieldPatch":
		obj = &v1alpha1.FieldPatch{}
	case "ClusterFieldPatch":
		obj = &v1alpha1.ClusterFieldPatch{}
	case "ManagedWorkload":
		obj = &v1alpha1.ManagedWorkload{}
	default:
		return nil, fmt.Errorf("%s %s: plan knows FieldPatch, ClusterFieldPatch and ManagedWorkload", u.GetKind(), u.GetName())
	}
	if u.GetKind() != "ClusterFieldPatch" && u.GetNamespace() == "" {
		u.SetNamespace(p.Namespace)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
		return nil, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
	}
	if pt, ok := obj.(v1alpha1.Patcher); ok && pt.PatchSpec().TargetSelector != nil {
		return p.planSelectorPatch(ctx, pt)
	}
	if p.Delete {
		switch o := obj.(type) {
		case *v1alpha1.FieldPatch:
			return p.planDeleteAny(ctx, o, &v1alpha1.FieldPatch{}, false)
		case *v1alpha1.ClusterFieldPatch:
			return p.planDeleteAny(ctx, o, &v1alpha1.ClusterFieldPatch{}, true)
		}
		return nil, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), ErrDeleteKinds)
	}
	switch o := obj.(type) {
	case *v1alpha1.FieldPatch:
		return one(p.planPatch(ctx, o, &v1alpha1.FieldPatch{}))
	case *v1alpha1.ClusterFieldPatch:
		return one(p.planPatch(ctx, o, &v1alpha1.ClusterFieldPatch{}))
	default:
		return one(p.planWorkload(ctx, obj.(*v1alpha1.ManagedWorkload)))
	}
}

// admit reads the live copy of obj into existing (its status is the
// record the controller continues) or, when there is none, dry-runs its
// creation, so that the plan reports what admission (CRD validation, CEL
// rules) would refuse. It returns whether obj exists.
func (p *Planner) admit(ctx context.Context, obj, existing client.Object) (bool, error) {
	err := p.Client.Get(ctx, client.ObjectKeyFromObject(obj), existing)
	switch {
	case err == nil:
		return true, nil
	case !apierrors.IsNotFound(err):
		return false, err
	}
	return false, p.Client.Create(ctx, obj.DeepCopyObject().(client.Object), client.DryRunAll)
}

// planPatch plans a FieldPatch or ClusterFieldPatch with the controller's
// own decision (patchintent.Decide): target → intent and record of
// previous owners → fields that leave the patch (Decision.GiveBack) →
// apply with the patch's conflict strategy, dryRun=All → the record
// (RecordForced, Decision.Applied).
func (p *Planner) planPatch(ctx context.Context, obj, existing v1alpha1.Patcher) (Plan, error) {
	exists, err := p.admit(ctx, obj, existing)
	st := &v1alpha1.FieldPatchStatus{}
	if exists {
		st = existing.PatchStatus()
	}
	return p.planPatchWith(ctx, obj, st, exists, err)
}

// planPatchWith is planPatch with the patch's admission done: whether it
// exists (or the error of its admission) and the status whose record the
// controller continues. The target is read and dry-run as the account
// the patch acts as (actingAs), in the controller's order: strategy →
// target → intent and record → give back → apply → record.
func (p *Planner) planPatchWith(ctx context.Context, obj v1alpha1.Patcher, st *v1alpha1.FieldPatchStatus, exists bool, admitErr error) (Plan, error) {
	_, cluster := obj.(*v1alpha1.ClusterFieldPatch)
	spec := obj.PatchSpec()
	manager := names.FieldPatch(cluster, obj.GetNamespace(), obj.GetName())
	plan := Plan{Kind: map[bool]string{false: "FieldPatch", true: "ClusterFieldPatch"}[cluster], Namespace: obj.GetNamespace(), Name: obj.GetName(), FieldManager: manager}
	pp := &PatchPlan{Type: string(patchintent.TypeOrApply(spec.Type)), DeletionPolicy: string(deletionPolicy(spec.DeletionPolicy))}
	plan.Patch = pp
	pp.Target = ObjectRef{APIVersion: spec.Target.APIVersion, Kind: spec.Target.Kind, Namespace: obj.TargetNamespace(), Name: spec.Target.Name}
	if admitErr != nil {
		return plan.invalid(admitErr), nil
	}
	plan.Exists = exists
	strategy, policy, notes, err := p.patchStrategy(spec, func(err error) {
		pp.Notes = append(pp.Notes, fmt.Sprintf("the plugin %q failed (%v): its fallback decided the conflicts, as in the controller, which reports it with the PluginFailure condition and a PluginFailed event", spec.ConflictPlugin, err))
	})
	if err != nil {
		return plan.invalid(err), nil
	}
	pp.ConflictPolicy, pp.Notes = policy, notes
	if len(spec.IgnorePlugins) > 0 {
		pp.Notes = append(pp.Notes, fmt.Sprintf("ignorePlugins %s run in the manager, not here: the fields they name are planned as if they were not ignored", strings.Join(spec.IgnorePlugins, ", ")))
	}
	as, account, note, err := p.actingAs(ctx, obj)
	if err != nil {
		return plan.refused(&patchtarget.Error{Reason: "InvalidTarget", Err: err}), nil
	}
	if !account.IsManager() {
		plan.ActingAs, plan.account = account.String(), account
	}
	if note != "" {
		pp.Notes = append(pp.Notes, note)
	}
	return as.planTarget(ctx, plan, obj, st, cluster, strategy)
}

// planTarget plans the apply of obj to its target (read as p's account)
// with strategy, from the record in st.
func (p *Planner) planTarget(ctx context.Context, plan Plan, obj v1alpha1.Patcher, st *v1alpha1.FieldPatchStatus, cluster bool, strategy ownershipcore.ConflictStrategy) (Plan, error) {
	spec, pp, manager := obj.PatchSpec(), plan.Patch, plan.FieldManager
	// The controller's own rules (patchtarget): a target it refuses is
	// refused here with the same reason and message.
	ref, err := patchtarget.Resolve(p.Client.RESTMapper(), obj, cluster, p.OwnNamespace)
	if err != nil {
		return plan.refused(err), nil
	}
	pp.Target.Namespace = ref.GetNamespace()
	live, err := p.Applier.Get(ctx, ref)
	switch {
	case apierrors.IsForbidden(err):
		return plan.forbidden(err), nil
	case err != nil:
		return Plan{}, err
	case live == nil:
		plan.Action, plan.Message = ActionTargetNotFound, fmt.Sprintf("target %s not found; the controller patches it when it appears", pp.Target)
		return plan, nil
	}
	if err := patchtarget.ManagedByFieldops(live); err != nil {
		return plan.refused(err), nil
	}
	ignore, err := ownershipcore.ParsePathSet(spec.IgnorePaths)
	if err != nil {
		return plan.invalid(fmt.Errorf("ignorePaths: %w", err)), nil
	}
	// The controller's own plan (patchplan.MakeWith), run by the same
	// executor with dry runs (dryRun).
	in := patchplan.Input{Input: patchintent.Input{Spec: spec, Status: st, Live: live, Manager: manager, Ignore: ignore}, Strategy: strategy}
	made, err := p.makePlan(ctx, obj, cluster, in)
	if err != nil {
		return plan.invalid(err), nil
	}
	d := made.Decision
	w := &dryRun{applier: p.Applier, manager: manager, live: live, owners: d.Owners, record: d.Ledger, status: st}
	out, err := patchplan.Execute(ctx, made, w)
	pp.Writes = out.Sent
	pp.Notes = append(pp.Notes, unreadNotes(append(made.Unread, w.unread...))...)
	expected := patchplan.Expect(made, out, errors.Unwrap(err))
	pp.Events, plan.ReadyReason = expected.Events, expected.ReadyReason
	plan, done := plan.applied(out.Result, err)
	if done {
		return plan, nil
	}
	if plan.Action == string(ownershipcore.ActionUnchanged) && slices.Contains(out.Sent, patchplan.WriteGiveBack) {
		plan.Action = string(ownershipcore.ActionConfigured) // the give-back wrote
	}
	if out.Result.Predicted {
		pp.Notes = append(pp.Notes, "the apply follows a write of fieldops that a dry run cannot stage (fields the patch no longer sets are let go of first): its outcome is the ownership core's prediction, and admission of it was not asked")
	}
	after, err := p.planRecord(&plan, made, out)
	if err != nil {
		return plan, err
	}
	return p.planFields(plan, spec, d, out.Record, d.Owners.Applied(manager), after, made.GiveBack, out.Result), nil
}

// makePlan makes the controller's plan of in (patchplan.MakeWith), with
// the records and previous values read with p's rights.
func (p *Planner) makePlan(ctx context.Context, obj v1alpha1.Patcher, cluster bool, in patchplan.Input) (*patchplan.Plan, error) {
	d, err := patchintent.Decide(p.Applier, in.Input)
	if err != nil {
		return nil, err
	}
	return patchplan.MakeWith(ctx, p.Applier, d, in, patchplan.Readers{Records: p.Applier.GetFresh, PreviousValues: func(ctx context.Context) (*unstructured.Unstructured, error) {
		values, _ := p.previousValues(ctx, obj, cluster, string(in.Live.GetUID()))
		return values, nil
	}})
}

// unreadNotes say which records of fieldops patches the plan could not
// read.
func unreadNotes(unread []patchintent.Unread) []string {
	var out []string
	for _, u := range unread {
		out = append(out, fmt.Sprintf("cannot read the previous owners recorded by %s (%s): the owners it took %s from are not shown, and the controller, which cannot read them either, leaves those fields without an owner if %s leaves first", u.Patch, redact.Message(u.Err), strings.Join(patchintent.Leaves(u.Fields), ", "), u.Patch))
	}
	return out
}

// applied sets the plan's action from the dry run's answer (res, err);
// done when that ends the plan (an error other than a conflict).
func (plan Plan) applied(res ownershipcore.Result, err error) (_ Plan, done bool) {
	var conflictErr *ownershipcore.ConflictError
	var refused *patchintent.ForceRefusedError
	switch {
	case errors.As(err, &conflictErr):
		plan.Action = string(ownershipcore.ActionConflicted)
		plan.Message = fmt.Sprintf("the patch would stall (reason Conflict): %s", redact.Message(conflictErr))
	case errors.As(err, &refused):
		// The controller refuses to force fields from owners in another
		// version (patchintent.CheckForce) and stalls.
		plan.Action, plan.Reason = string(ownershipcore.ActionConflicted), "Conflict"
		plan.Message = fmt.Sprintf("the patch would stall (reason Conflict): %s", redact.Message(refused))
	case apierrors.IsForbidden(err):
		return plan.forbidden(err), true
	case err != nil:
		return plan.invalid(err), true
	default:
		plan.Action = string(res.Action)
	}
	return plan, false
}

// planRecord puts the record the controller would save into the plan
// (out.Record: the forced fields' owners, with the records of the
// fieldops patches they are taken from, then the fields taken without
// force). It returns the target's
// managed fields after the apply.
func (p *Planner) planRecord(plan *Plan, made *patchplan.Plan, out patchplan.Outcome) (ownershipcore.ManagedFields, error) {
	d := made.Decision
	after := d.Owners
	if plan.Action != string(ownershipcore.ActionConflicted) && out.Result.Object != nil {
		var err error
		if after, err = ownershipcore.Owners(out.Result.Object); err != nil {
			return nil, err
		}
	}
	record := &v1alpha1.FieldPatchStatus{}
	if err := patchintent.WriteLedger(record, out.Record, string(d.Live.GetUID())); err != nil {
		return nil, err
	}
	plan.Patch.PreviousOwners, plan.Patch.AddedFields = PlannedOwners(record.PreviousOwners), record.AddedFields
	return after, nil
}

// Leaves are the leaf paths of the owner's fields and shared fields
// together (ownershipcore.FormatSet), sorted. Errors: a field that does
// not parse.
func (o PlannedOwner) Leaves() ([]string, error) {
	fields, _, err := patchintent.OwnerFields(v1alpha1.PreviousOwner{Manager: o.Manager, Fields: o.Fields, Shared: o.Shared})
	if err != nil {
		return nil, err
	}
	return ownershipcore.FormatSet(fields), nil
}

// PlannedOwners are the previous owners of a record (status.previousOwners
// as patchintent.WriteLedger writes it) as a plan lists them.
func PlannedOwners(owners []v1alpha1.PreviousOwner) []PlannedOwner {
	out := make([]PlannedOwner, 0, len(owners))
	for _, e := range owners {
		out = append(out, PlannedOwner{Manager: e.Manager, Operation: e.Operation, APIVersion: e.APIVersion, Subresource: e.Subresource, Via: e.Via, Fields: e.Fields, Shared: e.Shared})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// planFields fills the plan's managed fields and its rows, one per field.
func (p *Planner) planFields(plan Plan, spec *v1alpha1.FieldPatchSpec, d *patchintent.Decision, record *ownershipcore.Ledger, ours *ownershipcore.Entry, after ownershipcore.ManagedFields, give ownershipcore.LetGo, res ownershipcore.Result) Plan {
	pp, manager := plan.Patch, plan.FieldManager
	oursAfter := fieldset.NewSet()
	if e := after.Applied(manager); e != nil && plan.Action != string(ownershipcore.ActionConflicted) {
		oursAfter = e.Fields
		pp.ManagedFields = patchintent.Leaves(oursAfter)
	}
	pp.Fields = patchFields(fieldRows{
		manager: manager, policy: deletionPolicy(spec.DeletionPolicy), rules: spec.ConflictRules, conflictPolicy: pp.ConflictPolicy,
		intent: d.IntentSet, before: d.Owners, after: after, oursBefore: ours, oursAfter: oursAfter,
		ledger: record, dropped: give, res: res,
	})
	return plan
}

// invalid is the plan of a patch the controller would refuse: err says
// why.
func (plan Plan) invalid(err error) Plan {
	plan.Action, plan.Message = ActionInvalid, redact.Message(err)
	return plan
}

// refused is the plan of a patch whose target the controller refuses
// (a *patchtarget.Error: its reason), or invalid.
func (plan Plan) refused(err error) Plan {
	var te *patchtarget.Error
	if !errors.As(err, &te) {
		return plan.invalid(err)
	}
	plan.Action, plan.Reason = ActionInvalid, te.Reason
	plan.Message = fmt.Sprintf("the patch would stall (reason %s): %s", te.Reason, redact.Message(err))
	return plan
}

// forbidden is the plan of a patch whose account may not read or write
// its target: the controller waits with reason Forbidden (retried, RBAC
// may change).
func (plan Plan) forbidden(err error) Plan {
	plan.Action, plan.Reason = ActionForbidden, ActionForbidden
	err = tenancy.Explain(plan.account, err)
	plan.Message = fmt.Sprintf("the patch would wait (reason Forbidden): %s", redact.Message(err))
	return plan
}

// patchStrategy is the conflict strategy of spec as the controller builds
// it (conflicts.Policy under the yieldTo and forceOver rules). A plugin is
// asked when --plugin-config names it (host.Strategy, with its fallback,
// as the controller asks it, failed told of each failure); otherwise its
// fallback stands in, and a note says so.
func (p *Planner) patchStrategy(spec *v1alpha1.FieldPatchSpec, failed func(error)) (ownershipcore.ConflictStrategy, string, []string, error) {
	if spec.ConflictPolicy != v1alpha1.ConflictPolicyPlugin {
		s, ok := conflicts.Policy(spec.ConflictPolicy)
		if !ok {
			return nil, "", nil, fmt.Errorf("conflictPolicy %q is not one of Force, Fail, Yield or Plugin", spec.ConflictPolicy)
		}
		policy := string(spec.ConflictPolicy)
		if policy == "" {
			policy = string(v1alpha1.ConflictPolicyForce)
		}
		return conflicts.Rules(spec.ConflictRules, s), policy, nil, nil
	}
	s, ok := conflicts.Fallback(spec.ConflictPluginFallback)
	if !ok {
		return nil, "", nil, fmt.Errorf("conflictPluginFallback %q is not one of Force, Fail or Yield", spec.ConflictPluginFallback)
	}
	fallback := string(spec.ConflictPluginFallback)
	if fallback == "" {
		fallback = string(v1alpha1.ConflictFallbackFail)
	}
	policy := fmt.Sprintf("Plugin %s (fallback %s)", spec.ConflictPlugin, fallback)
	if p.Plugins != nil {
		// A plugin that fails leaves its conflicts to the fallback, as in
		// the controller (which also reports it as PluginFailed).
		plugin, err := p.Plugins.Strategy(spec.ConflictPlugin, s, failed)
		if err != nil {
			return nil, "", nil, fmt.Errorf("conflictPlugin: %w", err)
		}
		note := fmt.Sprintf("conflictPolicy Plugin: the plugin %q of --plugin-config decided each conflict, as the controller would", spec.ConflictPlugin)
		return conflicts.Rules(spec.ConflictRules, plugin), policy, []string{note}, nil
	}
	note := fmt.Sprintf("conflictPolicy Plugin: the plugin %q decides each conflict when the controller applies; shown is its fallback, %s (--plugin-config runs the plugin here)", spec.ConflictPlugin, fallback)
	return conflicts.Rules(spec.ConflictRules, s), policy, []string{note}, nil
}

func deletionPolicy(p v1alpha1.DeletionPolicy) v1alpha1.DeletionPolicy {
	if p == "" {
		return v1alpha1.DeletionPolicyHandBack
	}
	return p
}

// fieldRows are the inputs of a patch's per-field plan.
type fieldRows struct {
	manager        string
	policy         v1alpha1.DeletionPolicy
	rules          v1alpha1.ConflictRules
	conflictPolicy string
	intent         *fieldset.Set
	before, after  ownershipcore.ManagedFields
	oursBefore     *ownershipcore.Entry
	oursAfter      *fieldset.Set
	ledger         *ownershipcore.Ledger
	dropped        ownershipcore.LetGo
	res            ownershipcore.Result
}

// patchFields is one row per leaf field the patch sets, owns after the
// apply, conflicts on, or gives back.
func patchFields(in fieldRows) []FieldPlan {
	conflictsAt := conflictsByPath(in.res)
	givenBack := givenBackPaths(in.dropped)
	paths := in.fieldPaths(conflictsAt, givenBack)
	rules := conflicts.Of(in.rules)
	deletion := patchintent.DeletionLetGo(in.policy, in.ledger, in.after, in.oursAfter, in.manager)
	var rows []FieldPlan
	for _, p := range paths {
		row := FieldPlan{Path: p, Owners: in.othersOwning(in.before, p)}
		row.Plan, row.Decision = in.fieldPlan(p, row.Owners, conflictsAt[p], givenBack[p], rules)
		if hasPath(in.oursAfter, p) {
			row.OnDelete = in.fieldOnDelete(deletion, p)
		}
		rows = append(rows, row)
	}
	return rows
}

// onDelete says what deletionPolicy does with a field the patch would
// own, given the controller's own deletion (g: patchintent.DeletionLetGo
// on the managed fields after the apply).
func onDelete(in fieldRows, g ownershipcore.LetGo, p string, has func(*fieldset.Set, string) bool) string {
	for _, e := range g.Previous {
		if has(e.Fields, p) {
			if in.policy == v1alpha1.DeletionPolicyRestore {
				return "restore the previous value (unless written since) and hand back to " + DescribeEntry(e.ManagerKey)
			}
			return "hand back to " + DescribeEntry(e.ManagerKey)
		}
	}
	if has(g.Release, p) {
		return "leave without an owner"
	}
	return "remove"
}

// DescribeEntry prints a manager key as `hpa (Update)`, or
// `hpa (Update /scale)` for a subresource entry: the owners of a plan.
func DescribeEntry(k ownershipcore.ManagerKey) string {
	s := k.Manager + " (" + string(k.Operation)
	if k.Subresource != "" {
		s += " /" + k.Subresource
	}
	return s + ")"
}

// planWorkload plans a ManagedWorkload as its controller applies it with
// Server-Side Apply: spec.resources in apply order (workload.Resources),
// each applied under the workload's field manager with its conflict
// strategy and ignorePaths, dryRun=All.
func (p *Planner) planWorkload(ctx context.Context, mw *v1alpha1.ManagedWorkload) (Plan, error) {
	manager := names.Workload(mw.Namespace, mw.Name)
	plan := Plan{Kind: "ManagedWorkload", Namespace: mw.Namespace, Name: mw.Name, FieldManager: manager}
	exists, err := p.admit(ctx, mw, &v1alpha1.ManagedWorkload{})
	if err != nil {
		plan.Action, plan.Message = ActionInvalid, redact.Message(err)
		return plan, nil
	}
	plan.Exists = exists
	ignore, err := ownershipcore.ParsePathSet(mw.Spec.IgnorePaths)
	if err != nil {
		plan.Action, plan.Message = ActionInvalid, fmt.Sprintf("ignorePaths: %v", err)
		return plan, nil
	}
	opts := ownershipcore.ApplyOptions{FieldManager: manager, Conflicts: conflicts.Workload(mw.Spec.ConflictPolicy, mw.Spec.ConflictRules), Ignore: ignore, DryRun: true}
	counts := map[string]int{}
	for _, r := range workloadspec.Resources(mw, p.Client.RESTMapper()) {
		op := p.planResource(ctx, r, opts)
		counts[op.Action]++
		plan.Objects = append(plan.Objects, op)
	}
	plan.Action, plan.Message = workloadAction(counts)
	return plan, nil
}
