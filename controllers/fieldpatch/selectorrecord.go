/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"encoding/json"
	"sort"

	"k8s.io/apimachinery/pkg/types"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/patchintent"
)

// targetEntry is a selector patch's record of one target, with its
// record of previous owners decoded from the shared table.
type targetEntry struct {
	rec    v1alpha1.TargetRecord
	ledger v1alpha1.TargetLedger
}

// emptyLedger reports an entry with no record of previous owners.
func (e *targetEntry) emptyLedger() bool { return e.ledger.Empty() }

// readTargets decodes status.targets' records by target UID; each entry
// holds its own copy of its record of previous owners, in the form
// patchintent.WriteLedger writes (a record of an earlier release's form
// is converted; one that does not parse is kept as it is, for ReadLedger
// to report). A record whose ledger index is out of range has none.
func readTargets(ts *v1alpha1.TargetsStatus) map[types.UID]*targetEntry {
	out := map[types.UID]*targetEntry{}
	if ts == nil {
		return out
	}
	ledgers := make([]v1alpha1.TargetLedger, len(ts.Ledgers))
	for i, l := range ts.Ledgers {
		ledgers[i], _ = patchintent.CompactRecord(l)
	}
	for _, r := range ts.Records {
		e := &targetEntry{rec: *r.DeepCopy()}
		if r.Ledger != nil && int(*r.Ledger) >= 0 && int(*r.Ledger) < len(ledgers) {
			e.ledger = *ledgers[*r.Ledger].DeepCopy()
		}
		e.rec.Ledger = nil
		out[types.UID(r.UID)] = e
	}
	return out
}

// writeTargets encodes entries as status.targets' Records (sorted by
// namespace, name and UID) and Ledgers (each distinct record of previous
// owners once, in the order Records first name them).
func writeTargets(entries map[types.UID]*targetEntry) ([]v1alpha1.TargetRecord, []v1alpha1.TargetLedger) {
	list := make([]*targetEntry, 0, len(entries))
	for _, e := range entries {
		list = append(list, e)
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i].rec, list[j].rec
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.UID < b.UID
	})
	var records []v1alpha1.TargetRecord
	var ledgers []v1alpha1.TargetLedger
	index := map[string]int32{}
	for _, e := range list {
		r := *e.rec.DeepCopy()
		r.Ledger = nil
		if !e.emptyLedger() {
			raw, err := json.Marshal(e.ledger)
			key := string(raw)
			if err != nil {
				key = r.UID // not shared; never happens for these types
			}
			i, ok := index[key]
			if !ok {
				i = int32(len(ledgers))
				index[key] = i
				ledgers = append(ledgers, *e.ledger.DeepCopy())
			}
			r.Ledger = &i
		}
		records = append(records, r)
	}
	return records, ledgers
}

// ledgerStatus is the record of previous owners of e as a single-target
// patch's status holds it (patchintent.ReadLedger reads it from there).
func (e *targetEntry) ledgerStatus(st *v1alpha1.FieldPatchStatus) {
	st.TargetUID = e.rec.UID
	st.SetRecord(e.ledger)
}

// takeLedger sets e's record of previous owners from a single-target
// status (patchintent.WriteLedger wrote it there).
func (e *targetEntry) takeLedger(st *v1alpha1.FieldPatchStatus) {
	e.ledger = st.Record()
}
