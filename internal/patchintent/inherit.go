/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchintent

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// RecordReader reads the FieldPatch or ClusterFieldPatch that ref names
// (apiVersion, kind, namespace and name set) from the apiserver, with the
// rights of the account the reading patch acts as. It returns nil, nil
// when the object does not exist.
type RecordReader func(ctx context.Context, ref *unstructured.Unstructured) (*unstructured.Unstructured, error)

// Unread is the record of a fieldops patch among the owners of forced
// fields that the account may not read (a 403): the fields taken from
// Patch stay without an owner should Patch leave the target first
// (Ledger.HandBackTo).
type Unread struct {
	Patch  ownershipcore.FieldopsObject
	Fields *fieldset.Set
	Err    error
}

// InheritedRecords reads the records of the FieldPatches and
// ClusterFieldPatches among the owners of fields (the fields an apply is
// about to force from them; owners: the target's managed fields), for
// RecordForced: when such a patch leaves the target before this one
// (manager), the fields go back to the owners it took them from, not to
// its field manager's entry, which nobody would ever relinquish
// (Ledger.Inherit).
//
// A record counts only when the patch's status names the same field
// manager and the target (targetUID): a field manager's name is any
// writer's to use, while the status is written by the fieldops manager
// alone. A selector patch keeps one record per target
// (TargetsStatus.RecordStatus): that target's record is the one
// inherited. A patch that is gone, whose name its field manager does not
// show (cut to its length limit) or whose status does not decode has
// nothing to inherit. A 403 is returned as an Unread, for the caller to
// report; another read error is returned with the Unreads found before
// it, which the caller reports all the same.
//
// The controller and kubectl fieldops plan both call it, so that the
// plan's previous owners are the controller's.
func InheritedRecords(ctx context.Context, read RecordReader, owners ownershipcore.ManagedFields, fields *fieldset.Set, manager, targetUID string) ([]Inherited, []Unread, error) {
	var out []Inherited
	var unread []Unread
	seen := map[string]bool{}
	for _, e := range owners.OwnersOf(fields, manager) {
		rival, ok := ownershipcore.ParseManager(e.Manager)
		if !ok || seen[e.Manager] || rival.Name == "" || (rival.Kind != "FieldPatch" && rival.Kind != "ClusterFieldPatch") {
			continue
		}
		seen[e.Manager] = true
		u, err := read(ctx, patchRef(rival))
		switch {
		case apierrors.IsForbidden(err):
			unread = append(unread, Unread{Patch: rival, Fields: e.Fields, Err: err})
			continue
		case err != nil:
			return nil, unread, fmt.Errorf("read the previous owners of %s: %w", rival, err)
		case u == nil:
			continue
		}
		if l := recordOf(u, e.Manager, targetUID); l != nil {
			out = append(out, Inherited{Manager: e.Manager, Ledger: l})
		}
	}
	return out, unread, nil
}

// patchRef names the object of a fieldops patch's field manager.
func patchRef(o ownershipcore.FieldopsObject) *unstructured.Unstructured {
	ref := &unstructured.Unstructured{}
	ref.SetAPIVersion(v1alpha1.GroupVersion.String())
	ref.SetKind(o.Kind)
	ref.SetNamespace(o.Namespace)
	ref.SetName(o.Name)
	return ref
}

// recordOf is the record u (a FieldPatch or ClusterFieldPatch) keeps of
// the target with targetUID, when its status names manager and that
// target; nil otherwise.
func recordOf(u *unstructured.Unstructured, manager, targetUID string) *ownershipcore.Ledger {
	var st v1alpha1.FieldPatchStatus
	raw, _, _ := unstructured.NestedMap(u.Object, "status")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st); err != nil {
		return nil
	}
	if st.Targets != nil {
		rs := st.Targets.RecordStatus(targetUID)
		rs.FieldManager = st.FieldManager
		st = rs
	}
	if st.FieldManager != manager || st.TargetUID != targetUID {
		return nil
	}
	l, err := ReadLedger(&st, targetUID)
	if err != nil {
		return nil
	}
	return l
}

// ForceRefusedError is the refusal to force fields from owners whose
// managed fields entries are in another version of the target's kind,
// whose conversion may rename or move fields (a CRD's conversion
// webhook, a built-in kind's versions): the apiserver names such a
// conflict in the owner's version, so the record would hold paths that
// never match the patch's, and deletion would remove the owner's field as
// one the patch added. Only a change of the patch (written in the owner's
// version) or of the target helps.
type ForceRefusedError struct {
	// Fields are the forced fields, Owners the entries refused ("helm
	// (Apply) (group/v2)"), Kind the target's kind.
	Fields, Owners []string
	Kind           string
}

func (e *ForceRefusedError) Error() string {
	return fmt.Sprintf("will not force %s from %s: the owner's managed fields are in another version of %s, whose field paths this kind's conversion may change, so the fields could not be handed back; write the patch in the owner's version",
		strings.Join(e.Fields, ", "), strings.Join(e.Owners, ", "), e.Kind)
}

// CheckForce refuses, with a *ForceRefusedError, to force fields from
// the entries of owners (other than manager's, subresource entries
// aside) when samePaths says their versions may not share the patch's
// field paths (ownershipcore.Applier.SameFieldPaths for the target's
// kind). The controller checks it before a forced write and kubectl
// fieldops plan after its dry run, so that both refuse the same takes.
func CheckForce(owners ownershipcore.ManagedFields, fields *fieldset.Set, manager, kind string, samePaths func(versions ...string) bool) error {
	var versions, names []string
	for _, e := range owners.OwnersOf(fields, manager) {
		if e.Subresource == "" {
			versions = append(versions, e.APIVersion)
			names = append(names, fmt.Sprintf("%s (%s)", ownershipcore.DescribeManager(e.Manager), e.APIVersion))
		}
	}
	if samePaths(versions...) {
		return nil
	}
	return &ForceRefusedError{Fields: Leaves(fields), Owners: names, Kind: kind}
}
