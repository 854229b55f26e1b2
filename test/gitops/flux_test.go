/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package gitops

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/jsondiff"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Flux's names, as kustomize-controller has them (api/v1, the
// controller's --controller-name default).
const (
	fluxManager = "kustomize-controller"
	fluxGroup   = "kustomize.toolkit.fluxcd.io"
)

// kustomization applies, checks and prunes a Kustomization's objects as
// kustomize-controller's reconciler does (internal/controller/
// kustomization_controller.go of fluxcd/kustomize-controller: apply,
// checkHealth, prune): an ssa.ResourceManager of field manager
// kustomize-controller, the Kustomization's owner labels set on every
// object, ApplyAllStaged with the options it builds (force off, the
// kustomize.toolkit.fluxcd.io/ssa and /reconcile annotations as
// selectors, .spec.ignore as DriftIgnoreRules, the cleanup of kubectl's
// managers), WaitForSet for health (kstatus) and DeleteAll with its
// exclusions for prune.
type kustomization struct {
	name   string
	ignore []jsondiff.IgnoreRule
	rm     *ssa.ResourceManager
}

// newKustomization is the Kustomization named name with the spec.ignore
// rules of ks (a Kustomization object of a recipe; nil: none).
func newKustomization(t *testing.T, name string, ks *unstructured.Unstructured) *kustomization {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	poller := polling.NewStatusPoller(c, c.RESTMapper(), polling.Options{})
	k := &kustomization{name: name, rm: ssa.NewResourceManager(c, poller, ssa.Owner{Field: fluxManager, Group: fluxGroup})}
	if ks != nil {
		k.ignore = ignoreRules(t, ks)
	}
	return k
}

// ignoreRules turns a Kustomization's spec.ignore into the library's
// rules, field by field as kustomize-controller does.
func ignoreRules(t *testing.T, ks *unstructured.Unstructured) []jsondiff.IgnoreRule {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(ks.Object, "spec", "ignore")
	if len(rules) == 0 {
		t.Fatalf("Kustomization %s has no spec.ignore", ks.GetName())
	}
	var out []jsondiff.IgnoreRule
	for _, r := range rules {
		m := r.(map[string]any)
		paths, _, _ := unstructured.NestedStringSlice(m, "paths")
		rule := jsondiff.IgnoreRule{Paths: paths}
		if target, ok := m["target"].(map[string]any); ok {
			s := func(k string) string { v, _ := target[k].(string); return v }
			rule.Selector = &jsondiff.Selector{Group: s("group"), Version: s("version"), Kind: s("kind"), Name: s("name"),
				Namespace: s("namespace"), AnnotationSelector: s("annotationSelector"), LabelSelector: s("labelSelector")}
		}
		out = append(out, rule)
	}
	return out
}

// options are the ApplyOptions kustomize-controller builds for a
// Kustomization without spec.force.
func (k *kustomization) options() ssa.ApplyOptions {
	opts := ssa.DefaultApplyOptions()
	opts.ExclusionSelector = map[string]string{fluxGroup + "/reconcile": "disabled", fluxGroup + "/ssa": "Ignore"}
	opts.IfNotPresentSelector = map[string]string{fluxGroup + "/ssa": "IfNotPresent"}
	opts.ForceSelector = map[string]string{fluxGroup + "/force": "enabled"}
	opts.DriftIgnoreRules = k.ignore
	var managers []ssa.FieldManager
	for _, m := range []struct {
		name string
		op   metav1.ManagedFieldsOperationType
	}{{"kubectl", metav1.ManagedFieldsOperationApply}, {"kubectl", metav1.ManagedFieldsOperationUpdate},
		{"before-first-apply", metav1.ManagedFieldsOperationUpdate}, {fluxManager, metav1.ManagedFieldsOperationUpdate}} {
		managers = append(managers, ssa.FieldManager{Name: m.name, OperationType: m.op})
	}
	opts.Cleanup = ssa.ApplyCleanupOptions{
		Annotations:   []string{"kubectl.kubernetes.io/last-applied-configuration", fluxGroup + "/checksum", "fluxcd.io/sync-checksum"},
		Labels:        []string{"fluxcd.io/sync-gc-mark"},
		FieldManagers: managers,
		Exclusions:    map[string]string{fluxGroup + "/ssa": "Merge"},
	}
	return opts
}

// apply is one reconcile's apply of objects (copies: the manifests stay
// as the test holds them); it returns the action per object kind/name.
func (k *kustomization) apply(t *testing.T, objects ...*unstructured.Unstructured) map[string]ssa.Action {
	t.Helper()
	objs := make([]*unstructured.Unstructured, len(objects))
	for i, o := range objects {
		objs[i] = o.DeepCopy()
	}
	k.rm.SetOwnerLabels(objs, k.name, "flux-system")
	cs, err := k.rm.ApplyAllStaged(context.Background(), objs, k.options())
	if err != nil {
		t.Fatalf("kustomize-controller apply: %v", err)
	}
	out := map[string]ssa.Action{}
	for _, e := range cs.Entries {
		out[e.ObjMetadata.GroupKind.Kind+"/"+e.ObjMetadata.Name] = e.Action
	}
	return out
}

// create is the first apply of deploy, which creates it.
func (k *kustomization) create(t *testing.T, deploy *unstructured.Unstructured) {
	t.Helper()
	if got := k.apply(t, deploy)["Deployment/"+deploy.GetName()]; got != ssa.CreatedAction {
		t.Fatalf("Flux's first apply: %s, want %s", got, ssa.CreatedAction)
	}
}

// healthy is the Kustomization's health check (wait: true): every object
// Current by kstatus within timeout.
func (k *kustomization) healthy(objects []*unstructured.Unstructured, timeout time.Duration) error {
	return k.rm.WaitForSetWithContext(context.Background(), setOf(objects), ssa.WaitOptions{Interval: time.Second, Timeout: timeout})
}

// prune deletes objects as kustomize-controller's prune does (its owner
// labels required; the prune, reconcile and ssa annotations exclude) and
// waits until they are gone (deletionPolicy WaitForTermination).
func (k *kustomization) prune(t *testing.T, objects ...*unstructured.Unstructured) {
	t.Helper()
	cs, err := k.rm.DeleteAll(context.Background(), objects, ssa.DeleteOptions{
		PropagationPolicy: metav1.DeletePropagationBackground,
		Inclusions:        k.rm.GetOwnerLabels(k.name, "flux-system"),
		Exclusions: map[string]string{fluxGroup + "/prune": "disabled", fluxGroup + "/reconcile": "disabled",
			fluxGroup + "/ssa": "Ignore"},
	})
	if err != nil {
		t.Fatalf("kustomize-controller prune: %v", err)
	}
	if err := k.rm.WaitForSetTermination(cs, ssa.WaitOptions{Interval: time.Second, Timeout: time.Minute}); err != nil {
		t.Fatalf("kustomize-controller prune, waiting for termination: %v", err)
	}
}

// Without a recipe, kustomize-controller and the FieldPatch take the
// field from each other: Flux's drift detection (a server-side dry run
// with force) sees the patched replicas as drift and applies Git's value
// with force, taking the field; fieldops sees its field taken and applies
// its value again, taking it back. One reconcile of Flux costs two writes
// of the Deployment (one each) and, for a field of the pod template, two
// rollouts.
func TestFluxWithoutRecipe(t *testing.T) {
	deploy, patch, _ := testApp(t, "")
	ks := newKustomization(t, "web", nil)
	ks.create(t, deploy)
	fp := createPatch(t, patch)
	for round := 1; round <= 2; round++ {
		fight(t, fp, deploy, func() {
			if got := ks.apply(t, deploy)["Deployment/web"]; got != ssa.ConfiguredAction {
				t.Fatalf("round %d: Flux's apply over the patch: %s, want %s (drift)", round, got, ssa.ConfiguredAction)
			}
		})
	}
}

// Recipe: the kustomize.toolkit.fluxcd.io/ssa: IfNotPresent annotation in
// Git. kustomize-controller creates the object when it is missing and
// never applies it again: no conflict, no write of Flux's, nothing for
// fieldops to repair. The cost: no change of the object in Git reaches
// the cluster either (a new image is skipped too). After the patch is
// deleted, replicas is kustomize-controller's again, with the patch's
// value, and stays so while the annotation does.
func TestFluxIfNotPresent(t *testing.T) {
	deploy, patch, _ := testApp(t, "TestFluxIfNotPresent")
	ks := newKustomization(t, "web", nil)
	ks.create(t, deploy)
	fp := createPatch(t, patch)
	gen := kit.Live(t, deploy).GetGeneration()
	setImage(t, deploy, "nginx:1.28")
	if got := ks.apply(t, deploy)["Deployment/web"]; got != ssa.SkippedAction {
		t.Fatalf("Flux's apply of a new image: %s, want %s", got, ssa.SkippedAction)
	}
	if kit.Live(t, deploy).GetGeneration() != gen || image(t, deploy) != "nginx:1.27" {
		t.Errorf("Flux wrote the Deployment (image %s); IfNotPresent skips it", image(t, deploy))
	}
	quiet(t, fp, deploy)
	deletePatch(t, fp)
	if got, want := owners(t, deploy, ".spec.replicas"), []string{fluxManager + "/Apply"}; !slices.Equal(got, want) || replicas(t, deploy) != 5 {
		t.Errorf("after the deletion: replicas %d owned by %v, want 5 owned by %v", replicas(t, deploy), got, want)
	}
	if got := ks.apply(t, deploy)["Deployment/web"]; got != ssa.SkippedAction {
		t.Errorf("Flux's apply after the deletion: %s, want %s", got, ssa.SkippedAction)
	}
}

// The FieldPatch of the recipe sets kustomize.toolkit.fluxcd.io/ssa:
// Ignore on the live object, beside replicas: kustomize-controller skips
// an object whose live metadata carries it (its ExclusionSelector reads
// the live object too), and its prune leaves it. Nothing changes in Git.
// The patch added the annotation, so its deletion removes it, and the
// next reconcile of Flux applies Git again: replicas goes back to 2.
func TestFluxIgnoreAnnotationByPatch(t *testing.T) {
	deploy, patch, _ := testApp(t, "TestFluxIgnoreAnnotationByPatch")
	ks := newKustomization(t, "web", nil)
	ks.apply(t, deploy)
	fp := createPatch(t, patch)
	setImage(t, deploy, "nginx:1.28")
	if got := ks.apply(t, deploy)["Deployment/web"]; got != ssa.SkippedAction {
		t.Fatalf("Flux's apply while the patch sets ssa: Ignore: %s, want %s", got, ssa.SkippedAction)
	}
	quiet(t, fp, deploy)
	ks.prune(t, deploy)
	if !kit.Exists(t, deploy) {
		t.Fatal("Flux's prune deleted the Deployment the patch marked ssa: Ignore")
	}
	deletePatch(t, fp)
	if got := ks.apply(t, deploy)["Deployment/web"]; got != ssa.ConfiguredAction {
		t.Fatalf("Flux's apply after the deletion: %s, want %s", got, ssa.ConfiguredAction)
	}
	if replicas(t, deploy) != 2 || image(t, deploy) != "nginx:1.28" {
		t.Errorf("after the deletion, Flux applied replicas %d image %s, want Git's 2 and nginx:1.28", replicas(t, deploy), image(t, deploy))
	}
}

// Recipe: spec.ignore of the Kustomization names /spec/replicas. Flux
// leaves the path out of its drift check, and when something else drifted
// (a new image) it strips the path from what it applies, since another
// Apply manager (the patch) owns it: the image is applied, replicas stays
// the patch's, fieldops writes nothing. The cost: after the patch is
// deleted, replicas goes back to kustomize-controller (the previous
// owner) with the patch's value, and Git's value does not come back while
// the rule stands: kustomize-controller, sole owner, keeps the live value
// of an ignored path.
func TestFluxIgnore(t *testing.T) {
	deploy, patch, objs := testApp(t, "TestFluxIgnore")
	ks := newKustomization(t, "web", pick(t, objs, "Kustomization"))
	ks.apply(t, deploy)
	fp := createPatch(t, patch)
	if got := ks.apply(t, deploy)["Deployment/web"]; got != ssa.UnchangedAction {
		t.Errorf("Flux's apply of the same revision: %s, want %s", got, ssa.UnchangedAction)
	}
	setImage(t, deploy, "nginx:1.28")
	if got := ks.apply(t, deploy)["Deployment/web"]; got != ssa.ConfiguredAction {
		t.Fatalf("Flux's apply of a new image: %s, want %s", got, ssa.ConfiguredAction)
	}
	if image(t, deploy) != "nginx:1.28" || replicas(t, deploy) != 5 {
		t.Errorf("after Flux's apply: image %s replicas %d, want nginx:1.28 and the patch's 5", image(t, deploy), replicas(t, deploy))
	}
	if got := owners(t, deploy, ".spec.replicas"); !slices.Equal(got, []string{manager(fp) + "/Apply"}) {
		t.Errorf("replicas owned by %v, want the patch alone", got)
	}
	quiet(t, fp, deploy)
	deletePatch(t, fp)
	if got := owners(t, deploy, ".spec.replicas"); !slices.Equal(got, []string{fluxManager + "/Apply"}) {
		t.Errorf("after the deletion replicas is owned by %v, want %s", got, fluxManager)
	}
	setImage(t, deploy, "nginx:1.29")
	ks.apply(t, deploy)
	if replicas(t, deploy) != 5 {
		t.Errorf("with the rule, after the deletion: replicas %d, want the live 5 kept", replicas(t, deploy))
	}
	ks.ignore = nil
	if got := ks.apply(t, deploy)["Deployment/web"]; got != ssa.ConfiguredAction || replicas(t, deploy) != 2 {
		t.Errorf("without the rule: %s, replicas %d, want Git's 2 applied", got, replicas(t, deploy))
	}
}

// Recipe: yieldTo: kustomize-controller on the patch. The patch leaves
// every field Flux applies to Flux, and holds the rest: replicas (in Git)
// is yielded, the proxy variable (not in Git) is the patch's. Flux sees
// no drift; fieldops has nothing to repair. When Git comes to set the
// variable, Flux takes it (with force) and fieldops lets it: no repair,
// no contest. The cost: the patch can only add what Git does not set.
func TestFluxYieldTo(t *testing.T) {
	deploy, patch, _ := testApp(t, "TestFluxYieldTo")
	ks := newKustomization(t, "web", nil)
	ks.apply(t, deploy)
	fp := createPatch(t, patch)
	yielded(t, fp, deploy)
	if got := ks.apply(t, deploy)["Deployment/web"]; got != ssa.UnchangedAction {
		t.Errorf("Flux's apply over the patch: %s, want %s", got, ssa.UnchangedAction)
	}
	quiet(t, fp, deploy)
	gitTakesProxy(t, fp, deploy, func() {
		if got := ks.apply(t, deploy)["Deployment/web"]; got != ssa.ConfiguredAction {
			t.Errorf("Flux's apply of Git's proxy: %s, want %s", got, ssa.ConfiguredAction)
		}
	})
}
