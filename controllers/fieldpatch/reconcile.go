/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/conditions"
	"github.com/fieldops/fieldops/controllers/internal/notes"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/internal/conflicts"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// refreshRecord reads obj fresh from the apiserver and, when its record of
// previous owners differs from the cached copy's, takes the fresh record
// into obj's status. It reports whether anything changed.
func (r *Reconciler) refreshRecord(ctx context.Context, u *unit) bool {
	if u.target != nil {
		// A target's pass of a selector patch runs on the records the
		// reconcile read (and saved): nothing newer to read.
		return false
	}
	fresh := r.newObject()
	if err := r.reader().Get(ctx, client.ObjectKeyFromObject(u.obj), fresh); err != nil {
		return false
	}
	st, fst := u.st, fresh.PatchStatus()
	if fst.TargetUID == st.TargetUID && equality.Semantic.DeepEqual(fst.RecordedFields, st.RecordedFields) {
		return false
	}
	st.TargetUID, st.RecordedFields, st.PreviousOwners, st.LastAppliedTime = fst.TargetUID, fst.RecordedFields, fst.PreviousOwners, fst.LastAppliedTime
	return true
}

// targetMissing reports a target that does not exist (or was replaced
// while we wrote): nothing is written, and the target's watch brings the
// patch back when it appears.
func (r *Reconciler) targetMissing(u *unit, ref *unstructured.Unstructured) (skeleton.Step, error) {
	msg := fmt.Sprintf("target %s %s not found; it is patched when it appears", ref.GetKind(), objectName(ref))
	if c := meta.FindStatusCondition(u.st.Conditions, ConditionReady); c == nil || c.Reason != ReasonTargetNotFound {
		u.event(corev1.EventTypeWarning, ReasonTargetNotFound, "%s", msg)
	}
	setWaiting(u.st, u.gen(), ReasonTargetNotFound, msg)
	return skeleton.Stop(ctrl.Result{}), nil
}

// contestedByFieldops reports that another fieldops object took patched
// fields: no repair (two fieldops objects would otherwise write in turn
// forever); the patch waits until that object lets the fields go (it is
// deleted and hands them back, or its patch changes), which the target's
// watch brings here.
func (r *Reconciler) contestedByFieldops(u *unit, ledger *ownershipcore.Ledger, live *unstructured.Unstructured, manager string, rival ownershipcore.FieldopsObject) (skeleton.Step, error) {
	st := u.st
	msg := fmt.Sprintf("%s (field manager %q) took patched fields; fieldops objects do not fight each other: change or delete one of them", rival, manager)
	if c := meta.FindStatusCondition(st.Conditions, ConditionReady); c == nil || (c.Reason != ReasonContested && c.Reason != ReasonContestTimeout) || st.ContestedBy != manager {
		u.event(corev1.EventTypeWarning, ReasonContested, "%s", msg)
	}
	left := r.contested(u, manager, msg, time.Now())
	return skeleton.Stop(ctrl.Result{RequeueAfter: left}), patchintent.WriteLedger(st, ledger, string(live.GetUID()))
}

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

// contested reports that manager keeps taking the patched fields back
// (msg says how): Ready=False with reason Contested while the contest is
// younger than spec.contestTimeout, then Stalled with reason
// ContestTimeout naming the manager, so kstatus (`kubectl wait`, Flux
// health checks) sees a failure instead of progress that never ends.
// Repairs go on, backed off, either way. It returns the time left until
// the timeout (0 once past), for the caller to look again then.
func (r *Reconciler) contested(u *unit, manager, msg string, now time.Time) time.Duration {
	st, gen := u.st, u.gen()
	if st.ContestedBy != manager || st.ContestedSince == nil {
		st.ContestedSince = &metav1.Time{Time: now}
	}
	st.ContestedBy = manager
	timeout := contestTimeout(u.spec)
	if left := st.ContestedSince.Add(timeout).Sub(now); left > 0 {
		setWaiting(st, gen, ReasonContested, msg)
		return left
	}
	stalledMsg := fmt.Sprintf("contested by field manager %s for more than %s (spec.contestTimeout): %s", ownershipcore.DescribeManager(manager), timeout, msg)
	if c := meta.FindStatusCondition(st.Conditions, ConditionReady); c == nil || c.Reason != ReasonContestTimeout {
		u.event(corev1.EventTypeWarning, ReasonContestTimeout, "%s", stalledMsg)
	}
	setStalled(st, gen, ReasonContestTimeout, notes.Condition(stalledMsg))
	return 0
}

// observeTarget returns the target's managed fields and the set of fields
// it holds.
func (r *Reconciler) observeTarget(live *unstructured.Unstructured) (ownershipcore.ManagedFields, *fieldset.Set, error) {
	owners, err := ownershipcore.Owners(live)
	if err != nil {
		return nil, nil, err
	}
	present, err := r.Applier.FieldSet(live)
	if err != nil {
		return nil, nil, err
	}
	return owners, present, nil
}

// giveBackDropped lets go of the fields that left the patch before the
// apply (Decision.GiveBack: as deletion would let go of them, values
// stay), in one write guarded by the target's resourceVersion, and
// forgets them. It returns the object that write left, or the target as
// read when nothing was sent.
func (r *Reconciler) giveBackDropped(ctx context.Context, p *pass) (*unstructured.Unstructured, error) {
	give, dropped := p.d.GiveBack()
	if dropped.Empty() {
		return p.live, nil
	}
	target := p.ref.DeepCopy()
	target.SetUID(p.live.GetUID())
	var err error
	if give.Restore, err = r.readPreviousValues(ctx, p.applier, p.unit, p.uid()); err != nil {
		return nil, err
	}
	res, out, err := p.applier.LetGo(ctx, target, p.live, p.manager, give)
	if err != nil {
		return nil, err
	}
	p.d.GaveBack(dropped)
	if res.Action == ownershipcore.ActionUnchanged || res.Object == nil {
		return p.live, nil
	}
	given := out.Moved.Union(out.Released)
	p.event(corev1.EventTypeNormal, ReasonHandedBack, "%d fields left the patch and were given back (%s%s): %s", len(patchintent.Leaves(given)), policyOrDefault(p.spec.DeletionPolicy), restoredNote(out), strings.Join(firstN(patchintent.Leaves(given), 5), ", "))
	return res.Object, nil
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

// decide decides the reconcile (patchintent.Decide) with the intent
// built for the patch type, without ignorePaths and the paths the
// ignorable-paths plugins name. ignoreFailure is the failure of such a
// plugin, if one failed (its event is recorded here; pluginCondition
// reports it).
func (r *Reconciler) decide(ctx context.Context, u *unit, live *unstructured.Unstructured, manager string) (_ *patchintent.Decision, ignoreFailure string, _ error) {
	spec := u.spec
	ignore, err := ownershipcore.ParsePathSet(spec.IgnorePaths)
	if err != nil {
		return nil, "", skeleton.Terminal(ReasonInvalidIgnorePath, "ignorePaths: %v", err)
	}
	extra, failed, err := r.Plugins.IgnoredPaths(ctx, spec.IgnorePlugins, live)
	if err != nil {
		return nil, "", skeleton.Terminal(ReasonPluginUnavailable, "ignorePlugins: %v", err)
	}
	for _, f := range failed {
		ignoreFailure = fmt.Sprintf("%v; no extra paths ignored", f)
		u.event(corev1.EventTypeWarning, ReasonPluginFailed, "%s", ignoreFailure)
	}
	d, err := patchintent.Decide(r.Applier, patchintent.Input{Spec: spec, Status: u.st, Live: live, Manager: manager, Ignore: ignore.Union(extra)})
	var invalid *patchintent.InvalidError
	switch {
	case errors.As(err, &invalid):
		return nil, ignoreFailure, skeleton.Terminal(ReasonInvalidPatch, "%v", invalid.Err)
	case errors.Is(err, ownershipcore.ErrUnknownKind):
		return nil, ignoreFailure, &skeleton.ReasonError{Reason: ReasonUnknownKind, Err: err}
	case err != nil:
		return nil, ignoreFailure, err
	}
	return d, ignoreFailure, nil
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

// drifter reports drift on fields (intent fields this patch wrote
// before): whether a field's live value differs from the intent, and the
// manager that owns a drifted field now (empty when the field was removed
// and nobody owns it). Fields the patch has not written yet are never
// drift: taking them is an apply, and nobody is blamed for it. A field
// now owned by a manager the patch yields to is theirs: not drift.
func (r *Reconciler) drifter(live *unstructured.Unstructured, owners ownershipcore.ManagedFields, intent *unstructured.Unstructured, fields *fieldset.Set, manager string, yields func(string, metav1.ManagedFieldsOperationType) bool) (string, bool, error) {
	drift, err := r.Applier.OwnedDiffOf(live, owners, intent, manager)
	if err != nil {
		return "", false, err
	}
	who, drift, err := ownershipcore.Drift(live, drift.Intersection(fields), manager, yields)
	if err != nil || drift.Empty() {
		return "", false, err
	}
	return who, true, nil
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

// strategy is the conflict strategy of the patch: a built-in policy, or
// the plugin conflictPlugin with conflictPluginFallback (Fail by default)
// when it fails, the failure reported as a PluginFailed event. A policy or
// fallback it does not know (which admission refuses) is an InvalidPatch
// error, never a nil strategy.
//
// When the plugin is asked, PluginFailure says how it answered: True with
// its failure, or (it answered) ignoreFailure, this reconcile's failure of
// an ignorable-paths plugin, if any.
func (r *Reconciler) strategy(u *unit, ignoreFailure string) (ownershipcore.ConflictStrategy, error) {
	spec := u.spec
	if spec.ConflictPolicy != v1alpha1.ConflictPolicyPlugin {
		s, err := builtinStrategy(spec.ConflictPolicy)
		if err != nil {
			return nil, err
		}
		return conflicts.Rules(spec.ConflictRules, s), nil
	}
	fallback, err := fallbackStrategy(spec.ConflictPluginFallback)
	if err != nil {
		return nil, err
	}
	failed := false
	s, err := r.Plugins.Strategy(spec.ConflictPlugin, fallback, func(err error) {
		failed = true
		msg := fmt.Sprintf("%v; conflicts decided by conflictPluginFallback", err)
		u.event(corev1.EventTypeWarning, ReasonPluginFailed, "%s", msg)
		conditions.SetPluginFailure(&u.st.Conditions, u.gen(), msg)
	})
	if err != nil {
		return nil, skeleton.Terminal(ReasonPluginUnavailable, "conflictPlugin: %v", err)
	}
	// The condition changes only when the plugin is asked: it stays True
	// through reconciles with no conflict, and goes once it answers.
	answered := func() {
		if !failed {
			conditions.SetPluginFailure(&u.st.Conditions, u.gen(), ignoreFailure)
		}
	}
	return conflicts.Rules(spec.ConflictRules, askedStrategy{s, answered}), nil
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

// observe records an apply in the fieldops_ metrics: fieldops_apply_total
// counts writes and failed attempts, not an apply that changed nothing.
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
	if action != string(ownershipcore.ActionUnchanged) {
		// Writes and failed attempts only: a no-op apply is not counted.
		metrics.ApplyTotal.WithLabelValues(controller, kind, action).Inc()
	}
	if err == nil && drifter != "" && res.Action == ownershipcore.ActionConfigured {
		metrics.DriftTotal.WithLabelValues(controller, kind).Inc()
	}
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
