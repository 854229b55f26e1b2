/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package deploy tests what fieldops ships: the kustomize config, the OLM
// bundle, the alerts and the dashboard, against the local control plane.
package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/internal/bundle"
	"github.com/fieldops/fieldops/internal/localcp"
)

var (
	root string
	cfg  *rest.Config
	k8s  client.Client
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if root, err = localcp.ModuleRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The Prometheus Operator's CRDs, for the ServiceMonitor and
	// PrometheusRule of config/prometheus; OLM's Subscription, for the
	// operator's guide's example. On the local cluster, as `make
	// run-local`: what fieldops ships meets controllers, a scheduler and
	// a node.
	cp, err := localcp.Start(localcp.Options{ExtraCRDPaths: []string{
		"test/testdata/crds/monitoring.coreos.com_servicemonitors.yaml",
		"test/testdata/crds/monitoring.coreos.com_prometheusrules.yaml",
		"test/testdata/crds/operators.coreos.com_subscriptions.yaml",
	}, Cluster: &localcp.ClusterOptions{}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	cfg = cp.Config
	if k8s, err = client.New(cfg, client.Options{Scheme: controllers.Scheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// render builds a kustomization under the module root.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := bundle.Render(filepath.Join(root, dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 {
		t.Fatalf("%s renders no objects", dir)
	}
	return objs
}

// install applies the Namespaces and CRDs among objs for real (a dry run
// of the objects in them needs them to exist) and waits for the CRDs to be
// served.
func install(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		if o.GetKind() != "Namespace" && o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		if err := k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner("fieldops-test"), client.ForceOwnership); err != nil {
			t.Fatalf("install %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := k8s.RESTMapper().RESTMapping(crdGroupKind(o))
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("CRD %s not served: %v", o.GetName(), err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// dryRun sends every object as a server-side apply with dryRun=All and
// reports each one the apiserver refuses.
func dryRun(t *testing.T, what string, objs []*unstructured.Unstructured, namespace string) {
	t.Helper()
	for _, o := range objs {
		o = o.DeepCopy()
		if namespace != "" && o.GetNamespace() == "" {
			if namespaced, err := k8s.IsObjectNamespaced(o); err == nil && namespaced {
				o.SetNamespace(namespace)
			}
		}
		err := k8s.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("fieldops-test"), client.ForceOwnership, client.DryRunAll)
		if err != nil {
			t.Errorf("%s: the apiserver refuses %s %s/%s: %v", what, o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
}

func crdGroupKind(crd *unstructured.Unstructured) (gk schema.GroupKind) {
	gk.Group, _, _ = unstructured.NestedString(crd.Object, "spec", "group")
	gk.Kind, _, _ = unstructured.NestedString(crd.Object, "spec", "names", "kind")
	return gk
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}
