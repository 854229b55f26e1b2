/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package deploy

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/cmd/manager/app"
)

// A sharded install (config/default, the component
// config/components/sharding and two shards from config/shard, as
// docs/operators-guide.md#scaling shows) has three manager Deployments:
// the main instance on '!sharding.fieldops.dev/key' and the Lease
// fieldops.dev, and shards a and b, each on its own selector and Lease.
// Each shard's pod is admitted in fieldops-system (restricted Pod Security,
// the label its selector is read from), and a component over the install
// (config/manager-rights, config/plugins) gives every shard the main
// instance's tenancy flags and plugins.
func TestShardDeployments(t *testing.T) {
	objs := render(t, "test/deploy/testdata/with-shards")
	install(t, objs)
	want := map[string]string{
		"fieldops-controller-manager":         v1alpha1.UnshardedSelector,
		"fieldops-controller-manager-shard-a": v1alpha1.ShardLabel + "=a",
		"fieldops-controller-manager-shard-b": v1alpha1.ShardLabel + "=b",
	}
	leases := map[string]string{}
	for _, u := range objs {
		if u.GetKind() != "Deployment" {
			continue
		}
		d := deployment(t, u)
		wantSel, ok := want[d.Name]
		if !ok {
			t.Errorf("unexpected Deployment %s", d.Name)
			continue
		}
		delete(want, d.Name)
		sel := watchSelector(t, d)
		if sel != wantSel {
			t.Errorf("%s: --watch-label-selector resolves to %q, want %q", d.Name, sel, wantSel)
		}
		parsed, err := app.ParseWatchSelector(sel)
		if err != nil {
			t.Errorf("%s: %v", d.Name, err)
			continue
		}
		lease := app.LeaderElectionID(parsed)
		if other, dup := leases[lease]; dup {
			t.Errorf("%s and %s share the Lease %s", d.Name, other, lease)
		}
		leases[lease] = d.Name
		if d.Name == "fieldops-controller-manager" {
			if lease != "fieldops.dev" {
				t.Errorf("the main instance's Lease is %s, want fieldops.dev (the unsharded manager's)", lease)
			}
			continue
		}
		shard := strings.TrimPrefix(d.Name, "fieldops-controller-manager-shard-")
		if d.Spec.Selector.MatchLabels[v1alpha1.ShardLabel] != shard || d.Labels[v1alpha1.ShardLabel] != shard {
			t.Errorf("%s: selector %v, labels %v: want %s=%s in both", d.Name, d.Spec.Selector.MatchLabels, d.Labels, v1alpha1.ShardLabel, shard)
		}
		if !parsed.Matches(labels.Set{v1alpha1.ShardLabel: shard}) || parsed.Matches(labels.Set{}) {
			t.Errorf("%s: selector %q does not take exactly shard %s's objects", d.Name, sel, shard)
		}
		pod := &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: "shard-check-" + shard, Namespace: "fieldops-system", Labels: d.Spec.Template.Labels},
			Spec:       *d.Spec.Template.Spec.DeepCopy(),
		}
		pod.Spec.ServiceAccountName = "default"
		if err := k8s.Create(context.Background(), pod, client.DryRunAll); err != nil {
			t.Errorf("the pod of %s is not admitted in fieldops-system: %v", d.Name, err)
		}
	}
	for name := range want {
		t.Errorf("no Deployment %s", name)
	}

	// The install with config/manager-rights and config/plugins: every
	// shard acts with the same tenancy as the main instance, and runs the
	// same plugins.
	dir, err := os.MkdirTemp(root, ".test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	k := "resources: [../test/deploy/testdata/with-shards]\ncomponents: [../config/manager-rights, ../config/plugins]\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, u := range render(t, filepath.Base(dir)) {
		if u.GetKind() != "Deployment" {
			continue
		}
		n++
		d := deployment(t, u)
		args := d.Spec.Template.Spec.Containers[0].Args
		if !slices.Contains(args, "--manager-rights-namespaces=*") || !slices.Contains(args, "--no-cross-namespace-refs=false") {
			t.Errorf("%s with config/manager-rights: args %v lack its flags", u.GetName(), args)
		}
		if !slices.Contains(args, "--plugin-config=/etc/fieldops/plugins.yaml") || len(d.Spec.Template.Spec.InitContainers) != 1 {
			t.Errorf("%s with config/plugins: args %v, %d init containers: want its flags and its init container", u.GetName(), args, len(d.Spec.Template.Spec.InitContainers))
		}
		if c := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--watch-label-selector=") }); c < 0 || slices.ContainsFunc(args[c+1:], func(a string) bool { return strings.HasPrefix(a, "--watch-label-selector=") }) {
			t.Errorf("%s: args %v, want one --watch-label-selector", u.GetName(), args)
		}
	}
	if n != 3 {
		t.Errorf("%d Deployments with config/manager-rights and config/plugins, want 3", n)
	}
}

func deployment(t *testing.T, u *unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// envRef is a $(NAME) reference in a container's args.
var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// watchSelector is the manager's --watch-label-selector in d's pods: its
// $(NAME) references expanded as the kubelet does, from the container's
// env (values, and the pod's labels through the downward API); "" when
// there is none.
func watchSelector(t *testing.T, d *appsv1.Deployment) string {
	t.Helper()
	c := d.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			if key, ok := labelKey(e.ValueFrom.FieldRef.FieldPath); ok {
				env[e.Name] = d.Spec.Template.Labels[key]
			}
		}
	}
	sel := ""
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--watch-label-selector="); ok {
			sel = envRef.ReplaceAllStringFunc(v, func(ref string) string {
				name := envRef.FindStringSubmatch(ref)[1]
				val, ok := env[name]
				if !ok {
					t.Errorf("%s: %s refers to %s, which the container's env does not set", d.Name, a, name)
				}
				return val
			})
		}
	}
	return sel
}

// labelKey is the key of a downward API field path
// metadata.labels['<key>'].
func labelKey(path string) (string, bool) {
	v, ok := strings.CutPrefix(path, "metadata.labels['")
	if !ok || !strings.HasSuffix(v, "']") {
		return "", false
	}
	return strings.TrimSuffix(v, "']"), true
}
