/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"encoding/json"
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// apply applies the intent with strategy, recording forced fields first
// (recordTakes). An outcome only the apiserver could give (a conflict
// with an entry of another version, which the local decision leaves out)
// is asked for once: the same intent on the same target version, for the
// same generation, gets the same answer without a request, instead of a
// refused apply (Fail) or a refused apply and an empty one (Yield) on
// every reconcile.
func (r *Reconciler) apply(ctx context.Context, p *pass, strategy ownershipcore.ConflictStrategy) error {
	key := r.outcomeKey(p.unit)
	seen := outcome{rv: p.current.GetResourceVersion(), gen: p.gen()}
	// The intent is encoded only to compare with or keep an outcome, not
	// on every reconcile.
	if v, ok := r.outcomes.Load(key); ok {
		if last := v.(outcome); last.rv == seen.rv && last.gen == seen.gen && last.intent == intentKey(p.d.Intent) {
			p.res = last.res
			return last.err
		}
		r.outcomes.Delete(key)
	}
	err := r.applyRecorded(ctx, p, strategy)
	var refused *ownershipcore.ConflictError
	answered := errors.As(err, &refused) || err == nil && !p.res.Wrote() && (len(p.res.Yielded) > 0 || len(p.res.Forced) > 0)
	if answered && p.spec.ConflictPolicy != v1alpha1.ConflictPolicyPlugin {
		seen.intent, seen.res, seen.err = intentKey(p.d.Intent), p.res, err
		r.outcomes.Store(key, seen)
	}
	return err
}

// applyAttempts bounds the records saved for one apply: each answers a
// decision that forces fields not recorded yet (a first decision, then
// conflicts only the apiserver could name, or a target that moved on).
const applyAttempts = 3

// applyRecorded applies the intent with strategy, the record first: the
// core forces no field the record does not hold
// (ApplyOptions.Recorded); when the apply would, it answers with the
// apply as decided (*ownershipcore.RecordFirstError), whose forced
// fields are recorded (savePreviousValues, recordTakes) before that
// decision is sent as it is (ApplyOptions.Planned: the conflict strategy,
// a plugin's too, is asked once, before any write).
func (r *Reconciler) applyRecorded(ctx context.Context, p *pass, strategy ownershipcore.ConflictStrategy) error {
	opts := ownershipcore.ApplyOptions{FieldManager: p.manager, Conflicts: strategy, UID: p.live.GetUID(), Live: p.current, Recorded: fieldset.NewSet()}
	for attempt := 1; ; attempt++ {
		var err error
		r.writeTarget(p, func() *unstructured.Unstructured {
			p.res, err = p.applier.Apply(ctx, p.d.Intent, opts)
			var first *ownershipcore.RecordFirstError
			switch {
			case err == nil && p.res.Wrote():
				return p.res.Object // its watch event is our own write
			case errors.As(err, &first) && first.Plan.Wrote():
				return first.Object // the decision's own write
			}
			return nil
		})
		var first *ownershipcore.RecordFirstError
		if !errors.As(err, &first) || attempt == applyAttempts {
			return err
		}
		if err := r.savePreviousValues(ctx, p, first.Object, first.Forced); err != nil {
			return err
		}
		if err := r.recordTakes(ctx, p, first.Forced); err != nil {
			return err
		}
		opts.Recorded = opts.Recorded.Union(patchintent.ForcedFields(first.Forced))
		opts.Planned, opts.Live = first.Plan, first.Object
	}
}

// outcomeKey is where the outcome of obj's apply is kept: one per patch,
// one per target of a selector patch.
func (r *Reconciler) outcomeKey(u *unit) client.ObjectKey {
	key := client.ObjectKeyFromObject(u.obj)
	if u.target != nil {
		key.Name += "/" + string(u.target.uid)
	}
	return key
}

// writeTarget runs write, p's write of its target, through the target
// watches (watch.Watches.Write); a target's pass of a selector patch
// writes directly: the patch's own watch knows its writes
// (selectorWatch.wrote).
func (r *Reconciler) writeTarget(p *pass, write func() *unstructured.Unstructured) {
	if p.target != nil {
		write()
		return
	}
	r.watches.Write(p.obj, p.live, write)
}

// outcome is what an apply of an intent to a target version, for a
// FieldPatch generation, came to after conflicts (a ConflictError, or
// conflicts yielded or forced with nothing left to write).
type outcome struct {
	rv     string
	gen    int64
	intent string
	res    ownershipcore.Result
	err    error
}

// intentKey is the intent's JSON (an intent the JSON encoder refuses has
// none: it never matches).
func intentKey(intent *unstructured.Unstructured) string {
	b, err := json.Marshal(intent.Object)
	if err != nil {
		return "!" + err.Error()
	}
	return string(b)
}
