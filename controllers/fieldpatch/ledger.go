/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/notes"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
	"github.com/fieldops/fieldops/ownershipcore/redact"
)

// recordTakes records, before an apply forces fields from other
// managers (ApplyOptions.BeforeForce), who owned them: the forced write
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
func (r *Reconciler) recordTakes(ctx context.Context, p *pass, forced []ownershipcore.Conflict) error {
	fields := patchintent.ForcedFields(forced)
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
			return fmt.Errorf("read %s for the record of previous owners: %w", objectName(p.ref), err)
		}
		if live == nil || string(live.GetUID()) != uid {
			return fmt.Errorf("read %s for the record of previous owners: %w", objectName(p.ref), ownershipcore.ErrTargetGone)
		}
		if owners, present, err = r.observeTarget(live); err != nil {
			return err
		}
	}
	if err := r.comparableOwners(ctx, p, owners, fields); err != nil {
		return err
	}
	chains, err := r.patchRecords(ctx, p, owners, fields)
	if err != nil {
		return err
	}
	record := func(l *ownershipcore.Ledger) bool {
		return patchintent.RecordForced(l, owners, fields, p.manager, chains...)
	}
	// The reconcile's own ledger (with what it did since it read the
	// status) takes the same record.
	record(p.d.Ledger)
	_, err = r.saveRecord(ctx, p, owners, present, record)
	return err
}

// patchRecords reads the records of the FieldPatches and
// ClusterFieldPatches among the owners of fields (the fields an apply is
// about to force), for Ledger.Inherit: when such a patch leaves the
// target before this one, the fields go back to the owners it took them
// from, not to its field manager's entry, which nobody would ever
// relinquish. A record counts only when the patch's status names the
// same field manager and the target's UID (a field manager's name is any
// writer's to use; the status is written by the fieldops manager alone,
// as config/rbac lets tenants only read it). It is read with the rights
// of the patch's account: a patch whose account may not read the other
// patch (a tenant, and a ClusterFieldPatch) inherits nothing and says so
// in a Forbidden event; a patch that is gone (or whose name the field
// manager does not show, cut to its length limit) has nothing to inherit.
// Either way, such fields stay without an owner if that patch leaves
// first (Ledger.HandBackTo). Other read errors are returned (a retry may
// fix them).
func (r *Reconciler) patchRecords(ctx context.Context, p *pass, owners ownershipcore.ManagedFields, fields *fieldset.Set) ([]patchintent.Inherited, error) {
	var out []patchintent.Inherited
	seen := map[string]bool{}
	for _, e := range owners.OwnersOf(fields, p.manager) {
		rival, ok := ownershipcore.ParseManager(e.Manager)
		if !ok || seen[e.Manager] || rival.Name == "" || (rival.Kind != "FieldPatch" && rival.Kind != "ClusterFieldPatch") {
			continue
		}
		seen[e.Manager] = true
		ref := &unstructured.Unstructured{}
		ref.SetAPIVersion(v1alpha1.GroupVersion.String())
		ref.SetKind(rival.Kind)
		ref.SetNamespace(rival.Namespace)
		ref.SetName(rival.Name)
		u, err := p.applier.GetFresh(ctx, ref)
		switch {
		case apierrors.IsForbidden(err):
			r.event(p.obj, corev1.EventTypeWarning, ReasonForbidden, "%s", notes.Condition(fmt.Sprintf(
				"cannot read the previous owners recorded by %s, from which this patch takes %s (%s); if %s leaves %s %s before this patch, those fields stay there without an owner at this patch's deletion",
				rival, strings.Join(firstN(patchintent.Leaves(e.Fields), 5), ", "), redact.Message(tenant.Explain(p.account, err)),
				rival, p.ref.GetKind(), objectName(p.ref))))
			continue
		case err != nil:
			return nil, fmt.Errorf("read the previous owners of %s: %w", rival, err)
		case u == nil:
			continue
		}
		var st v1alpha1.FieldPatchStatus
		raw, _, _ := unstructured.NestedMap(u.Object, "status")
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st); err != nil {
			continue
		}
		if st.Targets != nil {
			// A selector patch keeps one record per target.
			rs := st.Targets.RecordStatus(p.uid())
			rs.FieldManager = st.FieldManager
			st = rs
		}
		if st.FieldManager != e.Manager || st.TargetUID != p.uid() {
			continue
		}
		l, err := patchintent.ReadLedger(&st, p.uid())
		if err != nil {
			continue
		}
		out = append(out, patchintent.Inherited{Manager: e.Manager, Ledger: l})
	}
	return out, nil
}

// comparableOwners refuses to take fields from an entry whose field paths
// may not be ours: an entry of another version of a kind whose conversion
// may rename or move fields (a CRD's conversion webhook, a built-in kind's
// versions; ownershipcore.Applier.SameFieldPaths). The apiserver names such
// a conflict in the owner's version, so the record would hold paths that
// never match the patch's, and deletion would remove the owner's field as
// one the patch added. The FieldPatch stops with reason Conflict instead
// (terminal: a change of the patch or of the target reconciles it again).
func (r *Reconciler) comparableOwners(ctx context.Context, p *pass, owners ownershipcore.ManagedFields, fields *fieldset.Set) error {
	var versions, names []string
	for _, e := range owners.OwnersOf(fields, p.manager) {
		if e.Subresource == "" {
			versions = append(versions, e.APIVersion)
			names = append(names, fmt.Sprintf("%s (%s)", ownershipcore.DescribeManager(e.Manager), e.APIVersion))
		}
	}
	if p.applier.SameFieldPaths(ctx, p.ref.GroupVersionKind(), versions...) {
		return nil
	}
	return skeleton.Terminal(ReasonConflict, "will not force %s from %s: the owner's managed fields are in another version of %s, whose field paths this kind's conversion may change, so the fields could not be handed back; write the patch in the owner's version",
		strings.Join(patchintent.Leaves(fields), ", "), strings.Join(names, ", "), p.ref.GetKind())
}

// saveRecord writes the record of previous owners before a write to the
// target that would destroy what it follows from: it reads the FieldPatch
// fresh, continues the record from its status (Follow with owners and
// present, then change), and writes it with an optimistic lock on that
// resourceVersion, so the record and the write are ordered by the
// apiserver, not by timing, and a stale cached copy never overwrites a
// newer record with a fragment. Nothing is written when the stored record
// stays as it is. It returns the record as saved (or as stored, when
// nothing was written).
func (r *Reconciler) saveRecord(ctx context.Context, p *pass, owners ownershipcore.ManagedFields, present *fieldset.Set, change func(*ownershipcore.Ledger) bool) (*ownershipcore.Ledger, error) {
	if sh := r.shadowOf(p.obj); sh != nil {
		return r.saveShadowRecord(sh, p, owners, present, change)
	}
	uid := p.uid()
	fresh := r.newObject()
	if err := r.reader().Get(ctx, client.ObjectKeyFromObject(p.obj), fresh); err != nil {
		return nil, fmt.Errorf("read %s for the record of previous owners: %w", p.obj.GetName(), err)
	}
	l, err := patchintent.ReadLedger(fresh.PatchStatus(), uid)
	if err != nil {
		return nil, err
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
		return nil, err
	}
	if equality.Semantic.DeepEqual(snapshot.PatchStatus(), fresh.PatchStatus()) {
		return l, nil
	}
	rv := fresh.GetResourceVersion()
	if err := r.Client.Status().Patch(ctx, fresh, client.MergeFromWithOptions(snapshot, client.MergeFromWithOptimisticLock{})); err != nil {
		r.writes().Unsure(p.obj, err)
		return nil, fmt.Errorf("record previous owners: %w", err)
	}
	r.writes().Wrote(fresh, rv)
	if p.obj.GetResourceVersion() != rv && fresh.GetResourceVersion() != rv {
		// The cached copy we started from is older too.
		r.writes().WrittenAt(p.obj, p.obj.GetResourceVersion(), fresh.GetResourceVersion())
	}
	return l, nil
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

// reader reads without the cache when the manager gave an API reader.
func (r *Reconciler) reader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}
