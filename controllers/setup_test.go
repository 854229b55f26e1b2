/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/localcp"
)

// Every informer the manager's cache makes of fieldops's own kinds holds
// them without managed fields and without kubectl's last-applied
// configuration (other annotations stay), typed or metadata-only, over
// all namespaces or per namespace (cache.Options.DefaultNamespaces, as
// test/invariants runs the manager), and so does the metadata-only
// informer of CRDs; Pods keep their managed fields (PodSet reads who
// owns a label). A FieldPatch reads back whole. The
// objects are the samples of config/samples, created with managed fields
// and both annotations.
func TestCacheOptionsStripOwnManagedFields(t *testing.T) {
	cp, err := localcp.Start(localcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	ctx := t.Context()
	c, err := client.New(cp.Config, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	const ns = "cache-options"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	root, err := localcp.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for _, f := range []string{"fieldpatch", "clusterfieldpatch", "managedworkload", "podset"} {
		b, err := os.ReadFile(filepath.Join(root, "config/samples/fieldops_v1alpha1_"+f+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			t.Fatal(err)
		}
		if u.GetNamespace() != "" {
			u.SetNamespace(ns)
		}
		last, err := json.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		u.SetAnnotations(map[string]string{corev1.LastAppliedConfigAnnotation: string(last), "keep": "yes"})
		objs = append(objs, u)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns, Labels: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}}}}
	for _, o := range append(objs, pod) {
		if err := c.Create(ctx, o, client.FieldOwner("someone")); err != nil {
			t.Fatal(err)
		}
		if len(o.GetManagedFields()) == 0 {
			t.Fatalf("%s %s created without managed fields", o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
		}
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	crd.SetName("fieldpatches.fieldops.dev")
	objs = append(objs, crd)

	for _, tc := range []struct {
		name string
		opts cache.Options
	}{
		{"all namespaces", cache.Options{}},
		{"per namespace", cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := CacheOptions(tc.opts)
			opts.Scheme = Scheme()
			informers, err := cache.New(cp.Config, opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			go func() { _ = informers.Start(ctx) }()
			if !informers.WaitForCacheSync(ctx) { // a read before Start is refused
				t.Fatal("the cache did not start")
			}
			for _, o := range objs {
				gvk := o.GetObjectKind().GroupVersionKind()
				key := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
				typed, err := Scheme().New(gvk)
				if err != nil {
					t.Fatal(err)
				}
				meta := &metav1.PartialObjectMetadata{}
				meta.SetGroupVersionKind(gvk)
				for _, got := range []client.Object{typed.(client.Object), meta} {
					if err := getSynced(ctx, informers, key, got); err != nil {
						t.Fatalf("%s %s (%T): %v", gvk.Kind, key, got, err)
					}
					if mf := got.GetManagedFields(); len(mf) != 0 {
						t.Errorf("%s %s (%T) cached with managed fields %v", gvk.Kind, key, got, mf)
					}
					if a := got.GetAnnotations(); gvk.Group == "fieldops.dev" && (len(a) != 1 || a["keep"] != "yes") {
						t.Errorf("%s %s (%T) cached with annotations %v, want only keep", gvk.Kind, key, got, a)
					}
				}
			}
			readsWhole(ctx, t, informers, objs[0], tc.opts.DefaultNamespaces == nil)
			cached := &corev1.Pod{}
			if err := getSynced(ctx, informers, client.ObjectKeyFromObject(pod), cached); err != nil {
				t.Fatal(err)
			}
			if len(cached.ManagedFields) == 0 {
				t.Error("a Pod is cached without managed fields: PodSet reads them")
			}
		})
	}
}

// readsWhole checks that the FieldPatch fp reads back whole from c (its
// spec as created), copied or, for a List that asks for no copy, lent
// (lends: one informer's store; a cache of several namespaces copies).
func readsWhole(ctx context.Context, t *testing.T, c cache.Cache, fp client.Object, lends bool) {
	t.Helper()
	got := &v1alpha1.FieldPatch{}
	if err := getSynced(ctx, c, client.ObjectKeyFromObject(fp), got); err != nil {
		t.Fatal(err)
	}
	want, _, _ := unstructured.NestedString(fp.(*unstructured.Unstructured).Object, "spec", "target", "name")
	if got.Spec.Target.Name != want || got.Spec.Patch.Raw == nil {
		t.Errorf("FieldPatch read from the cache: target %q, patch %s; want target %q and the patch", got.Spec.Target.Name, got.Spec.Patch.Raw, want)
	}
	var lent v1alpha1.FieldPatchList
	if err := c.List(ctx, &lent, client.UnsafeDisableDeepCopy); err != nil || len(lent.Items) != 1 || lent.Items[0].Name != fp.GetName() {
		t.Fatalf("FieldPatches lent: %v, %d items", err, len(lent.Items))
	}
	if lent.Items[0].Spec.Target.Name != want {
		t.Errorf("FieldPatch listed with no copy (lends %v): target %q, want %q", lends, lent.Items[0].Spec.Target.Name, want)
	}
}

// getSynced reads key into obj from c once c's informer of obj's kind
// has synced (Get waits for it).
func getSynced(ctx context.Context, c cache.Cache, key types.NamespacedName, obj client.Object) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return c.Get(ctx, key, obj)
}
