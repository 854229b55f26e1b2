/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/ownershipcore"
)

// Previous values (deletionPolicy Restore) are kept in a Secret the patch
// owns (garbage-collected with it), never in its status, events, logs or
// metrics: a viewer of FieldPatches who may not read Secrets cannot read
// what a Secret target held. A FieldPatch's Secret is in its own
// namespace and read and written with its account's rights; a
// ClusterFieldPatch's is in the manager's namespace.
//
// LabelPreviousValuesOf labels the Secret of previous values with the
// UID of its patch.
const LabelPreviousValuesOf = "fieldops.dev/previous-values-of"

// previousValuesManager is the field manager of the previous values'
// Secret.
const previousValuesManager = "fieldops-previous-values"

// previousValuesKey is where obj's previous values are kept.
func (s *records) previousValuesKey(u *unit) (client.ObjectKey, error) {
	obj := u.obj
	name := patchintent.PreviousValuesName(obj.GetUID())
	if u.target != nil {
		// A selector patch keeps one Secret per target.
		name = patchintent.PreviousValuesTargetName(obj.GetUID(), u.target.uid)
	}
	if !s.Cluster {
		return client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}, nil
	}
	if s.Tenancy.OwnNamespace == "" {
		return client.ObjectKey{}, skeleton.Terminal(ReasonInvalidPatch, "deletionPolicy Restore of a ClusterFieldPatch keeps previous values in the manager's namespace, which the manager was not told (POD_NAMESPACE)")
	}
	return client.ObjectKey{Namespace: s.Tenancy.OwnNamespace, Name: name}, nil
}

// secretsClient writes obj's Secret: a FieldPatch's account's client
// (applier's), the manager's own for a ClusterFieldPatch, which only
// cluster administrators create.
func (s *records) secretsClient(applier *ownershipcore.Applier) client.Client {
	if s.Cluster {
		return s.Client
	}
	return applier.Client
}

// savePreviousValues keeps, before an apply forces fields of a patch with
// deletionPolicy Restore, the values those fields hold in live (the
// object the apply was decided on): added to the values kept before (an
// earlier value of a field wins: it is the one from before the patch's
// first write), in one create or optimistically locked update of the
// Secret. Other policies keep nothing.
func (s *records) savePreviousValues(ctx context.Context, p *pass, live *unstructured.Unstructured, forced []ownershipcore.Conflict) error {
	if p.spec.DeletionPolicy != v1alpha1.DeletionPolicyRestore || live == nil || len(forced) == 0 {
		return nil
	}
	m := p.applier.Model()
	values, err := m.PreviousValues(live, patchintent.ForcedFields(forced))
	if err != nil {
		return fmt.Errorf("previous values: %w", err)
	}
	key, err := s.previousValuesKey(p.unit)
	if err != nil {
		return err
	}
	uid := string(live.GetUID())
	older, err := s.readPrevious(ctx, p.applier, key, uid)
	if err != nil {
		return err
	}
	merged, err := m.MergeValues(older, values)
	if err != nil {
		return fmt.Errorf("previous values: %w", err)
	}
	raw, err := json.Marshal(merged.Object)
	if err != nil {
		return err
	}
	secret := s.previousValuesSecret(p.obj, key, map[string][]byte{patchintent.PreviousValuesKey: raw, patchintent.PreviousTargetKey: []byte(uid)})
	if err := s.secretsClient(p.applier).Apply(ctx, secret, client.FieldOwner(previousValuesManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("keep the previous values in Secret %s: %w", key, err)
	}
	return nil
}

// previousValuesSecret is the apply configuration of obj's Secret of
// previous values holding data, owned by obj.
func (s *records) previousValuesSecret(obj v1alpha1.Patcher, key client.ObjectKey, data map[string][]byte) *corev1ac.SecretApplyConfiguration {
	kind := "FieldPatch"
	if s.Cluster {
		kind = "ClusterFieldPatch"
	}
	return corev1ac.Secret(key.Name, key.Namespace).
		WithLabels(map[string]string{LabelPreviousValuesOf: string(obj.GetUID()), "app.kubernetes.io/managed-by": "fieldops"}).
		WithAnnotations(map[string]string{"fieldops.dev/patch": obj.GetNamespace() + "/" + obj.GetName()}).
		WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion(v1alpha1.GroupVersion.String()).WithKind(kind).
			WithName(obj.GetName()).WithUID(obj.GetUID()).WithController(true).WithBlockOwnerDeletion(true)).
		WithType(corev1.SecretTypeOpaque).
		WithData(data)
}

// readPreviousValues reads obj's previous values for the target with uid;
// nil when none were kept (the patch forced nothing, or its Secret is
// gone: then the fields are handed back as HandBack does).
func (s *records) readPreviousValues(ctx context.Context, applier *ownershipcore.Applier, u *unit, uid string) (*unstructured.Unstructured, error) {
	if u.spec.DeletionPolicy != v1alpha1.DeletionPolicyRestore {
		return nil, nil
	}
	key, err := s.previousValuesKey(u)
	if err != nil {
		return nil, err
	}
	return s.readPrevious(ctx, applier, key, uid)
}

// readPrevious reads the previous values in the Secret key for the target
// with uid, without a cache (no informer of Secrets): the account's own
// client for a FieldPatch, the manager's API reader for a
// ClusterFieldPatch or a patch acting with the manager's rights. Nil when
// there is none.
func (s *records) readPrevious(ctx context.Context, applier *ownershipcore.Applier, key client.ObjectKey, uid string) (*unstructured.Unstructured, error) {
	reader := client.Reader(applier.Client)
	if s.Cluster || applier == s.Applier {
		reader = s.reader()
	}
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read the previous values: %w", err)
	}
	return patchintent.DecodePreviousValues(secret, uid)
}
