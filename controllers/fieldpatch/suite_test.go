/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/test/testkit"
)

var (
	k8s        client.Client // the test's own client (other field managers)
	restConfig *rest.Config
	requests   = &testkit.WriteCounter{}
	kit        testkit.Kit
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// contestBase is the suite's unit of the contest backoff: a tenth of
// ownershipcore.ContestBase, so the tests of contests take seconds.
const contestBase = ownershipcore.ContestBase / 10

func run(m *testing.M) int {
	return testkit.RunSuite(m, testkit.SuiteOptions{Writes: requests, Plugins: []string{"yield-to-autoscalers", "misbehave"}, ContestBase: contestBase}, func(s *testkit.Suite) {
		restConfig, k8s, kit = s.Config, s.Client, s.Kit
	})
}

func obj(t testing.TB, y string) *unstructured.Unstructured { t.Helper(); return testkit.Obj(t, y) }

func applyAs(t testing.TB, manager, y string) *unstructured.Unstructured {
	t.Helper()
	return kit.ApplyAs(t, manager, y)
}

func namespace(t testing.TB, name string) string { t.Helper(); return kit.Namespace(t, name) }

func fieldPatch(t testing.TB, y string) *v1alpha1.FieldPatch {
	t.Helper()
	fp := &v1alpha1.FieldPatch{}
	if err := yaml.UnmarshalStrict([]byte(y), fp); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(context.Background(), fp); err != nil {
		t.Fatal(err)
	}
	return fp
}

func get(t testing.TB, o client.Object) { t.Helper(); kit.Get(t, o) }

func live(t testing.TB, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	return kit.Live(t, u)
}

// eventually polls cond every 100 ms for up to 20 s.
func eventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	testkit.Eventually(t, what, cond)
}

// waitReady waits until the patch's Ready condition has the reason.
func waitReason(t testing.TB, fp client.Object, reason string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s reason %s", fp.GetName(), reason), func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fp), fp); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(fp.(v1alpha1.Patcher).PatchStatus().Conditions, "Ready")
		if c == nil {
			return false, "no Ready condition"
		}
		return c.Reason == reason, fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
	})
}

func readyCondition(p v1alpha1.Patcher) metav1.Condition {
	if c := meta.FindStatusCondition(p.PatchStatus().Conditions, "Ready"); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// hasEvent waits for an event about name with the reason whose note
// contains substr.
func hasEvent(t testing.TB, ns, name, reason, substr string) {
	t.Helper()
	kit.HasEvent(t, ns, name, reason, substr)
}

// owners returns path → managers ("name/Operation") of an object.
func owners(t testing.TB, u *unstructured.Unstructured) map[string][]string {
	t.Helper()
	mf, err := ownershipcore.Owners(u)
	if err != nil {
		t.Fatal(err)
	}
	return mf.ByPath()
}

func deleteAndWait(t testing.TB, o client.Object) { t.Helper(); kit.DeleteAndWait(t, o) }

// reconciled nudges fp (an annotation) and waits until a reconcile that
// saw the nudge has finished: the signal a check that nothing was written
// waits for.
func reconciled(t testing.TB, fp client.Object) testkit.ReconcileStats {
	t.Helper()
	name := "fieldpatch"
	if fp.GetNamespace() == "" {
		name = "clusterfieldpatch"
	}
	return kit.Reconciled(t, name, fp)
}
