/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Action says what Apply did.
type Action string

const (
	// ActionCreated: the object did not exist and was created.
	ActionCreated Action = "Created"
	// ActionConfigured: the object or its managed fields changed.
	ActionConfigured Action = "Configured"
	// ActionUnchanged: nothing would change; no write was sent.
	ActionUnchanged Action = "Unchanged"
	// ActionConflicted: the conflict strategy failed the apply; no write.
	ActionConflicted Action = "Conflicted"
)

// ApplyOptions configure one Apply.
type ApplyOptions struct {
	// FieldManager is the manager the intent is applied with. Required.
	FieldManager string
	// Conflicts decides each conflict. Nil fails on any conflict, as SSA
	// without force does.
	Conflicts ConflictStrategy
	// Ignore are fields removed from the intent before anything else.
	Ignore *fieldpath.Set
	// UID, when set, makes the apply conditional on the object having this
	// UID: the request carries metadata.uid, so the apiserver refuses it
	// when the object was deleted ("uid mismatch", instead of creating it
	// anew) or replaced. Apply then returns ErrTargetGone. Unset, an apply
	// to a missing object creates it.
	UID types.UID
	// DryRun sends the apply with dryRun=All: the apiserver runs
	// admission, validation and the field manager and answers with the
	// object as it would be, without storing it. Result.Action is then
	// Created, Configured or Unchanged as the real apply would have been.
	DryRun bool
	// ModelOnly answers a dry run with the model's prediction from Live
	// (one the caller predicted, which the apiserver does not hold).
	ModelOnly bool
	// Live is the object as the caller read it in the same decision (a
	// reconcile's own read of the target), used instead of reading it
	// again: the decision and the apply then see one version, and a
	// reader that is no cache (an account's impersonating client) is asked
	// once per reconcile, not twice. Nil: Apply reads it through Reader.
	// A caller that wrote to the object since must leave it nil.
	Live *unstructured.Unstructured
	// Absent says that the caller's read in the same decision found no
	// object (Live is nil): Apply does not read it again, and creates it
	// (an apply that meets an object after all updates it, as SSA does,
	// and reports Created). Ignored when Live is set.
	Absent bool
	// Recorded, when not nil, gates force: a forced request whose forced
	// fields are not all in it is not sent, and Apply returns a
	// *RecordFirstError holding the apply as decided, for the caller to
	// save its record of those fields' owners (a forced write takes them
	// from their owners; a record saved after it could be lost) and then
	// send that decision (Planned). Nil, or a dry run: not gated.
	Recorded *fieldpath.Set
	// Planned is an earlier Apply's decision (RecordFirstError.Plan) for
	// the same intent and options: sent as decided (the strategy is not
	// asked again) while the object is at the version it was decided on.
	Planned *ApplyPlan
}

// ErrTargetGone is returned (wrapped) by Apply with ApplyOptions.UID when
// the object with that UID no longer exists: nothing was written.
var ErrTargetGone = errors.New("the object was deleted or replaced")

// isUIDMismatch reports the apiserver's answer to an apply whose
// metadata.uid names no existing object (a 409 "uid mismatch") or another
// object than the one stored (a 409 precondition failure).
func isUIDMismatch(err error) bool {
	if !apierrors.IsConflict(err) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "uid mismatch") || strings.Contains(msg, "Precondition failed: UID")
}

// Applier applies intents with Server-Side Apply. It reads live objects
// through Reader (an informer cache, so a steady-state Apply costs no
// request) and decides locally, with the apiserver's own field manager
// code, whether the apply would change the object or its managed fields:
// only then does it send the request. It is safe for concurrent use.
type Applier struct {
	// Client sends apply requests.
	Client client.Client
	// Reader reads live objects; usually the manager's cache.
	Reader client.Reader
	// APIReader reads without a cache, where a stale read would be wrong
	// (HandBack, Relinquish). Nil means Reader.
	APIReader client.Reader
	// Schema gives the apiserver's types.
	Schema *Schema
}

// NewApplier returns an Applier that writes through c, reads live objects
// through reader (an informer cache, or c itself) and, where a stale read
// would be wrong, through apiReader (nil: reader), with the types of
// schema (NewSchema, or NewStaticSchema offline). It fails when c, reader
// or schema is nil.
func NewApplier(c client.Client, reader, apiReader client.Reader, schema *Schema) (*Applier, error) {
	switch {
	case c == nil:
		return nil, errors.New("new applier: no client")
	case reader == nil:
		return nil, errors.New("new applier: no reader")
	case schema == nil:
		return nil, errors.New("new applier: no schema")
	}
	if apiReader == nil {
		apiReader = reader
	}
	return &Applier{Client: c, Reader: reader, APIReader: apiReader, Schema: schema}, nil
}

func (a *Applier) freshReader() client.Reader {
	if a.APIReader != nil {
		return a.APIReader
	}
	return a.Reader
}

// Apply applies desired (a partial object: apiVersion, kind, name,
// namespace and the fields of the intent) under opts.FieldManager, in
// three steps over the model (Model), each a pure function of the object
// as read:
//
//  1. Drop: of what the intent no longer holds of manager's Apply entry,
//     the fields another manager owns too and the list items and maps that
//     hold another manager's field leave manager's entry first, ownership
//     only, in one guarded write (Commit), so the apply removes nothing
//     another manager holds (SSA removes a dropped list item or map with
//     every field in it: kubernetes-sigs/structured-merge-diff issue 335).
//     Only when the apply would leave a map null (kubernetes/kubernetes
//     issue 103011: a custom resource's schema refuses it) do the values
//     go in that write too; otherwise the apply removes them, with the new
//     values, in one request.
//  2. Decide: the apply is run locally with the apiserver's own field
//     manager; conflicts go to opts.Conflicts (yielded fields leave the
//     intent, forced ones are taken); an apply that changes nothing is not
//     sent (steady state costs no request).
//  3. Send: one server-side apply, so admission runs. A forced apply
//     carries the resourceVersion it was decided on (SSA docs: a
//     resourceVersion in an apply configuration is a precondition), so
//     fields are taken only from the owners the decision saw.
//
// A write refused because the object moved on (ErrStale) is decided again
// from a fresh read, a few times at most. Conflicts the apiserver alone
// reports (entries of another version) are resolved once more. A failed
// conflict aborts with a *ConflictError and Action Conflicted. Errors from
// the apiserver are returned wrapped; a missing kind wraps ErrUnknownKind.
func (a *Applier) Apply(ctx context.Context, desired *unstructured.Unstructured, opts ApplyOptions) (Result, error) {
	if opts.FieldManager == "" {
		return Result{}, errors.New("apply: field manager is required")
	}
	intent, err := a.cleanIntent(desired, opts.Ignore)
	if err != nil {
		return Result{}, err
	}
	live := opts.Live
	if live == nil && !opts.Absent {
		if live, err = a.live(ctx, intent); err != nil {
			return Result{}, err
		}
	}
	var res Result
	for attempt := 1; ; attempt++ {
		res, err = a.applyOnce(ctx, intent, live, opts)
		if !errors.Is(err, ErrStale) || attempt == commitAttempts {
			break
		}
		var rerr error
		if live, rerr = a.GetFresh(ctx, intent); rerr != nil {
			return res, rerr
		}
	}
	if err != nil && !errors.As(err, new(*ConflictError)) {
		return res, fmt.Errorf("apply %s: %w", describe(intent), err)
	}
	return res, err
}

// applyOnce is one Drop, Decide and Send from live (nil: no object).
func (a *Applier) applyOnce(ctx context.Context, intent, live *unstructured.Unstructured, opts ApplyOptions) (Result, error) {
	var res Result
	if opts.UID != "" && (live == nil || live.GetUID() != opts.UID) {
		return res, ErrTargetGone
	}
	if live == nil {
		return a.send(ctx, &res, intent, State{}, decided{intent: intent}, false, opts)
	}
	if pl := opts.Planned; pl.fits(live) {
		return a.sendDecided(ctx, pl, opts)
	}
	s, err := NewState(live, a.sameFieldPaths(ctx, live, intent.GetAPIVersion()))
	if err != nil {
		return res, err
	}
	if next, ok, err := a.dropPredicted(s, intent, opts); ok || err != nil {
		res.DroppedFirst = err == nil && Diff(s, next) != ""
		return a.predictDryRun(ctx, &res, next, intent, opts, err)
	}
	dropped := false
	if !opts.DryRun {
		if s, dropped, err = a.dropFirst(ctx, s, intent, opts.FieldManager); err != nil {
			return res, err
		}
	}
	d, err := a.decide(ctx, &res, s, intent, opts)
	if err != nil {
		res.Object = s.Object
		return res, err
	}
	res.DroppedFirst = dropped
	if d.unchanged {
		res.Action, res.Object = ActionUnchanged, s.Object
		if dropped {
			res.Action, res.ApplyUnsent = ActionConfigured, true // the drop wrote
		}
		return res, nil
	}
	return a.sendPlanned(ctx, &res, d.intent, s, d, dropped, false, opts)
}

// dropFirst prepares s for the apply of intent (see Apply) and returns the
// state after it and whether it wrote. Of what the intent drops from
// manager's Apply entry (Model.Drop), the list items and maps that hold
// another manager's field are released first, ownership only, so that the
// apply does not remove them; the apply itself removes the rest, in the
// same request as the new values (the object is validated as a whole).
// Only when the apply would then leave a map or list null (it empties
// one another manager owns) does the whole Drop go first, values
// included. A drop that cannot be predicted (entries of another version
// whose paths may differ) writes nothing: the apply drops the fields
// itself.
func (a *Applier) dropFirst(ctx context.Context, s State, intent *unstructured.Unstructured, manager string) (State, bool, error) {
	m := a.Model()
	next, op, err := m.BeforeApply(s, intent, manager)
	if err != nil || Diff(s, next) == "" {
		return s, false, ignoreUnpredictable(err)
	}
	if err := m.Check(s, next, op); err != nil {
		return s, false, err
	}
	got, err := a.Commit(ctx, s, next, manager)
	if err != nil {
		return s, false, ignoreUnpredictable(err)
	}
	got.Object.SetAPIVersion(intent.GetAPIVersion())
	return got, true, nil
}

// ignoreUnpredictable is err, or nil when it is ErrUnpredictable: the
// step it guards is left to the apiserver.
func ignoreUnpredictable(err error) error {
	if errors.Is(err, ErrUnpredictable) {
		return nil
	}
	return err
}

// decided is what decide decided: the intent to send (without the fields
// the strategy yields), whether to force, whether the apply would change
// nothing, and the model's state after that apply when it was computed on
// the state itself (no entry set aside, see View): verify compares the
// answer with it rather than computing it again.
type decided struct {
	intent           *unstructured.Unstructured
	force, unchanged bool
	predicted        *State
}

// decide runs the apply of intent on s locally (Model.Apply on s.View():
// entries of other versions that may name other paths set aside). An
// intent the apiserver's field manager refuses (duplicate list-map keys,
// a wrong type) is an error, never sent.
func (a *Applier) decide(ctx context.Context, res *Result, s State, intent *unstructured.Unstructured, opts ApplyOptions) (decided, error) {
	m := a.Model()
	view := s.View()
	next, err := m.Apply(view, intent, opts.FieldManager, false)
	force := false
	if apierrors.IsConflict(err) {
		if intent, force, err = a.resolve(ctx, res, intent, s.Object, opts, err); err != nil {
			res.Action = ActionConflicted
			return decided{}, err
		}
		next, err = m.Apply(view, intent, opts.FieldManager, force)
	}
	if err != nil {
		if invalid := a.invalidIntent(intent, err); invalid != nil {
			return decided{}, invalid
		}
		return decided{intent: intent, force: force}, nil // left to the apiserver
	}
	d := decided{intent: intent, force: force, unchanged: Diff(view, next) == ""}
	if s.comparable() == nil { // view is s
		d.predicted = &next
	}
	return d, nil
}

// send sends the server-side apply of d's intent (decided on s; s.Object
// nil: no object) and resolves once more the conflicts the apiserver alone
// reports. A forced apply is guarded by s's resourceVersion: refused, it
// returns ErrStale. The answer is checked against the model's prediction
// (verify: d's, unless the apiserver's conflicts changed the intent).
func (a *Applier) send(ctx context.Context, res *Result, intent *unstructured.Unstructured, s State, d decided, resolved bool, opts ApplyOptions) (Result, error) {
	live, force, predicted := s.Object, d.force, d.predicted
	for round := 0; ; round++ {
		if round > 0 && force && !recorded(res.Forced, opts) {
			d := decided{intent: intent, force: force} // forced after the apiserver named them
			return *res, &RecordFirstError{Object: live, Forced: res.Forced, Plan: &ApplyPlan{res: *res, d: d, s: s, resolved: true}}
		}
		out, applyOpts := applyRequest(intent, live, force, opts)
		err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(out), applyOpts...)
		switch {
		case err == nil:
			res.Object, res.Action = out, appliedAction(live, out, opts.DryRun)
			return *res, a.verify(ctx, s, intent, out, force, predicted, opts)
		case isUIDMismatch(err):
			return *res, ErrTargetGone
		case force && isStaleApply(err):
			return *res, fmt.Errorf("%w: %v", ErrStale, err)
		case !apierrors.IsConflict(err) || force || round > 0 || resolved:
			return *res, err
		}
		// Conflicts the local decision could not see (entries of another
		// version, a cached copy behind the apiserver).
		if intent, force, err = a.resolve(ctx, res, intent, live, opts, err); err != nil {
			res.Action, res.Object = ActionConflicted, live
			return *res, err
		}
		predicted = nil // another intent
	}
}

// verify compares answer, the apiserver's answer to the apply of intent by
// opts.FieldManager (with force or not) decided on s, with the model's
// prediction (Model.Apply on s) as Commit does (Model.Compare: values and
// managed fields, times and server-set metadata aside, fields the
// apiserver's defaulting or a mutating admission plugin added that nobody
// owns accepted). A difference is logged (MessageDivergence) and returned
// as a *DivergenceError; the apply happened. A dry run is compared too
// (its answer is the object as it would be stored).
//
// How much of the answer the prediction decides depends on the request:
//
//   - A forced apply carries s's resourceVersion (a precondition): its
//     answer was computed from s, and is compared whole.
//   - An apply without force carries none: sending one would turn every
//     write of another actor between the read (an informer cache) and the
//     apply, a controller's status update above all, into a refusal and a
//     second round of read, decision and apply, for writes that cannot
//     take anything from anyone (the apiserver refuses them on a
//     conflict). Between the read and the apply others may have written,
//     which the answer holds and the prediction cannot; what the apply
//     alone decides is compared (Model.CompareOwn): the applier's entries,
//     the values of the fields they hold, and the fields the apply prunes
//     that nobody else owns. Where the model finds a conflict the apiserver
//     did not (an owner let the field go in between), that part is
//     predicted from the forced apply, which decides it the same way.
//   - A create (s.Object nil) is predicted from the empty object, and
//     compared as an apply without force (someone may create the object
//     first).
//
// predicted, when not nil, is Model.Apply of intent on s with force,
// computed by decide: it is not computed again.
//
// Nothing is compared when the model cannot predict the apply:
// entries of another version whose paths may differ (ErrUnpredictable),
// an object read in another version than the intent's, or an intent the
// model's schema refuses and the apiserver's, newer, accepted.
func (a *Applier) verify(ctx context.Context, s State, intent, answer *unstructured.Unstructured, force bool, known *State, opts ApplyOptions) error {
	m := a.Model()
	guarded := force && s.Object != nil
	if s.Object == nil {
		s, known = State{Object: skeleton(intent), SamePaths: true}, nil
	}
	if s.Object.GetAPIVersion() != intent.GetAPIVersion() {
		return nil
	}
	predicted, err := m.predict(s, intent, opts.FieldManager, force, guarded, known)
	if err != nil {
		return nil
	}
	got, err := NewState(answer, s.SamePaths)
	if err != nil {
		return nil // managed fields the model cannot decode: nothing to compare
	}
	op := "apply"
	diff := ""
	if guarded {
		op, diff = "forced apply", m.Compare(s, predicted, got)
	} else {
		diff = m.CompareOwn(s, predicted, got, opts.FieldManager)
	}
	if opts.DryRun {
		op += " (dry run)"
	}
	return m.divergence(ctx, &DivergenceError{Object: describe(answer), Operation: op, Manager: opts.FieldManager, Diff: diff}, s, predicted, got)
}

// applyRequest is the body and options of the apply of intent: the UID
// guard, force (with live's resourceVersion as a precondition), dry run.
func applyRequest(intent, live *unstructured.Unstructured, force bool, opts ApplyOptions) (*unstructured.Unstructured, []client.ApplyOption) {
	out := intent.DeepCopy()
	if opts.UID != "" {
		out.SetUID(opts.UID)
	}
	applyOpts := []client.ApplyOption{client.FieldOwner(opts.FieldManager)}
	if force {
		applyOpts = append(applyOpts, client.ForceOwnership)
		if live != nil {
			out.SetResourceVersion(live.GetResourceVersion())
		}
	}
	if opts.DryRun {
		applyOpts = append(applyOpts, client.DryRunAll)
	}
	return out, applyOpts
}

// appliedAction is what an apply that succeeded did.
func appliedAction(live, out *unstructured.Unstructured, dryRun bool) Action {
	switch {
	case live == nil:
		return ActionCreated
	case dryRun && sameObject(live, out):
		return ActionUnchanged // a dry run keeps the resourceVersion either way
	case !dryRun && live.GetResourceVersion() == out.GetResourceVersion():
		return ActionUnchanged
	}
	return ActionConfigured
}

// isStaleApply reports a forced apply refused by its resourceVersion
// precondition: a 409 that names no field manager conflict (only a forced
// apply carries one).
func isStaleApply(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &status) {
		return false
	}
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			if c.Type == metav1.CauseTypeFieldManagerConflict {
				return false
			}
		}
	}
	return true
}

// resolve asks the strategy about the conflicts in err and returns the
// intent without yielded fields and whether to force.
func (a *Applier) resolve(ctx context.Context, res *Result, intent, live *unstructured.Unstructured, opts ApplyOptions, err error) (*unstructured.Unstructured, bool, error) {
	fields, ferr := a.FieldSet(intent)
	if ferr != nil {
		return nil, false, ferr
	}
	conflicts, ok := conflictsFrom(err, fields)
	if !ok {
		return nil, false, err
	}
	strategy := opts.Conflicts
	if strategy == nil {
		strategy = Static(DecisionFail)
	}
	subject := live
	if subject == nil {
		subject = intent
	}
	answers, rerr := strategy.Resolve(ctx, subject.DeepCopy(), opts.FieldManager, conflicts)
	if rerr == nil && len(answers) != len(conflicts) {
		rerr = fmt.Errorf("conflict strategy answered %d of %d conflicts", len(answers), len(conflicts))
	}
	if rerr != nil {
		res.Failed = conflicts
		return nil, false, fmt.Errorf("resolve conflicts: %w", rerr)
	}
	yield, err := sortAnswers(res, conflicts, answers)
	if err != nil {
		return nil, false, err
	}
	if len(res.Failed) > 0 {
		return nil, false, &ConflictError{Conflicts: res.Failed}
	}
	if !yield.Empty() {
		if intent, err = a.RemoveFields(intent, yield); err != nil {
			return nil, false, err
		}
	}
	return intent, len(res.Forced) > 0, nil
}

// sortAnswers files each conflict under the strategy's decision in res
// (with its message) and returns the fields to yield.
func sortAnswers(res *Result, conflicts []Conflict, answers []Resolution) (*fieldpath.Set, error) {
	yield := fieldpath.NewSet()
	for i, c := range conflicts {
		if answers[i].Message != "" {
			res.Messages = append(res.Messages, fmt.Sprintf("%s: %s", FormatPath(c.Path), answers[i].Message))
		}
		switch answers[i].Decision {
		case DecisionForce:
			res.Forced = append(res.Forced, c)
		case DecisionYield:
			res.Yielded = append(res.Yielded, c)
			yield.Insert(c.Path)
		case DecisionFail:
			res.Failed = append(res.Failed, c)
		default:
			res.Failed = append(res.Failed, c)
			return nil, fmt.Errorf("conflict strategy: unknown decision %q for %s", answers[i].Decision, FormatPath(c.Path))
		}
	}
	return yield, nil
}
