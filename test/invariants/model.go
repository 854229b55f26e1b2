/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package invariants

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/workload"
	"github.com/fieldops/fieldops/ownershipcore"
)

// Violation is a broken invariant, numbered as in the package doc.
type Violation struct {
	Invariant int
	Message   string
}

// String prints the violation as "(n) message".
func (v Violation) String() string { return fmt.Sprintf("(%d) %s", v.Invariant, v.Message) }

// owner is one managedFields entry's identity: a field manager and its
// operation.
type owner struct {
	Manager   string
	Operation metav1.ManagedFieldsOperationType
}

func (o owner) String() string { return fmt.Sprintf("%q (%s)", o.Manager, o.Operation) }

// isFieldops reports whether a field manager is one of fieldops' own.
func isFieldops(manager string) bool { return strings.HasPrefix(manager, "fieldops-") }

// snapshot is the target as read at one moment: its content and who owns
// which field.
type snapshot struct {
	obj    map[string]interface{}
	rv     string
	owners map[owner]*fieldpath.Set
}

func newSnapshot(u *unstructured.Unstructured) (*snapshot, error) {
	s := &snapshot{obj: map[string]interface{}{}, owners: map[owner]*fieldpath.Set{}}
	if u == nil {
		return s, nil
	}
	mf, err := ownershipcore.Owners(u)
	if err != nil {
		return nil, err
	}
	s.obj, s.rv = u.Object, u.GetResourceVersion()
	for _, e := range mf {
		o := owner{Manager: e.Manager, Operation: e.Operation}
		if s.owners[o] == nil {
			s.owners[o] = fieldpath.NewSet()
		}
		s.owners[o] = s.owners[o].Union(e.Fields)
	}
	return s, nil
}

func (s *snapshot) value(p fieldpath.Path) (interface{}, bool) { return lookup(s.obj, p) }

func (s *snapshot) owns(o owner, p fieldpath.Path) bool {
	set := s.owners[o]
	return set != nil && set.Has(p)
}

// ownsAny reports whether manager owns p (with any operation).
func (s *snapshot) ownsAny(manager string, p fieldpath.Path) bool {
	for o := range s.owners {
		if o.Manager == manager && s.owns(o, p) {
			return true
		}
	}
	return false
}

// ownersOf lists the owners of p.
func (s *snapshot) ownersOf(p fieldpath.Path) []owner {
	var out []owner
	for o := range s.owners {
		if s.owns(o, p) {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// othersHold reports whether a manager other than manager owns p or a
// field under it.
func (s *snapshot) othersHold(manager string, p fieldpath.Path) bool {
	for o, set := range s.owners {
		if o.Manager != manager && (set.Has(p) || !under(set, p).Empty()) {
			return true
		}
	}
	return false
}

// itemKeys returns the key field names of the list item p's last element
// is a field of, when that field is one of them.
func itemKeys(p fieldpath.Path) (map[string]bool, bool) {
	if len(p) < 2 || p[len(p)-1].FieldName == nil || p[len(p)-2].Key == nil {
		return nil, false
	}
	keys := map[string]bool{}
	for _, f := range *p[len(p)-2].Key {
		keys[f.Name] = true
	}
	return keys, keys[*p[len(p)-1].FieldName]
}

// keyOfHeldItem reports whether p is a key field of a list item under
// which a manager other than manager owns a field: the item stays with
// that field, and with its key (an empty apply leaves them too).
func (s *snapshot) keyOfHeldItem(manager string, p fieldpath.Path) bool {
	_, isKey := itemKeys(p)
	return isKey && s.othersHold(manager, p[:len(p)-1])
}

// keyOfItemWithValues reports whether p is a key field of a list item that
// holds a field other than its keys (owned or not): the key stays as long
// as the item does (a field the patch took and released stays, without
// an owner, and its item with it).
func (s *snapshot) keyOfItemWithValues(p fieldpath.Path) bool {
	keys, isKey := itemKeys(p)
	if !isKey {
		return false
	}
	item, _ := s.value(p[:len(p)-1])
	m, _ := item.(map[string]interface{})
	for k := range m {
		if !keys[k] {
			return true
		}
	}
	return false
}

// keyOfItemHeldBy reports whether p is a key field of a list item in
// which manager (any of its entries) owns a field that is not a key.
func (s *snapshot) keyOfItemHeldBy(manager string, p fieldpath.Path) bool {
	keys, isKey := itemKeys(p)
	if !isKey {
		return false
	}
	held := false
	for o, set := range s.owners {
		if o.Manager != manager {
			continue
		}
		under(set, p[:len(p)-1]).Iterate(func(q fieldpath.Path) {
			if len(q) > 0 && (q[0].FieldName == nil || !keys[*q[0].FieldName]) {
				held = true
			}
		})
	}
	return held
}

// under is the part of set below p.
func under(set *fieldpath.Set, p fieldpath.Path) *fieldpath.Set {
	for _, pe := range p {
		set = set.WithPrefix(pe)
	}
	return set
}

// leaves lists the leaf fields manager owns (with any operation).
func (s *snapshot) leaves(manager string) []fieldpath.Path {
	set := fieldpath.NewSet()
	for o, fs := range s.owners {
		if o.Manager == manager {
			set = set.Union(fs)
		}
	}
	var out []fieldpath.Path
	set.Leaves().Iterate(func(p fieldpath.Path) { out = append(out, p.Copy()) })
	return out
}

// describe prints p's value and owners, for messages.
func (s *snapshot) describe(p fieldpath.Path) string {
	v, ok := s.value(p)
	owners := s.ownersOf(p)
	names := make([]string, len(owners))
	for i, o := range owners {
		names[i] = o.String()
	}
	by := "nobody"
	if len(names) > 0 {
		by = strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, owned by %s", show(v, ok), by)
}

func show(v interface{}, ok bool) string {
	if !ok {
		return "absent"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// model is what the test knows about a sequence beyond the target itself:
// the live fieldops objects, and for each FieldPatch who owned each field
// it holds before it took it.
type model struct {
	kind      *Kind
	patches   map[string]*patchModel
	workloads map[string]string // name → field manager
	// faults: fieldops' writes fail during steps (Sequence.Faults). A
	// status write lost after the patch added a field loses the record
	// that it was added: when another manager then takes it from the
	// patch, the patch's repair records that manager as its previous
	// owner, as for a field it takes for the first time.
	faults bool
}

func newModel(k *Kind) *model {
	return &model{kind: k, patches: map[string]*patchModel{}, workloads: map[string]string{}}
}

// patchModel is a live FieldPatch.
type patchModel struct {
	name, manager string
	conflict      v1alpha1.ConflictPolicy
	deletion      v1alpha1.DeletionPolicy
	// records are the fields the patch held at some point, by path.
	records map[string]*record
}

// record is the history of one field a FieldPatch holds.
type record struct {
	path fieldpath.Path
	// owners owned the field just before the patch first took it (no
	// owner: the patch added it).
	owners map[owner]bool
	// dropped are owners that removed or relinquished the field themselves
	// since: no longer previous owners.
	dropped map[owner]bool
	// contested: another manager took the field while the patch held it
	// (and the patch took it back). The owners before the patch first took
	// it stay the previous owners, and a field nobody owned then stays
	// added (a contest changes no record: docs/fieldpatch.md). Whether the
	// hand-back of a taken field goes to its previous owners or to the
	// manager that took it in between depends on what that manager did
	// meanwhile (took it from both the patch and a sharing owner, which
	// that owner then lost to another hand), so only its value is checked
	// at release.
	contested bool
	// ambiguous: a third manager removed the field (while the patch held
	// it, or after another manager took it from the patch), or one of
	// several previous owners removed it while the patch held it; nothing
	// but (5) is checked at release.
	ambiguous bool
	// fromWorkload: a ManagedWorkload owned the field just before the
	// patch first took it. A workload keeps no record of previous owners,
	// so once it is gone the patch's release leaves the field in place
	// without an owner (ownershipcore.Ledger.HandBackTo), as for a taken
	// field, instead of removing it as an added one.
	fromWorkload bool
	// writtenSince: a previous owner wrote the field again while the
	// patch held it (took it back, or changed its value): Restore leaves
	// what that owner wrote, as for a field another manager changed
	// since.
	writtenSince bool
	// between are the managers that took the field from the patch or its
	// previous owners and held it when the patch took it back (contested).
	between map[string]bool
	// previous is the field's value just before the patch first took it
	// (hasPrevious: it had one), what deletionPolicy Restore puts back.
	previous    interface{}
	hasPrevious bool
}

// liveOwners are the recorded owners that did not let the field go.
func (r *record) liveOwners() []owner {
	var out []owner
	for o := range r.owners {
		if !r.dropped[o] {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// ownedByAny reports whether one of owners' field managers (by name, as
// the ledger follows them) owns p in s.
func (m *model) ownedByAny(s *snapshot, owners []owner, p fieldpath.Path) bool {
	for _, o := range owners {
		if s.ownsAny(o.Manager, p) {
			return true
		}
	}
	return false
}

// workloadHolds reports whether a live workload's field manager owns p in
// s.
func (m *model) workloadHolds(s *snapshot, p fieldpath.Path) bool {
	for _, w := range m.workloads {
		if s.ownsAny(w, p) {
			return true
		}
	}
	return false
}

// takers are the field managers that may take fields from others: live
// FieldPatches with conflictPolicy Force, and workloads (Force by
// default).
func (m *model) takers() []string {
	var out []string
	for _, p := range m.patches {
		if p.conflict == v1alpha1.ConflictPolicyForce || p.conflict == "" {
			out = append(out, p.manager)
		}
	}
	for _, w := range m.workloads {
		out = append(out, w)
	}
	return out
}

// checkLosses is invariant (1): no manager other than fieldops lost a field
// between before and after, unless the actor's own request did it (the
// actor took it, removed it, or relinquished it: visible in written, the
// response to that request) or a live FieldPatch with Force or a workload
// holds it now. actor is "" and written nil when only fieldops acted.
func (m *model) checkLosses(before, written, after *snapshot) []Violation {
	var out []Violation
	takers := m.takers()
	for o, set := range before.owners {
		if isFieldops(o.Manager) {
			continue
		}
		set.Leaves().Iterate(func(p fieldpath.Path) {
			if after.owns(o, p) || written != nil && !written.owns(o, p) {
				return
			}
			for _, t := range takers {
				if after.ownsAny(t, p) {
					return
				}
			}
			out = append(out, Violation{1, fmt.Sprintf("%s lost %s (%s before; now %s) without letting it go, and no FieldPatch with Force or workload holds it",
				o, ownershipcore.FormatPath(p), show(before.value(p)), after.describe(p))})
		})
	}
	return out
}

// observe updates the FieldPatches' records with what happened between
// before and after: actor's request (response written; nil when only
// fieldops acted), then fieldops' reaction.
func (m *model) observe(actor string, before, written, after *snapshot) {
	prev := before
	if written != nil {
		prev = written
	}
	for _, pm := range m.patches {
		if written != nil {
			// Fields the patch took between the read before the step and
			// the actor's request (a reconcile that ended after the
			// previous step settled: the request was sent at the version
			// that write left): nobody but fieldops wrote in between, so
			// their owners before the take are those of before.
			m.recordTakes(pm, before, written)
			for _, rec := range pm.records {
				m.observeRequest(pm, rec, actor, before, written)
			}
		}
		m.recordTakes(pm, prev, after)
	}
}

// recordTakes updates pm's records with the fields the patch holds in
// after and did not hold in prev: taken (or shared, or added) by it, from
// the owners of prev.
func (m *model) recordTakes(pm *patchModel, prev, after *snapshot) {
	for _, p := range after.leaves(pm.manager) {
		if prev.ownsAny(pm.manager, p) {
			continue
		}
		var cands []owner
		fromWorkload := false
		for _, o := range prev.ownersOf(p) {
			if !isFieldops(o.Manager) {
				cands = append(cands, o)
			}
			fromWorkload = fromWorkload || strings.HasPrefix(o.Manager, workload.ManagerPrefix)
		}
		k := ownershipcore.FormatPath(p)
		rec := pm.records[k]
		if rec == nil {
			rec = &record{path: p, owners: map[owner]bool{}, dropped: map[owner]bool{}}
			for _, o := range cands {
				rec.owners[o] = true
			}
			rec.previous, rec.hasPrevious = prev.value(p)
			rec.fromWorkload = fromWorkload
			pm.records[k] = rec
			continue
		}
		// Taken back from a manager that took it from the patch: the
		// record of who owned it before the patch first took it stays.
		for _, o := range cands {
			if !rec.owners[o] {
				rec.contested = true
				if rec.between == nil {
					rec.between = map[string]bool{}
				}
				rec.between[o.Manager] = true
			}
		}
	}
}

// observeRequest follows a non-fieldops request's effect on a recorded
// field: an owner that removes or relinquishes it is no longer a previous
// owner; one that takes it again is; a third manager's removal or take
// makes the record ambiguous or contested.
func (m *model) observeRequest(pm *patchModel, rec *record, actor string, before, written *snapshot) {
	p := rec.path
	_, had := before.value(p)
	_, has := written.value(p)
	if observeOwner(rec, actor, had, has, before, written) {
		// One previous owner removed the field: the apiserver drops it from
		// every owner's set, so nothing on the object says the others did
		// not let it go too (fieldops forgets it for all of them, and a
		// repair adds it anew). Only (5) is checked then.
		if had && !has && len(rec.liveOwners()) > 0 {
			rec.ambiguous = true
		}
		return
	}
	m.observeOther(pm, rec, actor, had, has, before, written)
}

// observeOwner follows the request of actor on rec's field when actor is
// a previous owner of it (by manager name: an Update of a field moves it
// from the manager's Apply entry to its Update entry; it still holds it),
// and reports whether it is; had and has say whether the field was set
// before and is after.
func observeOwner(rec *record, actor string, had, has bool, before, written *snapshot) bool {
	p := rec.path
	isOwner := false
	for o := range rec.owners {
		if o.Manager != actor {
			continue
		}
		isOwner = true
		switch {
		case written.ownsAny(o.Manager, p):
			bv, _ := before.value(p)
			wv, _ := written.value(p)
			if !rec.dropped[o] && (!before.ownsAny(o.Manager, p) || !reflect.DeepEqual(bv, wv)) {
				rec.writtenSince = true
			}
			if rec.dropped[o] {
				// It let the field go (fieldops forgot it: the record
				// follows the apiserver) and now takes it again: a
				// manager in between, no longer a previous owner.
				delete(rec.dropped, o)
				delete(rec.owners, o)
				rec.contested = true
			}
		case had && !has, before.ownsAny(o.Manager, p) && has:
			rec.dropped[o] = true // it removed or relinquished the field
		}
	}
	return isOwner
}

// observeOther follows the request of actor, not a previous owner, on
// rec's field: a manager in between letting go, or a third manager's
// removal, makes the record ambiguous; a take from the patch contests it.
func (m *model) observeOther(pm *patchModel, rec *record, actor string, had, has bool, before, written *snapshot) {
	p := rec.path
	if rec.between[actor] && before.ownsAny(actor, p) && !written.ownsAny(actor, p) && !m.ownedByAny(written, rec.liveOwners(), p) {
		// A manager in between lets the field go while none of the
		// previous owners holds it: they lost it to another hand, so
		// fieldops recorded the field afresh with the manager in between
		// as its owner, and the field now counts as added by the patch
		// (the record follows the apiserver). Only (5) is checked.
		rec.ambiguous = true
		return
	}
	if had && !has {
		// A third manager removed the field, whether the patch held it
		// then or another manager had taken it from the patch: fieldops
		// forgets its owners (the record follows the apiserver), and a
		// repair adds it anew. Only (5) is checked.
		rec.ambiguous = true
		return
	}
	if !before.ownsAny(pm.manager, p) || written.ownsAny(pm.manager, p) {
		return
	}
	rec.contested = true
}

// checkRelease checks the fields a FieldPatch let go: at its deletion
// (deleted) every field it held, at an edit the ones it holds no more.
// Invariants (2) to (5). Released records are forgotten.
func (m *model) checkRelease(pm *patchModel, before, after *snapshot, deleted bool) []Violation {
	var out []Violation
	if deleted {
		for o, set := range after.owners {
			if o.Manager == pm.manager {
				out = append(out, Violation{2, fmt.Sprintf("after the deletion of %s, its field manager %s still owns %s", pm.name, o, strings.Join(ownershipcore.FormatSet(set), ", "))})
			}
		}
	}
	for _, p := range before.leaves(pm.manager) {
		if !deleted && after.ownsAny(pm.manager, p) {
			continue
		}
		k := ownershipcore.FormatPath(p)
		rec := pm.records[k]
		delete(pm.records, k)
		if rec == nil {
			rec = &record{path: p, owners: map[owner]bool{}, dropped: map[owner]bool{}}
		}
		out = append(out, m.checkReleased(pm, rec, before, after, deleted)...)
	}
	return out
}

// checkReleased checks one field pm let go, as its record says:
// previous owners that let it go do not get it back; then, unless the
// record is ambiguous, a field taken from owners (checkTaken) or added by
// the patch (checkAdded).
func (m *model) checkReleased(pm *patchModel, rec *record, before, after *snapshot, deleted bool) []Violation {
	var out []Violation
	p, k := rec.path, ownershipcore.FormatPath(rec.path)
	when := "when " + pm.name + " dropped it from its patch"
	if deleted {
		when = fmt.Sprintf("at the deletion of %s (deletionPolicy %s)", pm.name, pm.deletion)
	}
	for o := range rec.dropped {
		// A key field goes with the list item it names: an owner that
		// still holds another field of the item gets the key back with
		// it (the item would be removed otherwise, that field with it).
		if after.ownsAny(o.Manager, p) && !after.keyOfItemHeldBy(o.Manager, p) {
			out = append(out, Violation{5, fmt.Sprintf("%s: %s let it go while %s held it, yet got it back %s (now %s)", k, o, pm.name, when, after.describe(p))})
		}
	}
	if rec.ambiguous {
		return out
	}
	if owners := rec.liveOwners(); len(owners) > 0 {
		return append(out, m.checkTaken(pm, rec, owners, before, after, when)...)
	}
	return append(out, m.checkAdded(pm, rec, after, when)...)
}

// checkTaken checks a released field the patch took from owners: under
// Restore (checkRestored), else its value stays and, unless the policy
// relinquishes or another hand took it, it goes back to them.
func (m *model) checkTaken(pm *patchModel, rec *record, owners []owner, before, after *snapshot, when string) []Violation {
	p, k := rec.path, ownershipcore.FormatPath(rec.path)
	if pm.deletion == v1alpha1.DeletionPolicyRestore && !rec.contested && !m.workloadHolds(after, p) {
		return checkRestored(pm, rec, owners, after, when)
	}
	if pm.deletion == v1alpha1.DeletionPolicyRestore {
		// Taken back from a manager that took it in between (contested),
		// or held by a workload: the value is the one from before the
		// patch (restored) or the one it left; whom it goes to is policy.
		return nil
	}
	var out []Violation
	bv, _ := before.value(p)
	av, ok := after.value(p)
	// A workload that holds the field now may have written it while
	// the patch let go (its drift repair, on its own time).
	if !ok || !reflect.DeepEqual(av, bv) && !m.workloadHolds(after, p) {
		out = append(out, Violation{3, fmt.Sprintf("%s was taken from %s; its value %s must stay %s, but it is %s", k, ownerList(owners), show(bv, true), when, show(av, ok))})
	}
	// A workload that holds the field now took it from its owners
	// (Force), not the patch: there is nothing to hand back.
	if pm.deletion == v1alpha1.DeletionPolicyRelinquish || rec.contested || m.workloadHolds(after, p) {
		return out
	}
	for _, o := range owners {
		if !after.owns(o, p) {
			out = append(out, Violation{3, fmt.Sprintf("%s was taken from %s and is not handed back to it %s (now %s)", k, o, when, after.describe(p))})
		}
	}
	return out
}

// checkAdded checks a released field the patch added: it leaves, even
// when another manager took it from the patch in between and the patch
// took it back (a contest changes no record), unless someone else owns it
// now. Under faults a lost status write may have lost the record that the
// patch added it (see model.faults): then the field may stay.
func (m *model) checkAdded(pm *patchModel, rec *record, after *snapshot, when string) []Violation {
	p, k := rec.path, ownershipcore.FormatPath(rec.path)
	if rec.contested && m.faults || rec.fromWorkload || after.othersHold(pm.manager, p) || m.gone(after, p) || after.keyOfHeldItem(pm.manager, p) || after.keyOfItemWithValues(p) {
		return nil
	}
	return []Violation{{4, fmt.Sprintf("%s was added by %s (nobody else owned it), but it stays %s: %s", k, pm.name, when, after.describe(p))}}
}

// checkRestored checks invariant (9) for a field a Restore patch took
// from owners and let go: it holds its previous value and belongs to
// those owners again, or another manager (not fieldops) wrote it since
// and holds it.
func checkRestored(pm *patchModel, rec *record, owners []owner, after *snapshot, when string) []Violation {
	p, k := rec.path, ownershipcore.FormatPath(rec.path)
	if rec.writtenSince {
		return nil // written since by a previous owner: it keeps what it wrote
	}
	for _, o := range after.ownersOf(p) {
		if !isFieldops(o.Manager) && !rec.owners[o] {
			return nil // written since by another manager: it keeps it
		}
	}
	var out []Violation
	if av, ok := after.value(p); !rec.hasPrevious || !ok || !reflect.DeepEqual(av, rec.previous) {
		out = append(out, Violation{9, fmt.Sprintf("%s was taken from %s with value %s; %s it must be restored, but it is %s", k, ownerList(owners), show(rec.previous, rec.hasPrevious), when, show(av, ok))})
	}
	for _, o := range owners {
		if !after.owns(o, p) {
			out = append(out, Violation{9, fmt.Sprintf("%s was taken from %s and is not restored to it %s (now %s)", k, o, when, after.describe(p))})
		}
	}
	return out
}

// gone reports whether p is absent from s, or holds the value the
// apiserver defaults it to.
func (m *model) gone(s *snapshot, p fieldpath.Path) bool {
	v, ok := s.value(p)
	if !ok {
		return true
	}
	d, defaulted := m.kind.Defaults[ownershipcore.FormatPath(p)]
	return defaulted && reflect.DeepEqual(v, d)
}

// workloadLeft notes a workload's deletion: a recorded field it held
// (taken from the patch) is removed by its relinquish, unless another
// manager owns it, and a patch may take it back before or after that
// removal: whether fieldops saw the field gone (and forgot its owners) is
// a matter of timing, so only (5) is checked for it.
func (m *model) workloadLeft(manager string, before *snapshot) {
	for _, pm := range m.patches {
		for _, rec := range pm.records {
			if before.ownsAny(manager, rec.path) {
				rec.ambiguous = true
			}
		}
	}
}

// checkWorkloadGone is invariant (2) for a deleted workload.
func (m *model) checkWorkloadGone(name, manager string, after *snapshot) []Violation {
	var out []Violation
	for o, set := range after.owners {
		if o.Manager == manager {
			out = append(out, Violation{2, fmt.Sprintf("after the deletion of ManagedWorkload %s, its field manager %s still owns %s", name, o, strings.Join(ownershipcore.FormatSet(set), ", "))})
		}
	}
	return out
}

func ownerList(os []owner) string {
	parts := make([]string, len(os))
	for i, o := range os {
		parts[i] = o.String()
	}
	return strings.Join(parts, ", ")
}
