/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/fieldops/fieldops/ownershipcore"
)

// set builds a field set from paths in the core's path form.
func set(t *testing.T, paths ...string) *fieldpath.Set {
	t.Helper()
	s, err := ownershipcore.ParsePathSet(paths)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func entry(t *testing.T, manager string, op metav1.ManagedFieldsOperationType, paths ...string) ownershipcore.Entry {
	return ownershipcore.Entry{ManagerKey: ownershipcore.ManagerKey{Manager: manager, Operation: op, APIVersion: "v1"}, Fields: set(t, paths...)}
}

const (
	apply  = metav1.ManagedFieldsOperationApply
	update = metav1.ManagedFieldsOperationUpdate
)

func paths(l *ownershipcore.Ledger) map[string][]string {
	out := map[string][]string{}
	for _, e := range l.Entries {
		out[e.Manager] = ownershipcore.FormatSet(e.Fields)
	}
	return out
}

// The ledger follows the apiserver: a step is one observation of the
// target's managed fields and field set after some operation.
func TestLedgerFollowsOwners(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before the first write: the owners, and the intent.
		owners ownershipcore.ManagedFields
		intent []string
		// after the write: the owners fieldops saw (Observe).
		written ownershipcore.ManagedFields
		// later: owners and present fields (Follow).
		later   ownershipcore.ManagedFields
		present []string
		want    map[string][]string
	}{{
		name:    "taken by force, still held: kept",
		owners:  ownershipcore.ManagedFields{entry(t, "ops", update, ".data.mode", ".data.b")},
		intent:  []string{".data.mode"},
		written: ownershipcore.ManagedFields{entry(t, "ops", update, ".data.b"), entry(t, "fp", apply, ".data.mode")},
		later:   ownershipcore.ManagedFields{entry(t, "ops", update, ".data.b"), entry(t, "fp", apply, ".data.mode")},
		present: []string{".data.mode", ".data.b"},
		want:    map[string][]string{"ops": {".data.mode"}},
	}, {
		name:    "taken, then the owner removed it (JSON patch remove): forgotten",
		owners:  ownershipcore.ManagedFields{entry(t, "ops", update, ".data.mode", ".data.b")},
		intent:  []string{".data.mode"},
		written: ownershipcore.ManagedFields{entry(t, "ops", update, ".data.b"), entry(t, "fp", apply, ".data.mode")},
		later:   ownershipcore.ManagedFields{entry(t, "ops", update, ".data.b")},
		present: []string{".data.b"},
		want:    map[string][]string{},
	}, {
		name:    "shared (same value), then the owner relinquished it: forgotten",
		owners:  ownershipcore.ManagedFields{entry(t, "argocd", apply, ".spec.selector.app", ".spec.type")},
		intent:  []string{".spec.selector.app"},
		written: ownershipcore.ManagedFields{entry(t, "argocd", apply, ".spec.selector.app", ".spec.type"), entry(t, "fp", apply, ".spec.selector.app")},
		later:   ownershipcore.ManagedFields{entry(t, "argocd", apply, ".spec.type"), entry(t, "fp", apply, ".spec.selector.app")},
		present: []string{".spec.selector.app", ".spec.type"},
		want:    map[string][]string{},
	}, {
		name:    "shared, then the owner took it back with another value: kept (a contest, not a release)",
		owners:  ownershipcore.ManagedFields{entry(t, "hpa", update, ".spec.replicas")},
		intent:  []string{".spec.replicas"},
		written: ownershipcore.ManagedFields{entry(t, "hpa", update, ".spec.replicas"), entry(t, "fp", apply, ".spec.replicas")},
		later:   ownershipcore.ManagedFields{entry(t, "hpa", update, ".spec.replicas")},
		present: []string{".spec.replicas"},
		want:    map[string][]string{"hpa": {".spec.replicas"}},
	}, {
		name:    "shared set item, removed by its owner and applied again by a workload before fp looked: forgotten",
		owners:  ownershipcore.ManagedFields{entry(t, "helm", update, `.spec.tags[="t"]`)},
		intent:  []string{`.spec.tags[="t"]`},
		written: ownershipcore.ManagedFields{entry(t, "helm", update, `.spec.tags[="t"]`), entry(t, "fp", apply, `.spec.tags[="t"]`)},
		later:   ownershipcore.ManagedFields{entry(t, "mw", apply, `.spec.tags[="t"]`)},
		present: []string{`.spec.tags[="t"]`},
		want:    map[string][]string{},
	}, {
		name:    "shared, then a third manager took it from both: forgotten (helm lost it to ops, not to fp)",
		owners:  ownershipcore.ManagedFields{entry(t, "helm", apply, ".data.mode")},
		intent:  []string{".data.mode"},
		written: ownershipcore.ManagedFields{entry(t, "helm", apply, ".data.mode"), entry(t, "fp", apply, ".data.mode")},
		later:   ownershipcore.ManagedFields{entry(t, "helm", apply), entry(t, "ops", update, ".data.mode")},
		present: []string{".data.mode"},
		want:    map[string][]string{},
	}, {
		name:    "taken by force, then a third manager took it from fp: kept (a repair gives it back to the owner fp displaced)",
		owners:  ownershipcore.ManagedFields{entry(t, "helm", apply, ".data.mode")},
		intent:  []string{".data.mode"},
		written: ownershipcore.ManagedFields{entry(t, "fp", apply, ".data.mode")},
		later:   ownershipcore.ManagedFields{entry(t, "ops", update, ".data.mode")},
		present: []string{".data.mode"},
		want:    map[string][]string{"helm": {".data.mode"}},
	}, {
		name:    "shared, then both lost it and nobody owns it: kept",
		owners:  ownershipcore.ManagedFields{entry(t, "helm", apply, ".data.mode")},
		intent:  []string{".data.mode"},
		written: ownershipcore.ManagedFields{entry(t, "helm", apply, ".data.mode"), entry(t, "fp", apply, ".data.mode")},
		later:   ownershipcore.ManagedFields{entry(t, "helm", apply, ".data.other")},
		present: []string{".data.mode", ".data.other"},
		want:    map[string][]string{"helm": {".data.mode"}},
	}, {
		name:    "added field (no owner before): nothing recorded",
		owners:  ownershipcore.ManagedFields{entry(t, "helm", apply, ".data.a")},
		intent:  []string{".data.x"},
		written: ownershipcore.ManagedFields{entry(t, "helm", apply, ".data.a"), entry(t, "fp", apply, ".data.x")},
		later:   ownershipcore.ManagedFields{entry(t, "helm", apply, ".data.a"), entry(t, "fp", apply, ".data.x")},
		present: []string{".data.a", ".data.x"},
		want:    map[string][]string{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			l := ownershipcore.NewLedger()
			if !l.Record(tc.owners, set(t, tc.intent...), "fp") {
				t.Fatal("Record recorded nothing")
			}
			if l.Record(tc.owners, set(t, tc.intent...), "fp") {
				t.Fatal("a second Record of the same intent changed the ledger")
			}
			l.Observe(tc.written)
			l.Follow(tc.later, set(t, tc.present...), "fp")
			if got := paths(l); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ledger = %v, want %v", got, tc.want)
			}
		})
	}
}

// A field manager is one actor across its entries: fieldops took a field
// from its Update entry, its Apply entry later co-owned the field (an
// upgrade to apply), then applied without it. That is the manager letting
// it go, and the Update entry is forgotten too (test/invariants, seed
// 900076). An Update of the field by the same manager, which moves it from
// its Apply entry to its Update entry, is no letting go.
func TestLedgerFollowsManagerAcrossOperations(t *testing.T) {
	helmApply := entry(t, "helm", apply, ".metadata.annotations.note")
	helmUpdate := entry(t, "helm", update, ".metadata.annotations.note")
	fp := entry(t, "fp", apply, ".metadata.annotations.note")
	present := set(t, ".metadata.annotations.note")
	none := ownershipcore.ManagedFields{fp}

	l := ownershipcore.NewLedger()
	l.Record(ownershipcore.ManagedFields{helmUpdate}, set(t, ".metadata.annotations.note"), "fp")
	l.Observe(none) // taken by force
	l.Follow(ownershipcore.ManagedFields{helmApply, fp}, present, "fp")
	if got := paths(l); !reflect.DeepEqual(got, map[string][]string{"helm": {".metadata.annotations.note"}}) {
		t.Fatalf("after helm's apply co-owns the field: ledger = %v", got)
	}
	if forgotten := l.Follow(none, present, "fp"); !reflect.DeepEqual(ownershipcore.FormatSet(forgotten), []string{".metadata.annotations.note"}) {
		t.Fatalf("helm's apply without the field: forgotten %v, want the field", ownershipcore.FormatSet(forgotten))
	}
	if got := paths(l); len(got) != 0 {
		t.Fatalf("after helm let the field go: ledger = %v, want empty", got)
	}

	l = ownershipcore.NewLedger()
	l.Record(ownershipcore.ManagedFields{helmApply}, set(t, ".metadata.annotations.note"), "fp")
	l.Observe(ownershipcore.ManagedFields{helmApply, fp}) // shared
	l.Follow(ownershipcore.ManagedFields{helmUpdate, fp}, present, "fp")
	if got := paths(l); !reflect.DeepEqual(got, map[string][]string{"helm": {".metadata.annotations.note"}}) {
		t.Fatalf("after helm's update of the field (same value): ledger = %v, want it kept", got)
	}
}

func TestLedgerForgetAndPrevious(t *testing.T) {
	l := ownershipcore.NewLedger()
	l.Record(ownershipcore.ManagedFields{entry(t, "base", apply, ".data.a"), entry(t, "hpa", update, ".data.h")}, set(t, ".data.a", ".data.h", ".data.x"), "fp")
	if got := ownershipcore.FormatSet(l.Taken()); !reflect.DeepEqual(got, []string{".data.a", ".data.h"}) {
		t.Fatalf("Taken = %v", got)
	}
	prev := l.Previous(set(t, ".data.h"))
	if len(prev) != 1 || prev[0].Manager != "hpa" {
		t.Fatalf("Previous(.data.h) = %v", prev)
	}
	l.Forget(set(t, ".data.h"))
	if got := paths(l); !reflect.DeepEqual(got, map[string][]string{"base": {".data.a"}}) {
		t.Fatalf("after Forget: %v", got)
	}
	if got := ownershipcore.FormatSet(l.Recorded); !reflect.DeepEqual(got, []string{".data.a", ".data.x"}) {
		t.Fatalf("recorded after Forget = %v", got)
	}
}

func TestReleasePlan(t *testing.T) {
	current := ownershipcore.ManagedFields{entry(t, "base", apply, ".data.b"), entry(t, "fp", apply, ".data.a", ".data.x")}
	next, released := ownershipcore.ReleasePlan(current, "fp", set(t, ".data.a", ".data.b"))
	if got := ownershipcore.FormatSet(released); !reflect.DeepEqual(got, []string{".data.a"}) {
		t.Fatalf("released %v, want only what fp owned", got)
	}
	if got := ownershipcore.FormatSet(next.Applied("fp").Fields); !reflect.DeepEqual(got, []string{".data.x"}) {
		t.Fatalf("fp keeps %v", got)
	}
	if got := ownershipcore.FormatSet(next.Applied("base").Fields); !reflect.DeepEqual(got, []string{".data.b"}) {
		t.Fatalf("base changed: %v", got)
	}
	if _, r := ownershipcore.ReleasePlan(current, "nobody", set(t, ".data.a")); !r.Empty() {
		t.Fatal("a manager without an entry released fields")
	}
}

func TestParseManager(t *testing.T) {
	long := ownershipcore.ManagerName("fieldops-fieldpatch", "ns", string(make([]byte, 200)))
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"fieldops-fieldpatch/team-a/pin", "FieldPatch team-a/pin", true},
		{"fieldops-clusterfieldpatch/dns", "ClusterFieldPatch dns", true},
		{"fieldops-workload/shop/web", "ManagedWorkload shop/web", true},
		{"fieldops-podset/kafka/broker", "PodSet kafka/broker", true},
		{long, "FieldPatch", true},
		{"fieldops-unknown/x", "", false},
		{"helm", "", false},
		{"kubectl-client-side-apply", "", false},
	} {
		got, ok := ownershipcore.ParseManager(tc.in)
		if ok != tc.ok || ok && got.String() != tc.want {
			t.Errorf("ParseManager(%q) = %v %v, want %q %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// The contest tracker, on an injected clock: a manager retaking a field
// every second is repaired at 0 s, 5 s, 15 s, 35 s; a repair that holds
// for ContestBase ends the contest.
func TestContests(t *testing.T) {
	c := ownershipcore.NewContests()
	t0 := time.Unix(0, 0)
	var repairs []time.Duration
	for s := 0; s < 60; s++ {
		now := t0.Add(time.Duration(s) * time.Second)
		if c.Next("k", "hpa", now).IsZero() {
			c.Repaired("k", "hpa", now)
			repairs = append(repairs, now.Sub(t0))
		}
	}
	if want := []time.Duration{0, 5 * time.Second, 15 * time.Second, 35 * time.Second}; !reflect.DeepEqual(repairs, want) {
		t.Fatalf("repairs at %v, want %v", repairs, want)
	}
	last := t0.Add(35 * time.Second)
	if c.Current("k", last) != "hpa" {
		t.Fatal("not contested after 4 repairs")
	}
	if d := c.Settle("k", last.Add(time.Second)); d != ownershipcore.ContestBase-time.Second {
		t.Fatalf("Settle 1 s after the repair = %v", d)
	}
	if d := c.Settle("k", last.Add(ownershipcore.ContestBase)); d != 0 || c.Current("k", last.Add(ownershipcore.ContestBase)) != "" {
		t.Fatal("a repair that held for ContestBase did not end the contest")
	}
	if !c.Next("k", "hpa", last.Add(ownershipcore.ContestBase)).IsZero() {
		t.Fatal("after the contest the next repair is not immediate")
	}
	if c.Repaired("k", "other", last) != 1 {
		t.Fatal("another manager continued the count")
	}
}

// A tracker with a scaled base keeps the schedule's shape: repairs at 0,
// 1, 3, 7 bases; a repair holds after one base. The default is ContestBase.
func TestContestsBase(t *testing.T) {
	if b := ownershipcore.NewContests().Base(); b != ownershipcore.ContestBase {
		t.Fatalf("default base %v, want ContestBase", b)
	}
	const base = 100 * time.Millisecond
	c := ownershipcore.NewContestsBase(base)
	t0 := time.Unix(0, 0)
	var repairs []time.Duration
	for i := 0; i < 60; i++ {
		now := t0.Add(time.Duration(i) * base / 5)
		if c.Next("k", "hpa", now).IsZero() {
			c.Repaired("k", "hpa", now)
			repairs = append(repairs, now.Sub(t0))
		}
	}
	if want := []time.Duration{0, base, 3 * base, 7 * base}; !reflect.DeepEqual(repairs, want) {
		t.Fatalf("repairs at %v, want %v", repairs, want)
	}
	last := t0.Add(7 * base)
	if d := c.Settle("k", last.Add(base/2)); d != base/2 {
		t.Fatalf("Settle half a base after the repair = %v", d)
	}
	if d := c.Settle("k", last.Add(base)); d != 0 || c.Current("k", last.Add(base)) != "" {
		t.Fatal("a repair that held for the base did not end the contest")
	}
}

// ForgetPrefix ends every contest of one fieldops object, and no other.
func TestContestsForgetPrefix(t *testing.T) {
	c := ownershipcore.NewContests()
	now := time.Unix(0, 0)
	for _, k := range []string{"uid-a/x", "uid-a/y", "uid-b/x"} {
		c.Repaired(k, "hpa", now)
		c.Repaired(k, "hpa", now)
	}
	c.ForgetPrefix("uid-a/")
	if c.Current("uid-a/x", now) != "" || c.Current("uid-a/y", now) != "" {
		t.Error("uid-a's contests are left")
	}
	if c.Current("uid-b/x", now) != "hpa" {
		t.Error("uid-b's contest was forgotten")
	}
}

// holders: what a relinquish releases before its empty apply so that no
// other manager's field goes with an item or map only fieldops owns.
func TestHolders(t *testing.T) {
	item := func(name string, rest ...interface{}) fieldpath.Path {
		p := []interface{}{"spec", "containers", fieldpath.KeyByFields("name", name)}
		return fieldpath.MakePathOrDie(append(p, rest...)...)
	}
	mk := func(ps ...fieldpath.Path) *fieldpath.Set { return fieldpath.NewSet(ps...) }
	for _, tc := range []struct {
		name         string
		others, ours *fieldpath.Set
		want         *fieldpath.Set
	}{
		{
			name:   "an item only ours holds another's field: the item and its key are released",
			others: mk(item("sidecar", "resources")),
			ours:   mk(item("sidecar"), item("sidecar", "name"), item("sidecar", "image")),
			want:   mk(item("sidecar"), item("sidecar", "name")),
		},
		{
			name:   "an item both own (our env var in a container both applied): nothing to release",
			others: mk(item("app"), item("app", "name"), item("app", "image")),
			ours:   mk(item("app"), item("app", "name"), item("app", "env")),
			want:   mk(),
		},
		{
			name:   "nothing of another manager under ours",
			others: mk(item("app", "image")),
			ours:   mk(item("sidecar"), item("sidecar", "name")),
			want:   mk(),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ownershipcore.Holders(tc.others, tc.ours)
			if !got.Equals(tc.want) {
				t.Errorf("holders %v, want %v", ownershipcore.FormatSet(got), ownershipcore.FormatSet(tc.want))
			}
		})
	}
}

// Unshare, before a forced write: a field a previous owner shared with fp
// that fp then forces (a new value in its patch, or a repair after a third
// manager took it from both) must be saved as no longer shared before the
// write, or a save lost after the write (a crash) makes the next Follow
// forget the owner as one that let the field go.
func TestLedgerUnshare(t *testing.T) {
	shared := ownershipcore.ManagedFields{entry(t, "hpa", apply, ".spec.mode"), entry(t, "fp", apply, ".spec.mode")}
	forcedByFP := ownershipcore.ManagedFields{entry(t, "hpa", apply), entry(t, "fp", apply, ".spec.mode")}
	for _, tc := range []struct {
		name string
		// seen: a Follow between the sharing and fp's forced write (a
		// third manager took the field from both), or nil.
		seen ownershipcore.ManagedFields
	}{
		{"fp forces a new value over hpa", nil},
		{"helm took it from both, fp forces it back", ownershipcore.ManagedFields{entry(t, "hpa", apply), entry(t, "helm", update, ".spec.mode")}},
	} {
		for _, saved := range []bool{true, false} {
			l := ownershipcore.NewLedger()
			l.Record(ownershipcore.ManagedFields{entry(t, "hpa", apply, ".spec.mode")}, set(t, ".spec.mode"), "fp")
			l.Observe(shared)
			// What the status holds; the reconcile works on l.
			stored := copyLedger(l)
			if tc.seen != nil {
				// The reconcile of the take follows it in memory: hpa lost
				// the field to helm, not to fp, and is forgotten; the take
				// records the owner fp displaces now, helm.
				l.Follow(tc.seen, set(t, ".spec.mode"), "fp")
				l.Record(tc.seen, set(t, ".spec.mode"), "fp")
			}
			if saved {
				// Whether to save is read from what is stored: in memory,
				// the Follow of the take already unshared the field.
				l.Unshare(set(t, ".spec.mode"))
				if !copyLedger(stored).Unshare(set(t, ".spec.mode")) {
					t.Fatalf("%s: Unshare of the stored ledger changed nothing", tc.name)
				}
				stored = l
			}
			// The forced write lands; the save after it is lost: the next
			// reconcile starts from what was stored.
			stored.Follow(forcedByFP, set(t, ".spec.mode"), "fp")
			got := paths(stored)
			want := "hpa"
			if tc.seen != nil {
				want = "helm"
			}
			if saved && !reflect.DeepEqual(got, map[string][]string{want: {".spec.mode"}}) {
				t.Errorf("%s, saved before the write: ledger = %v, want %s kept", tc.name, got, want)
			}
			if !saved && len(got) != 0 {
				t.Errorf("%s, not saved: ledger = %v; the test no longer shows what a lost save costs", tc.name, got)
			}
		}
	}
	l := ownershipcore.NewLedger()
	l.Record(ownershipcore.ManagedFields{entry(t, "hpa", apply, ".spec.mode")}, set(t, ".spec.mode"), "fp")
	l.Observe(shared)
	if l.Unshare(set(t, ".spec.other")) {
		t.Error("Unshare of a field nobody shares changed the ledger")
	}
}

// copyLedger is a deep copy of l.
func copyLedger(l *ownershipcore.Ledger) *ownershipcore.Ledger {
	out := &ownershipcore.Ledger{Recorded: l.Recorded.Copy()}
	for _, e := range l.Entries {
		out.Entries = append(out.Entries, ownershipcore.LedgerEntry{ManagerKey: e.ManagerKey, Via: e.Via, Fields: e.Fields.Copy(), Shared: e.Shared.Copy()})
	}
	return out
}

// A shared field that left its owner for another manager (removed and
// applied again before fp looked, here) is recorded afresh at fp's next
// take: the owner fp then displaces or shares with is the previous owner,
// not the one that lost the field before (test/invariants, seed 8100327).
func TestLedgerRecordsAfreshAfterLoss(t *testing.T) {
	item := `.spec.tags[="t"]`
	l := ownershipcore.NewLedger()
	l.Record(ownershipcore.ManagedFields{entry(t, "helm", update, item)}, set(t, item), "fp")
	l.Observe(ownershipcore.ManagedFields{entry(t, "helm", update, item), entry(t, "fp", apply, item)})
	later := ownershipcore.ManagedFields{entry(t, "mw", apply, item)}
	if forgotten := l.Follow(later, set(t, item), "fp"); !reflect.DeepEqual(ownershipcore.FormatSet(forgotten), []string{item}) {
		t.Fatalf("forgotten %v, want the item", ownershipcore.FormatSet(forgotten))
	}
	if !l.Recorded.Empty() {
		t.Fatalf("recorded %v, want the item recorded afresh", ownershipcore.FormatSet(l.Recorded))
	}
	if !l.Record(later, set(t, item), "fp") {
		t.Fatal("the next take recorded nothing")
	}
	l.Observe(ownershipcore.ManagedFields{entry(t, "mw", apply, item), entry(t, "fp", apply, item)})
	prev, ownerless := l.HandBackTo(ownershipcore.ManagedFields{entry(t, "mw", apply, item), entry(t, "fp", apply, item)}, "fp", nil)
	if len(prev) != 1 || prev[0].Manager != "mw" || !ownerless.Empty() {
		t.Fatalf("HandBackTo = %v, %v; want the item to mw only", prev, ownershipcore.FormatSet(ownerless))
	}
}

// A field the patch added (nobody owned it) stays added through a
// contest: a manager that takes it from the patch, and loses it back to
// the patch's repair, is not recorded, and the field is no previous
// owner's at the patch's deletion. Once the field is removed, the record
// forgets it: a manager that applies it again is its previous owner when
// the patch takes it.
func TestLedgerAddedFieldThroughContestAndRemoval(t *testing.T) {
	const x = ".metadata.labels.tier"
	for _, tc := range []struct {
		name string
		// later: the owners and fields Follow sees before the patch's
		// next take, which forces x from the owners of later.
		later   ownershipcore.ManagedFields
		present []string
		// the previous owners after that take; handed back at deletion.
		want map[string][]string
	}{{
		name:    "helm applied its own value with force: a manager in between, not recorded",
		later:   ownershipcore.ManagedFields{entry(t, "helm", apply, x)},
		present: []string{x},
		want:    map[string][]string{},
	}, {
		name:    "an Update changed the value: not recorded",
		later:   ownershipcore.ManagedFields{entry(t, "ops", update, x)},
		present: []string{x},
		want:    map[string][]string{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			l := ownershipcore.NewLedger()
			l.Record(nil, set(t, x), "fp")
			l.Observe(ownershipcore.ManagedFields{entry(t, "fp", apply, x)})
			l.Follow(tc.later, set(t, tc.present...), "fp")
			l.Record(tc.later, set(t, x), "fp")
			if got := paths(l); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ledger = %v, want %v", got, tc.want)
			}
			if taken := l.Taken(); !taken.Empty() {
				t.Fatalf("taken %v, want none: the field leaves at deletion", ownershipcore.FormatSet(taken))
			}
		})
	}
	// Removed (the patch saw it gone), then applied again by helm: the
	// next take records helm.
	l := ownershipcore.NewLedger()
	l.Record(nil, set(t, x), "fp")
	l.Observe(ownershipcore.ManagedFields{entry(t, "fp", apply, x)})
	l.Follow(ownershipcore.ManagedFields{entry(t, "base", apply, ".data.a")}, set(t, ".data.a"), "fp")
	if !l.Recorded.Empty() {
		t.Fatalf("recorded %v after the removal, want nothing", ownershipcore.FormatSet(l.Recorded))
	}
	helm := ownershipcore.ManagedFields{entry(t, "base", apply, ".data.a"), entry(t, "helm", apply, x)}
	l.Follow(helm, set(t, ".data.a", x), "fp")
	if !l.Record(helm, set(t, x), "fp") {
		t.Fatal("the take after the removal recorded nothing")
	}
	if got, want := paths(l), map[string][]string{"helm": {x}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ledger = %v, want %v", got, want)
	}
}

// chainPaths is "manager[ via]" → paths of the entries of l.
func chainPaths(l *ownershipcore.Ledger) map[string][]string {
	out := map[string][]string{}
	for _, e := range l.Entries {
		k := e.Manager
		if e.Via != "" {
			k += " via " + e.Via
		}
		out[k] = ownershipcore.FormatSet(e.Fields)
	}
	return out
}

func handBackPaths(prev ownershipcore.ManagedFields, ownerless *fieldpath.Set) map[string][]string {
	out := map[string][]string{}
	for _, e := range prev {
		out[e.Manager] = ownershipcore.FormatSet(e.Fields)
	}
	if !ownerless.Empty() {
		out["(no owner)"] = ownershipcore.FormatSet(ownerless)
	}
	return out
}

// A previous owner that is another patch: the record follows it to the
// owners that patch took the fields from (Inherit, HandBackTo).
func TestLedgerChain(t *testing.T) {
	const a, b, z = "fieldops-fieldpatch/ns/a", "fieldops-fieldpatch/ns/b", "fieldops-clusterfieldpatch/z"
	const mw = "fieldops-workload/ns/web"
	k, o := ".data.k", ".data.o"
	// a took k from helm; b takes k from a.
	ledgerA := ownershipcore.NewLedger()
	ledgerA.Record(ownershipcore.ManagedFields{entry(t, "helm", apply, k, o)}, set(t, k), a)
	before := ownershipcore.ManagedFields{entry(t, "helm", apply, o), entry(t, a, apply, k, ".data.a")}
	ledgerB := ownershipcore.NewLedger()
	ledgerB.Record(before, set(t, k), b)
	if !ledgerB.Inherit(a, ledgerA, set(t, k), b) {
		t.Fatal("Inherit copied nothing")
	}
	if ledgerB.Inherit(a, ledgerA, set(t, k), b) {
		t.Fatal("a second Inherit changed the ledger")
	}
	if got, want := chainPaths(ledgerB), map[string][]string{a: {k}, "helm via " + a: {k}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("b's ledger = %v, want %v", got, want)
	}
	if got := ownershipcore.FormatSet(ledgerB.Taken()); !reflect.DeepEqual(got, []string{k}) {
		t.Fatalf("Taken = %v", got)
	}
	if prev := ledgerB.Previous(nil); len(prev) != 1 || prev[0].Manager != a {
		t.Fatalf("Previous = %v, want a's entry only", prev)
	}
	alive := ownershipcore.ManagedFields{entry(t, "helm", apply, o), entry(t, a, apply, ".data.a"), entry(t, b, apply, k)}
	gone := ownershipcore.ManagedFields{entry(t, "helm", apply, o), entry(t, b, apply, k)}
	for _, tc := range []struct {
		name   string
		owners ownershipcore.ManagedFields
		want   map[string][]string
	}{
		{"a still holds an entry: back to a", alive, map[string][]string{a: {k}}},
		{"a is gone: on to helm, whom a took it from", gone, map[string][]string{"helm": {k}}},
	} {
		if got := handBackPaths(ledgerB.HandBackTo(tc.owners, b, nil)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: HandBackTo = %v, want %v", tc.name, got, tc.want)
		}
	}

	// helm removed k while b held it: no owner is left for it.
	removed := copyLedger(ledgerB)
	removed.Follow(ownershipcore.ManagedFields{entry(t, "helm", apply, o)}, set(t, o), b)
	if got := chainPaths(removed); len(got) != 0 {
		t.Fatalf("after k was removed: ledger = %v, want empty", got)
	}
	// a is forgotten for k (it took k back and let it go): helm through a
	// goes with it.
	dropped := copyLedger(ledgerB)
	dropped.Forget(set(t, k))
	if got := chainPaths(dropped); len(got) != 0 {
		t.Fatalf("after Forget: ledger = %v, want empty", got)
	}

	// A chain of chains: z took k from helm, a from z, b from a. One copy
	// each, flat.
	ledgerZ := ownershipcore.NewLedger()
	ledgerZ.Record(ownershipcore.ManagedFields{entry(t, "helm", apply, k)}, set(t, k), z)
	ledgerA = ownershipcore.NewLedger()
	ledgerA.Record(ownershipcore.ManagedFields{entry(t, z, apply, k)}, set(t, k), a)
	ledgerA.Inherit(z, ledgerZ, set(t, k), a)
	ledgerB = ownershipcore.NewLedger()
	ledgerB.Record(ownershipcore.ManagedFields{entry(t, a, apply, k)}, set(t, k), b)
	ledgerB.Inherit(a, ledgerA, set(t, k), b)
	if got, want := chainPaths(ledgerB), map[string][]string{a: {k}, z + " via " + a: {k}, "helm via " + z: {k}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("b's ledger = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		name   string
		owners ownershipcore.ManagedFields
		want   map[string][]string
	}{
		{"a gone, z holds an entry: to z", ownershipcore.ManagedFields{entry(t, z, apply, o), entry(t, b, apply, k)}, map[string][]string{z: {k}}},
		{"a and z gone: to helm", ownershipcore.ManagedFields{entry(t, b, apply, k)}, map[string][]string{"helm": {k}}},
	} {
		if got := handBackPaths(ledgerB.HandBackTo(tc.owners, b, nil)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: HandBackTo = %v, want %v", tc.name, got, tc.want)
		}
	}

	// A workload is the owner that is left: no record to follow, so the
	// field stays without an owner once it has gone.
	ledgerB = ownershipcore.NewLedger()
	ledgerB.Record(ownershipcore.ManagedFields{entry(t, mw, apply, k)}, set(t, k), b)
	if got := handBackPaths(ledgerB.HandBackTo(ownershipcore.ManagedFields{entry(t, b, apply, k)}, b, nil)); !reflect.DeepEqual(got, map[string][]string{"(no owner)": {k}}) {
		t.Errorf("departed workload: HandBackTo = %v, want k without an owner", got)
	}

	// Patches that took each other's fields: b's own entries in a's
	// record are not copied, and a cycle of owners through departed
	// patches ends without an owner.
	ledgerA = ownershipcore.NewLedger()
	ledgerA.Record(ownershipcore.ManagedFields{entry(t, b, apply, k)}, set(t, k), a)
	ledgerB = ownershipcore.NewLedger()
	ledgerB.Record(ownershipcore.ManagedFields{entry(t, a, apply, k)}, set(t, k), b)
	if ledgerB.Inherit(a, ledgerA, set(t, k), b) {
		t.Errorf("b inherited itself: %v", chainPaths(ledgerB))
	}
	cycle := &ownershipcore.Ledger{Recorded: set(t, k), Entries: []ownershipcore.LedgerEntry{
		{ManagerKey: ownershipcore.ManagerKey{Manager: a, Operation: apply}, Fields: set(t, k), Shared: set(t)},
		{ManagerKey: ownershipcore.ManagerKey{Manager: z, Operation: apply}, Via: a, Fields: set(t, k), Shared: set(t)},
		{ManagerKey: ownershipcore.ManagerKey{Manager: a, Operation: apply}, Via: z, Fields: set(t, k), Shared: set(t)},
	}}
	if got := handBackPaths(cycle.HandBackTo(ownershipcore.ManagedFields{entry(t, b, apply, k)}, b, nil)); !reflect.DeepEqual(got, map[string][]string{"(no owner)": {k}}) {
		t.Errorf("cycle: HandBackTo = %v, want k without an owner", got)
	}
	// A cycle of owners through each other holds nothing on its own.
	cycle.Entries = cycle.Entries[1:]
	cycle.Forget(set(t, o))
	if got := chainPaths(cycle); len(got) != 0 {
		t.Errorf("a cycle without a direct owner kept %v", got)
	}
}
