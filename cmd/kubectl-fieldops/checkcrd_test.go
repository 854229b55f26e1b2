/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// widgetsCRD is a CRD of gadgets.checkcrd.example.com whose spec.ports,
// a list of {name, port}, has the given list type lines (indented for
// the spot, or "": atomic).
func widgetsCRD(t *testing.T, ports string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	var listType []string
	for _, l := range strings.Split(ports, "\n") {
		listType = append(listType, strings.TrimSpace(l))
	}
	return portsCRD(t, "checkcrd.example.com", "gadgets", "type: array\n"+strings.Join(listType, "\n")+`
items:
  type: object
  properties:
    name: {type: string}
    port: {type: integer}`)
}

// check-crd reports that making an atomic list a map breaks a stored
// object one of whose elements has no key, and only that object; then
// the CRD change is applied to the control plane and the report is borne
// out: server-side apply of that object fails with the reported
// message, while the object check-crd passed still applies.
func TestCheckCRD(t *testing.T) {
	ctx := context.Background()
	atomic := widgetsCRD(t, "")
	if err := k8s.Create(ctx, atomic); err != nil {
		t.Fatal(err)
	}
	if err := envtest.WaitForCRDs(restConfig, []*apiextv1.CustomResourceDefinition{atomic}, envtest.CRDInstallOptions{MaxTime: 30 * time.Second, PollInterval: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	createNamespace(t, "checkcrd")
	applyAs(t, "helm", `{"apiVersion": "checkcrd.example.com/v1", "kind": "Gadget", "metadata": {"name": "bad", "namespace": "checkcrd"}, "spec": {"ports": [{"name": "http", "port": 80}, {"port": 9090}]}}`)
	applyAs(t, "helm", `{"apiVersion": "checkcrd.example.com/v1", "kind": "Gadget", "metadata": {"name": "good", "namespace": "checkcrd"}, "spec": {"ports": [{"name": "http", "port": 80}]}}`)

	byName := widgetsCRD(t, "                x-kubernetes-list-type: map\n                x-kubernetes-list-map-keys: [name]")
	items := byName.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["ports"].Items.Schema
	items.Required = []string{"name"} // the apiserver requires map keys to be required or defaulted
	b, err := yaml.Marshal(byName)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "gadgets.yaml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}

	out, stderr, err := plugin(t, "check-crd", "-f", file)
	if !errors.Is(err, ErrWouldBreak) {
		t.Fatalf("check-crd: %v, want ErrWouldBreak\n%s%s", err, out, stderr)
	}
	golden(t, "check-crd-break.txt", out)
	if want := "gadgets.checkcrd.example.com: 2 object(s) checked against v1 .spec.ports: atomic → map[name]\n"; !strings.HasPrefix(stderr, want) {
		t.Errorf("stderr %q, want %q first", stderr, want)
	}
	// The positional form of before -f still works, with a warning.
	out, stderr, err = plugin(t, "check-crd", file, "-o", "json")
	if !errors.Is(err, ErrWouldBreak) {
		t.Fatalf("check-crd -o json: %v", err)
	}
	golden(t, "check-crd-break.json", out)
	if want := "Warning: check-crd FILE is deprecated: use check-crd -f "; !strings.HasPrefix(stderr, want) {
		t.Errorf("check-crd FILE: stderr %q, want %q first", stderr, want)
	}
	// A directory, and a manifest with other objects in it, as plan -f
	// takes them: the CRDs are checked, the other objects skipped.
	dir := t.TempDir()
	mixed := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: checkcrd}\n---\n" + string(b)
	if err := os.WriteFile(filepath.Join(dir, "all.yaml"), []byte(mixed), 0o600); err != nil {
		t.Fatal(err)
	}
	dirOut, stderr, err := plugin(t, "check-crd", "-f", dir, "-o", "json")
	if !errors.Is(err, ErrWouldBreak) || !strings.Contains(stderr, "Skipped 1 object(s) that are not CustomResourceDefinitions: ConfigMap checkcrd/other") {
		t.Errorf("check-crd -f DIR with other objects: %v\n%s", err, stderr)
	}
	golden(t, "check-crd-break.json", dirOut)
	if _, _, err := plugin(t, "check-crd", "-f", file, file); err == nil || !strings.Contains(err.Error(), "name the file once") {
		t.Errorf("check-crd -f FILE FILE: %v, want an error", err)
	}
	out, _, _ = plugin(t, "check-crd", "-f", file, "-o", "jsonpath={.items[0].severity} {.items[0].path}")
	if want := "Warning .spec.ports"; out != want {
		t.Errorf("check-crd -o jsonpath: %q, want %q", out, want)
	}
	// The served CRD compared with itself: nothing to report.
	same, _ := yaml.Marshal(widgetsCRD(t, ""))
	if out, stderr, err := pluginIn(t, string(same), "check-crd", "-f", "-", "--kubeconfig", kubeconfig); err != nil || out != "" || !strings.Contains(stderr, "no list or map type changes") {
		t.Errorf("check-crd of the served CRD: %v %q %q", err, out, stderr)
	}

	// Apply the change and see the reported break happen.
	served := &apiextv1.CustomResourceDefinition{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: atomic.Name}, served); err != nil {
		t.Fatal(err)
	}
	served.Spec.Versions = byName.Spec.Versions
	if err := k8s.Update(ctx, served); err != nil {
		t.Fatal(err)
	}
	// The apiserver serves the new schema once an apply to good records
	// its entries by key (k:{"name":...}), not the list as a whole.
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		u := applyAs(t, "helm", `{"apiVersion": "checkcrd.example.com/v1", "kind": "Gadget", "metadata": {"name": "good", "namespace": "checkcrd"}, "spec": {"ports": [{"name": "http", "port": 80}]}}`)
		for _, e := range u.GetManagedFields() {
			if e.Manager == "helm" && strings.Contains(e.FieldsV1.GetRawString(), `k:{\"name\":\"http\"}`) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the new schema never took effect: %v", err)
	}
	bad := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`{"apiVersion": "checkcrd.example.com/v1", "kind": "Gadget", "metadata": {"name": "bad", "namespace": "checkcrd"}, "spec": {"ports": [{"name": "http", "port": 81}, {"port": 9090}]}}`), &bad.Object); err != nil {
		t.Fatal(err)
	}
	err = k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(bad), client.FieldOwner("helm"), client.ForceOwnership)
	if err == nil || !strings.Contains(err.Error(), "associative list with keys has an element that omits all key fields") {
		t.Errorf("apply of the object check-crd reported: %v, want the reported break", err)
	}
	// An apply by another manager that leaves the list alone fails too:
	// the field manager converts the whole stored object.
	label := &unstructured.Unstructured{}
	label.SetAPIVersion("checkcrd.example.com/v1")
	label.SetKind("Gadget")
	label.SetNamespace("checkcrd")
	label.SetName("bad")
	label.SetLabels(map[string]string{"team": "x"})
	err = k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(label), client.FieldOwner("labeller"))
	if err == nil || !strings.Contains(err.Error(), "omits all key fields") {
		t.Errorf("apply of a label to the reported object: %v, want the reported break", err)
	}
	// A merge patch fails as well, though not in the field manager:
	// validation ratcheting cannot match the keyless element to itself,
	// so the key the new schema requires is missing.
	merge := &unstructured.Unstructured{}
	merge.SetAPIVersion("checkcrd.example.com/v1")
	merge.SetKind("Gadget")
	merge.SetNamespace("checkcrd")
	merge.SetName("bad")
	err = k8s.Patch(ctx, merge, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":"yes"}}}`)), client.FieldOwner("kubectl-edit"))
	if err == nil || !strings.Contains(err.Error(), "spec.ports[1].name: Required value") {
		t.Errorf("merge patch of the reported object: %v, want spec.ports[1].name: Required value", err)
	}
}
