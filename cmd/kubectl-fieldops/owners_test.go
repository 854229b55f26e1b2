/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// A ConfigMap shared by three managers, the way a Helm release, a person
// with kubectl edit and a FieldPatch share one: each line shows its owner.
func TestOwners(t *testing.T) {
	createNamespace(t, "blame")
	cm := applyAs(t, "helm", `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: blame, labels: {app: web}}
data: {log-level: info, replicas: "2"}
`)
	mergeAs(t, "kubectl-edit", cm, `{"metadata":{"labels":{"team":"payments"}},"data":{"replicas":"3"}}`)
	applyAs(t, "fieldops-fieldpatch/blame/tune", `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: blame}
data: {proxy.conf: "server proxy.internal\nport 3128"}
`)
	d := applyAs(t, "helm", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: blame}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        env: [{name: LOG_LEVEL, value: info}]
`)
	mergeAs(t, "hpa", d, `{"spec":{"replicas":4}}`)
	fixClock(t, cm)

	out, stderr, err := plugin(t, "owners", "configmap/settings", "-n", "blame")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	golden(t, "owners-configmap.txt", out)

	out, stderr, err = plugin(t, "owners", "cm", "settings", "-n", "blame", "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	golden(t, "owners-configmap.json", out)

	fixClock(t, d)
	out, stderr, err = plugin(t, "owners", "deploy/web", "-n", "blame", "--manager", "hpa")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	golden(t, "owners-deployment-hpa.txt", out)

	out, stderr, err = plugin(t, "owners", "deployments.apps/web", "-n", "blame")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	golden(t, "owners-deployment.txt", out)
}

// Bad input gets a clear error.
func TestOwnersErrors(t *testing.T) {
	createNamespace(t, "blame-errors")
	applyAs(t, "helm", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "blame-errors"}, "data": {"a": "1"}}`)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"owners", "configmap/missing", "-n", "blame-errors"}, `configmaps "missing" not found`},
		{[]string{"owners", "nosuchkind/x", "-n", "blame-errors"}, `the server doesn't have a resource type "nosuchkind"`},
		{[]string{"owners", "configmap/c", "-n", "blame-errors", "--manager", "nobody"}, `field manager "nobody" owns no field of ConfigMap c (managers: helm)`},
		{[]string{"owners", "configmap/c", "-n", "blame-errors", "-o", "wide"}, `--output "wide": want one of json, yaml`},
		{[]string{"owners", "configmap", "-n", "blame-errors"}, `owners needs a name or a selector: TYPE/NAME, TYPE NAME or TYPE -l SELECTOR, got "configmap"`},
		{[]string{"owners", "-n", "blame-errors"}, `owners needs objects: TYPE/NAME, TYPE NAME, TYPE -l SELECTOR or -f FILE`},
		{[]string{"owners", "configmap/c", "-f", "x.yaml"}, `name objects either by TYPE/NAME, TYPE -l SELECTOR or -f FILE, not both`},
		{[]string{"owners", "configmap/c", "--local"}, `--local reads the objects of -f only`},
		{[]string{"owners", "configmap/c", "-n", "blame-errors", "--color", "rainbow"}, `--color "rainbow": want auto, always, never`},
		{[]string{"owners", "configmap/c", "-n", "blame-errors", "--time", "iso"}, `--time "iso": want age, rfc3339, none`},
		// Several objects: the ones that exist are printed, the error names the others.
		{[]string{"owners", "configmap/c", "configmap/missing", "-n", "blame-errors"}, `configmaps "missing" not found`},
		{[]string{"owners", "configmap/c", "configmap/c", "-n", "blame-errors", "--manager", "nobody"}, `field manager "nobody" owns no field of the 2 objects (managers: helm)`},
	} {
		_, stderr, err := plugin(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v (stderr %q), want %q", c.args, err, stderr, c.want)
		}
	}
}

// A selector that matches nothing is no error: kubectl get's note on
// standard error, nothing on standard output, exit 0. The printers of
// kubectl (-o name, jsonpath) print the objects found.
func TestOwnersNoResources(t *testing.T) {
	createNamespace(t, "blame-none")
	applyAs(t, "helm", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "blame-none", "labels": {"app": "c"}}, "data": {"a": "1"}}`)
	out, stderr, err := plugin(t, "owners", "configmap", "-l", "nothing=here", "-n", "blame-none")
	if err != nil || out != "" || stderr != "No resources found in blame-none namespace.\n" {
		t.Errorf("owners -l nothing=here: %v stdout %q stderr %q", err, out, stderr)
	}
	out, stderr, err = plugin(t, "owners", "configmap", "-l", "nothing=here", "-A")
	if err != nil || out != "" || stderr != "No resources found\n" {
		t.Errorf("owners -l nothing=here -A: %v stdout %q stderr %q", err, out, stderr)
	}
	if out, _, err := plugin(t, "owners", "configmap", "-l", "app=c", "-n", "blame-none", "-o", "name"); err != nil || out != "configmap/c\n" {
		t.Errorf("owners -o name: %v %q", err, out)
	}
	if out, _, err := plugin(t, "owners", "configmap/c", "-n", "blame-none", "-o", "jsonpath={.fields[0].owners[0].manager}"); err != nil || out != "helm" {
		t.Errorf("owners -o jsonpath: %v %q", err, out)
	}
}

// Several objects at once, named as kubectl get names them: TYPE/NAME...,
// TYPE -l SELECTOR, -f FILE and -f - (the live objects), and offline
// from a saved copy with managedFields (--local).
func TestOwnersSeveral(t *testing.T) {
	createNamespace(t, "several")
	a := applyAs(t, "helm", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "several", "labels": {"app": "web"}}, "data": {"x": "1"}}`)
	mergeAs(t, "kubectl-edit", a, `{"data":{"y":"2"}}`)
	applyAs(t, "flux", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "several", "labels": {"app": "web"}}, "data": {"z": "3"}}`)
	applyAs(t, "flux", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other", "namespace": "several"}, "data": {"z": "3"}}`)
	fixClock(t, a)

	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"
	file := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	// Every way of naming a and b prints the same.
	for _, args := range [][]string{
		{"owners", "cm/a", "configmap/b"},
		{"owners", "cm", "a", "b"},
		{"owners", "cm", "-l", "app=web"},
		{"owners", "-f", file},
	} {
		out, stderr, err := plugin(t, append(args, "-n", "several", "--time", "none")...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr)
		}
		golden(t, "owners-several.txt", out)
	}
	out, stderr, err := pluginIn(t, manifest, "owners", "-f", "-", "-n", "several", "--time", "none", "--kubeconfig", kubeconfig)
	if err != nil {
		t.Fatalf("-f -: %v\n%s", err, stderr)
	}
	golden(t, "owners-several.txt", out)

	// A selector may match several objects: -o json prints a List, even of one.
	out, stderr, err = plugin(t, "owners", "cm", "-l", "app=web", "-n", "several", "-o", "json", "--manager", "flux")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	golden(t, "owners-several-flux.json", out)

	out, stderr, err = plugin(t, "owners", "cm/a", "-n", "several", "--time", "rfc3339", "--color", "always")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	golden(t, "owners-color-rfc3339.txt", out)

	// Offline: the saved object (with managedFields) prints as the live
	// one does, with a server address nothing listens on.
	live := &unstructured.Unstructured{}
	live.SetAPIVersion("v1")
	live.SetKind("ConfigMap")
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: "several", Name: "a"}, live); err != nil {
		t.Fatal(err)
	}
	saved, err := yaml.Marshal(live.Object)
	if err != nil {
		t.Fatal(err)
	}
	offline := filepath.Join(t.TempDir(), "a.yaml")
	if err := os.WriteFile(offline, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	online, stderr, err := plugin(t, "owners", "cm/a", "-n", "several")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, in := range []struct{ stdin, file string }{{"", offline}, {string(saved), "-"}} {
		out, stderr, err = pluginIn(t, in.stdin, "owners", "--local", "-f", in.file, "--server", "https://127.0.0.1:1")
		if err != nil {
			t.Fatalf("--local -f %s: %v\n%s", in.file, err, stderr)
		}
		if out != online {
			t.Errorf("--local -f %s:\n%s\nwant (online)\n%s", in.file, out, online)
		}
	}
	_, _, err = pluginIn(t, manifest, "owners", "--local", "-f", "-", "--server", "https://127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "STDIN: ConfigMap a has no metadata.managedFields (save it with kubectl get -o yaml --show-managed-fields)") {
		t.Errorf("--local without managedFields: %v", err)
	}
}
