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
	// Via is the field manager of the fieldops object (a FieldPatch or
	// ClusterFieldPatch) whose own record this entry was copied from
	// (Inherit): the entry owned the fields before that object took them,
	// and gets them back only once that object has left the target
	// (HandBackTo). Empty for an owner fieldops displaced itself.
	Via string
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
// owner that gave it up. When a previous owner is another fieldops object,
// the ledger also holds that object's own previous owners of the fields
// (Inherit), so that the fields go back to them if that object leaves
// first (HandBackTo). Its methods are pure.
type Ledger struct {
	Entries []LedgerEntry
	// Recorded are the intent fields whose previous owners were recorded.
	Recorded *fieldpath.Set
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{Recorded: fieldpath.NewSet()} }

// Copy is a deep copy of l: a decision that goes on from l (a plan's
// record after a step) leaves l as it was.
func (l *Ledger) Copy() *Ledger {
	out := &Ledger{Recorded: l.Recorded.Copy(), Entries: make([]LedgerEntry, len(l.Entries))}
	for i, e := range l.Entries {
		e.Fields, e.Shared = copySet(e.Fields), copySet(e.Shared)
		out.Entries[i] = e
	}
	return out
}

// copySet copies s (nil stays nil).
func copySet(s *fieldpath.Set) *fieldpath.Set {
	if s == nil {
		return nil
	}
	return s.Copy()
}

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
		l.add(e.ManagerKey, "", e.Fields, fieldpath.NewSet())
	}
	l.Recorded = l.Recorded.Union(fresh)
	return true
}

// Inherit copies into l, for the fields of fields that l records as taken
// from from (the field manager of a FieldPatch or ClusterFieldPatch; call
// it right after the Record of those fields), the previous owners that
// from's own record (theirs, read from its status for the same target)
// names for them, as owners through from (LedgerEntry.Via). theirs is
// flat (its owners through others keep their Via), so one copy carries
// the whole chain, and nothing is read again later. Entries of manager
// itself, or through it, are left out: a patch is never its own previous
// owner, so a cycle of patches taking each other's fields ends there. It
// reports whether l changed.
func (l *Ledger) Inherit(from string, theirs *Ledger, fields *fieldpath.Set, manager string) bool {
	taken := fieldpath.NewSet()
	for _, e := range l.Entries {
		if e.Via == "" && e.Manager == from {
			taken = taken.Union(e.Fields)
		}
	}
	taken = taken.Intersection(fields)
	changed := false
	for _, e := range theirs.Entries {
		f := e.Fields.Intersection(taken)
		if f.Empty() || e.Manager == manager || e.Manager == from || e.Via == manager {
			continue
		}
		via := e.Via
		if via == "" {
			via = from
		}
		if i := l.find(e.ManagerKey, via); i >= 0 && f.Difference(l.Entries[i].Fields).Empty() {
			continue
		}
		l.add(e.ManagerKey, via, f, fieldpath.NewSet())
		changed = true
	}
	return changed
}

func (l *Ledger) find(key ManagerKey, via string) int {
	for i := range l.Entries {
		if l.Entries[i].Via == via && sameEntry(l.Entries[i].ManagerKey, key) {
			return i
		}
	}
	return -1
}

func (l *Ledger) add(key ManagerKey, via string, fields, shared *fieldpath.Set) {
	if i := l.find(key, via); i >= 0 {
		l.Entries[i].Fields = l.Entries[i].Fields.Union(fields)
		l.Entries[i].Shared = l.Entries[i].Shared.Union(shared)
		return
	}
	l.Entries = append(l.Entries, LedgerEntry{ManagerKey: key, Via: via, Fields: fields.Copy(), Shared: shared.Copy()})
}

// Follow brings the ledger up to date with the target as it is now, given
// its managed fields (owners) and the set of fields it holds (present, the
// typed object's field set), before manager writes again:
//
//   - a recorded field the object no longer holds was removed: no previous
//     owner keeps it, and it is recorded afresh if it comes back, with
//     the owners it has then (a field the patch added included: one that
//     another manager applies again after the removal is that manager's
//     when the patch takes it);
//   - a field an entry's field manager co-owned when last seen (Observe),
//     that no entry of that field manager owns now while manager still
//     does, was let go by that owner (an empty apply, or an apply without
//     it): the entry forgets it;
//   - a field an entry's field manager co-owned when last seen, that
//     neither that manager nor manager owns now while another manager
//     does, left that owner by another hand than manager's (a third
//     manager took it from both, or it was removed and applied again
//     before manager looked): the entry forgets it, and once no entry
//     holds it, it is recorded afresh at manager's next take, with the
//     owners of that moment. Only manager's own forced writes take a
//     shared field from its owner, and those unshare it first (Unshare),
//     so a previous owner gets back what manager took from it, never what
//     it lost to someone else.
//
// A field the patch forced from its owner is not shared: the owner's claim
// stays through any later contest over the field (a repair after another
// manager took it from the patch), until the field is removed or the owner
// co-owns it again and lets it go.
//
// A field manager is one actor whatever the operation of its entries: the
// ledger may hold its Update entry (the one fieldops took a field from)
// while its Apply entry co-owns the field later (an upgrade to apply, as
// client-go's csaupgrade or kubectl apply --server-side does). A later
// apply that gives the field up is that manager letting it go, and the old
// Update entry must not get it back at deletion.
//
// An owner through another fieldops object (Via) keeps a field only while
// an entry of that object holds it. Follow then notes which fields each
// entry co-owns now (Observe) and returns the fields forgotten.
func (l *Ledger) Follow(owners ManagedFields, present *fieldpath.Set, manager string) *fieldpath.Set {
	forgotten := fieldpath.NewSet()
	present = withParents(present)
	ours, held := fieldpath.NewSet(), fieldpath.NewSet()
	for _, e := range owners {
		if e.Manager == manager {
			ours = ours.Union(e.Fields)
		} else {
			held = held.Union(e.Fields)
		}
	}
	// A recorded field the object no longer holds was removed, whether a
	// previous owner held it or the patch added it.
	unrecord := l.Recorded.Difference(present)
	for i := range l.Entries {
		e := &l.Entries[i]
		gone := e.Fields.Difference(present)
		unrecord = unrecord.Union(gone)
		lost := e.Shared.Difference(ownedByManager(owners, e.Manager))
		letGo := lost.Intersection(ours)
		elsewhere := lost.Difference(ours).Intersection(held)
		unrecord = unrecord.Union(elsewhere)
		drop := gone.Union(letGo).Union(elsewhere)
		if !drop.Empty() {
			e.Fields = e.Fields.Difference(drop)
			forgotten = forgotten.Union(drop)
		}
	}
	l.compact()
	// A field an owner removed, or that left its owners for another
	// manager, is recorded afresh when the patch takes it again; one
	// still held by a previous owner keeps its record. (A field the
	// patch never wrote, a conflict under Fail, stays recorded: recording
	// it again on every reconcile would rewrite status.)
	l.Recorded = l.Recorded.Difference(unrecord.Difference(l.Taken()))
	l.Observe(owners)
	return forgotten
}

// Unshare drops fields from every entry's Shared and reports whether one
// changed: call it with the fields manager is about to force from other
// managers (ApplyOptions.Recorded, RecordFirstError), and save the ledger before that
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

// compact drops the fields of owners through a fieldops object (Via) that
// no entry of that object holds any more, following the chain from the
// owners fieldops displaced itself (a cycle of Via entries holds nothing
// on its own), then the entries left without fields.
func (l *Ledger) compact() {
	holds := map[string]*fieldpath.Set{}
	hold := func(manager string, f *fieldpath.Set) bool {
		h, ok := holds[manager]
		if !ok {
			h = fieldpath.NewSet()
		}
		if f.Difference(h).Empty() {
			return false
		}
		holds[manager] = h.Union(f)
		return true
	}
	for _, e := range l.Entries {
		if e.Via == "" {
			hold(e.Manager, e.Fields)
		}
	}
	// Each round adds fields to some manager's set or ends: at most one
	// round per entry.
	for changed := true; changed; {
		changed = false
		for _, e := range l.Entries {
			if h, ok := holds[e.Via]; ok && e.Via != "" && hold(e.Manager, e.Fields.Intersection(h)) {
				changed = true
			}
		}
	}
	out := l.Entries[:0]
	for _, e := range l.Entries {
		if e.Via != "" {
			h, ok := holds[e.Via]
			if !ok {
				h = fieldpath.NewSet()
			}
			e.Fields = e.Fields.Intersection(h)
			e.Shared = e.Shared.Intersection(e.Fields)
		}
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
		if e.Via == "" {
			out = out.Union(e.Fields)
		}
	}
	return out
}

// isDeparted reports whether name is the field manager of a fieldops
// object other than manager that holds no entry in owners.
func isDeparted(owners ManagedFields, name, manager string) bool {
	_, fieldops := ParseManager(name)
	return fieldops && name != manager && ownedByManager(owners, name).Empty()
}

// HandBackTo says where the recorded fields of fields (every taken field
// when fields is nil) go when manager hands them back, given the target's
// managed fields now (owners): each to the entries of its previous owners
// (as managed fields, for HandBack), except that a previous owner that is
// a departed fieldops object (one other than manager holding no entry on
// the target: a FieldPatch deleted since, a workload that relinquished)
// passes the field on to the owners recorded through it (Inherit), and
// those through theirs, down the chain; a fieldops object that still
// holds an entry gets the field itself and takes it from there. A field
// that finds no owner that way (its owners were fieldops objects whose
// records are not known: a ManagedWorkload, whose owner is the one left
// when it goes, or a patch whose record could not be read) is returned in
// the second set, to stay in place without an owner (Release). Each
// fieldops manager is passed through at most once per field, so the walk
// ends whatever cycle the records hold.
func (l *Ledger) HandBackTo(owners ManagedFields, manager string, fields *fieldpath.Set) (ManagedFields, *fieldpath.Set) {
	want := l.Taken()
	if fields != nil {
		want = want.Intersection(fields)
	}
	type step struct {
		key    ManagerKey
		fields *fieldpath.Set
	}
	var queue []step
	for _, e := range l.Entries {
		if f := e.Fields.Intersection(want); e.Via == "" && !f.Empty() {
			queue = append(queue, step{e.ManagerKey, f})
		}
	}
	passed := map[string]*fieldpath.Set{}
	var out ManagedFields
	given := fieldpath.NewSet()
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		switch {
		case s.key.Manager == manager:
			continue
		case isDeparted(owners, s.key.Manager, manager):
			seen, ok := passed[s.key.Manager]
			if !ok {
				seen = fieldpath.NewSet()
			}
			fresh := s.fields.Difference(seen)
			passed[s.key.Manager] = seen.Union(fresh)
			for _, e := range l.Entries {
				if f := e.Fields.Intersection(fresh); e.Via == s.key.Manager && !f.Empty() {
					queue = append(queue, step{e.ManagerKey, f})
				}
			}
			continue
		}
		given = given.Union(s.fields)
		merged := false
		for i := range out {
			if sameEntry(out[i].ManagerKey, s.key) {
				out[i].Fields = out[i].Fields.Union(s.fields)
				merged = true
			}
		}
		if !merged {
			out = append(out, Entry{ManagerKey: s.key, Fields: s.fields})
		}
	}
	return out, want.Difference(given)
}

// Previous returns the entries of the previous owners fieldops displaced
// itself (not those through another object: HandBackTo follows them) as
// managed fields, restricted to fields (all when fields is nil).
func (l *Ledger) Previous(fields *fieldpath.Set) ManagedFields {
	var out ManagedFields
	for _, e := range l.Entries {
		if e.Via != "" {
			continue
		}
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
