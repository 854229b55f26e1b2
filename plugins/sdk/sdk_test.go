/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package sdk_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/hashicorp/go-plugin"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/fieldops/fieldops/ownershipcore/fieldset"
	"github.com/fieldops/fieldops/ownershipcore/strategy"
	pluginv1 "github.com/fieldops/fieldops/plugins/proto/fieldops/plugin/v1"
	"github.com/fieldops/fieldops/plugins/sdk"
)

// byManager yields conflicts with "hpa" and forces the rest, and records
// what it was asked.
type byManager struct{ seen *[]strategy.Conflict }

func (b byManager) Resolve(_ context.Context, obj *unstructured.Unstructured, manager string, cs []strategy.Conflict) ([]strategy.Resolution, error) {
	if obj.GetKind() != "Deployment" || manager != "fieldops-fieldpatch/ns/fp" {
		return nil, errors.New("wrong object or manager")
	}
	*b.seen = cs
	out := make([]strategy.Resolution, len(cs))
	for i, c := range cs {
		out[i] = strategy.Resolution{Decision: strategy.DecisionForce, Message: "mine"}
		if c.Manager == "hpa" {
			out[i] = strategy.Resolution{Decision: strategy.DecisionYield, Message: "autoscaled"}
		}
	}
	return out, nil
}

type fixedPaths []string

func (f fixedPaths) Paths(context.Context, *unstructured.Unstructured) (*fieldpath.Set, error) {
	return fieldset.ParsePathSet(f)
}

func dispense(t *testing.T, p sdk.Plugins, kind string) interface{} {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, sdk.PluginSet(p))
	t.Cleanup(func() { _ = client.Close() })
	impl, err := client.Dispense(kind)
	if err != nil {
		t.Fatal(err)
	}
	return impl
}

func deployment() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetName("web")
	return u
}

func mustPath(t *testing.T, s string) fieldpath.Path {
	t.Helper()
	p, err := fieldset.ParsePath(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The protocol end to end, in process: conflicts and paths survive the
// round trip, including names that need quoting.
func TestConflictStrategyOverGRPC(t *testing.T) {
	var seen []strategy.Conflict
	cs := dispense(t, sdk.Plugins{ConflictStrategy: byManager{seen: &seen}}, sdk.KindConflictStrategy).(strategy.ConflictStrategy)
	conflicts := []strategy.Conflict{
		{Manager: "hpa", Operation: metav1.ManagedFieldsOperationUpdate, Path: mustPath(t, ".spec.replicas")},
		{Manager: "helm", Operation: metav1.ManagedFieldsOperationApply, Path: mustPath(t, `.spec.template.spec.containers[name="app"].env[name="HTTP_PROXY"].value`)},
		{Manager: "kyverno", Operation: metav1.ManagedFieldsOperationUpdate, Path: mustPath(t, `.metadata.annotations["policies.kyverno.io/last-applied-patches"]`)},
	}
	got, err := cs.Resolve(context.Background(), deployment(), "fieldops-fieldpatch/ns/fp", conflicts)
	if err != nil {
		t.Fatal(err)
	}
	want := []strategy.Resolution{{Decision: strategy.DecisionYield, Message: "autoscaled"}, {Decision: strategy.DecisionForce, Message: "mine"}, {Decision: strategy.DecisionForce, Message: "mine"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("resolutions %+v, want %+v", got, want)
	}
	for i := range conflicts {
		if !seen[i].Path.Equals(conflicts[i].Path) || seen[i].Manager != conflicts[i].Manager || seen[i].Operation != conflicts[i].Operation {
			t.Errorf("conflict %d arrived as %+v", i, seen[i])
		}
	}
	// The plugin's own error reaches the host as an error.
	if _, err := cs.Resolve(context.Background(), deployment(), "someone-else", conflicts); err == nil {
		t.Fatal("a plugin error was lost")
	}
}

func TestIgnorablePathsOverGRPC(t *testing.T) {
	want := []string{`.metadata.annotations["sidecar.istio.io/status"]`, ".spec.replicas"}
	ip := dispense(t, sdk.Plugins{IgnorablePaths: fixedPaths(want)}, sdk.KindIgnorablePaths).(strategy.IgnorablePaths)
	set, err := ip.Paths(context.Background(), deployment())
	if err != nil {
		t.Fatal(err)
	}
	if got := fieldset.FormatSet(set); !reflect.DeepEqual(got, want) {
		t.Fatalf("paths %v, want %v", got, want)
	}
}

func TestPluginSet(t *testing.T) {
	for _, c := range []struct {
		p    sdk.Plugins
		want []string
	}{
		{sdk.Plugins{}, nil},
		{sdk.Plugins{ConflictStrategy: strategy.Static(strategy.DecisionForce)}, []string{sdk.KindConflictStrategy}},
		{sdk.Plugins{IgnorablePaths: strategy.StaticPaths{}}, []string{sdk.KindIgnorablePaths}},
		{sdk.Plugins{ConflictStrategy: strategy.Static(strategy.DecisionForce), IgnorablePaths: strategy.StaticPaths{}}, []string{sdk.KindConflictStrategy, sdk.KindIgnorablePaths}},
	} {
		set := sdk.PluginSet(c.p)
		if len(set) != len(c.want) {
			t.Errorf("%+v: %d plugins, want %v", c.p, len(set), c.want)
		}
		for _, k := range c.want {
			if set[k] == nil {
				t.Errorf("%+v: no %s", c.p, k)
			}
		}
	}
}

// Answers that break the protocol are refused before use.
func TestValidateResolutions(t *testing.T) {
	res := func(ds ...pluginv1.Decision) *pluginv1.ResolveResponse {
		out := &pluginv1.ResolveResponse{}
		for _, d := range ds {
			out.Resolutions = append(out.Resolutions, &pluginv1.Resolution{Decision: d})
		}
		return out
	}
	for _, c := range []struct {
		name string
		resp *pluginv1.ResolveResponse
		want int
		ok   bool
	}{
		{"one per conflict", res(pluginv1.Decision_DECISION_FORCE, pluginv1.Decision_DECISION_YIELD, pluginv1.Decision_DECISION_FAIL), 3, true},
		{"too few", res(pluginv1.Decision_DECISION_FORCE), 2, false},
		{"too many", res(pluginv1.Decision_DECISION_FORCE, pluginv1.Decision_DECISION_FORCE), 1, false},
		{"unspecified decision", res(pluginv1.Decision_DECISION_UNSPECIFIED), 1, false},
		{"unknown decision", res(pluginv1.Decision(42)), 1, false},
		{"empty for none", res(), 0, true},
	} {
		_, err := sdk.ValidateResolutions(c.resp, c.want)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, sdk.ErrMalformedAnswer)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestValidatePaths(t *testing.T) {
	for _, c := range []struct {
		paths []string
		ok    bool
	}{
		{[]string{".spec.replicas", `.metadata.labels["a/b"]`}, true},
		{nil, true},
		{[]string{"spec.replicas"}, false},
		{[]string{`.metadata.annotations["unterminated`}, false},
		{[]string{".spec.containers[name=]"}, false},
	} {
		_, err := sdk.ValidatePaths(c.paths)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, sdk.ErrMalformedAnswer)) {
			t.Errorf("%v: %v", c.paths, err)
		}
	}
}
