/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// LetGo gives up what g says on obj in one write (Commit): a JSON patch
// of values and managed fields together, guarded by the object's UID and
// resourceVersion, computed from live (a cached copy or an answer of the
// apiserver; nil: read through APIReader). A copy the object moved on from
// costs a refused patch and a fresh read; the computation is idempotent.
//
// When a relinquish's removals cannot be made, the fields manager owns
// alone stay in place without an owner (Outcome.Kept, with Why): the
// apiserver refused the object without them (a required field), or the
// model cannot predict the result (entries of another version under a
// conversion webhook, ErrUnpredictable). Other managers' fields are never
// touched on either path.
//
// obj needs apiVersion, kind, namespace and name; when it carries a UID, an
// object with another UID is gone. A missing object is no error: nothing
// is written and Result.Action is Unchanged.
func (a *Applier) LetGo(ctx context.Context, obj, live *unstructured.Unstructured, manager string, g LetGo) (Result, Outcome, error) {
	var res Result
	var out Outcome
	var err error
	restored, sent := fieldpath.NewSet(), false
	if g.Restore != nil {
		if live, restored, sent, err = a.restore(ctx, obj, live, manager, g.Restore); err != nil {
			return res, out, fmt.Errorf("restore the previous values of %q on %s: %w", manager, describe(obj), err)
		}
		g.Restore = nil
	}
	for attempt := 0; attempt < commitAttempts; attempt++ {
		res, out, err = a.letGoOnce(ctx, obj, live, manager, g)
		if !errors.Is(err, ErrStale) {
			break
		}
		live = nil // read fresh
	}
	out.Restored, out.RestoreSent = restored, sent
	if err != nil {
		return res, out, fmt.Errorf("let go of the fields of %q on %s: %w", manager, describe(obj), err)
	}
	return res, out, nil
}

// restore sends the server-side apply of Model.RestoreIntent (decided on
// live, guarded by the object's UID; nothing when nothing is to be put
// back) and returns the object it answered, the fields restored and
// whether the apply wrote. It
// runs before the rest of a LetGo, in a write of its own: a value the
// managed-fields patch changed would be recorded as the requester's.
// Interrupted after it, the LetGo finds the values restored and puts back
// nothing twice.
func (a *Applier) restore(ctx context.Context, obj, live *unstructured.Unstructured, manager string, values *unstructured.Unstructured) (*unstructured.Unstructured, *fieldpath.Set, bool, error) {
	s, err := a.stateOf(ctx, obj, live)
	if err != nil || s.Object == nil {
		return live, fieldpath.NewSet(), false, err
	}
	intent, restore, err := a.Model().RestoreIntent(s, manager, values)
	if err != nil || intent == nil {
		return s.Object, fieldpath.NewSet(), false, err
	}
	res, err := a.Apply(ctx, intent, ApplyOptions{FieldManager: manager, Conflicts: Static(DecisionFail), UID: s.Object.GetUID(), Live: s.Object})
	if err != nil {
		return nil, nil, false, err
	}
	if res.Object == nil {
		return s.Object, restore, res.Wrote(), nil
	}
	return res.Object, restore, res.Wrote(), nil
}

// commitAttempts bounds the reads and writes of one operation that meets
// other writers (each refused write is followed by a fresh read).
const commitAttempts = 5

func (a *Applier) letGoOnce(ctx context.Context, obj, live *unstructured.Unstructured, manager string, g LetGo) (Result, Outcome, error) {
	out := emptyOutcome()
	s, err := a.stateOf(ctx, obj, live)
	if err != nil || s.Object == nil {
		return Result{Action: ActionUnchanged}, out, err
	}
	m := a.Model()
	next, out, err := m.LetGo(s, manager, g)
	var got State
	if err == nil {
		got, err = a.Commit(ctx, s, next, manager)
	}
	why := ""
	switch {
	case errors.Is(err, ErrUnpredictable) && g.Relinquish:
		why = err.Error()
	case apierrors.IsInvalid(err) && g.Relinquish:
		why = "the apiserver refused the object without them"
	}
	if why != "" {
		// The fields manager owns alone stay, without an owner.
		g.Relinquish = false
		if next, out, err = m.LetGo(s, manager, g); err == nil {
			next, out = keepInstead(next, manager, out, why)
			got, err = a.Commit(ctx, s, next, manager)
		}
	}
	var div *DivergenceError
	if errors.As(err, &div) && g.Relinquish && hasEntry(got.Owners, manager) {
		// The apiserver defaulted a removed field again and records the
		// new value as manager's (an Update entry): it stays without an
		// owner, as after an empty apply.
		cleaned, _ := keepInstead(got, manager, emptyOutcome(), "")
		got, err = a.Commit(ctx, got, cleaned, manager)
	}
	if err != nil {
		return Result{}, out, err
	}
	action := ActionConfigured
	if Diff(s, next) == "" {
		action = ActionUnchanged
	}
	return Result{Action: action, Object: got.Object, Removed: out.Removed, Kept: out.Kept}, out, nil
}

// stateOf is the State of live, or of obj read through APIReader when live
// is nil or has another UID than obj carries. A missing object, or one
// with another UID, is a State without Object.
func (a *Applier) stateOf(ctx context.Context, obj, live *unstructured.Unstructured) (State, error) {
	if live == nil || live.GetResourceVersion() == "" || (obj.GetUID() != "" && live.GetUID() != obj.GetUID()) {
		var err error
		if live, err = a.GetFresh(ctx, obj); err != nil {
			return State{}, err
		}
		if live == nil || (obj.GetUID() != "" && live.GetUID() != obj.GetUID()) {
			return State{}, nil
		}
	}
	return NewState(live.DeepCopy(), a.sameFieldPaths(ctx, live, live.GetAPIVersion()))
}

// HandBack moves every field manager still owns on obj back to the entry
// that owned it before (HandBackPlan), in one guarded write (LetGo). It
// returns the fields moved. See the SSA docs, "Transferring ownership".
func (a *Applier) HandBack(ctx context.Context, obj *unstructured.Unstructured, manager string, previous ManagedFields) (*fieldpath.Set, error) {
	_, out, err := a.LetGo(ctx, obj, nil, manager, LetGo{Previous: previous})
	return out.Moved, err
}

// Release drops fields from manager's Apply entry on obj without giving
// them to anyone (ReleasePlan), in one guarded write (LetGo): the values
// stay, unowned, and a later empty apply by manager no longer removes
// them. It returns the fields released.
func (a *Applier) Release(ctx context.Context, obj *unstructured.Unstructured, manager string, fields *fieldpath.Set) (*fieldpath.Set, error) {
	_, out, err := a.LetGo(ctx, obj, nil, manager, LetGo{Release: fields})
	return out.Released, err
}

// Relinquish removes what manager owns alone on obj and every entry of
// manager (Model.Relinquish), in one guarded write (LetGo): what an empty
// apply by manager should do (SSA docs, "Field management"), without the
// apiserver's losses of other managers' fields. Result.Kept lists fields
// that stay without an owner instead (see LetGo).
func (a *Applier) Relinquish(ctx context.Context, obj *unstructured.Unstructured, manager string) (Result, error) {
	res, _, err := a.LetGo(ctx, obj, nil, manager, LetGo{Relinquish: true})
	return res, err
}
