/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package invariants

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	gomodjsonpatch "gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/fieldpatch"
	"github.com/fieldops/fieldops/controllers/workload"
	"github.com/fieldops/fieldops/ownershipcore"
)

// Result is the outcome of one run of a sequence.
type Result struct {
	Seq Sequence
	// Failed is the index of the step after which the first violations were
	// seen, or -1.
	Failed     int
	Violations []Violation
	// Notes say what each step did that its line does not (a request the
	// apiserver refused, the FieldPatch's condition after it).
	Notes    []string
	Duration time.Duration
	// From is the number of steps of the generated sequence when Shrink
	// made this one (0: not shrunk).
	From int
}

// Report prints the steps up to the failing one, with notes, and the
// violations.
func (r Result) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sequence seed %d, target %s %q", r.Seq.Seed, r.Seq.Kind.Name, targetName)
	if r.Seq.Faults > 0 {
		fmt.Fprintf(&b, ", with %.0f%% of fieldops' writes failing during each step", 100*r.Seq.Faults)
	}
	if r.From > 0 {
		target := "fuzz"
		if r.Seq.Faults > 0 {
			target = "fuzz-faults"
		}
		fmt.Fprintf(&b, " (shrunk from %d steps; make %s SEED=%d N=1 replays those)", r.From, target, r.Seq.Seed)
	}
	b.WriteString(":\n")
	for i, s := range r.Seq.Steps {
		if r.Failed >= 0 && i > r.Failed {
			break
		}
		fmt.Fprintf(&b, "  %d. %s\n", i+1, s)
		if i < len(r.Notes) && r.Notes[i] != "" {
			fmt.Fprintf(&b, "       → %s\n", r.Notes[i])
		}
	}
	if r.Failed >= 0 {
		fmt.Fprintf(&b, "  after step %d:\n", r.Failed+1)
		for _, v := range r.Violations {
			fmt.Fprintf(&b, "    %s\n", v)
		}
	}
	return b.String()
}

// Invariants returns the distinct invariant numbers violated, sorted.
func (r Result) Invariants() []int {
	seen := map[int]bool{}
	var out []int
	for _, v := range r.Violations {
		if !seen[v.Invariant] {
			seen[v.Invariant] = true
			out = append(out, v.Invariant)
		}
	}
	sort.Ints(out)
	return out
}

// run is one execution of a sequence.
type run struct {
	env    *Env
	seq    Sequence
	kind   *Kind
	ns     string
	model  *model
	recs   *reconciles
	mgr    *fieldops
	counts []*fieldops // every manager this run started, for their writes
	bumps  int
	faults *faults // nil: no fault injected
	// divergent are the step's other-manager requests whose answer
	// differed from the model's prediction: invariant (8).
	divergent []string
}

// Run executes seq in a new namespace with a new fieldops manager, checks
// the invariants after every step, and stops at the first step that
// breaks one.
func (e *Env) Run(ctx context.Context, seq Sequence) Result {
	start := time.Now()
	r := &run{env: e, seq: seq, kind: seq.Kind, model: newModel(seq.Kind), recs: newReconciles(),
		ns: fmt.Sprintf("inv-%d", e.runs.Add(1))}
	r.model.faults = seq.Faults > 0
	if seq.Faults > 0 {
		r.faults = newFaults(seq.Faults, seq.Seed)
	}
	res := Result{Seq: seq, Failed: -1}
	defer func() { res.Duration = time.Since(start) }()
	fail := func(i int, err error) Result {
		res.Failed, res.Violations = i, []Violation{{0, "harness: " + err.Error()}}
		return res
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}}
	if err := e.Client.Create(ctx, ns); err != nil {
		return fail(0, err)
	}
	if err := r.startFieldops(); err != nil {
		return fail(0, err)
	}
	defer func() { r.mgr.stop() }()
	last, _ := newSnapshot(nil)
	for i, s := range seq.Steps {
		vs, note, after, err := r.step(ctx, s, last)
		res.Notes = append(res.Notes, note)
		if err != nil {
			return fail(i, err)
		}
		if len(vs) > 0 {
			res.Failed, res.Violations = i, vs
			return res
		}
		last = after
	}
	return res
}

func (r *run) startFieldops() error {
	f, err := r.env.startFieldops(r.ns, r.recs, r.faults)
	if err != nil {
		return err
	}
	r.mgr = f
	r.counts = append(r.counts, f)
	return nil
}

// step does s, waits until fieldops has settled and checks the
// invariants. last is the target as the previous step left it.
func (r *run) step(ctx context.Context, s Step, last *snapshot) ([]Violation, string, *snapshot, error) {
	before, err := r.read(ctx)
	if err != nil {
		return nil, "", nil, err
	}
	var vs []Violation
	if before.rv != last.rv {
		// fieldops wrote between the steps (a repair it had backed off).
		vs = append(vs, r.model.checkLosses(last, nil, before)...)
		r.model.observe("", last, nil, before)
	}
	// Faults (if any) from the step's request to the first round of
	// settle: fieldops' reaction to the step, and a deletion's give-back,
	// meet them.
	pl, err := r.planFor(ctx, s)
	if err != nil {
		return nil, "", nil, err
	}
	injected := r.faults.injected()
	diverged := r.recs.divergenceCount()
	r.divergent = nil
	r.faults.set(true)
	written, note, err := r.do(ctx, s, before)
	if err != nil {
		r.faults.set(false)
		return nil, note, nil, err
	}
	gone := r.forget(s)
	if s.Op == OpPatchDelete || s.Op == OpWorkloadDelete {
		if v := r.waitGone(ctx, s); v != nil {
			r.faults.set(false)
			return append(vs, *v), note, nil, nil
		}
	}
	settled, reasons := r.settle(ctx)
	r.faults.set(false)
	vs = append(vs, settled...)
	note, divergences := r.stepNote(note, reasons, injected, diverged)
	vs = append(vs, divergences...)
	after, err := r.read(ctx)
	if err != nil {
		return nil, note, nil, err
	}
	vs = append(vs, r.model.checkLosses(before, written, after)...)
	planVs, planNote := r.checkPlan(ctx, pl, before, after)
	vs = append(vs, planVs...)
	if planNote != "" {
		note = strings.TrimPrefix(note+"; "+planNote, "; ")
	}
	vs = append(vs, r.checkStep(s, gone, before, written, after)...)
	return vs, note, after, nil
}

// forgotten is the model of the object a deletion step deleted: a
// FieldPatch's or a workload's.
type forgotten struct {
	patch    *patchModel
	workload string
}

// forget takes the object a deletion step deletes out of the live model
// (settle leaves it alone) and returns its model, kept for the checks of
// its release.
func (r *run) forget(s Step) forgotten {
	var gone forgotten
	switch s.Op {
	case OpPatchDelete:
		gone.patch = r.model.patches[s.Who]
		delete(r.model.patches, s.Who)
	case OpWorkloadDelete:
		gone.workload = r.model.workloads[s.Who]
		delete(r.model.workloads, s.Who)
	}
	return gone
}

// stepNote adds to a step's note the redefaulted divergences, the faults
// injected and the Ready reasons, and returns the other divergences
// (since the counts injected and diverged) as violations of (8).
func (r *run) stepNote(note, reasons string, injected int64, diverged int) (string, []Violation) {
	var vs []Violation
	for _, d := range append(r.divergent, r.recs.divergencesSince(diverged)...) {
		if strings.HasPrefix(d, redefaulted) {
			note = strings.TrimPrefix(note+"; "+d, "; ")
			continue
		}
		vs = append(vs, Violation{8, d})
	}
	if n := r.faults.injected() - injected; n > 0 {
		note = strings.TrimPrefix(fmt.Sprintf("%s; %d writes of fieldops failed (injected)", note, n), "; ")
	}
	if reasons != "" {
		note = strings.TrimPrefix(note+"; "+reasons, "; ")
	}
	return note, vs
}

// checkStep checks what s released (an edited or deleted FieldPatch, a
// deleted workload) and has the model observe the step.
func (r *run) checkStep(s Step, gone forgotten, before, written, after *snapshot) []Violation {
	var vs []Violation
	actor := ""
	switch s.Op {
	case OpCreate, OpApply, OpUpdate:
		actor = s.Who
	case OpPatchEdit:
		vs = r.model.checkRelease(r.model.patches[s.Who], before, after, false)
	case OpPatchDelete:
		vs = r.model.checkRelease(gone.patch, before, after, true)
	case OpWorkloadDelete:
		vs = r.model.checkWorkloadGone(s.Who, gone.workload, after)
		r.model.workloadLeft(gone.workload, before)
	}
	r.model.observe(actor, before, written, after)
	return vs
}

// target returns an empty object naming the target.
func (r *run) target() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(r.kind.GVK())
	u.SetNamespace(r.ns)
	u.SetName(targetName)
	return u
}

// read reads the target from the apiserver (empty before it exists).
func (r *run) read(ctx context.Context) (*snapshot, error) {
	u := r.target()
	err := r.env.Client.Get(ctx, client.ObjectKeyFromObject(u), u)
	if apierrors.IsNotFound(err) {
		return newSnapshot(nil)
	}
	if err != nil {
		return nil, err
	}
	return newSnapshot(u)
}

// objectOf builds the object holding fields.
func objectOf(fields []Field) map[string]interface{} {
	var obj interface{} = map[string]interface{}{}
	for _, f := range fields {
		obj = setPath(obj, mustPath(f.Path), runtime.DeepCopyJSONValue(f.Value))
	}
	return obj.(map[string]interface{})
}

// do performs s. For a request of another manager it returns the
// apiserver's response (the target just after it, before fieldops
// reacts); the note says what the apiserver refused, if anything.
func (r *run) do(ctx context.Context, s Step, before *snapshot) (*snapshot, string, error) {
	switch s.Op {
	case OpCreate, OpApply:
		return r.apply(ctx, s, before)
	case OpUpdate:
		return r.update(ctx, s)
	case OpPatchCreate:
		return nil, "", r.createPatch(ctx, s)
	case OpPatchEdit:
		return nil, "", r.editPatch(ctx, s)
	case OpPatchDelete:
		return nil, "", r.deletePatch(ctx, s)
	case OpWorkloadApply:
		return nil, "", r.applyWorkload(ctx, s)
	case OpWorkloadDelete:
		mw := &v1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Name: s.Who, Namespace: r.ns}}
		if err := r.env.Client.Delete(ctx, mw); err != nil {
			return nil, "", fmt.Errorf("delete ManagedWorkload %s: %w", s.Who, err)
		}
		return nil, "", nil
	case OpRestart:
		r.mgr.stop()
		return nil, "", r.startFieldops()
	}
	return nil, "", fmt.Errorf("unknown step %v", s)
}

// createPatch creates s's FieldPatch (newPatch) and its model.
func (r *run) createPatch(ctx context.Context, s Step) error {
	fp, err := r.newPatch(s)
	if err != nil {
		return err
	}
	if err := r.env.Client.Create(ctx, fp); err != nil {
		return fmt.Errorf("create FieldPatch %s: %w", s.Who, err)
	}
	r.model.patches[s.Who] = &patchModel{name: s.Who, manager: ownershipcore.ManagerName(fieldpatch.ManagerPrefix, r.ns, s.Who),
		conflict: s.Conflict, deletion: s.Deletion, records: map[string]*record{}}
	return nil
}

// newPatch is the FieldPatch a create step makes, by name or by
// targetSelector.
func (r *run) newPatch(s Step) (*v1alpha1.FieldPatch, error) {
	fp := &v1alpha1.FieldPatch{ObjectMeta: metav1.ObjectMeta{Name: s.Who, Namespace: r.ns}}
	if err := r.fillPatch(fp, s); err != nil {
		return nil, err
	}
	apiVersion := r.kind.APIVersion
	if s.APIVersion != "" {
		apiVersion = s.APIVersion
	}
	if s.Selector {
		fp.Spec.TargetSelector = &v1alpha1.TargetSelector{APIVersion: apiVersion, Kind: r.kind.Name,
			LabelSelector: &metav1.LabelSelector{}, Names: []string{targetName}}
	} else {
		fp.Spec.Target = v1alpha1.TargetReference{APIVersion: apiVersion, Kind: r.kind.Name, Name: targetName}
	}
	return fp, nil
}

// updatePatch reads s's FieldPatch, changes it with change and updates
// it, retried on conflicts.
func (r *run) updatePatch(ctx context.Context, s Step, change func(*v1alpha1.FieldPatch) error) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fp := &v1alpha1.FieldPatch{}
		if err := r.env.Client.Get(ctx, types.NamespacedName{Namespace: r.ns, Name: s.Who}, fp); err != nil {
			return err
		}
		if err := change(fp); err != nil {
			return err
		}
		return r.env.Client.Update(ctx, fp)
	})
}

// editPatch sets s's patch on its FieldPatch.
func (r *run) editPatch(ctx context.Context, s Step) error {
	if err := r.updatePatch(ctx, s, func(fp *v1alpha1.FieldPatch) error { return r.fillPatch(fp, s) }); err != nil {
		return fmt.Errorf("edit FieldPatch %s: %w", s.Who, err)
	}
	return nil
}

// deletePatch deletes s's FieldPatch or, for an expiry, sets its expiry
// time in the past, which ends the patch at once.
func (r *run) deletePatch(ctx context.Context, s Step) error {
	if s.Expire {
		err := r.updatePatch(ctx, s, func(fp *v1alpha1.FieldPatch) error {
			fp.Spec.ExpiresAfter, fp.Spec.ExpiresAt = nil, &metav1.Time{Time: time.Now().Add(-time.Second)}
			return nil
		})
		if err != nil {
			return fmt.Errorf("expire FieldPatch %s: %w", s.Who, err)
		}
		return nil
	}
	fp := &v1alpha1.FieldPatch{ObjectMeta: metav1.ObjectMeta{Name: s.Who, Namespace: r.ns}}
	if err := r.env.Client.Delete(ctx, fp); err != nil {
		return fmt.Errorf("delete FieldPatch %s: %w", s.Who, err)
	}
	return nil
}

// response turns the result of another manager's request into the
// snapshot just after it; a request the apiserver refused changed nothing.
func (r *run) response(u *unstructured.Unstructured, before *snapshot, err error) (*snapshot, string, error) {
	switch {
	case apierrors.IsConflict(err), apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return before, "refused: " + strings.Join(strings.Fields(err.Error()), " "), nil
	case err != nil:
		return nil, "", err
	}
	s, err := newSnapshot(u)
	return s, "", err
}

// apply sends s's apply (OpCreate, OpApply) guarded by the resourceVersion
// of the target as read just before it (retried when fieldops wrote in
// between), so that the model predicts it from that object: a divergence
// is invariant (8).
func (r *run) apply(ctx context.Context, s Step, before *snapshot) (*snapshot, string, error) {
	p, err := r.env.predictor()
	if err != nil {
		return nil, "", err
	}
	for attempt := 0; ; attempt++ {
		intent := &unstructured.Unstructured{Object: objectOf(s.Fields)}
		intent.SetGroupVersionKind(r.kind.GVK())
		if s.APIVersion != "" {
			intent.SetAPIVersion(s.APIVersion)
		}
		intent.SetNamespace(r.ns)
		intent.SetName(targetName)
		live, u := intent.DeepCopy(), intent.DeepCopy()
		switch err := r.env.Client.Get(ctx, client.ObjectKeyFromObject(live), live); {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			return nil, "", err
		default:
			u.SetResourceVersion(live.GetResourceVersion())
		}
		opts := []client.ApplyOption{client.FieldOwner(s.Who)}
		force := s.Force || s.Op == OpCreate
		if force {
			opts = append(opts, client.ForceOwnership)
		}
		err := r.env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), opts...)
		if isStaleApply(err) && attempt < 5 {
			continue
		}
		if err == nil {
			if diff := p.checkApply(ctx, live, intent, u, s.Who, force); diff != "" {
				r.divergent = append(r.divergent, divergence(s, diff))
			}
		}
		return r.response(u, before, err)
	}
}

// update sends s's changes as a JSON merge patch or a JSON patch computed
// from the live target, guarded by its resourceVersion (retried when
// fieldops wrote in between).
func (r *run) update(ctx context.Context, s Step) (*snapshot, string, error) {
	for attempt := 0; ; attempt++ {
		live := r.target()
		if s.APIVersion != "" {
			live.SetAPIVersion(s.APIVersion)
		}
		if err := r.env.Client.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil {
			return nil, "", err
		}
		before, err := newSnapshot(live)
		if err != nil {
			return nil, "", err
		}
		changed := changedObject(live, s.Fields)
		patch, err := guardedPatch(live, changed, s.JSONPatch)
		if err != nil {
			return nil, "", err
		}
		read := live.DeepCopy()
		err = r.env.Client.Patch(ctx, live, patch, client.FieldOwner(s.Who))
		stale := apierrors.IsConflict(err) || s.JSONPatch && apierrors.IsInvalid(err) && strings.Contains(err.Error(), "test")
		if stale && attempt < 5 {
			continue
		}
		if err == nil {
			if diff := r.checkUpdate(ctx, read, changed, live, s.Who); diff != "" {
				r.divergent = append(r.divergent, divergence(s, diff))
			}
		}
		return r.response(live, before, err)
	}
}

// changedObject is a copy of live with fields set (a nil value removes
// the field).
func changedObject(live *unstructured.Unstructured, fields []Field) interface{} {
	var changed interface{} = runtime.DeepCopyJSON(live.Object)
	for _, f := range fields {
		if f.Value == nil {
			changed = removePath(changed, mustPath(f.Path))
		} else {
			changed = setPath(changed, mustPath(f.Path), runtime.DeepCopyJSONValue(f.Value))
		}
	}
	return changed
}

// guardedPatch is the patch from live to changed, guarded by live's
// resourceVersion: a JSON patch that tests it first, or a JSON merge
// patch that sets it.
func guardedPatch(live *unstructured.Unstructured, changed interface{}, jsonPatch bool) (client.Patch, error) {
	from, _ := json.Marshal(live.Object)
	to, _ := json.Marshal(changed)
	if jsonPatch {
		ops, err := gomodjsonpatch.CreatePatch(from, to)
		if err != nil {
			return nil, err
		}
		guarded := []interface{}{map[string]interface{}{"op": "test", "path": "/metadata/resourceVersion", "value": live.GetResourceVersion()}}
		for _, op := range ops {
			guarded = append(guarded, op)
		}
		b, _ := json.Marshal(guarded)
		return client.RawPatch(types.JSONPatchType, b), nil
	}
	b, err := jsonpatch.CreateMergePatch(from, to)
	if err != nil {
		return nil, err
	}
	var m map[string]interface{}
	_ = json.Unmarshal(b, &m)
	m = setPath(m, mustPath(".metadata.resourceVersion"), live.GetResourceVersion()).(map[string]interface{})
	b, _ = json.Marshal(m)
	return client.RawPatch(types.MergePatchType, b), nil
}

// checkUpdate is the predictor's checkUpdate of an update of read into
// changed (a JSON value) answered with answer.
func (r *run) checkUpdate(ctx context.Context, read *unstructured.Unstructured, changed interface{}, answer *unstructured.Unstructured, who string) string {
	p, err := r.env.predictor()
	if err != nil {
		return "harness: " + err.Error()
	}
	obj, ok := changed.(map[string]interface{})
	if !ok {
		return "harness: the changed object is no JSON object"
	}
	return p.checkUpdate(ctx, read, &unstructured.Unstructured{Object: obj}, answer, who)
}

// fillPatch sets fp's patch, type and policies from s.
func (r *run) fillPatch(fp *v1alpha1.FieldPatch, s Step) error {
	var raw []byte
	var err error
	if s.Type == v1alpha1.PatchTypeJSON {
		var ops []map[string]interface{}
		for _, f := range s.Fields {
			ops = append(ops, map[string]interface{}{"op": "add", "path": pointer(mustPath(f.Path)), "value": f.Value})
		}
		if s.Append != "" {
			ops = append(ops, map[string]interface{}{"op": "add", "path": "/spec/setList/-", "value": s.Append})
		}
		raw, err = json.Marshal(ops)
	} else {
		raw, err = json.Marshal(objectOf(s.Fields))
	}
	if err != nil {
		return err
	}
	fp.Spec.Type, fp.Spec.Patch = s.Type, runtime.RawExtension{Raw: raw}
	fp.Spec.ConflictPolicy, fp.Spec.DeletionPolicy = s.Conflict, s.Deletion
	return nil
}

// applyWorkload creates or updates the workload s names, with the target
// (s's fields) as its one resource, never pruned.
func (r *run) applyWorkload(ctx context.Context, s Step) error {
	obj := objectOf(s.Fields)
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(r.kind.APIVersion)
	u.SetKind(r.kind.Name)
	u.SetName(targetName)
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	if _, ok := r.model.workloads[s.Who]; !ok {
		mw := &v1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Name: s.Who, Namespace: r.ns},
			Spec: v1alpha1.ManagedWorkloadSpec{Resources: []runtime.RawExtension{{Raw: raw}}, Prune: new(bool)}}
		if err := r.env.Client.Create(ctx, mw); err != nil {
			return fmt.Errorf("create ManagedWorkload %s: %w", s.Who, err)
		}
		r.model.workloads[s.Who] = workload.ManagerName(r.ns, s.Who)
		return nil
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mw := &v1alpha1.ManagedWorkload{}
		if err := r.env.Client.Get(ctx, types.NamespacedName{Namespace: r.ns, Name: s.Who}, mw); err != nil {
			return err
		}
		mw.Spec.Resources = []runtime.RawExtension{{Raw: raw}}
		return r.env.Client.Update(ctx, mw)
	})
}

// waitGone waits until the deleted FieldPatch or workload is gone (its
// finalizer done); when it is not, that is invariant (2).
func (r *run) waitGone(ctx context.Context, s Step) *Violation {
	var obj client.Object = &v1alpha1.FieldPatch{}
	controller := "fieldpatch"
	if s.Op == OpWorkloadDelete {
		obj, controller = &v1alpha1.ManagedWorkload{}, "managedworkload"
	}
	key := types.NamespacedName{Namespace: r.ns, Name: s.Who}
	err := r.poll(ctx, func() (bool, error) {
		err := r.env.Client.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err == nil {
		return nil
	}
	why := r.recs.lastError(reconcileKey(controller, r.ns, s.Who))
	var conds []metav1.Condition
	switch o := obj.(type) {
	case *v1alpha1.FieldPatch:
		conds = o.Status.Conditions
	case *v1alpha1.ManagedWorkload:
		conds = o.Status.Conditions
	}
	if c := meta.FindStatusCondition(conds, fieldpatch.ConditionReady); c != nil {
		why = "Ready " + c.Reason + ": " + c.Message
	}
	return &Violation{2, fmt.Sprintf("%s was not gone %s after its deletion (%v): %s", s.Who, r.env.Timeout, err, why)}
}

// poll calls cond every 10 ms until it is true, fails, or Env.Timeout
// passes.
func (r *run) poll(ctx context.Context, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, r.env.Timeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.New("timed out")
		case <-tick.C:
		}
	}
}

// maxRounds bounds the reconciles settle triggers: fieldops must reach a
// fixed point (a reconcile that writes nothing) within it.
const maxRounds = 4

// settle waits until fieldops has acted on the last step: in rounds, it
// waits until the manager's cache holds the target as the apiserver has
// it, touches every live FieldPatch and workload (an annotation) and waits
// until a reconcile of each that started after the touch has finished. It
// stops at a round in which fieldops wrote nothing. Still writing after
// maxRounds is invariant (6); a FieldPatch that ends InvalidPatch or
// ApplyFailed is invariant (7): the generator only makes patches that fit
// the target. It returns the FieldPatches' Ready reasons.
func (r *run) settle(ctx context.Context) ([]Violation, string) {
	objs := r.liveObjects()
	if len(objs) == 0 {
		return nil, ""
	}
	rounds := maxRounds
	if r.faults != nil {
		rounds++ // the first round meets faults: it proves nothing settled
	}
	for round := 1; ; round++ {
		if err := r.waitCached(ctx); err != nil {
			return []Violation{{6, fmt.Sprintf("the fieldops manager's cache did not catch up with the target: %v", err)}}, ""
		}
		w0 := r.writes()
		r.bumps++
		for _, o := range objs {
			if v := r.touch(ctx, o); v != nil {
				return []Violation{*v}, ""
			}
		}
		w1 := r.writes()
		// From the second round on, fieldops must reach a fixed point
		// without faults, from wherever they left it.
		r.faults.set(false)
		if w1.total == w0.total && (r.faults == nil || round > 1) {
			break
		}
		if round == rounds {
			return []Violation{{6, fmt.Sprintf("fieldops still writes after %d rounds of one reconcile each: %s in the last round", rounds, w1.minus(w0))}}, ""
		}
	}
	return r.readyReasons(ctx)
}

// liveObject is a live fieldops object and the controller that
// reconciles it.
type liveObject struct {
	obj        client.Object
	controller string
}

// liveObjects are the live FieldPatches and workloads of the model.
func (r *run) liveObjects() []liveObject {
	var objs []liveObject
	for name := range r.model.patches {
		objs = append(objs, liveObject{&v1alpha1.FieldPatch{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.ns}}, "fieldpatch"})
	}
	for name := range r.model.workloads {
		objs = append(objs, liveObject{&v1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.ns}}, "managedworkload"})
	}
	return objs
}

// touch sets the barrier annotation (r.bumps) on o and waits until a
// reconcile of o that started after it has finished; a failure to touch
// is the harness's, a reconcile that does not come is invariant (6).
func (r *run) touch(ctx context.Context, o liveObject) *Violation {
	k := reconcileKey(o.controller, r.ns, o.obj.GetName())
	started, _ := r.recs.counts(k)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"invariants.fieldops.dev/barrier":"%d"}}}`, r.bumps)
	if err := r.env.Client.Patch(ctx, o.obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return &Violation{0, fmt.Sprintf("harness: touch %s: %v", o.obj.GetName(), err)}
	}
	err := r.poll(ctx, func() (bool, error) {
		s, e := r.recs.counts(k)
		return s > started && e == s, nil
	})
	if err != nil {
		return &Violation{6, fmt.Sprintf("no reconcile of %s finished within %s of a touch (last error: %s)", o.obj.GetName(), r.env.Timeout, r.recs.lastError(k))}
	}
	return nil
}

// readyReasons are the live FieldPatches' Ready reasons, sorted, and a
// violation of (7) for each that ends InvalidPatch or ApplyFailed.
func (r *run) readyReasons(ctx context.Context) ([]Violation, string) {
	var vs []Violation
	var notes []string
	for name := range r.model.patches {
		c := r.readyCondition(ctx, name)
		notes = append(notes, name+" "+c.Reason)
		if c.Reason == fieldpatch.ReasonInvalidPatch || c.Reason == fieldpatch.ReasonApplyFailed {
			vs = append(vs, Violation{7, fmt.Sprintf("%s, a patch that fits the target, ends %s: %s", name, c.Reason, c.Message)})
		}
	}
	sort.Strings(notes)
	return vs, strings.Join(notes, ", ")
}

func (r *run) readyCondition(ctx context.Context, name string) *metav1.Condition {
	fp := &v1alpha1.FieldPatch{}
	if err := r.env.Client.Get(ctx, types.NamespacedName{Namespace: r.ns, Name: name}, fp); err != nil {
		return &metav1.Condition{Reason: "?", Message: err.Error()}
	}
	if c := meta.FindStatusCondition(fp.Status.Conditions, fieldpatch.ConditionReady); c != nil {
		return c
	}
	return &metav1.Condition{Reason: "NoReadyCondition"}
}

// waitCached waits until the fieldops manager's target cache holds (or,
// while no fieldops object refers to it, reads) the target at
// the apiserver's resourceVersion or later (etcd's resourceVersions are
// increasing integers; the test relies on it).
func (r *run) waitCached(ctx context.Context) error {
	live := r.target()
	if err := r.env.Client.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil {
		return err
	}
	want, err := strconv.ParseUint(live.GetResourceVersion(), 10, 64)
	if err != nil {
		return err
	}
	return r.poll(ctx, func() (bool, error) {
		cached := r.target()
		if err := r.mgr.targets.Get(ctx, client.ObjectKeyFromObject(cached), cached); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		got, err := strconv.ParseUint(cached.GetResourceVersion(), 10, 64)
		return got >= want, err
	})
}

// writeCount is fieldops' writes to the run's objects, by URL suffix.
type writeCount struct {
	total  int
	bySuff map[string]int
}

func (w writeCount) minus(o writeCount) string {
	var parts []string
	for s, n := range w.bySuff {
		if d := n - o.bySuff[s]; d > 0 {
			parts = append(parts, fmt.Sprintf("%d to …%s", d, s))
		}
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d writes (%s)", w.total-o.total, strings.Join(parts, ", "))
}

// writes counts fieldops' writes to the target, the FieldPatches and the
// workloads of the run (events left out: they are sent asynchronously).
func (r *run) writes() writeCount {
	suffixes := []string{"/" + r.kind.Resource + "/" + targetName}
	for _, s := range r.seq.Steps {
		switch s.Op {
		case OpPatchCreate:
			suffixes = append(suffixes, "/fieldpatches/"+s.Who, "/fieldpatches/"+s.Who+"/status")
		case OpWorkloadApply:
			suffixes = append(suffixes, "/managedworkloads/"+s.Who, "/managedworkloads/"+s.Who+"/status")
		}
	}
	w := writeCount{bySuff: map[string]int{}}
	for _, s := range suffixes {
		if _, dup := w.bySuff[s]; dup {
			continue
		}
		n := 0
		for _, f := range r.counts {
			n += f.writes.Writes("/namespaces/" + r.ns + s)
		}
		w.bySuff[s] = n
		w.total += n
	}
	return w
}
