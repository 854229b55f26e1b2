/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/controllers/internal/targetcache"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/internal/patchtarget"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// targetPass runs the single-target phases for the target h (held by the
// selector watch; decoded into a copy of the pass's own) on the
// target's unit, holding its stored record. A target whose version
// and the patch's generation are those of a pass that found it applied
// is skipped before it is decoded (no decision, no request): a quiet
// selector patch costs nothing.
//
// A target without a record before this reconcile (sp.wroteBefore) has
// no earlier write: a record saved in this reconcile (errRecordFirst) is
// not one, and what differs from it is no drift.
func (sr *selectorReconciler) targetPass(ctx context.Context, sp *selectorPass, h targetcache.Held, stored *targetEntry) targetResult {
	uid, obj := h.UID, sp.obj
	live, early, done := sr.beforePass(sp, h, stored)
	if done {
		return early
	}
	gvk := live.GroupVersionKind()
	u := targetUnit(obj, live, stored, sp.w.reason(uid), sp.manager, sp.now, sp.events)
	if !sp.wroteBefore[uid] {
		u.st.LastAppliedTime = nil
	}
	ref := &unstructured.Unstructured{}
	ref.SetGroupVersionKind(gvk)
	ref.SetNamespace(live.GetNamespace())
	ref.SetName(live.GetName())
	p := &pass{unit: u, manager: sp.manager, ref: ref, live: live, applier: sp.applier, account: sp.account}
	res, _, err := skeleton.RunPhases(ctx, p, sr.run.phases())
	if u.target.pending != nil {
		return targetResult{entry: stored, pending: u.target.pending}
	}
	out := targetResult{requeue: res.RequeueAfter, wrote: p.res.Wrote()}
	sst := u.st
	entry := &targetEntry{rec: v1alpha1.TargetRecord{Namespace: live.GetNamespace(), Name: live.GetName(), UID: string(uid), Fields: int32(sst.FieldCount), ContestedBy: sst.ContestedBy, ContestedSince: sst.ContestedSince}}
	entry.takeLedger(sst)
	after := live
	if p.res.Object != nil {
		after = p.res.Object
	} else if p.current != nil {
		after = p.current
	}
	if p.res.Wrote() && p.res.Object != nil {
		sp.w.setWrote(uid, p.res.Object.GetResourceVersion())
		if !sp.sel.labels.Matches(labels.Set(p.res.Object.GetLabels())) {
			sp.w.setLeftOwn(uid, obj.GetGeneration())
		}
	}
	classify(&out, sst, err)
	// Every target a pass ran for keeps its record, fields or none: it
	// was saved ahead of the pass's writes (recordAhead), and a record
	// dropped would be saved ahead again at the next reconcile.
	out.entry = entry
	if out.class == classApplied && res.RequeueAfter == 0 {
		sp.w.setConverged(uid, fmt.Sprintf("%s/%d", after.GetResourceVersion(), obj.GetGeneration()))
	} else {
		sp.w.setConverged(uid, "")
	}
	return out
}

// beforePass is what a target's pass comes to before its phases run
// (done), or the target decoded: applied already (its version and the
// patch's generation are those of a pass that found it applied), taken
// out of the selector by the patch's own write and put in again by the
// give-back, not decoded, or one fieldops never patches.
func (sr *selectorReconciler) beforePass(sp *selectorPass, h targetcache.Held, stored *targetEntry) (_ *unstructured.Unstructured, _ targetResult, done bool) {
	uid, gen := h.UID, sp.obj.GetGeneration()
	// A record with no field is decided again (it may be one saved ahead
	// of a write whose result was not saved).
	if stored != nil && stored.rec.Fields > 0 && sp.w.isConverged(uid, fmt.Sprintf("%s/%d", h.ResourceVersion, gen)) {
		return nil, targetResult{entry: stored, class: classApplied}, true
	}
	if sp.w.leftOwn(uid, gen) {
		// Applying again would loop, until the patch changes.
		return nil, targetResult{entry: sr.keptRecord(sp, h, stored), class: classFailed, terminal: true, reason: ReasonInvalidPatch,
			message: "the patch's own write takes this object out of spec.targetSelector (spec.patch sets a label the selector matches), and giving its fields back puts it in again; not patched again until the patch changes"}, true
	}
	live, err := h.Object()
	if err != nil {
		return nil, targetResult{entry: sr.keptRecord(sp, h, stored), class: classFailed, reason: ReasonApplyFailed, message: err.Error(), err: err}, true
	}
	if msg, skip := sr.skipped(live); skip {
		return nil, targetResult{entry: sr.keptRecord(sp, h, stored), class: classSkipped, reason: ReasonForbiddenTarget, message: msg}, true
	}
	return live, targetResult{}, false
}

// skipped says why fieldops never patches live (its own objects, and the
// objects it manages), as it refuses such a single target.
func (sr *selectorReconciler) skipped(live *unstructured.Unstructured) (string, bool) {
	if why, ok := sr.protected(live.GroupVersionKind(), live.GetNamespace(), live.GetName()); ok {
		return why, true
	}
	if err := patchtarget.ManagedByFieldops(live); err != nil {
		return "skipped: " + err.Error(), true
	}
	return "", false
}

// protected says why fieldops never patches the object namespace/name of
// gvk (its own objects, known from their names).
func (sr *selectorReconciler) protected(gvk schema.GroupVersionKind, namespace, name string) (string, bool) {
	if why, ok := patchtarget.Protected(gvk.Group, gvk.Kind, namespace, name, sr.ownNamespace); ok {
		return fmt.Sprintf("skipped: %s; fieldops does not patch its own objects", why), true
	}
	return "", false
}

// keptRecord is the record a target h keeps when its pass stops before
// its phases (skipped, or not decoded): stored, or, unless fieldops
// protects the object (recordAhead did not record it), a record with no
// field, so that the next reconcile does not record it ahead again.
func (sr *selectorReconciler) keptRecord(sp *selectorPass, h targetcache.Held, stored *targetEntry) *targetEntry {
	if stored != nil {
		return stored
	}
	if _, ok := sr.protected(sp.sel.gvk, h.Namespace, h.Name); ok {
		return nil
	}
	return &targetEntry{rec: v1alpha1.TargetRecord{Namespace: h.Namespace, Name: h.Name, UID: string(h.UID)}}
}

// targetUnit is the unit of the target live of the selector patch obj:
// obj's spec with target naming live, and as status the stored record of
// live (and, for a target not applied at the last reconcile, that reason,
// so that its events are recorded when the reason changes, as for a
// single target). Its events go to events, named after the target.
func targetUnit(obj v1alpha1.Patcher, live *unstructured.Unstructured, stored *targetEntry, lastReason, manager string, now time.Time, events *eventLog) *unit {
	spec := obj.PatchSpec().DeepCopy()
	spec.TargetSelector = nil
	spec.Target = v1alpha1.TargetReference{APIVersion: live.GetAPIVersion(), Kind: live.GetKind(), Name: live.GetName(), Namespace: live.GetNamespace()}
	pst := obj.PatchStatus()
	st := v1alpha1.FieldPatchStatus{ObservedGeneration: pst.ObservedGeneration, FieldManager: manager}
	gen := obj.GetGeneration()
	if stored != nil {
		stored.ledgerStatus(&st)
		st.FieldCount = int(stored.rec.Fields)
		st.ContestedBy, st.ContestedSince = stored.rec.ContestedBy, stored.rec.ContestedSince.DeepCopy()
		st.LastAppliedTime = pst.LastAppliedTime.DeepCopy()
		if st.LastAppliedTime == nil {
			st.LastAppliedTime = &metav1.Time{Time: now}
		}
	}
	switch {
	case lastReason != "":
		setWaiting(&st, gen, lastReason, "")
	case stored != nil:
		setReady(&st, gen, "")
	}
	name := fmt.Sprintf("%s %s", live.GetKind(), objectName(live))
	return &unit{obj: obj, spec: spec, st: &st, target: &selectorTarget{uid: live.GetUID(), name: name, stored: stored}, sink: func(typ, reason, note string) {
		events.add(typ, reason, name+": "+note)
	}}
}

// saveTargetRecord is saveRecord for a target of a selector patch: the
// target's stored record continued (Follow with owners and present, then
// change); when it differs from the stored one, it is kept as the
// target's pending record and errRecordFirst stops its pass (the
// reconcile saves every pending record in one status write and runs the
// pass again).
func saveTargetRecord(p *pass, owners ownershipcore.ManagedFields, present *fieldset.Set, change func(*ownershipcore.Ledger) bool) (*ownershipcore.Ledger, error) {
	sh, uid := p.target, p.uid()
	stored := &v1alpha1.FieldPatchStatus{}
	if sh.stored != nil {
		sh.stored.ledgerStatus(stored)
	}
	l, err := patchintent.ReadLedger(stored, uid)
	if err != nil {
		return nil, err
	}
	l.Follow(owners, present, p.manager)
	if change != nil {
		change(l)
	}
	next := &v1alpha1.FieldPatchStatus{}
	if err := patchintent.WriteLedger(next, l, uid); err != nil {
		return nil, err
	}
	if patchintent.SameLedger(stored, next, uid) {
		return l, nil
	}
	sh.pending = next
	return nil, errRecordFirst
}
