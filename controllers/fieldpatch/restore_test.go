/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/fieldpatch"
	"github.com/fieldops/fieldops/internal/patchintent"
)

// The incident pin that undoes itself: helm owns replicas 3; a Restore
// patch pins 10 and expires: replicas are 3 again, owned by helm as
// before, with no fieldops entry; the previous values' Secret goes with
// the patch.
func TestRestoreIncidentPin(t *testing.T) {
	ns := namespace(t, "restore-pin")
	cm := applyAs(t, "helm", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: shop, namespace: %s}, data: {replicas: '3', image: v1}}", ns))
	before := live(t, cm)
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: `+ns+`}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: shop}
  deletionPolicy: Restore
  expiresAfter: 3s
  patch: {data: {replicas: '10', added: 'yes'}}
`)
	waitReason(t, fp, fieldpatch.ReasonApplied)
	secret := &corev1.Secret{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "fieldops-previous-" + string(fp.UID)}, secret); err != nil {
		t.Fatalf("the previous values' Secret: %v", err)
	}
	if got := secret.OwnerReferences; len(got) != 1 || got[0].UID != fp.UID {
		t.Errorf("the Secret's owners %v, want the patch", got)
	}
	eventually(t, "the expired patch is gone", func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fp), &v1alpha1.FieldPatch{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	event(t, ns, "pin", fieldpatch.ReasonRestored)
	after := live(t, cm)
	if got, want := after.Object["data"], before.Object["data"]; !reflect.DeepEqual(got, want) {
		t.Errorf("data after Restore %v, want %v as before the patch", got, want)
	}
	if got, want := owners(t, after), owners(t, before); !reflect.DeepEqual(got, want) {
		t.Errorf("owners after Restore %v, want %v as before the patch", got, want)
	}
}

// A log level turned to debug, and a field someone changed since (a
// manager the patch yields to, so the patch does not repair it): the log
// level is restored with its owner; the field kubectl edit set since
// keeps its value and owner, and a ChangedSince event names it.
func TestRestoreLeavesWhatWasChangedSince(t *testing.T) {
	ns := namespace(t, "restore-since")
	cm := applyAs(t, "helm", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: app, namespace: %s}, data: {LOG_LEVEL: info, replicas: '3', other: helm}}", ns))
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: debug, namespace: `+ns+`}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: app}
  deletionPolicy: Restore
  yieldTo: [{manager: kubectl-edit}]
  patch: {data: {LOG_LEVEL: debug, replicas: '10'}}
`)
	waitReason(t, fp, fieldpatch.ReasonApplied)
	edited := live(t, cm)
	edited.Object["data"].(map[string]interface{})["replicas"] = "7"
	edited.Object["data"].(map[string]interface{})["other"] = "ops"
	edited.SetManagedFields(nil)
	if err := k8s.Update(context.Background(), edited, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	deleteAndWait(t, fp)
	after := live(t, cm)
	want := map[string]interface{}{"LOG_LEVEL": "info", "replicas": "7", "other": "ops"}
	if got := after.Object["data"]; !reflect.DeepEqual(got, want) {
		t.Errorf("data after Restore %v, want %v", got, want)
	}
	got := owners(t, after)
	for path, want := range map[string][]string{".data.LOG_LEVEL": {"helm/Apply"}, ".data.replicas": {"kubectl-edit/Update"}, ".data.other": {"kubectl-edit/Update"}} {
		if !reflect.DeepEqual(got[path], want) {
			t.Errorf("%s owned by %v, want %v", path, got[path], want)
		}
	}
	hasEvent(t, ns, "debug", fieldpatch.ReasonChangedSince, `.data.replicas ("kubectl-edit")`)
}

// A Secret target: its previous value is kept in the patch's own Secret,
// never in the FieldPatch's status or events, nor in a line the manager
// logs; a viewer of FieldPatches who may not read Secrets reads the patch
// but not its previous values.
func TestRestoreKeepsSecretValuesOutOfStatus(t *testing.T) {
	ns := namespace(t, "restore-secret")
	const old = "cHJldmlvdXMtcGFzc3dvcmQ=" // "previous-password"
	// The new value is the patch's own (its spec holds it); the previous
	// one is the target's.
	for _, s := range []string{old, "previous-password"} {
		kit.Reconciles.WatchLog(s)
	}
	applyAs(t, "helm", fmt.Sprintf("{apiVersion: v1, kind: Secret, metadata: {name: creds, namespace: %s}, data: {password: %s}}", ns, old))
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: rotate, namespace: `+ns+`}
spec:
  target: {apiVersion: v1, kind: Secret, name: creds}
  deletionPolicy: Restore
  patch: {data: {password: bmV3LXBhc3N3b3Jk}}
`)
	waitReason(t, fp, fieldpatch.ReasonApplied)
	get(t, fp)
	raw, err := json.Marshal(fp)
	if err != nil {
		t.Fatal(err)
	}
	var list eventsv1.EventList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	notes, err := json.Marshal(list.Items)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{old, "previous-password"} {
		if strings.Contains(string(raw), leak) || strings.Contains(string(notes), leak) {
			t.Errorf("the previous value %q is in the FieldPatch or its events", leak)
		}
	}
	viewerCannotReadPreviousValues(t, fp)
	deleteAndWait(t, fp)
	for _, s := range []string{old, "previous-password"} {
		if n := kit.Reconciles.LogLines(s); n > 0 {
			t.Errorf("%d lines of the manager's log hold %q, a value of the Secret", n, s)
		}
	}
	creds := &corev1.Secret{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "creds"}, creds); err != nil {
		t.Fatal(err)
	}
	if got := string(creds.Data["password"]); got != "previous-password" {
		t.Errorf("password after Restore %q, want the previous one", got)
	}
}

// viewerCannotReadPreviousValues checks, as a user bound in fp's namespace
// to the fieldops-fieldpatch-viewer ClusterRole (real RBAC, impersonated),
// that fp is readable and its previous values' Secret is not.
func viewerCannotReadPreviousValues(t *testing.T, fp *v1alpha1.FieldPatch) {
	t.Helper()
	ctx := context.Background()
	// The ClusterRole as config/rbac installs it.
	b, err := os.ReadFile("../../config/rbac/tenant_roles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, doc := range strings.Split(string(b), "\n---\n") {
		role := &rbacv1.ClusterRole{}
		if err := yaml.Unmarshal([]byte(doc), role); err != nil {
			t.Fatal(err)
		}
		if role.Name != "fieldops-fieldpatch-viewer" {
			continue
		}
		found = true
		if err := k8s.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	if !found {
		t.Fatal("config/rbac/tenant_roles.yaml has no ClusterRole fieldops-fieldpatch-viewer")
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "viewer", Namespace: fp.Namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "fieldops-fieldpatch-viewer"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "viewer"}},
	}
	if err := k8s.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "viewer"}
	viewer, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the viewer reads the FieldPatch", func() (bool, string) {
		err := viewer.Get(ctx, client.ObjectKeyFromObject(fp), &v1alpha1.FieldPatch{})
		return err == nil, fmt.Sprint(err)
	})
	name := patchintent.PreviousValuesName(fp.UID)
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: fp.Namespace, Name: name}, &corev1.Secret{}); err != nil {
		t.Fatalf("the previous values' Secret %s: %v", name, err)
	}
	if err := viewer.Get(ctx, client.ObjectKey{Namespace: fp.Namespace, Name: name}, &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Errorf("the viewer reads the previous values' Secret %s: %v, want Forbidden", name, err)
	}
}
