/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// table asks the apiserver for what kubectl get prints: the resource's
// list as a meta.k8s.io Table (additionalPrinterColumns). kubectl prints
// a nil cell as nothing, and hides columns of priority > 0 without -o wide.
func table(t *testing.T, path string) *metav1.Table {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
	}
	tb := &metav1.Table{}
	if err := json.Unmarshal(body, tb); err != nil {
		t.Fatal(err)
	}
	return tb
}

// row returns the cells of the row of the named object, by column name,
// keeping only the columns kubectl get shows without -o wide.
func row(t *testing.T, tb *metav1.Table, name string) map[string]interface{} {
	t.Helper()
	for _, r := range tb.Rows {
		var m metav1.PartialObjectMetadata
		if err := json.Unmarshal(r.Object.Raw, &m); err != nil {
			t.Fatal(err)
		}
		if m.Name != name {
			continue
		}
		out := map[string]interface{}{}
		for i, c := range tb.ColumnDefinitions {
			if c.Priority == 0 && i < len(r.Cells) {
				out[c.Name] = r.Cells[i]
			}
		}
		return out
	}
	t.Fatalf("no row %s", name)
	return nil
}

// kubectl get shows a FieldPatch's target kind, name and Ready reason
// without -o wide, under headers that name no second NAMESPACE or NAME
// (a ClusterFieldPatch's target namespace is TARGET-NAMESPACE), and the
// counts of every kind print 0, not nothing, once the controller has
// written a status, including after a count went back to 0 (a merge patch
// from the Go types, whose counts are omitempty, then removes the field).
func TestPrintColumns(t *testing.T) {
	ctx := context.Background()
	ns := "print-columns"
	install(t, []*unstructured.Unstructured{{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]interface{}{"name": ns}}}})
	objects := []struct {
		yaml     string
		resource string // path of the list
		count    string // a count field of status, set to 3 then removed
		columns  map[string]interface{}
		// headers are the columns kubectl get prints without -o wide, in
		// order (kubectl upper-cases them), NAMESPACE and NAME aside.
		headers []string
	}{
		{
			yaml: `apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: fp, namespace: print-columns}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  patch: {spec: {replicas: 2}}`,
			resource: "/apis/fieldops.dev/v1alpha1/namespaces/print-columns/fieldpatches",
			count:    "fieldCount",
			columns:  map[string]interface{}{"Target-Kind": "Deployment", "Target-Name": "web", "Fields": float64(0)},
			headers:  []string{"Target-Kind", "Target-Name", "Ready", "Reason", "Fields", "Expires", "Age"},
		},
		{
			yaml: `apiVersion: fieldops.dev/v1alpha1
kind: ClusterFieldPatch
metadata: {name: print-columns-cfp}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: coredns, namespace: kube-system}
  patch: {spec: {replicas: 2}}`,
			resource: "/apis/fieldops.dev/v1alpha1/clusterfieldpatches",
			count:    "fieldCount",
			columns:  map[string]interface{}{"Target-Kind": "Deployment", "Target-Namespace": "kube-system", "Target-Name": "coredns", "Fields": float64(0)},
			headers:  []string{"Target-Kind", "Target-Namespace", "Target-Name", "Ready", "Reason", "Fields", "Expires", "Age"},
		},
		{
			yaml: `apiVersion: fieldops.dev/v1alpha1
kind: ManagedWorkload
metadata: {name: mw, namespace: print-columns}
spec:
  resources:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: mw}, data: {a: "1"}}`,
			resource: "/apis/fieldops.dev/v1alpha1/namespaces/print-columns/managedworkloads",
			count:    "failed",
			columns:  map[string]interface{}{"Applied": float64(0), "Failed": float64(0)},
			headers:  []string{"Applied", "Failed", "Ready", "Reason", "Age"},
		},
		{
			yaml: `apiVersion: fieldops.dev/v1alpha1
kind: PodSet
metadata: {name: ps, namespace: print-columns}
spec:
  replicas: 0
  selector: {matchLabels: {app: ps}}
  template:
    metadata: {labels: {app: ps}}
    spec: {containers: [{name: c, image: busybox}]}`,
			resource: "/apis/fieldops.dev/v1alpha1/namespaces/print-columns/podsets",
			count:    "readyReplicas",
			columns:  map[string]interface{}{"Desired": float64(0), "Ready": float64(0), "Updated": float64(0)},
			headers:  []string{"Desired", "Ready", "Updated", "Reason", "Age"},
		},
	}
	for _, o := range objects {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(o.yaml), &u.Object); err != nil {
			t.Fatal(err)
		}
		t.Run(u.GetKind(), func(t *testing.T) {
			if err := k8s.Create(ctx, u); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = k8s.Delete(ctx, u) }()
			// The controller's first status write; then a count that was 3
			// and went back to 0.
			for _, patch := range []string{
				`{"status":{"observedGeneration":1}}`,
				fmt.Sprintf(`{"status":{%q:3}}`, o.count),
				fmt.Sprintf(`{"status":{%q:null}}`, o.count),
			} {
				if err := k8s.Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
					t.Fatalf("status patch %s: %v", patch, err)
				}
			}
			tb := table(t, o.resource)
			var headers []string
			for _, c := range tb.ColumnDefinitions {
				if c.Priority == 0 && c.Name != "Name" {
					headers = append(headers, c.Name)
				}
			}
			if !slices.Equal(headers, o.headers) {
				t.Errorf("kubectl get %s prints the columns %q, want %q", u.GetKind(), headers, o.headers)
			}
			got := row(t, tb, u.GetName())
			for col, want := range o.columns {
				if got[col] != want {
					t.Errorf("kubectl get %s: column %s is %#v, want %#v (all: %v)", u.GetKind(), col, got[col], want, got)
				}
			}
		})
	}
}

// kubectl get -o wide shows a selector patch's counts of matched and
// applied targets (status.targets), for FieldPatch and ClusterFieldPatch.
func TestPrintColumnsSelector(t *testing.T) {
	ctx := context.Background()
	ns := "print-columns-selector"
	install(t, []*unstructured.Unstructured{{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]interface{}{"name": ns}}}})
	for _, o := range []struct{ yaml, resource string }{
		{`apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: fp-selector, namespace: print-columns-selector}
spec:
  targetSelector: {apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {app: web}}}
  patch: {metadata: {annotations: {a: b}}}`, "/apis/fieldops.dev/v1alpha1/namespaces/print-columns-selector/fieldpatches"},
		{`apiVersion: fieldops.dev/v1alpha1
kind: ClusterFieldPatch
metadata: {name: print-columns-cfp-selector}
spec:
  targetSelector: {apiVersion: apps/v1, kind: Deployment, labelSelector: {}, namespaceSelector: {matchLabels: {team: payments}}}
  patch: {metadata: {annotations: {a: b}}}`, "/apis/fieldops.dev/v1alpha1/clusterfieldpatches"},
	} {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(o.yaml), &u.Object); err != nil {
			t.Fatal(err)
		}
		t.Run(u.GetKind(), func(t *testing.T) {
			if err := k8s.Create(ctx, u); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = k8s.Delete(ctx, u) }()
			patch := `{"status":{"observedGeneration":1,"targets":{"matched":3,"applied":2,"contested":0,"failed":1,"forbidden":0}}}`
			if err := k8s.Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
				t.Fatalf("status patch: %v", err)
			}
			tb := table(t, o.resource)
			wide := map[string]int32{}
			for _, c := range tb.ColumnDefinitions {
				if c.Priority == 1 {
					wide[c.Name] = c.Priority
				}
			}
			if _, ok := wide["Matched"]; !ok {
				t.Errorf("no wide column Matched: %+v", tb.ColumnDefinitions)
			}
			for _, r := range tb.Rows {
				var m metav1.PartialObjectMetadata
				if err := json.Unmarshal(r.Object.Raw, &m); err != nil {
					t.Fatal(err)
				}
				if m.Name != u.GetName() {
					continue
				}
				got := map[string]interface{}{}
				for i, c := range tb.ColumnDefinitions {
					if i < len(r.Cells) {
						got[c.Name] = r.Cells[i]
					}
				}
				if got["Matched"] != float64(3) || got["Applied"] != float64(2) {
					t.Errorf("kubectl get -o wide %s: Matched %#v, Applied %#v; want 3 and 2", u.GetKind(), got["Matched"], got["Applied"])
				}
				return
			}
			t.Fatalf("no row %s", u.GetName())
		})
	}
}
