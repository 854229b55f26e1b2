/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// LedgerEntry is one previous owner: a managed fields entry of the target
// as it stood just before fieldops first wrote the fields, restricted to
// those fields.
type LedgerEntry struct {
	ManagerKey
	// Fields the entry owned that fieldops then wrote.
	Fields *fieldpath.Set
	// Shared are the Fields the entry still co-owned when fieldops last
	// looked (a field applied with the same value is shared, not taken).
	// Losing one of them while fieldops did not write is the owner letting
	// it go.
	Shared *fieldpath.Set
}

// Ledger is the record a fieldops object keeps of the fields it writes on
// one target: who owned each before the first write (so that deletion can
// hand it back), and which intent fields were looked at. It follows the
// apiserver: a previous owner that lets a field go (removes it, or stops
// co-owning it) is forgotten for that field, which from then on counts as
// added by fieldops and leaves at deletion instead of going back to an
// owner that gave it up. Its methods are pure.
type Ledger struct {
	Entries []LedgerEntry
	// Recorded are the intent fields whose previous owners were recorded.
	Recorded *fieldpath.Set
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{Recorded: fieldpath.NewSet()} }

// Record records, for every field of intent not recorded yet, the entries
// of owners (other than manager) that own it: call it with the live object's
// managed fields before the first write of those fields. It reports
// whether the ledger changed.
func (l *Ledger) Record(owners ManagedFields, intent *fieldpath.Set, manager string) bool {
	fresh := intent.Difference(l.Recorded)
	if fresh.Empty() {
		return false
	}
	// Nothing counts as shared before our write: Observe says what the
	// write left shared.
	for _, e := range owners.OwnersOf(fresh, manager) {
		l.add(e.ManagerKey, e.Fields, fieldpath.NewSet())
	}
	l.Recorded = l.Recorded.Union(fresh)
	return true
}

func (l *Ledger) add(key ManagerKey, fields, shared *fieldpath.Set) {
	for i := range l.Entries {
		if sameEntry(l.Entries[i].ManagerKey, key) {
			l.Entries[i].Fields = l.Entries[i].Fields.Union(fields)
			l.Entries[i].Shared = l.Entries[i].Shared.Union(shared)
			return
		}
	}
	l.Entries = append(l.Entries, LedgerEntry{ManagerKey: key, Fields: fields.Copy(), Shared: shared.Copy()})
}

// Follow brings the ledger up to date with the target as it is now, given
// its managed fields (owners) and the set of fields it holds (present, the
// typed object's field set), before manager writes again:
//
//   - a recorded field the object no longer holds was removed: no previous
//     owner keeps it;
//   - a field an entry's field manager co-owned when last seen (Observe),
//     that no entry of that field manager owns now while manager still
//     does, was let go by that owner (an empty apply, or an apply without
//     it): the entry forgets it.
//
// A field manager is one actor whatever the operation of its entries: the
// ledger may hold its Update entry (the one fieldops took a field from)
// while its Apply entry co-owns the field later (an upgrade to apply, as
// client-go's csaupgrade or kubectl apply --server-side does). A later
// apply that gives the field up is that manager letting it go, and the old
// Update entry must not get it back at deletion (test/invariants, seed
// 900076).
//
// It then notes which fields each entry co-owns now (Observe) and returns
// the fields forgotten.
func (l *Ledger) Follow(owners ManagedFields, present *fieldpath.Set, manager string) *fieldpath.Set {
	forgotten := fieldpath.NewSet()
	present = withParents(present)
	ours := fieldpath.NewSet()
	if e := owners.Applied(manager); e != nil {
		ours = e.Fields
	}
	goneAll := fieldpath.NewSet()
	for i := range l.Entries {
		e := &l.Entries[i]
		gone := e.Fields.Difference(present)
		goneAll = goneAll.Union(gone)
		letGo := e.Shared.Difference(ownedByManager(owners, e.Manager)).Intersection(ours)
		drop := gone.Union(letGo)
		if !drop.Empty() {
			e.Fields = e.Fields.Difference(drop)
			forgotten = forgotten.Union(drop)
		}
	}
	// A field an owner removed is recorded afresh if it comes back. (A
	// field the patch never wrote, a conflict under Fail, stays recorded:
	// recording it again on every reconcile would rewrite status.)
	l.Recorded = l.Recorded.Difference(goneAll)
	l.compact()
	l.Observe(owners)
	return forgotten
}

// Unshare drops fields from every entry's Shared and reports whether one
// changed: call it with the fields manager is about to force from other
// managers (ApplyOptions.BeforeForce), and save the ledger before that
// write. Follow takes a shared field that its owner no longer owns while
// manager does for one the owner let go; after a forced write, that is
// manager's own doing, and a ledger saved only after the write (a save a
// crash can lose) would forget the owner.
func (l *Ledger) Unshare(fields *fieldpath.Set) bool {
	changed := false
	for i := range l.Entries {
		e := &l.Entries[i]
		if keep := e.Shared.Difference(fields); !keep.Equals(e.Shared) {
			e.Shared, changed = keep, true
		}
	}
	return changed
}

// Observe notes which recorded fields each entry's field manager co-owns
// in owners (by any of its entries): call it with the managed fields right
// after manager's own write, so that the fields that write took are not
// mistaken for fields let go.
func (l *Ledger) Observe(owners ManagedFields) {
	for i := range l.Entries {
		l.Entries[i].Shared = l.Entries[i].Fields.Intersection(ownedByManager(owners, l.Entries[i].Manager))
	}
}

// ownedByManager is the union of the field sets of every entry of owners
// whose manager is name, whatever its operation, apiVersion or subresource.
func ownedByManager(owners ManagedFields, name string) *fieldpath.Set {
	out := fieldpath.NewSet()
	for _, e := range owners {
		if e.Manager == name {
			out = out.Union(e.Fields)
		}
	}
	return out
}

// Forget drops fields from every entry and from Recorded: they were handed
// back or released, and a later write of them is recorded afresh.
func (l *Ledger) Forget(fields *fieldpath.Set) {
	for i := range l.Entries {
		l.Entries[i].Fields = l.Entries[i].Fields.Difference(fields)
		l.Entries[i].Shared = l.Entries[i].Shared.Difference(fields)
	}
	l.Recorded = l.Recorded.Difference(fields)
	l.compact()
}

func (l *Ledger) compact() {
	out := l.Entries[:0]
	for _, e := range l.Entries {
		if !e.Fields.Empty() {
			out = append(out, e)
		}
	}
	l.Entries = out
}

// Taken is every field some previous owner owned: the fields that go back
// (HandBack) or stay without an owner (Release) rather than leave.
func (l *Ledger) Taken() *fieldpath.Set {
	out := fieldpath.NewSet()
	for _, e := range l.Entries {
		out = out.Union(e.Fields)
	}
	return out
}

// Departed returns the recorded fields whose every previous owner is the
// field manager of a fieldops object (ParseManager) other than manager
// that holds no entry on the object any more. Such a manager has
// relinquished the object (its fieldops object was deleted), or lost all
// its fields to other managers (forced from it, or yielded). Handing a
// field back would make, in the first case, an entry nobody will ever
// relinquish; so the field stays in place without that owner (Release),
// with whoever shares it now. A fieldops object that still exists applies
// its intent again and takes back what it may.
func (l *Ledger) Departed(owners ManagedFields, manager string) *fieldpath.Set {
	departed, alive := fieldpath.NewSet(), fieldpath.NewSet()
	for _, e := range l.Entries {
		if _, fieldops := ParseManager(e.Manager); fieldops && e.Manager != manager && ownedByManager(owners, e.Manager).Empty() {
			departed = departed.Union(e.Fields)
		} else {
			alive = alive.Union(e.Fields)
		}
	}
	// A field another previous owner owned too goes back to that one.
	return departed.Difference(alive)
}

// Previous returns the entries as managed fields, restricted to fields
// (all when fields is nil), for HandBack.
func (l *Ledger) Previous(fields *fieldpath.Set) ManagedFields {
	var out ManagedFields
	for _, e := range l.Entries {
		f := e.Fields
		if fields != nil {
			f = f.Intersection(fields)
		}
		if !f.Empty() {
			out = append(out, Entry{ManagerKey: e.ManagerKey, Fields: f})
		}
	}
	return out
}

// withParents is set with every prefix of its paths: a map or list that
// holds a member is present too. It walks the set's tree once, so its
// cost is the size of the set, however deep its paths are.
func withParents(set *fieldpath.Set) *fieldpath.Set {
	out := fieldpath.NewSet()
	addWithParents(out, set)
	return out
}

// addWithParents adds set's members, and every node holding one, to out.
func addWithParents(out, set *fieldpath.Set) {
	set.Members.Iterate(out.Members.Insert)
	set.Children.Iterate(func(pe fieldpath.PathElement) {
		if child, _ := set.Children.Get(pe); !child.Empty() {
			out.Members.Insert(pe)
			addWithParents(out.Children.Descend(pe), child)
		}
	})
}
