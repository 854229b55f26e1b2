/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package gitops

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/pkg/ssa"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/test/health"
	"github.com/fieldops/fieldops/test/testkit"
)

// delivery is the recipe of a FieldPatch delivered with the account it
// acts as, and its target, applied as field manager "vendor" (someone
// else's Deployment).
func delivery(t *testing.T, test string) (target *unstructured.Unstructured, objs []*unstructured.Unstructured) {
	t.Helper()
	ns := kit.Namespace(t, nsName(test))
	base := app(t, "", ns)
	target = pick(t, base, "Deployment")
	cleanup(t, target)
	for _, o := range recipe(t, test, ns) {
		if o.GetKind() != "Kustomization" && o.GetKind() != "Application" {
			objs = append(objs, o)
		}
	}
	return target, objs
}

// gone waits until none of objs exists.
func gone(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		testkit.Eventually(t, fmt.Sprintf("%s %s gone", o.GetKind(), o.GetName()), func() (bool, string) {
			l := &unstructured.Unstructured{}
			l.SetGroupVersionKind(o.GroupVersionKind())
			err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), l)
			return apierrors.IsNotFound(err), fmt.Sprintf("%v, finalizers %v", err, l.GetFinalizers())
		})
	}
}

// handedBack checks that replicas is vendor's again, with the patch's
// value.
func handedBack(t *testing.T, target *unstructured.Unstructured) {
	t.Helper()
	if got := owners(t, target, ".spec.replicas"); !slices.Equal(got, []string{"vendor/Apply"}) || replicas(t, target) != 5 {
		t.Errorf("after the prune: replicas %d owned by %v, want 5, vendor's", replicas(t, target), got)
	}
}

// Recipe: one Kustomization delivers the FieldPatch with its account
// (ServiceAccount, Role, RoleBinding), before the target exists. Flux
// applies them in its kind order (the account first, custom resources
// after); the patch waits (TargetNotFound: kstatus InProgress) and goes
// Ready when the target comes, with no dependsOn; Flux's health check
// (kstatus) passes then. Prune (DeleteAll, in the reverse order: the
// patch first) ends clean: the account stays until the patch has handed
// replicas back.
func TestFluxDelivery(t *testing.T) {
	target, objs := delivery(t, "TestFluxDelivery")
	ks := newKustomization(t, "web-patches", nil)
	for key, action := range ks.apply(t, objs...) {
		if action != ssa.CreatedAction {
			t.Errorf("Flux's apply: %s %s, want %s", key, action, ssa.CreatedAction)
		}
	}
	fp := pick(t, objs, "FieldPatch")
	testkit.Eventually(t, "the patch waits for its target, InProgress to kstatus", func() (bool, string) {
		res, err := status.Compute(kit.Live(t, fp))
		if err != nil {
			return false, err.Error()
		}
		return res.Status == status.InProgressStatus && len(kit.Live(t, fp).GetFinalizers()) > 0, fmt.Sprint(res.Status, res.Message)
	})
	kit.ApplyAs(t, "vendor", mustJSON(t, target))
	if err := ks.healthy(objs, time.Minute); err != nil {
		t.Fatalf("Flux's health check: %v", err)
	}
	if got := owners(t, target, ".spec.replicas"); !slices.Equal(got, []string{"fieldops-fieldpatch/" + fp.GetNamespace() + "/" + fp.GetName() + "/Apply"}) {
		t.Errorf("replicas owned by %v, want the patch", got)
	}
	ks.prune(t, objs...)
	gone(t, objs)
	handedBack(t, target)
}

// Recipe: an Argo CD Application delivers the FieldPatch with its
// account in one sync wave. gitops-engine applies one kind after the
// other in its kind order (ServiceAccount, Role, RoleBinding, then
// custom resources), so the account exists before the patch; the health
// script of config/argocd reports the patch Healthy once it is Ready.
// Deleting the Application deletes every object at once (foreground
// propagation, Argo CD's default): the account's objects stay until the
// patch has handed replicas back, then go.
func TestArgoDelivery(t *testing.T) {
	target, objs := delivery(t, "TestArgoDelivery")
	kit.ApplyAs(t, "vendor", mustJSON(t, target))
	app := newApplication(t, nil)
	app.sync(t, objs...)
	root, err := localcp.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	script, err := health.Script(root, "FieldPatch")
	if err != nil {
		t.Fatal(err)
	}
	fp := pick(t, objs, "FieldPatch")
	testkit.Eventually(t, "Argo CD health Healthy", func() (bool, string) {
		h, err := health.Run(script, kit.Live(t, fp).Object)
		if err != nil {
			return false, err.Error()
		}
		return h.Status == "Healthy", h.Status + ": " + h.Message
	})
	for _, o := range objs {
		if err := k8s.Delete(context.Background(), o, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
			t.Fatal(err)
		}
	}
	gone(t, objs)
	handedBack(t, target)
}

// mustJSON is u as JSON, for testkit.Kit.ApplyAs.
func mustJSON(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
