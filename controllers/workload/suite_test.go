/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/workload"
	"github.com/fieldops/fieldops/feature"
	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/test/testkit"
)

var (
	k8s      client.Client // the test's own client (other field managers)
	cfg      *rest.Config  // the control plane's admin config
	kit      testkit.Kit
	requests = &testkit.WriteCounter{}
	// webhookCalls counts the Kyverno-like webhook's admissions.
	webhookCalls atomic.Int64
)

// The Kyverno-like mutating webhook of Strimzi issue #6938: on every
// create and update of a Deployment or Service in a namespace labelled
// kyverno-test=true it adds this annotation and label.
const (
	kyvernoAnnotation = "policies.kyverno.io/last-applied-patches"
	kyvernoPatches    = "add-team-label.add-labels.kyverno.io: added /metadata/labels/team\n"
	kyvernoLabel      = "team"
	kyvernoPath       = "/mutate-kyverno"
)

func kyvernoWebhook() *admissionv1.MutatingWebhookConfiguration {
	fail, none, path := admissionv1.Fail, admissionv1.SideEffectClassNone, kyvernoPath
	return &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kyverno-like"},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name:                    "mutate.kyverno.example.com",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			ClientConfig:            admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{Name: "kyverno", Namespace: "kyverno", Path: &path}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kyverno-test": "true"}},
			Rules: []admissionv1.RuleWithOperations{{
				Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
				Rule:       admissionv1.Rule{APIGroups: []string{"", "apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments", "services"}},
			}},
		}},
	}
}

// mutate adds the Kyverno annotation and label, as Kyverno does.
func mutate(_ context.Context, req admission.Request) admission.Response {
	webhookCalls.Add(1)
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(req.Object.Raw); err != nil {
		return admission.Errored(400, err)
	}
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[kyvernoAnnotation] = kyvernoPatches
	u.SetAnnotations(a)
	l := u.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[kyvernoLabel] = "platform"
	u.SetLabels(l)
	out, err := json.Marshal(u.Object)
	if err != nil {
		return admission.Errored(500, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, out)
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	return testkit.RunSuite(m, testkit.SuiteOptions{
		ControlPlane: localcp.Options{
			ExtraCRDPaths: []string{"test/testdata/crds"},
			Webhooks:      envtest.WebhookInstallOptions{MutatingWebhooks: []*admissionv1.MutatingWebhookConfiguration{kyvernoWebhook()}},
		},
		Webhooks: map[string]admission.Handler{kyvernoPath: admission.HandlerFunc(mutate)},
		Writes:   requests,
		Plugins:  []string{"ignore-policy-annotations"},
	}, func(s *testkit.Suite) { k8s, kit, cfg = s.Client, s.Kit, s.Config })
}

// setSSA sets the ServerSideApply gate for the rest of the test.
func setSSA(t testing.TB, on bool) {
	t.Helper()
	if err := feature.Gates.SetFromMap(map[string]bool{string(feature.ServerSideApply): on}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = feature.Gates.SetFromMap(map[string]bool{string(feature.ServerSideApply): true}) })
}

// update changes mw's spec with fn, retrying on conflicts.
func update(t testing.TB, mw *v1alpha1.ManagedWorkload, fn func(*v1alpha1.ManagedWorkload)) {
	t.Helper()
	testkit.Eventually(t, "update of "+mw.Name, func() (bool, string) {
		kit.Get(t, mw)
		fn(mw)
		err := k8s.Update(context.Background(), mw)
		return err == nil, fmt.Sprint(err)
	})
}

// resources turns YAML documents into spec.resources.
func resources(t testing.TB, docs ...string) []runtime.RawExtension {
	t.Helper()
	out := make([]runtime.RawExtension, len(docs))
	for i, d := range docs {
		b, err := yaml.YAMLToJSON([]byte(d))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = runtime.RawExtension{Raw: b}
	}
	return out
}

// waitReady waits until mw is reconciled at its generation with the Ready
// reason, and returns it.
func waitReason(t testing.TB, mw *v1alpha1.ManagedWorkload, reason string) *v1alpha1.ManagedWorkload {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("%s reason %s", mw.Name, reason), func() (bool, string) {
		kit.Get(t, mw)
		c := meta.FindStatusCondition(mw.Status.Conditions, "Ready")
		if c == nil {
			return false, "no Ready condition"
		}
		// The condition is stamped with the generation every reconcile
		// judged; status.observedGeneration moves only on success or a spec
		// error (an object that failed, a wait leave it behind).
		return c.Reason == reason && c.ObservedGeneration == mw.Generation && (mw.Status.ObservedGeneration == mw.Generation || !success(c)),
			fmt.Sprintf("gen %d/%d/%d Ready=%s %s: %s", c.ObservedGeneration, mw.Status.ObservedGeneration, mw.Generation, c.Status, c.Reason, c.Message)
	})
	return mw
}

// reconciled nudges mw (an annotation) and waits until a reconcile that
// saw the nudge has finished: the signal a check that nothing was written
// waits for.
func reconciled(t testing.TB, mw *v1alpha1.ManagedWorkload) testkit.ReconcileStats {
	t.Helper()
	return kit.Reconciled(t, "managedworkload", mw)
}

// entry returns the inventory entry of index i.
func entry(t testing.TB, mw *v1alpha1.ManagedWorkload, i int) v1alpha1.InventoryEntry {
	t.Helper()
	for _, e := range mw.Status.Inventory {
		if e.Index == i {
			return e
		}
	}
	t.Fatalf("no inventory entry %d in %+v", i, mw.Status.Inventory)
	return v1alpha1.InventoryEntry{}
}

// success reports whether the reconcile that set c succeeded (every
// object applied): only then does status.observedGeneration move.
func success(c *metav1.Condition) bool {
	switch c.Reason {
	case workload.ReasonObjectsFailed, workload.ReasonContested, workload.ReasonInvalidIgnorePath,
		workload.ReasonPluginUnavailable, workload.ReasonInvalidObject:
		return false
	}
	return true
}
