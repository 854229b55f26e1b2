/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/fieldpatch"
)

// An incident pin that ends itself: helm owns replicas-like data, a
// patch sets it for a few seconds; at expiry the patch is deleted and its
// deletionPolicy (HandBack) gives the field back to helm, within 5 s of
// status.expiresAt, with the Expiring and Expired events.
func TestExpiredPatchDeletesItselfAndHandsBack(t *testing.T) {
	ns := namespace(t, "expiry")
	cm := applyAs(t, "helm", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: %s}, data: {replicas: '3', other: helm}}", ns))
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: `+ns+`}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: cfg}
  expiresAfter: 4s
  patch: {data: {replicas: '10'}}
`)
	waitReason(t, fp, fieldpatch.ReasonApplied)
	if got := live(t, cm).Object["data"].(map[string]interface{})["replicas"]; got != "10" {
		t.Fatalf("replicas = %v while the patch holds, want 10", got)
	}
	at := fp.Status.ExpiresAt
	if at == nil || !at.Time.Equal(fp.CreationTimestamp.Add(4*time.Second)) {
		t.Fatalf("status.expiresAt = %v, want creation %v + 4s", at, fp.CreationTimestamp)
	}
	hasEvent(t, ns, "pin", fieldpatch.ReasonExpiring, "then its deletionPolicy HandBack runs")
	eventually(t, "the expired patch is gone", func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fp), &v1alpha1.FieldPatch{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	expired := event(t, ns, "pin", fieldpatch.ReasonExpired)
	if late := expired.EventTime.Sub(at.Time); late < 0 || late > 5*time.Second {
		t.Errorf("the Expired event was recorded %s after status.expiresAt, want within 5s", late)
	}
	after := live(t, cm)
	if got := after.Object["data"].(map[string]interface{})["replicas"]; got != "10" {
		t.Errorf("replicas = %v after the hand-back, want the patch's 10 (HandBack keeps values)", got)
	}
	if got, want := owners(t, after)[".data.replicas"], []string{"helm/Apply"}; !reflect.DeepEqual(got, want) {
		t.Errorf(".data.replicas owned by %v after expiry, want %v", got, want)
	}
	for _, e := range after.GetManagedFields() {
		if strings.HasPrefix(e.Manager, "fieldops-") {
			t.Errorf("entry of %s left after expiry", e.Manager)
		}
	}
}

// A patch whose expiresAt has already passed ends at once, before it
// writes anything.
func TestPatchExpiredAtCreationNeverWrites(t *testing.T) {
	ns := namespace(t, "expired")
	cm := applyAs(t, "helm", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: %s}, data: {k: helm}}", ns))
	before := live(t, cm)
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: late, namespace: `+ns+`}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: cfg}
  expiresAt: "2020-01-01T00:00:00Z"
  patch: {data: {k: patched}}
`)
	eventually(t, "the expired patch is gone", func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fp), &v1alpha1.FieldPatch{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	event(t, ns, "late", fieldpatch.ReasonExpired)
	if after := live(t, cm); after.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("the target was written (resourceVersion %s → %s): %v", before.GetResourceVersion(), after.GetResourceVersion(), after.Object["data"])
	}
}

// Admission refuses both expiry fields at once, and a duration of 0.
func TestExpiryValidatedAtAdmission(t *testing.T) {
	ns := namespace(t, "expiry-admission")
	for spec, want := range map[string]string{
		`{expiresAfter: 1h, expiresAt: "2030-01-01T00:00:00Z"}`: "expiresAfter and expiresAt are exclusive",
		`{expiresAfter: 0s}`: "expiresAfter must be more than 0",
	} {
		u := &unstructured.Unstructured{}
		y := `{apiVersion: fieldops.dev/v1alpha1, kind: FieldPatch, metadata: {generateName: x-, namespace: ` + ns + `}, spec: {target: {apiVersion: v1, kind: ConfigMap, name: cfg}, patch: {data: {k: v}}}}`
		if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
			t.Fatal(err)
		}
		var extra map[string]interface{}
		if err := yaml.Unmarshal([]byte(spec), &extra); err != nil {
			t.Fatal(err)
		}
		for k, v := range extra {
			u.Object["spec"].(map[string]interface{})[k] = v
		}
		err := k8s.Create(context.Background(), u, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("spec %s: %v, want a refusal saying %q", spec, err, want)
		}
	}
}

// event waits for the event of reason about name and returns it.
func event(t testing.TB, ns, name, reason string) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	eventually(t, fmt.Sprintf("event %s of %s", reason, name), func() (bool, string) {
		var list eventsv1.EventList
		if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason {
				found = e
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events, none %s", len(list.Items), reason)
	})
	return found
}
