package fieldpatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/conditions"
	"github.com/fieldops/fieldops/controllers/internal/notes"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
)

// strategies maps conflictPolicy to the built-in conflict strategies.
var strategies = map[v1alpha1.ConflictPolicy]ownershipcore.ConflictStrategy{
	"":                           ownershipcore.Static(ownershipcore.DecisionForce),
	v1alpha1.ConflictPolicyForce: ownershipcore.Static(ownershipcore.DecisionForce),
	v1alpha1.ConflictPolicyFail:  ownershipcore.Static(ownershipcore.DecisionFail),
	v1alpha1.ConflictPolicyYield: ownershipcore.Static(ownershipcore.DecisionYield),
}

// reconcileNormal applies the patch: resolve the target → build the intent
// → record previous owners → back off from a contesting manager → apply →
// report.
func (r *Reconciler) reconcileNormal(ctx context.Context, obj v1alpha1.Patcher) (ctrl.Result, error) {
	st, spec, gen := obj.PatchStatus(), obj.PatchSpec(), obj.GetGeneration()
	manager := r.managerName(obj)
	st.FieldManager = manager
	if spec.Suspend {
		set(st, gen, ConditionReady, metav1.ConditionFalse, ReasonSuspended, "reconciliation is suspended")
		st.ObservedGeneration = gen
		return ctrl.Result{}, nil
	}

	ref, err := r.resolveTarget(obj)
	if err != nil {
		return r.fail(obj, err)
	}
	if err := r.watches.Ensure(ref.GroupVersionKind()); err != nil {
		return r.fail(obj, err)
	}
	live, err := r.Applier.Get(ctx, ref)
	if err != nil {
		return r.fail(obj, err)
	}
	if live == nil {
		msg := fmt.Sprintf("target %s %s not found; it is patched when it appears", ref.GetKind(), objectName(ref))
		setWaiting(st, gen, ReasonTargetNotFound, msg)
		r.event(obj, corev1.EventTypeWarning, ReasonTargetNotFound, "%s", msg)
		return ctrl.Result{}, nil
	}
	if who, ok := ownedByFieldops(live, manager); ok {
		return r.fail(obj, stalled(ReasonForbiddenTarget, "target %s %s is managed by fieldops (%s); fieldops does not patch its own objects", ref.GetKind(), objectName(ref), who))
	}

	intent, intentSet, err := r.intent(ctx, obj, live, manager)
	if err != nil {
		return r.fail(obj, err)
	}
	if err := r.recordOwners(ctx, obj, live, intentSet, manager); err != nil {
		return r.fail(obj, err)
	}

	// Drift on our fields caused by another manager: repair, unless that
	// manager keeps taking them back, then back off.
	uid, now := obj.GetUID(), time.Now()
	drifter := ""
	if st.LastAppliedTime != nil {
		if drifter, err = r.drifter(live, intent, manager); err != nil {
			return r.fail(obj, err)
		}
		if at := r.contests.next(uid, drifter, now); drifter != "" && !at.IsZero() {
			msg := fmt.Sprintf("field manager %q keeps taking back patched fields; next repair at %s", drifter, at.UTC().Format(time.RFC3339))
			st.ContestedBy = drifter
			setWaiting(st, gen, ReasonContested, msg)
			return ctrl.Result{RequeueAfter: at.Sub(now)}, nil
		}
	}

	strategy, err := r.strategy(obj)
	if err != nil {
		return r.fail(obj, err)
	}
	res, err := r.Applier.Apply(ctx, intent, ownershipcore.ApplyOptions{FieldManager: manager, Conflicts: strategy})
	r.observe(ref.GetKind(), res, err, drifter)
	var conflictErr *ownershipcore.ConflictError
	switch {
	case errors.As(err, &conflictErr):
		msg := describeConflicts(conflictErr.Conflicts)
		setStalled(st, gen, ReasonConflict, notes.Condition(msg))
		r.event(obj, corev1.EventTypeWarning, ReasonConflict, "%s", msg)
		return ctrl.Result{}, nil
	case errors.Is(err, ownershipcore.ErrUnknownKind):
		return r.fail(obj, &targetError{Reason: ReasonUnknownKind, Retry: true, Err: err})
	case errors.Is(err, ownershipcore.ErrInvalidIntent):
		// Refused locally, before any request: only a spec change helps.
		return r.fail(obj, stalled(ReasonInvalidPatch, "%w", err))
	case ownershipcore.IsTerminal(err):
		// 422 Invalid, 400, or a 500 for a patch the apiserver cannot type
		// (a float where an int32 belongs): terminal until the spec changes.
		return r.fail(obj, stalled(ReasonInvalidPatch, "the apiserver rejected the patch: %w", err))
	case err != nil:
		return r.fail(obj, err)
	}
	log.FromContext(ctx).V(1).Info("applied", "action", res.Action, "target", objectName(ref), "forced", len(res.Forced), "yielded", len(res.Yielded))

	if res.Action == ownershipcore.ActionConfigured || res.Action == ownershipcore.ActionCreated {
		st.LastAppliedTime = &metav1.Time{Time: now}
		if drifter != "" {
			if n := r.contests.repaired(uid, drifter, now); n >= 2 {
				r.event(obj, corev1.EventTypeWarning, ReasonContested, "field manager %q took patched fields back %d times; repairs are backed off", drifter, n)
			} else {
				r.event(obj, corev1.EventTypeNormal, ReasonDriftRepaired, "repaired patched fields taken by field manager %q", drifter)
			}
		} else {
			r.event(obj, corev1.EventTypeNormal, ReasonApplied, "applied %d fields to %s %s", len(intentLeaves(intentSet)), ref.GetKind(), objectName(ref))
		}
	}
	if err := r.reportFields(st, res.Object, manager); err != nil {
		return r.fail(obj, err)
	}
	st.ObservedGeneration = gen
	if c := r.contests.current(uid, now); c != "" {
		st.ContestedBy = c
		setWaiting(st, gen, ReasonContested, fmt.Sprintf("field manager %q keeps taking back patched fields; repairs are backed off", c))
		return ctrl.Result{}, nil
	}
	st.ContestedBy = ""
	msg := fmt.Sprintf("%d fields applied to %s %s", st.FieldCount, ref.GetKind(), objectName(ref))
	if len(res.Yielded) > 0 {
		msg += "; yielded " + describeConflicts(res.Yielded)
	}
	setReady(st, gen, msg)
	return ctrl.Result{}, nil
}

// intent builds the apply intent for the patch type, without ignorePaths,
// and its field set.
func (r *Reconciler) intent(ctx context.Context, obj v1alpha1.Patcher, live *unstructured.Unstructured, manager string) (*unstructured.Unstructured, *fieldpath.Set, error) {
	spec := obj.PatchSpec()
	ignore, err := ownershipcore.ParsePathSet(spec.IgnorePaths)
	if err != nil {
		return nil, nil, stalled(ReasonInvalidIgnorePath, "ignorePaths: %v", err)
	}
	extra, failed, err := r.Plugins.IgnoredPaths(ctx, spec.IgnorePlugins, live)
	if err != nil {
		return nil, nil, stalled(ReasonPluginUnavailable, "ignorePlugins: %v", err)
	}
	pluginFailure := ""
	for _, f := range failed {
		pluginFailure = fmt.Sprintf("%v; no extra paths ignored", f)
		r.event(obj, corev1.EventTypeWarning, ReasonPluginFailed, "%s", pluginFailure)
	}
	conditions.SetPluginFailure(&obj.PatchStatus().Conditions, obj.GetGeneration(), pluginFailure)
	ignore = ignore.Union(extra)
	var intent *unstructured.Unstructured
	if spec.Type == v1alpha1.PatchTypeApply || spec.Type == "" {
		intent, err = applyIntent(spec, live.GroupVersionKind(), live.GetNamespace())
	} else {
		var patched *unstructured.Unstructured
		if patched, err = patchedObject(spec, live); err == nil {
			intent, err = r.Applier.ChangedIntent(live, patched, manager)
		}
	}
	if err == nil && !ignore.Empty() {
		intent, err = r.Applier.RemoveFields(intent, ignore)
	}
	var set *fieldpath.Set
	if err == nil {
		set, err = r.Applier.FieldSet(intent)
	}
	if errors.Is(err, ownershipcore.ErrUnknownKind) {
		return nil, nil, &targetError{Reason: ReasonUnknownKind, Retry: true, Err: err}
	}
	if err != nil {
		return nil, nil, stalled(ReasonInvalidPatch, "patch (type %s) does not fit %s: %v", typeOrApply(spec.Type), live.GetKind(), err)
	}
	return intent, set, nil
}

// recordOwners records, before the first write to them, the managers that
// own fields of the intent, and persists that at once: a crash after the
// write must not lose who to hand the fields back to.
func (r *Reconciler) recordOwners(ctx context.Context, obj v1alpha1.Patcher, live *unstructured.Unstructured, intentSet *fieldpath.Set, manager string) error {
	st := obj.PatchStatus()
	snapshot := obj.DeepCopyObject().(v1alpha1.Patcher)
	recorded, err := ownershipcore.DecodeFields(st.RecordedFields)
	if err != nil {
		return err
	}
	previous, err := decodeOwners(st.PreviousOwners)
	if err != nil {
		return err
	}
	if st.TargetUID != string(live.GetUID()) {
		recorded, previous = fieldpath.NewSet(), nil
	}
	fresh := intentSet.Difference(recorded)
	if fresh.Empty() && st.TargetUID == string(live.GetUID()) {
		return nil
	}
	owners, err := ownershipcore.PreviousOwners(live, fresh, manager)
	if err != nil {
		return err
	}
	if st.PreviousOwners, err = encodeOwners(ownershipcore.MergeOwners(previous, owners)); err != nil {
		return err
	}
	if st.RecordedFields, err = ownershipcore.EncodeFields(recorded.Union(fresh)); err != nil {
		return err
	}
	st.TargetUID = string(live.GetUID())
	if err := r.Client.Status().Patch(ctx, obj, client.MergeFrom(snapshot)); err != nil {
		return fmt.Errorf("record previous owners: %w", err)
	}
	return nil
}

// drifter returns the manager that now owns a patched field whose value
// drifted from the intent, or "" when there is no such drift.
func (r *Reconciler) drifter(live, intent *unstructured.Unstructured, manager string) (string, error) {
	drift, err := r.Applier.OwnedDiff(live, intent, manager)
	if err != nil || drift.Empty() {
		return "", err
	}
	owners, err := ownershipcore.Owners(live)
	if err != nil {
		return "", err
	}
	if managers := owners.OwnersOf(drift, manager).Managers(); len(managers) > 0 {
		return managers[0], nil
	}
	return "", nil
}

// reportFields writes the fields manager owns on obj into status.
func (r *Reconciler) reportFields(st *v1alpha1.FieldPatchStatus, obj *unstructured.Unstructured, manager string) error {
	st.ManagedFields, st.FieldCount = nil, 0
	if obj == nil {
		return nil
	}
	owners, err := ownershipcore.Owners(obj)
	if err != nil {
		return err
	}
	if ours := owners.Applied(manager); ours != nil {
		st.ManagedFields = intentLeaves(ours.Fields)
		st.FieldCount = len(st.ManagedFields)
	}
	return nil
}

// strategy is the conflict strategy of the patch: a built-in policy, or
// the plugin conflictPlugin with conflictPluginFallback (Fail by default)
// when it fails, the failure reported as a PluginFailed event.
func (r *Reconciler) strategy(obj v1alpha1.Patcher) (ownershipcore.ConflictStrategy, error) {
	spec := obj.PatchSpec()
	if spec.ConflictPolicy != v1alpha1.ConflictPolicyPlugin {
		return strategies[spec.ConflictPolicy], nil
	}
	fallback := strategies[v1alpha1.ConflictPolicyFail]
	if spec.ConflictPluginFallback != "" {
		fallback = strategies[spec.ConflictPluginFallback]
	}
	s, err := r.Plugins.Strategy(spec.ConflictPlugin, fallback, func(err error) {
		msg := fmt.Sprintf("%v; conflicts decided by conflictPluginFallback", err)
		r.event(obj, corev1.EventTypeWarning, ReasonPluginFailed, "%s", msg)
		conditions.SetPluginFailure(&obj.PatchStatus().Conditions, obj.GetGeneration(), msg)
	})
	if err != nil {
		return nil, stalled(ReasonPluginUnavailable, "conflictPlugin: %v", err)
	}
	return s, nil
}

// observe records an apply in the fieldops_ metrics.
func (r *Reconciler) observe(kind string, res ownershipcore.Result, err error, drifter string) {
	controller := r.controllerName()
	action := string(res.Action)
	var conflictErr *ownershipcore.ConflictError
	switch {
	case errors.As(err, &conflictErr):
		action = string(ownershipcore.ActionConflicted)
		for _, c := range conflictErr.Conflicts {
			metrics.ConflictsTotal.WithLabelValues(controller, c.Manager).Inc()
		}
	case err != nil:
		action = metrics.ActionFailed
	}
	for _, c := range res.Forced {
		metrics.ConflictsTotal.WithLabelValues(controller, c.Manager).Inc()
	}
	for _, c := range res.Yielded {
		metrics.ConflictsTotal.WithLabelValues(controller, c.Manager).Inc()
	}
	metrics.ApplyTotal.WithLabelValues(controller, kind, action).Inc()
	if err == nil && drifter != "" && res.Action == ownershipcore.ActionConfigured {
		metrics.DriftTotal.WithLabelValues(controller, kind).Inc()
	}
}

// intentLeaves lists the leaf fields of a set, leaving out the identity
// fields every intent carries.
func intentLeaves(s *fieldpath.Set) []string {
	var out []string
	for _, p := range ownershipcore.FormatSet(s) {
		switch p {
		case ".apiVersion", ".kind", ".metadata.name", ".metadata.namespace":
			continue
		}
		out = append(out, p)
	}
	return out
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

func typeOrApply(t v1alpha1.PatchType) v1alpha1.PatchType {
	if t == "" {
		return v1alpha1.PatchTypeApply
	}
	return t
}

// decodeOwners reads status.previousOwners into managed fields entries.
func decodeOwners(in []v1alpha1.PreviousOwner) (ownershipcore.ManagedFields, error) {
	out := make(ownershipcore.ManagedFields, 0, len(in))
	for _, p := range in {
		set, err := ownershipcore.DecodeFields(p.FieldsV1)
		if err != nil {
			return nil, fmt.Errorf("status.previousOwners[%q]: %w", p.Manager, err)
		}
		out = append(out, ownershipcore.Entry{
			ManagerKey: ownershipcore.ManagerKey{Manager: p.Manager, Operation: p.Operation, APIVersion: p.APIVersion, Subresource: p.Subresource},
			Fields:     set,
		})
	}
	return out, nil
}

func encodeOwners(in ownershipcore.ManagedFields) ([]v1alpha1.PreviousOwner, error) {
	out := make([]v1alpha1.PreviousOwner, 0, len(in))
	for _, e := range in {
		f, err := ownershipcore.EncodeFields(e.Fields)
		if err != nil {
			return nil, err
		}
		out = append(out, v1alpha1.PreviousOwner{
			Manager: e.Manager, Operation: e.Operation, APIVersion: e.APIVersion, Subresource: e.Subresource,
			FieldsV1: f, Paths: ownershipcore.FormatSet(e.Fields),
		})
	}
	return out, nil
}
