/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package blame

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/ownershipcore"
)

func TestBlame(t *testing.T) {
	obj := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(`
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, team: payments}
  annotations: {note: "two\nlines", "example.com/owner": me}
  finalizers: [a.example.com/x, b.example.com/y]
  managedFields: [{manager: ignored}]
spec:
  replicas: 3
  empty: {}
  none: []
  template:
    spec:
      containers:
      - name: app
        image: nginx:1.27
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
        args: [--x, --y]
      - name: sidecar
        image: envoy
`), &obj); err != nil {
		t.Fatal(err)
	}
	entry := func(manager string, op metav1.ManagedFieldsOperationType, fields string) ownershipcore.Entry {
		set, err := ownershipcore.DecodeFields(metav1.NewFieldsV1(fields))
		if err != nil {
			t.Fatal(err)
		}
		return ownershipcore.Entry{ManagerKey: ownershipcore.ManagerKey{Manager: manager, Operation: op}, Fields: set}
	}
	owners := ownershipcore.ManagedFields{
		entry("helm", metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:name":{},"f:image":{},"f:args":{}}}}}}}`),
		entry("hpa", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:replicas":{}}}`),
		entry("mesh", metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{"f:annotations":{".":{},"f:note":{}},"f:finalizers":{"v:\"b.example.com/y\"":{}}},"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"sidecar\"}":{".":{},"f:image":{}},"k:{\"name\":\"app\"}":{"f:env":{"k:{\"name\":\"B\"}":{".":{},"f:value":{}}}}}}}}}`),
	}
	lines := Blame(obj, owners)

	// The text is exactly what sigs.k8s.io/yaml prints, managedFields left out.
	delete(obj["metadata"].(map[string]interface{}), "managedFields")
	want, _ := yaml.Marshal(obj)
	var text []string
	for _, l := range lines {
		text = append(text, l.Text)
	}
	if got := strings.Join(text, "\n") + "\n"; got != string(want) {
		t.Fatalf("text:\n%s\nwant:\n%s", got, want)
	}

	byText := map[string]Line{}
	for _, l := range lines {
		byText[strings.TrimSpace(l.Text)] = l
	}
	for _, c := range []struct {
		line   string
		owners string
		path   string
	}{
		{"replicas: 3", "helm,hpa", ".spec.replicas"},
		{"app: web", "helm", ".metadata.labels.app"},
		{"team: payments", "", ".metadata.labels.team"},
		{"annotations:", "mesh", ".metadata.annotations"},
		{"note: |-", "mesh", ".metadata.annotations.note"},
		{"example.com/owner: me", "", `.metadata.annotations["example.com/owner"]`},
		{"- b.example.com/y", "mesh", `.metadata.finalizers[="b.example.com/y"]`},
		{"- a.example.com/x", "", ".metadata.finalizers[0]"},
		{"image: nginx:1.27", "helm", `.spec.template.spec.containers[name="app"].image`},
		{"- image: envoy", "mesh", `.spec.template.spec.containers[name="sidecar"].image`},
		{"name: sidecar", "", `.spec.template.spec.containers[name="sidecar"].name`},
		{"value: \"2\"", "mesh", `.spec.template.spec.containers[name="app"].env[name="B"].value`},
		{"- --x", "", `.spec.template.spec.containers[name="app"].args[0]`},
		{"- args:", "helm", `.spec.template.spec.containers[name="app"].args`},
		{"- name: A", "", `.spec.template.spec.containers[name="app"].env[0].name`},
		{"empty: {}", "", ".spec.empty"},
		{"kind: Deployment", "", ".kind"},
	} {
		l, ok := byText[c.line]
		if !ok {
			t.Errorf("no line %q", c.line)
			continue
		}
		var names []string
		for _, o := range l.Owners {
			names = append(names, o.Manager)
		}
		if got := strings.Join(names, ","); got != c.owners || ownershipcore.FormatPath(l.Path) != c.path {
			t.Errorf("%q: owners %q path %s, want %q %s", c.line, got, ownershipcore.FormatPath(l.Path), c.owners, c.path)
		}
	}
	// Parents: a container's later fields sit under its "- " line, which
	// sits under containers:.
	name := byText["name: sidecar"]
	if item := lines[name.Parent]; strings.TrimSpace(item.Text) != "- image: envoy" || strings.TrimSpace(lines[item.Parent].Text) != "containers:" {
		t.Errorf("name: sidecar has parent %q", lines[name.Parent].Text)
	}
	// The continuation of a block scalar belongs to its key's line.
	for i, l := range lines {
		if strings.TrimSpace(l.Text) == "lines" && (l.Path != nil || strings.TrimSpace(lines[l.Parent].Text) != "note: |-") {
			t.Errorf("line %d %q: path %v parent %d", i, l.Text, l.Path, l.Parent)
		}
	}
}
