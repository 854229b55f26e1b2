/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/redact"
)

// An intent the apiserver's field manager refuses is refused locally, with
// ErrInvalidIntent and no request; what the apiserver answers for the same
// intents (when there is no live object to decide on locally, or when only
// the apiserver can tell, as for a float where an int32 belongs) is
// terminal too, and both read without Go internals or values.
func TestApplyRefusesInvalidIntents(t *testing.T) {
	ctx := context.Background()
	a, count := newApplier(t)
	applyAs(t, a.Client, "vendor", deployment("invalid"))
	opts := ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionForce)}

	duplicates := `
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: default}
spec:
  template:
    spec:
      containers:
      - name: app
        env: [{name: DUP, value: s3cr3t-one}, {name: DUP, value: s3cr3t-two}]
`
	// With a live object, the local field manager decides.
	for _, tc := range []struct{ name, intent, want string }{
		{"duplicates", sprintf(duplicates, "invalid"), `.spec.template.spec.containers[name="app"].env: duplicate entries for key [name="DUP"]`},
		{"string-replicas", "{apiVersion: apps/v1, kind: Deployment, metadata: {name: invalid, namespace: default}, spec: {replicas: s3cr3t}}", ".spec.replicas: expected number, got string"},
		{"object-image", "{apiVersion: apps/v1, kind: Deployment, metadata: {name: invalid, namespace: default}, spec: {template: {spec: {containers: [{name: app, image: {s3cr3t: 1}}]}}}}", `.spec.template.spec.containers[name="app"].image: expected string, got map`},
	} {
		t.Run("local-"+tc.name, func(t *testing.T) {
			count.writes.Store(0)
			_, err := a.Apply(ctx, obj(t, tc.intent), opts)
			if !errors.Is(err, ownershipcore.ErrInvalidIntent) || !ownershipcore.IsTerminal(err) {
				t.Fatalf("%v, want ErrInvalidIntent", err)
			}
			if n := count.writes.Load(); n != 0 {
				t.Errorf("%d writes for an intent refused locally", n)
			}
			msg := redact.Message(err)
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, "s3cr3t") {
				t.Errorf("message %q, want it to say %s and no value", msg, tc.want)
			}
			t.Logf("local: %s", msg)
		})
	}

	// The apiserver answers: one request each.
	for _, tc := range []struct{ name, intent, want string }{
		// No live object: the apiserver answers (500, the field
		// manager's own error).
		{"duplicates-on-create", sprintf(duplicates, "invalid-new"), `duplicate entries for key [name="DUP"]`},
		// smd accepts any number for an integer; the apiserver's
		// conversion into the Go type does not.
		{"float-replicas", "{apiVersion: apps/v1, kind: Deployment, metadata: {name: invalid, namespace: default}, spec: {replicas: 1.5}}", "the object does not fit the Go type of apps/v1 Deployment: expected int32, got number"},
		// A field the schema does not declare: the apiserver's schema
		// may be newer than the one read here, so it decides.
		{"undeclared-field", "{apiVersion: apps/v1, kind: Deployment, metadata: {name: invalid, namespace: default}, spec: {replicaz: 3}}", ".spec.replicaz: field not declared in schema"},
		{"negative-replicas", "{apiVersion: apps/v1, kind: Deployment, metadata: {name: invalid, namespace: default}, spec: {replicas: -987654}}", "spec.replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			count.writes.Store(0)
			_, err := a.Apply(ctx, obj(t, tc.intent), opts)
			if err == nil {
				t.Fatal("applied")
			}
			if n := count.writes.Load(); n != 1 || errors.Is(err, ownershipcore.ErrInvalidIntent) {
				t.Errorf("%d requests (want 1), ErrInvalidIntent %v (want false)", n, errors.Is(err, ownershipcore.ErrInvalidIntent))
			}
			t.Logf("raw: %v", err)
			if !ownershipcore.IsTerminal(err) {
				t.Errorf("IsTerminal(%v) = false", err)
			}
			msg := redact.Message(err)
			t.Logf("safe: %s", msg)
			for _, leak := range []string{"s3cr3t", "987654", "1.5", "value.valueUnstructured", "&{"} {
				if strings.Contains(msg, leak) {
					t.Errorf("message %q leaks %q", msg, leak)
				}
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("message %q does not say %q", msg, tc.want)
			}
		})
	}
	_ = client.IgnoreNotFound(a.Client.Delete(ctx, obj(t, deployment("invalid"))))
}
