package fieldpatch

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/ownershipcore"
)

// readLedger decodes the previous-owner record of st (status.previousOwners
// and status.recordedFields). A record made for another target UID (the
// target was deleted and recreated) does not count: it returns an empty
// ledger then.
func readLedger(st *v1alpha1.FieldPatchStatus, targetUID string) (*ownershipcore.Ledger, error) {
	l := ownershipcore.NewLedger()
	if st.TargetUID != targetUID {
		return l, nil
	}
	recorded, err := ownershipcore.DecodeFields(st.RecordedFields)
	if err != nil {
		return nil, fmt.Errorf("status.recordedFields: %w", err)
	}
	l.Recorded = recorded
	for _, p := range st.PreviousOwners {
		fields, err := ownershipcore.DecodeFields(p.FieldsV1)
		if err != nil {
			return nil, fmt.Errorf("status.previousOwners[%q]: %w", p.Manager, err)
		}
		// Absent (nothing shared, or a record older than the field): no
		// field counts as let go until fieldops has looked again.
		shared, err := ownershipcore.DecodeFields(p.SharedFieldsV1)
		if err != nil {
			return nil, fmt.Errorf("status.previousOwners[%q].sharedFieldsV1: %w", p.Manager, err)
		}
		l.Entries = append(l.Entries, ownershipcore.LedgerEntry{
			ManagerKey: ownershipcore.ManagerKey{Manager: p.Manager, Operation: p.Operation, APIVersion: p.APIVersion, Subresource: p.Subresource},
			Fields:     fields, Shared: shared,
		})
	}
	return l, nil
}

// writeLedger encodes l into st for the target with targetUID.
func writeLedger(st *v1alpha1.FieldPatchStatus, l *ownershipcore.Ledger, targetUID string) error {
	owners := make([]v1alpha1.PreviousOwner, 0, len(l.Entries))
	for _, e := range l.Entries {
		f, err := ownershipcore.EncodeFields(e.Fields)
		if err != nil {
			return err
		}
		var shared *metav1.FieldsV1
		if !e.Shared.Empty() {
			if shared, err = ownershipcore.EncodeFields(e.Shared); err != nil {
				return err
			}
		}
		owners = append(owners, v1alpha1.PreviousOwner{
			Manager: e.Manager, Operation: e.Operation, APIVersion: e.APIVersion, Subresource: e.Subresource,
			FieldsV1: f, SharedFieldsV1: shared, Paths: ownershipcore.FormatSet(e.Fields),
		})
	}
	recorded, err := ownershipcore.EncodeFields(l.Recorded)
	if err != nil {
		return err
	}
	st.PreviousOwners, st.RecordedFields, st.TargetUID = owners, recorded, targetUID
	if len(owners) == 0 {
		st.PreviousOwners = nil
	}
	return nil
}

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
func (r *Reconciler) recordOwners(ctx context.Context, obj v1alpha1.Patcher, ledger *ownershipcore.Ledger, live, intent *unstructured.Unstructured, owners ownershipcore.ManagedFields, present, intentSet *fieldpath.Set, manager string) (*ownershipcore.Ledger, error) {
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
	l, err := readLedger(fresh.PatchStatus(), uid)
	if err != nil {
		return nil, err
	}
	l.Follow(owners, present, manager)
	if !l.Record(owners, intentSet, manager) && fresh.PatchStatus().TargetUID == uid {
		return l, nil
	}
	snapshot := fresh.DeepCopyObject().(v1alpha1.Patcher)
	if err := writeLedger(fresh.PatchStatus(), l, uid); err != nil {
		return nil, err
	}
	rv := fresh.GetResourceVersion()
	if err := r.Client.Status().Patch(ctx, fresh, client.MergeFromWithOptions(snapshot, client.MergeFromWithOptimisticLock{})); err != nil {
		return nil, fmt.Errorf("record previous owners: %w", err)
	}
	r.wrote(fresh, rv)
	if obj.GetResourceVersion() != rv && fresh.GetResourceVersion() != rv {
		// The cached copy we started from is older too.
		r.writtenAt(obj, obj.GetResourceVersion())
	}
	return l, nil
}

// recordCanWait reports whether the record of intentSet's owners can be
// written after the apply: manager owns none of intentSet on live (so live
// is not our own earlier write seen through a lagging FieldPatch), and no
// field where live differs from the intent is owned by another manager
// (the apply displaces nobody; shared fields stay shared).
func (r *Reconciler) recordCanWait(live, intent *unstructured.Unstructured, owners ownershipcore.ManagedFields, intentSet *fieldpath.Set, manager string) bool {
	for _, e := range owners {
		if e.Manager == manager && !e.Fields.Intersection(intentSet).Empty() {
			return false
		}
	}
	diff, err := r.Applier.OwnedDiff(live, intent, manager)
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
