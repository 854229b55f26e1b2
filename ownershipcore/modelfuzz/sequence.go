/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package modelfuzz

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/fieldops/fieldops/ownershipcore"
)

// StepKind is what one step of a sequence does.
type StepKind string

// The steps: OtherApply and OtherUpdate are writes of managers outside
// fieldops; Apply, GiveBack, Relinquish and Orphan are what a fieldops
// field manager does (an apply of its intent, and its deletion with
// deletion policy HandBack, Relinquish or Orphan).
const (
	OtherApply  StepKind = "other-apply"
	OtherUpdate StepKind = "other-update"
	Apply       StepKind = "apply"
	GiveBack    StepKind = "give-back"
	Relinquish  StepKind = "relinquish"
	Orphan      StepKind = "orphan"
)

// Step is one operation of a sequence.
type Step struct {
	Kind    StepKind
	Manager string
	// Object is the intent (OtherApply, Apply) or the merge patch (RFC
	// 7386, OtherUpdate) as JSON-like values.
	Object map[string]interface{}
	// Force is the apply's conflict decision: force, or yield the
	// conflicting fields (Apply), fail (OtherApply).
	Force bool
}

func (s Step) String() string {
	out := fmt.Sprintf("%s %s", s.Kind, s.Manager)
	if s.Object != nil {
		out += fmt.Sprintf(" %v", s.Object)
	}
	if s.Force {
		out += " force"
	}
	return out
}

// Fieldops and other field managers of the sequences.
var (
	fieldopsManagers = []string{"fieldops-fieldpatch/ns/a", "fieldops-fieldpatch/ns/b"}
	appliers         = []string{"helm", "argocd"}
	updaters         = []string{"kubectl-edit", "hpa"}
)

// Generate makes a sequence of steps from seed: the object is created by
// an apply of another manager, then steps steps follow.
func Generate(seed int64, steps int) []Step {
	return GenerateFrom(rand.New(rand.NewSource(seed)), steps)
}

// GenerateFrom is Generate drawing from r.
func GenerateFrom(r *rand.Rand, steps int) []Step {
	out := []Step{{Kind: OtherApply, Manager: appliers[0], Object: randomIntent(r), Force: true}}
	for len(out) < steps+1 {
		switch n := r.Intn(12); {
		case n < 2:
			out = append(out, Step{Kind: OtherApply, Manager: pick(r, appliers), Object: randomIntent(r), Force: r.Intn(2) == 0})
		case n < 4:
			out = append(out, Step{Kind: OtherUpdate, Manager: pick(r, updaters), Object: randomPatch(r)})
		case n < 9:
			out = append(out, Step{Kind: Apply, Manager: pick(r, fieldopsManagers), Object: randomIntent(r), Force: r.Intn(4) != 0})
		case n < 10:
			out = append(out, Step{Kind: GiveBack, Manager: pick(r, fieldopsManagers)})
		case n < 11:
			out = append(out, Step{Kind: Relinquish, Manager: pick(r, fieldopsManagers)})
		default:
			out = append(out, Step{Kind: Orphan, Manager: pick(r, fieldopsManagers)})
		}
	}
	return out
}

func pick(r *rand.Rand, from []string) string { return from[r.Intn(len(from))] }

// some returns a random non-empty subset of from (at most all).
func some(r *rand.Rand, from ...string) []interface{} {
	var out []interface{}
	for _, v := range from {
		if r.Intn(2) == 0 {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		out = append(out, from[r.Intn(len(from))])
	}
	return out
}

func stringMap(r *rand.Rand, keys []string, values []string) map[string]interface{} {
	out := map[string]interface{}{}
	for _, k := range some(r, keys...) {
		out[k.(string)] = pick(r, values)
	}
	return out
}

// randomIntent is a partial Widget: a few of its fields, with values from
// small sets so that managers meet on the same fields and values.
func randomIntent(r *rand.Rand) map[string]interface{} {
	spec := map[string]interface{}{}
	values := []string{"x", "y"}
	gens := []func(){
		func() { spec["size"] = int64(1 + r.Intn(2)) },
		func() { spec["atomicList"] = some(r, "a", "b") },
		func() { spec["setList"] = some(r, "x", "y", "z") },
		func() {
			var items []interface{}
			for _, name := range some(r, "n1", "n2") {
				item := map[string]interface{}{"name": name}
				if r.Intn(2) == 0 {
					item["value"] = pick(r, values)
				}
				if r.Intn(3) == 0 {
					item["weight"] = int64(1 + r.Intn(2))
				}
				if r.Intn(3) == 0 {
					item["tags"] = stringMap(r, []string{"t1", "t2"}, values)
				}
				items = append(items, item)
			}
			spec["mapList"] = items
		},
		func() { spec["granularMap"] = stringMap(r, []string{"a", "b"}, values) },
		func() { spec["atomicMap"] = stringMap(r, []string{"a", "b"}, values) },
		func() { spec["labels"] = stringMap(r, []string{"k1", "k2", "k3"}, values) },
		func() {
			spec["nested"] = map[string]interface{}{"inner": stringMap(r, []string{"i1", "i2"}, values)}
		},
	}
	for i, n := 0, 1+r.Intn(3); i < n; i++ {
		gens[r.Intn(len(gens))]()
	}
	out := map[string]interface{}{"spec": spec}
	if r.Intn(4) == 0 {
		out["metadata"] = map[string]interface{}{"annotations": stringMap(r, []string{"a1", "a2"}, values)}
	}
	return out
}

// randomPatch is a merge patch (RFC 7386) that sets or removes a few
// fields, as kubectl edit or a controller's update would.
func randomPatch(r *rand.Rand) map[string]interface{} {
	patch := randomIntent(r)
	spec := patch["spec"].(map[string]interface{})
	if r.Intn(3) == 0 {
		// Remove a field (null in a merge patch).
		for k := range spec {
			if r.Intn(2) == 0 {
				spec[k] = nil
			}
		}
	}
	return patch
}

// Failure is a step that broke an invariant.
type Failure struct {
	// Step is the index of the failing step in the sequence.
	Step int
	Err  error
}

func (f *Failure) Error() string { return fmt.Sprintf("step %d: %v", f.Step, f.Err) }

// Runner runs sequences over a model.
type Runner struct {
	Model ownershipcore.Model
	// Observe, when set, is called with the object's state after every
	// step; an error fails the sequence at that step.
	Observe func(ownershipcore.State) error
}

// NewRunner returns a runner over the Widget schema.
func NewRunner() (*Runner, error) {
	s, err := Schema()
	if err != nil {
		return nil, err
	}
	return &Runner{Model: ownershipcore.Model{Schema: s}}, nil
}

// world is one sequence's object and the records of fieldops's managers.
type world struct {
	state   ownershipcore.State
	exists  bool
	ledgers map[string]*ownershipcore.Ledger
}

// Run runs steps and returns the first *Failure, or nil.
func (r *Runner) Run(steps []Step) error {
	w := &world{ledgers: map[string]*ownershipcore.Ledger{}}
	for i, s := range steps {
		err := r.step(w, s)
		if err == nil && r.Observe != nil && w.exists {
			err = r.Observe(w.state)
		}
		if err != nil {
			return &Failure{Step: i, Err: fmt.Errorf("%s: %w", s, err)}
		}
	}
	return nil
}

func (r *Runner) object(w *world, content map[string]interface{}) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: deepCopy(content)}
	u.SetGroupVersionKind(WidgetGVK)
	u.SetName("w")
	return u
}

func deepCopy(m map[string]interface{}) map[string]interface{} {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}

func (r *Runner) step(w *world, s Step) error {
	if !w.exists {
		if s.Kind != OtherApply && s.Kind != Apply {
			return nil
		}
		empty := r.object(w, map[string]interface{}{})
		w.state = ownershipcore.State{Object: empty, SamePaths: true}
		w.exists = true
	}
	switch s.Kind {
	case OtherApply:
		next, err := r.Model.Apply(w.state, r.object(w, s.Object), s.Manager, s.Force)
		if apierrors.IsConflict(err) {
			return nil // the other manager's apply fails: nothing changes
		}
		if err != nil {
			return err
		}
		w.state = next
	case OtherUpdate:
		cur := ownershipcore.WithoutManagedFields(w.state.Object.Object)
		next := r.object(w, mergePatch(deepCopy(cur), s.Object))
		state, err := r.Model.Update(w.state, next, s.Manager)
		if err != nil {
			return err
		}
		w.state = state
	case Apply:
		return r.apply(w, s)
	case GiveBack, Relinquish, Orphan:
		return r.giveBack(w, s)
	}
	return nil
}

// apply is a fieldops manager's apply of its intent: the fields it drops
// go back to their previous owners, the list items and maps it drops that
// hold other managers' fields go to them, the previous owners of new
// fields are recorded, then the intent is applied; conflicts are forced,
// or yielded (the conflicting fields leave the intent).
func (r *Runner) apply(w *world, s Step) error {
	m := r.Model
	manager := s.Manager
	intent := r.object(w, s.Object)
	fields, err := m.Schema.ToTyped(intent)
	if err != nil {
		return err
	}
	set, err := fields.ToFieldSet()
	if err != nil {
		return err
	}
	ledger := r.ledger(w, manager)
	if err := r.follow(w, ledger, manager); err != nil {
		return err
	}
	// A field that leaves the intent goes back as at deletion.
	if ours := w.state.Owners.Applied(manager); ours != nil {
		dropped := ours.Fields.Difference(set)
		if prev := ledger.Previous(dropped); len(prev) > 0 {
			next, _ := ownershipcore.HandBack(w.state, manager, prev)
			if err := r.commit(w, next, ownershipcore.Op{Kind: ownershipcore.OpHandBack, Manager: manager, Previous: prev}, false); err != nil {
				return err
			}
		}
		ledger.Forget(dropped)
	}
	// What the apply must not do itself goes first (Model.BeforeApply,
	// as Applier.Apply does).
	if next, op, err := m.BeforeApply(w.state, intent, manager); err != nil {
		return err
	} else if err := r.commit(w, next, op, false); err != nil {
		return err
	}
	// The previous owners are recorded before the write (a forced apply
	// and one without conflicts record the same).
	var next ownershipcore.State
	if s.Force {
		ledger.Record(w.state.Owners, set, manager)
		next, err = m.Apply(w.state, intent, manager, true)
	} else if next, err = m.Apply(w.state, intent, manager, false); apierrors.IsConflict(err) {
		next, err = r.yield(w, intent, manager)
	} else if err == nil {
		ledger.Record(w.state.Owners, set, manager)
	}
	if err != nil {
		return err
	}
	if err := m.Check(w.state, next, ownershipcore.Op{Kind: ownershipcore.OpApply, Manager: manager}); err != nil {
		return err
	}
	w.state = next
	return nil
}

// yield applies intent without the fields it conflicts on (a Yield
// conflict policy): those a forced apply would take from other managers.
func (r *Runner) yield(w *world, intent *unstructured.Unstructured, manager string) (ownershipcore.State, error) {
	forced, err := r.Model.Apply(w.state, intent, manager, true)
	if err != nil {
		return ownershipcore.State{}, err
	}
	conflicts := fieldpath.NewSet()
	after := forced.Owners
	for _, e := range w.state.Owners {
		if e.Manager == manager {
			continue
		}
		kept := fieldpath.NewSet()
		for _, a := range after {
			if a.ManagerKey == e.ManagerKey {
				kept = a.Fields
			}
		}
		conflicts = conflicts.Union(e.Fields.Difference(kept))
	}
	a := &ownershipcore.Applier{Schema: r.Model.Schema}
	trimmed, err := a.RemoveFields(intent, conflicts)
	if err != nil {
		return ownershipcore.State{}, err
	}
	next, err := r.Model.Apply(w.state, trimmed, manager, false)
	if apierrors.IsConflict(err) {
		return w.state, nil // what is left still conflicts: nothing applied
	}
	return next, err
}

// giveBack is a fieldops manager's deletion: its fields go back to their
// previous owners (GiveBack), or stay without an owner (Relinquish: those
// it took; Orphan: all), then the rest is relinquished (not for Orphan),
// in one write.
func (r *Runner) giveBack(w *world, s Step) error {
	m := r.Model
	manager := s.Manager
	ledger := r.ledger(w, manager)
	delete(w.ledgers, manager)
	if err := r.follow(w, ledger, manager); err != nil {
		return err
	}
	before := w.state
	var op ownershipcore.Op
	var next ownershipcore.State
	switch s.Kind {
	case GiveBack:
		op = ownershipcore.Op{Kind: ownershipcore.OpHandBack, Manager: manager, Previous: ledger.Previous(nil)}
		next, _ = ownershipcore.HandBack(before, manager, op.Previous)
	case Relinquish:
		op = ownershipcore.Op{Kind: ownershipcore.OpRelease, Manager: manager, Fields: ledger.Taken()}
		next, _ = ownershipcore.Release(before, manager, op.Fields)
	case Orphan:
		op = ownershipcore.Op{Kind: ownershipcore.OpRelease, Manager: manager, Fields: before.Owners.Union()}
		next, _ = ownershipcore.Release(before, manager, op.Fields)
	}
	if err := m.Check(before, next, op); err != nil {
		return err
	}
	if s.Kind != Orphan {
		relinquished, _, err := m.Relinquish(next, manager)
		if err != nil {
			return err
		}
		rop := ownershipcore.Op{Kind: ownershipcore.OpRelinquish, Manager: manager}
		if err := m.Check(next, relinquished, rop); err != nil {
			return err
		}
		next = relinquished
	}
	return r.commit(w, next, op, true)
}

// commit is Commit without an apiserver: the invariants hold for op from
// the state before to next (Check), and the model predicts the write
// (Predict); checked says the caller checked the steps next is made of.
func (r *Runner) commit(w *world, next ownershipcore.State, op ownershipcore.Op, checked bool) error {
	if ownershipcore.Diff(w.state, next) == "" {
		return nil
	}
	if !checked {
		if err := r.Model.Check(w.state, next, op); err != nil {
			return err
		}
	}
	if err := r.Model.Predict(w.state, next, op.Manager); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	w.state = next
	return nil
}

func (r *Runner) ledger(w *world, manager string) *ownershipcore.Ledger {
	l, ok := w.ledgers[manager]
	if !ok {
		l = ownershipcore.NewLedger()
		w.ledgers[manager] = l
	}
	return l
}

// follow brings a ledger up to date with the object (Ledger.Follow).
func (r *Runner) follow(w *world, l *ownershipcore.Ledger, manager string) error {
	tv, err := r.Model.Schema.ToTyped(&unstructured.Unstructured{Object: ownershipcore.WithoutManagedFields(w.state.Object.Object)})
	if err != nil {
		return err
	}
	present, err := tv.ToFieldSet()
	if err != nil {
		return err
	}
	l.Follow(w.state.Owners, present, manager)
	return nil
}

// mergePatch applies a merge patch (RFC 7386) to doc.
func mergePatch(doc, patch map[string]interface{}) map[string]interface{} {
	for k, v := range patch {
		if v == nil {
			delete(doc, k)
			continue
		}
		pm, ok := v.(map[string]interface{})
		if !ok {
			doc[k] = v
			continue
		}
		dm, _ := doc[k].(map[string]interface{})
		if dm == nil {
			dm = map[string]interface{}{}
		}
		doc[k] = mergePatch(dm, pm)
	}
	return doc
}

// Shrink returns the shortest sequence found by removing steps of steps
// (which fails) one at a time while it still fails.
func (r *Runner) Shrink(steps []Step) []Step {
	for changed := true; changed; {
		changed = false
		for i := 1; i < len(steps); i++ {
			cand := append(append([]Step{}, steps[:i]...), steps[i+1:]...)
			if err := r.Run(cand); err != nil {
				steps, changed = cand, true
				i--
			}
		}
	}
	var f *Failure
	if err := r.Run(steps); errors.As(err, &f) {
		steps = steps[:f.Step+1]
	}
	return steps
}

// Format prints a sequence, one step a line.
func Format(steps []Step) string {
	var b strings.Builder
	for i, s := range steps {
		fmt.Fprintf(&b, "%3d %s\n", i, s)
	}
	return b.String()
}
