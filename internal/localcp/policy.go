/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package localcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FinalizerPolicyFile is the MutatingAdmissionPolicy (and its binding)
// that adds fieldops's finalizers at creation, relative to the module
// root: what config/default installs.
const FinalizerPolicyFile = "config/admission/finalizers.yaml"

// HandBackFinalizer is the FieldPatch finalizer the policy adds (the
// controller's fieldpatch.Finalizer).
const HandBackFinalizer = "fieldops.dev/hand-back"

// InstallFinalizerPolicy applies FinalizerPolicyFile with c, its binding
// restricted to namespaceSelector when that is not nil (a test that must
// not change the other tests of its control plane), and waits until the
// policy mutates FieldPatches in probeNamespace (WaitFinalizerPolicy).
func InstallFinalizerPolicy(ctx context.Context, c client.Client, probeNamespace string, namespaceSelector *metav1.LabelSelector) error {
	root, err := ModuleRoot()
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(root, FinalizerPolicyFile))
	if err != nil {
		return err
	}
	objs, err := DecodeAll(b)
	if err != nil {
		return fmt.Errorf("%s: %w", FinalizerPolicyFile, err)
	}
	for _, o := range objs {
		if o.GetKind() == "MutatingAdmissionPolicyBinding" && namespaceSelector != nil {
			sel, err := runtime.DefaultUnstructuredConverter.ToUnstructured(namespaceSelector)
			if err != nil {
				return err
			}
			if err := unstructured.SetNestedMap(o.Object, sel, "spec", "matchResources", "namespaceSelector"); err != nil {
				return err
			}
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("fieldops-install"), client.ForceOwnership); err != nil {
			return fmt.Errorf("install %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return WaitFinalizerPolicy(ctx, c, probeNamespace)
}

// WaitFinalizerPolicy waits until the finalizer policy mutates: until a
// dry-run FieldPatch created in probeNamespace comes back with
// HandBackFinalizer (the apiserver loads admission policies
// asynchronously, from its informers). It fails after 30 s.
func WaitFinalizerPolicy(ctx context.Context, c client.Client, probeNamespace string) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		probe := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "fieldops.dev/v1alpha1", "kind": "FieldPatch",
			"metadata": map[string]interface{}{"generateName": "policy-probe-", "namespace": probeNamespace},
			"spec": map[string]interface{}{
				"target": map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "name": "probe"},
				"patch":  map[string]interface{}{"data": map[string]interface{}{"probe": "1"}},
			},
		}}
		if last = c.Create(ctx, probe, client.DryRunAll); last != nil {
			return false, nil
		}
		return slices.Contains(probe.GetFinalizers(), HandBackFinalizer), nil
	})
	if err != nil {
		return fmt.Errorf("the finalizer policy does not mutate FieldPatches in %s: %w", probeNamespace, errors.Join(err, last))
	}
	return nil
}

// DecodeAll returns the objects of a multi-document YAML (or JSON)
// stream; empty documents are skipped.
func DecodeAll(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, err
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}
