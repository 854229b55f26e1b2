/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/internal/accountwebhook"
	"github.com/fieldops/fieldops/internal/localcp"
)

// freeAddr is a local address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// The manager run with --account-webhook, --webhook-port and
// --webhook-cert-dir serves the account webhook with that certificate,
// reports ready once it serves, and the apiserver's calls reach it: a
// FieldPatch naming an account its author may not impersonate is refused
// by the webhook.
func TestAccountWebhookServes(t *testing.T) {
	cp, err := localcp.Start(localcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cp.Stop() }()
	// A serving certificate for 127.0.0.1 and its CA (envtest's, as OLM
	// would provision one), and a free port.
	certs := envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	if err := certs.PrepWithoutInstalling(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = certs.Cleanup() }()
	probe := freeAddr(t)
	var f Flags
	if _, err := Parse(f.NewFlagSet("manager", false), []string{
		"--account-webhook", "--webhook-port=" + strconv.Itoa(certs.LocalServingPort), "--webhook-cert-dir=" + certs.LocalServingCertDir,
		"--metrics-bind-address=0", "--health-probe-bind-address=" + probe,
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx, func() (*rest.Config, error) { return cp.Config, nil }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the manager: %v", err)
		}
	}()

	hc := &http.Client{Timeout: 5 * time.Second}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := hc.Get("http://" + probe + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the manager is not ready: %v", err)
		}
		select {
		case err := <-done:
			done <- err // for the deferred stop
			t.Fatalf("the manager stopped: %v", err)
		default:
		}
	}

	k8s, err := client.New(cp.Config, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://127.0.0.1:%d%s", certs.LocalServingPort, accountwebhook.Path)
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	for _, o := range []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "account"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "vaccount.fieldops.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: certs.LocalServingCAData},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"fieldops.dev"}, APIVersions: []string{"*"}, Resources: []string{"fieldpatches"}},
			}},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "fieldpatch-writer"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"fieldops.dev"}, Resources: []string{"fieldpatches"}, Verbs: []string{"create"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "fieldpatch-writer"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "fieldpatch-writer"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "writer"}}},
	} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	wcfg := rest.CopyConfig(cp.Config)
	wcfg.Impersonate = rest.ImpersonationConfig{UserName: "writer", Groups: []string{"system:authenticated"}}
	writer, err := client.New(wcfg, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	fp := &v1alpha1.FieldPatch{}
	if err := yaml.UnmarshalStrict([]byte(`{apiVersion: fieldops.dev/v1alpha1, kind: FieldPatch, metadata: {name: as-ops, namespace: default},
	  spec: {serviceAccountName: ops, target: {apiVersion: v1, kind: ConfigMap, name: c}, patch: {data: {a: "1"}}}}`), fp); err != nil {
		t.Fatal(err)
	}
	want := `admission webhook "vaccount.fieldops.dev" denied the request: ` + accountwebhook.DeniedMessage("FieldPatch", accountwebhook.Account{Namespace: "default", Name: "ops"})
	var last error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if last = writer.Create(ctx, fp.DeepCopy(), client.DryRunAll); last != nil && strings.Contains(last.Error(), want) {
			return
		}
	}
	t.Errorf("writer's FieldPatch naming ops: %v, want %q", last, want)
}
