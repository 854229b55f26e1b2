package main

import (
	"strings"
	"testing"
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
		{[]string{"owners", "configmap/c", "-n", "blame-errors", "-o", "wide"}, `--output "wide": want json or yaml`},
		{[]string{"owners", "configmap", "-n", "blame-errors"}, `owners needs one object: TYPE/NAME or TYPE NAME, got "configmap"`},
	} {
		_, stderr, err := plugin(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v (stderr %q), want %q", c.args, err, stderr, c.want)
		}
	}
}
