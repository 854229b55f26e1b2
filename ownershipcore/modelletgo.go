/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// LetGo is what a field manager gives up in one write: the fields it took
// go back to their previous owners (Previous) or stay without an owner
// (Release), then, with Relinquish, every field it owns alone is removed
// and its entries go. A FieldPatch's deletion policies are LetGo values:
// HandBack is {Previous, Relinquish}, Restore is {Restore: previous
// values, Previous, Relinquish}, Relinquish is {Release: taken,
// Relinquish}, Orphan is {Release: everything}.
type LetGo struct {
	// Restore are the previous values of fields going back (PreviousValues:
	// what they held before manager first wrote them; nil: none). Those
	// manager owns alone get them back before the hand-back; one another
	// manager owns too was written since and keeps its value
	// (deletionPolicy Restore).
	Restore *unstructured.Unstructured
	// Previous are the entries the fields manager took go back to
	// (HandBack; SSA docs, "Transferring ownership").
	Previous ManagedFields
	// Release are fields that leave manager's Apply entry with no new
	// owner; their values stay.
	Release *fieldpath.Set
	// Relinquish removes, after the above, what manager owns alone, as an
	// empty apply should (Model.Relinquish), and every entry of manager.
	Relinquish bool
}

// Outcome is what a LetGo did, field by field.
type Outcome struct {
	// Restored are the fields whose previous values were put back.
	Restored *fieldpath.Set
	// Moved are the fields handed back to their previous owners.
	Moved *fieldpath.Set
	// Released are the fields left in place without an owner.
	Released *fieldpath.Set
	// Removed are the fields manager owned alone, removed with their
	// values.
	Removed *fieldpath.Set
	// Kept are fields manager owned alone that could not be removed and
	// stay without an owner; Why says why (the object would be invalid
	// without them, or the result could not be predicted).
	Kept *fieldpath.Set
	Why  string
	// RestoreSent: the previous values went back in a Server-Side Apply
	// of its own, before the JSON patch of the rest (Applier.LetGo; the
	// model says it would: the apply changes something).
	RestoreSent bool
}

func emptyOutcome() Outcome {
	return Outcome{Restored: fieldpath.NewSet(), Moved: fieldpath.NewSet(), Released: fieldpath.NewSet(), Removed: fieldpath.NewSet(), Kept: fieldpath.NewSet()}
}

// LetGo computes g on s: the previous values of g.Restore (restore),
// HandBack to g.Previous, Release of g.Release,
// then Relinquish when g.Relinquish, each step checked against the
// invariants (Check). It returns the state after, what was done, and
// ErrUnpredictable (wrapped) when Relinquish cannot be computed (entries of
// another version whose paths may differ).
func (m Model) LetGo(s State, manager string, g LetGo) (State, Outcome, error) {
	out := emptyOutcome()
	next := s
	if g.Restore != nil {
		var err error
		if next, out.Restored, err = m.restore(s, manager, g.Restore); err != nil {
			return State{}, out, err
		}
		out.RestoreSent = Diff(s, next) != "" // Applier.LetGo sends it only then
		if err := m.Check(s, next, Op{Kind: OpRestore, Manager: manager, Fields: out.Restored}); err != nil {
			return State{}, out, err
		}
	}
	if len(g.Previous) > 0 {
		before := next
		next, out.Moved = HandBack(next, manager, g.Previous)
		if err := m.Check(before, next, Op{Kind: OpHandBack, Manager: manager, Previous: g.Previous}); err != nil {
			return State{}, out, err
		}
	}
	if g.Release != nil && !g.Release.Empty() {
		before := next
		next, out.Released = Release(next, manager, g.Release)
		if err := m.Check(before, next, Op{Kind: OpRelease, Manager: manager, Fields: g.Release}); err != nil {
			return State{}, out, err
		}
	}
	if !g.Relinquish {
		return next, out, nil
	}
	before := next
	next, removed, err := m.Relinquish(next, manager)
	if err != nil {
		return State{}, out, err
	}
	if err := m.Check(before, next, Op{Kind: OpRelinquish, Manager: manager}); err != nil {
		return State{}, out, err
	}
	out.Removed = removed
	return next, out, nil
}

// keepInstead is the state in which manager lets go of every field it
// still owns in next without removing any (a Release of all of them), for
// a relinquish whose removals cannot be made: the object would be invalid
// without them, or their result cannot be predicted.
func keepInstead(next State, manager string, out Outcome, why string) (State, Outcome) {
	owners := make(ManagedFields, 0, len(next.Owners))
	for _, e := range next.Owners {
		if e.Manager != manager || e.Subresource != "" {
			owners = append(owners, e)
		}
	}
	out.Kept, out.Why = next.ours(manager), why
	return next.withOwners(owners), out
}
