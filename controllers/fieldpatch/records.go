/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/notes"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/controllers/internal/targetcache"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/internal/patchplan"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
	"github.com/fieldops/fieldops/ownershipcore/redact"
)

// records is the patch's side of a write to a target: the records of
// previous owners in its status (written before a write that would
// destroy what they follow from) and the previous values of
// deletionPolicy Restore in its Secret. It reads the FieldPatch fresh,
// never from the cache, where a stale copy would be wrong.
type records struct {
	// Client writes the status, and the Secrets of ClusterFieldPatches.
	Client client.Client
	// APIReader reads without the cache; nil means Client.
	APIReader client.Reader
	// Applier is the manager's own: its model, and its rights for the
	// Secrets of ClusterFieldPatches.
	Applier *ownershipcore.Applier
	Cluster bool
	Tenancy tenant.Options
	// Writes is the cache guard of the controller's own writes.
	Writes *skeleton.Writes
}

// newObject is an empty patch of the controller's kind.
func (s *records) newObject() v1alpha1.Patcher { return newPatch(s.Cluster) }

// writes are the controller's own writes of its objects.
func (s *records) writes() *skeleton.Writes { return s.Writes }

// recordTakes records, before an apply forces fields from other managers
// that its plan did not foresee (the core answers such an apply with a
// RecordFirstError and sends it only once the forced fields are in
// ApplyOptions.Recorded; patchplan.Execute asks for it), who owned them
// (patchplan.ForcedRecord), and returns that change to the record: the forced write
// removes those owners from the target's managed fields, so the record
// must reach the apiserver first, or a crash after the write would lose
// who to hand the fields back to. A field recorded at an earlier take
// keeps its owners (a repair after another manager took it back). The
// forced fields are also no longer shared by anyone (Ledger.Unshare):
// their owners lose them to us, which a later Follow must not read as
// the owners letting them go.
//
// A record is never made from a stale copy of the FieldPatch (a lagging
// watch would otherwise record again, after our first write, only the
// fragment of owners left): the FieldPatch is read fresh from the
// apiserver, the record continued from its status, and the status written
// with an optimistic lock on that resourceVersion, so the record and the
// write are ordered by the apiserver, not by timing. Owners come from the
// target as the apply saw it; when the apiserver named an owner that copy
// does not show (a stale cache), from a fresh read of the target.
//
// Nothing is written when the stored record already has every forced
// field and shares none of them.
func (s *records) recordTakes(ctx context.Context, p *pass, forced []ownershipcore.Conflict) (_ func(*ownershipcore.Ledger) bool, wrote bool, _ error) {
	owners, present := p.d.Owners, p.d.Present
	stale := false
	for _, c := range forced {
		if !ownedBy(owners, c.Manager, c.Path) {
			stale = true
		}
	}
	uid := p.uid()
	if stale {
		live, err := p.applier.GetFresh(ctx, p.ref)
		if err != nil {
			return nil, false, fmt.Errorf("read %s for the record of previous owners: %w", objectName(p.ref), err)
		}
		if live == nil || string(live.GetUID()) != uid {
			return nil, false, fmt.Errorf("read %s for the record of previous owners: %w", objectName(p.ref), ownershipcore.ErrTargetGone)
		}
		if owners, present, err = s.observeTarget(live); err != nil {
			return nil, false, err
		}
	}
	chains, unread, err := patchintent.InheritedRecords(ctx, p.applier.GetFresh, owners, patchintent.ForcedFields(forced), p.manager, uid)
	s.reportUnread(p, unread)
	if err != nil {
		return nil, false, err
	}
	record, err := patchplan.ForcedRecord(ctx, p.applier, chains, owners, forced, p.manager, p.live)
	if errors.As(err, new(*patchintent.ForceRefusedError)) {
		// Terminal: a change of the patch or of the target reconciles it
		// again.
		return nil, false, skeleton.Terminal(ReasonConflict, "%v", err)
	}
	if err != nil {
		return nil, false, err
	}
	// The reconcile's own record (with what it did since it read the
	// status) takes the same change (patchplan.Execute).
	_, wrote, err = s.saveRecord(ctx, p, owners, present, record)
	return record, wrote, err
}

// reportUnread reports each record of a fieldops patch the account may
// not read in a Forbidden event: the fields taken from that patch stay
// without an owner if it leaves first.
func (s *records) reportUnread(p *pass, unread []patchintent.Unread) {
	for _, u := range unread {
		p.event(corev1.EventTypeWarning, ReasonForbidden, "%s", notes.Condition(fmt.Sprintf(
			"cannot read the previous owners recorded by %s, from which this patch takes %s (%s); if %s leaves %s %s before this patch, those fields stay there without an owner at this patch's deletion",
			u.Patch, strings.Join(firstN(patchintent.Leaves(u.Fields), 5), ", "), redact.Message(tenant.Explain(p.account, u.Err)),
			u.Patch, p.ref.GetKind(), objectName(p.ref))))
	}
}

// saveRecord writes the record of previous owners before a write to the
// target that would destroy what it follows from: it reads the FieldPatch
// fresh, continues the record from its status (Follow with owners and
// present, then change), and writes it with an optimistic lock on that
// resourceVersion, so the record and the write are ordered by the
// apiserver, not by timing, and a stale cached copy never overwrites a
// newer record with a fragment. Nothing is written when the stored record
// stays as it is (wrote false). It returns the record as saved (or as
// stored, when nothing was written).
func (s *records) saveRecord(ctx context.Context, p *pass, owners ownershipcore.ManagedFields, present *fieldset.Set, change func(*ownershipcore.Ledger) bool) (_ *ownershipcore.Ledger, wrote bool, _ error) {
	if p.target != nil {
		l, err := saveTargetRecord(p, owners, present, change)
		return l, false, err
	}
	uid := p.uid()
	fresh := s.newObject()
	if err := s.reader().Get(ctx, client.ObjectKeyFromObject(p.obj), fresh); err != nil {
		return nil, false, fmt.Errorf("read %s for the record of previous owners: %w", p.obj.GetName(), err)
	}
	l, err := patchintent.ReadLedger(fresh.PatchStatus(), uid)
	if err != nil {
		return nil, false, err
	}
	l.Follow(owners, present, p.manager)
	if change != nil {
		change(l)
	}
	// Whatever changed is saved, what Follow observed included: an owner
	// that no longer shares a field it lost to another manager must be
	// stored as such before we force that field, or a later Follow reads
	// our write as the owner letting it go (when the status write after the
	// apply fails).
	snapshot := fresh.DeepCopyObject().(v1alpha1.Patcher)
	if err := patchintent.WriteLedger(fresh.PatchStatus(), l, uid); err != nil {
		return nil, false, err
	}
	if equality.Semantic.DeepEqual(snapshot.PatchStatus(), fresh.PatchStatus()) {
		return l, false, nil
	}
	rv := fresh.GetResourceVersion()
	if err := s.Client.Status().Patch(ctx, fresh, client.MergeFromWithOptions(snapshot, client.MergeFromWithOptimisticLock{})); err != nil {
		s.writes().Unsure(p.obj, err)
		return nil, false, fmt.Errorf("record previous owners: %w", err)
	}
	s.writes().Wrote(fresh, rv)
	if p.obj.GetResourceVersion() != rv && fresh.GetResourceVersion() != rv {
		// The cached copy we started from is older too.
		s.writes().WrittenAt(p.obj, p.obj.GetResourceVersion(), fresh.GetResourceVersion())
	}
	return l, true, nil
}

// refreshRecord reads obj fresh from the apiserver and, when its record of
// previous owners differs from the cached copy's, takes the fresh record
// into obj's status. It reports whether anything changed.
func (s *records) refreshRecord(ctx context.Context, u *unit) bool {
	if u.target != nil {
		// A target's pass of a selector patch runs on the records the
		// reconcile read (and saved): nothing newer to read.
		return false
	}
	fresh := s.newObject()
	if err := s.reader().Get(ctx, client.ObjectKeyFromObject(u.obj), fresh); err != nil {
		return false
	}
	st, fst := u.st, fresh.PatchStatus()
	if patchintent.SameRecorded(fst, st) {
		return false
	}
	st.TargetUID, st.LastAppliedTime = fst.TargetUID, fst.LastAppliedTime
	st.SetRecord(fst.Record())
	return true
}

// observeTarget returns the target's managed fields and the set of fields
// it holds.
func (s *records) observeTarget(live *unstructured.Unstructured) (ownershipcore.ManagedFields, *fieldset.Set, error) {
	owners, err := ownershipcore.Owners(live)
	if err != nil {
		return nil, nil, err
	}
	present, err := s.Applier.FieldSet(live)
	if err != nil {
		return nil, nil, err
	}
	return owners, present, nil
}

// reader reads without the cache when the manager gave an API reader.
func (s *records) reader() client.Reader {
	if s.APIReader != nil {
		return s.APIReader
	}
	return s.Client
}

// saveTargetRecords writes the pending records of previous owners of the
// targets idx (of matched) in one status write: the patch as base holds
// it (nil: read fresh), its records continued with the pending ones,
// written with an optimistic lock on that resourceVersion (as saveRecord
// does for one target; a base the apiserver has moved past is a
// Conflict, and the reconcile is retried). It returns the records as
// saved, by target UID.
func (s *records) saveTargetRecords(ctx context.Context, obj v1alpha1.Patcher, matched []targetcache.Held, idx []int, pending map[types.UID]*v1alpha1.FieldPatchStatus, base v1alpha1.Patcher) (map[types.UID]*targetEntry, error) {
	fresh := s.newObject()
	if base != nil {
		fresh = base.DeepCopyObject().(v1alpha1.Patcher)
	} else if err := s.reader().Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
		return nil, fmt.Errorf("read %s for the records of previous owners: %w", obj.GetName(), err)
	}
	snapshot := fresh.DeepCopyObject().(v1alpha1.Patcher)
	entries := readTargets(fresh.PatchStatus().Targets)
	for _, i := range idx {
		h := matched[i]
		e := entries[h.UID]
		if e == nil {
			e = &targetEntry{rec: v1alpha1.TargetRecord{Namespace: h.Namespace, Name: h.Name, UID: string(h.UID)}}
			entries[h.UID] = e
		}
		e.takeLedger(pending[h.UID])
	}
	ts := fresh.PatchStatus().Targets
	if ts == nil {
		ts = &v1alpha1.TargetsStatus{}
		fresh.PatchStatus().Targets = ts
	}
	ts.Records, ts.Ledgers = writeTargets(entries)
	rv := fresh.GetResourceVersion()
	if err := s.Client.Status().Patch(ctx, fresh, client.MergeFromWithOptions(snapshot, client.MergeFromWithOptimisticLock{})); err != nil {
		s.writes().Unsure(obj, err)
		return nil, fmt.Errorf("record previous owners: %w", err)
	}
	s.writes().Wrote(fresh, rv)
	if obj.GetResourceVersion() != rv && fresh.GetResourceVersion() != rv {
		s.writes().WrittenAt(obj, obj.GetResourceVersion(), fresh.GetResourceVersion())
	}
	return entries, nil
}

// ownedBy reports whether an entry of manager in owners holds path.
func ownedBy(owners ownershipcore.ManagedFields, manager string, path fieldset.Path) bool {
	for _, e := range owners {
		if e.Manager == manager && e.Fields.Has(path) {
			return true
		}
	}
	return false
}
