package fieldpatch

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// recordOwners records, before the first write of any intent field, the
// field managers that own it on live, and persists the record at once: a
// crash after the write must not lose who to hand the fields back to.
//
// A record is never made from a stale copy of the FieldPatch (a lagging
// watch would otherwise record again, after our first write, only the
// fragment of owners left): when fields look new, the FieldPatch is read
// fresh from the apiserver, the record continued from its status, and the
// status written with an optimistic lock on that resourceVersion, so the
// record and the first write are ordered by the apiserver, not by timing.
// It returns the ledger to use.
//
// When the apply will take no field from another manager (every new field
// is unowned, or co-owned with the same value) and the patch owns none of
// the intent yet, the record is made in memory and written with the status
// after the apply (issue 11: two requests fewer per FieldPatch): a crash
// before that write loses nothing, since the same record is made again
// from the target, where no owner was displaced.
func (r *Reconciler) recordOwners(ctx context.Context, obj v1alpha1.Patcher, ledger *ownershipcore.Ledger, live, intent *unstructured.Unstructured, owners ownershipcore.ManagedFields, present, intentSet *fieldset.Set, manager string) (*ownershipcore.Ledger, error) {
	uid := string(live.GetUID())
	if intentSet.Difference(ledger.Recorded).Empty() && obj.PatchStatus().TargetUID == uid {
		return ledger, nil
	}
	if r.recordCanWait(live, intent, owners, intentSet, manager) {
		ledger.Record(owners, intentSet, manager)
		return ledger, nil
	}
	fresh := r.newObject()
	if err := r.reader().Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
		return nil, fmt.Errorf("read %s for the record of previous owners: %w", obj.GetName(), err)
	}
	l, err := patchintent.ReadLedger(fresh.PatchStatus(), uid)
	if err != nil {
		return nil, err
	}
	l.Follow(owners, present, manager)
	if !l.Record(owners, intentSet, manager) && fresh.PatchStatus().TargetUID == uid {
		return l, nil
	}
	snapshot := fresh.DeepCopyObject().(v1alpha1.Patcher)
	if err := patchintent.WriteLedger(fresh.PatchStatus(), l, uid); err != nil {
		return nil, err
	}
	rv := fresh.GetResourceVersion()
	if err := r.Client.Status().Patch(ctx, fresh, client.MergeFromWithOptions(snapshot, client.MergeFromWithOptimisticLock{})); err != nil {
		return nil, fmt.Errorf("record previous owners: %w", err)
	}
	r.writes().Wrote(fresh, rv)
	if obj.GetResourceVersion() != rv && fresh.GetResourceVersion() != rv {
		// The cached copy we started from is older too.
		r.writes().WrittenAt(obj, obj.GetResourceVersion(), fresh.GetResourceVersion())
	}
	return l, nil
}

// recordCanWait reports whether the record of intentSet's owners can be
// written after the apply: manager owns none of intentSet on live (so live
// is not our own earlier write seen through a lagging FieldPatch), and no
// field where live differs from the intent is owned by another manager
// (the apply displaces nobody; shared fields stay shared).
func (r *Reconciler) recordCanWait(live, intent *unstructured.Unstructured, owners ownershipcore.ManagedFields, intentSet *fieldset.Set, manager string) bool {
	for _, e := range owners {
		if e.Manager == manager && !e.Fields.Intersection(intentSet).Empty() {
			return false
		}
	}
	diff, err := r.Applier.OwnedDiffOf(live, owners, intent, manager)
	if err != nil {
		return false
	}
	return owners.OwnersOf(diff, manager).Union().Empty()
}

// reader reads without the cache when the manager gave an API reader.
func (r *Reconciler) reader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// unshare saves the ledger, before an apply forces fields from other
// managers, with those fields no longer shared by anyone
// (Ledger.Unshare): once the forced write lands, their owners no longer
// own them because we took them, which a later Follow must not read as
// the owners letting them go, even if the status write after the apply is
// lost. Nothing is written when the stored record shares none of the
// forced fields (in memory, Follow may have unshared one a third manager
// took already: what counts is what a restart would read). The save is a
// merge patch of the record alone, from a copy of obj, so that what the
// reconcile set in obj's status so far is still written at its end.
func (r *Reconciler) unshare(ctx context.Context, obj v1alpha1.Patcher, ledger *ownershipcore.Ledger, uid string, forced []ownershipcore.Conflict) error {
	fields := fieldset.NewSet()
	for _, c := range forced {
		fields.Insert(c.Path)
	}
	ledger.Unshare(fields)
	stored, err := patchintent.ReadLedger(obj.PatchStatus(), uid)
	if err != nil {
		return err
	}
	if !stored.Unshare(fields) {
		return nil
	}
	orig := obj.DeepCopyObject().(v1alpha1.Patcher)
	saved := obj.DeepCopyObject().(v1alpha1.Patcher)
	if err := patchintent.WriteLedger(saved.PatchStatus(), ledger, uid); err != nil {
		return err
	}
	rv := saved.GetResourceVersion()
	if err := r.Client.Status().Patch(ctx, saved, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("record previous owners before forcing: %w", err)
	}
	r.writes().Wrote(saved, rv)
	return nil
}
