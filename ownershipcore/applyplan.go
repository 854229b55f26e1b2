/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ApplyPlan is one apply as decided, before its request: the intent to
// send (without the fields the strategy yields), whether it forces, the
// object it was decided on and the conflicts the strategy resolved. It
// is a value: nothing in it is sent until it is passed back to Apply
// (ApplyOptions.Planned).
type ApplyPlan struct {
	res      Result
	d        decided
	s        State
	dropped  bool
	resolved bool
	// droppedBefore: dropFirst wrote before a decision that the
	// apiserver's conflicts then sent to a second round (Object is still
	// that write's answer): the apply, once sent, has written whatever it
	// answers.
	droppedBefore bool
	// staged: decided (Decide) on a state the model staged, not on the
	// object as stored (a drop Apply writes first, or the caller's
	// prediction: ApplyOptions.ModelOnly). Such a plan is never sent as
	// decided: Apply decides again on the object as it is then.
	staged bool
}

// Decide decides the apply of desired by opts.FieldManager on opts.Live
// (required: the object as the caller read it) as Apply would, and sends
// nothing: the conflicts it meets are resolved by opts.Conflicts, asked
// once, here. It returns the apply as decided, to send later with
// ApplyOptions.Planned; Result says what it would do (Action Unchanged
// or Configured; Forced, Yielded, Messages). When Apply would first
// release fields of another manager that the intent drops (see Apply),
// or when opts.ModelOnly says Live is the caller's prediction, the plan
// is decided on the state the model predicts and is marked staged: Apply
// then decides again on the object as it is (its Forced can differ, and
// ApplyOptions.Recorded still gates them).
//
// Errors: a *ConflictError when the strategy fails the apply (Result
// names the conflicts), ErrTargetGone when Live has another UID than
// opts.UID, an intent the model refuses (ErrInvalidIntent), and the
// strategy's own errors.
func (a *Applier) Decide(ctx context.Context, desired *unstructured.Unstructured, opts ApplyOptions) (*ApplyPlan, error) {
	live := opts.Live
	if opts.FieldManager == "" || live == nil {
		return nil, errors.New("decide: field manager and the object as read are required")
	}
	if opts.UID != "" && live.GetUID() != opts.UID {
		return nil, ErrTargetGone
	}
	intent, err := a.cleanIntent(desired, opts.Ignore)
	if err != nil {
		return nil, err
	}
	s, err := NewState(live, a.sameFieldPaths(ctx, live, intent.GetAPIVersion()))
	if err != nil {
		return nil, err
	}
	p := &ApplyPlan{s: s, staged: opts.ModelOnly}
	dropped := false
	next, op, err := a.Model().BeforeApply(s, intent, opts.FieldManager)
	switch {
	case ignoreUnpredictable(err) != nil:
		return nil, err
	case err != nil:
		p.staged = true // the drop cannot be predicted: Apply decides it
	case Diff(s, next) != "":
		if err := a.Model().Check(s, next, op); err != nil {
			return nil, err
		}
		p.s, p.staged, dropped = next, true, true
	}
	p.d, err = a.decide(ctx, &p.res, p.s, intent, opts)
	if err != nil {
		p.res.Object = p.s.Object
		return p, err
	}
	p.res.Action, p.res.Object = ActionConfigured, p.s.Object
	if p.d.unchanged && !dropped {
		p.res.Action = ActionUnchanged
	}
	return p, nil
}

// Result is what the plan's apply would do, as decided: Action
// Unchanged or Configured (Conflicted when the strategy failed it),
// Forced, Yielded, Failed and Messages. Object is the object it was
// decided on.
func (p *ApplyPlan) Result() Result { return p.res.clone() }

// Staged reports that the plan was decided on a state the model staged
// (Decide): Apply decides it again before sending.
func (p *ApplyPlan) Staged() bool { return p.staged }

// Object is the object the plan was decided on (nil: none).
func (p *ApplyPlan) Object() *unstructured.Unstructured { return p.s.Object }

// Forced are the conflicts the plan forces (fields taken from others).
func (p *ApplyPlan) Forced() []Conflict { return p.res.Forced }

// Wrote reports that deciding the plan wrote to the object already
// (Apply's first step, which releases list items and maps the intent
// drops that hold another manager's fields): Object is that write's
// answer.
func (p *ApplyPlan) Wrote() bool { return p.dropped || p.droppedBefore }

// RecordFirstError is Apply's answer when the apply would force fields
// outside ApplyOptions.Recorded: nothing was sent. Object is the object
// the apply was decided on (the values the forced fields hold until the
// request), Forced the conflicts it would force, Plan the apply as
// decided, to pass back as ApplyOptions.Planned once the record is saved.
type RecordFirstError struct {
	Object *unstructured.Unstructured
	Forced []Conflict
	Plan   *ApplyPlan
}

func (e *RecordFirstError) Error() string {
	return fmt.Sprintf("the apply would force %d field(s) not recorded yet; save the record of their owners first", len(e.Forced))
}

// recorded reports whether forcing the conflicts forced is allowed by
// opts.Recorded (always for a dry run, or without a gate).
func recorded(forced []Conflict, opts ApplyOptions) bool {
	if opts.Recorded == nil || opts.DryRun {
		return true
	}
	for _, c := range forced {
		if !opts.Recorded.Has(c.Path) {
			return false
		}
	}
	return true
}

// fits reports whether the plan was decided on live as it is (same UID
// and resourceVersion); false for a nil plan.
func (p *ApplyPlan) fits(live *unstructured.Unstructured) bool {
	return p != nil && !p.staged && p.s.Object != nil && p.s.Object.GetResourceVersion() == live.GetResourceVersion() && p.s.Object.GetUID() == live.GetUID()
}

// sendPlanned sends the apply decided on s (send), unless it would force
// fields outside opts.Recorded (RecordFirstError). dropped says that
// dropFirst wrote before the decision; resolved that the apiserver's own
// conflicts were resolved already (send's second round).
func (a *Applier) sendPlanned(ctx context.Context, res *Result, intent *unstructured.Unstructured, s State, d decided, dropped, resolved bool, opts ApplyOptions) (Result, error) {
	if d.force && !recorded(res.Forced, opts) {
		return *res, &RecordFirstError{Object: s.Object, Forced: res.Forced, Plan: &ApplyPlan{res: *res, d: d, s: s, dropped: dropped, resolved: resolved}}
	}
	out, err := a.send(ctx, res, intent, s, d, resolved, opts)
	var first *RecordFirstError
	if errors.As(err, &first) && dropped {
		first.Plan.droppedBefore = true
	}
	if err == nil && dropped && out.Action == ActionUnchanged {
		out.Action = ActionConfigured // the drop wrote
	}
	return out, err
}

// sendDecided sends the apply as pl decided it (it fits the object as
// it is): nothing when it changes nothing.
func (a *Applier) sendDecided(ctx context.Context, pl *ApplyPlan, opts ApplyOptions) (Result, error) {
	res := pl.res.clone() // a second round appends to its conflicts: the plan stays as decided
	if pl.d.unchanged && !pl.dropped && !pl.droppedBefore {
		res.Action, res.Object = ActionUnchanged, pl.s.Object // decided: nothing to send
		return res, nil
	}
	return pl.sendBefore(a.sendPlanned(ctx, &res, pl.d.intent, pl.s, pl.d, pl.dropped, pl.resolved, opts))
}

// sendBefore is the answer of the plan's apply (sendPlanned's out and
// err) with what the plan wrote before it: an apply that changes nothing
// after dropFirst wrote is Configured, and a plan sent to another round
// keeps that its drop wrote.
func (p *ApplyPlan) sendBefore(out Result, err error) (Result, error) {
	if !p.droppedBefore {
		return out, err
	}
	var first *RecordFirstError
	if errors.As(err, &first) {
		first.Plan.droppedBefore = true
	}
	if err == nil && out.Action == ActionUnchanged {
		out.Action = ActionConfigured // the drop wrote
	}
	return out, err
}

// dropPredicted is, for a dry run, the state dropFirst would write before
// the apply (ok: it would write, or opts.ModelOnly), computed by the model
// alone: a dry run writes nothing, so the apiserver's dry run of the
// apply would start from the object without that write, and answer what
// the real apply never meets (a map left null that a custom resource's
// schema refuses, kubernetes/kubernetes issue 103011; list items of
// another manager removed). Not a dry run: s, false.
func (a *Applier) dropPredicted(s State, intent *unstructured.Unstructured, opts ApplyOptions) (State, bool, error) {
	if !opts.DryRun {
		return s, false, nil
	}
	m := a.Model()
	next, op, err := m.BeforeApply(s, intent, opts.FieldManager)
	if err != nil || Diff(s, next) == "" {
		return s, opts.ModelOnly, ignoreUnpredictable(err)
	}
	if err := m.Check(s, next, op); err != nil {
		return s, false, err
	}
	return next, true, nil
}

// predictDryRun answers a dry run whose apply follows a write of
// dropFirst with the model's prediction from the state after that write
// (s; err: dropPredicted's), not with a request: Result.Predicted says
// so, and the apiserver's admission of the apply is not asked.
func (a *Applier) predictDryRun(ctx context.Context, res *Result, s State, intent *unstructured.Unstructured, opts ApplyOptions, err error) (Result, error) {
	if err != nil {
		return *res, err
	}
	res.Predicted, res.Action = true, ActionConfigured
	d, err := a.decide(ctx, res, s, intent, opts)
	if err != nil {
		return *res, err
	}
	switch {
	case d.unchanged && res.DroppedFirst:
		res.ApplyUnsent = true
	case d.unchanged:
		res.Action = ActionUnchanged // ModelOnly: the apply changes nothing
	}
	if !d.unchanged {
		next, err := a.Model().Apply(s, d.intent, opts.FieldManager, d.force)
		switch {
		case err == nil:
			s = next
		case ignoreUnpredictable(err) != nil:
			return *res, fmt.Errorf("predict the apply after the drop: %w", err)
		}
	}
	res.Object, err = s.Encoded()
	return *res, err
}
