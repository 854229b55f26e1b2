/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package release

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/internal/bundle"
)

// The chart with sharding.shards [a, b] has what kustomize renders of
// config/default with config/components/sharding and two shards of
// config/shard (test/deploy/testdata/with-shards): the same manager
// containers (the main instance's on '!sharding.fieldops.dev/key', each
// shard's on its own key), Deployment names, selectors and pod labels.
// Without shards the main instance has no --watch-label-selector.
func TestChartShardsMatchConfig(t *testing.T) {
	root := moduleRoot(t)
	config, err := bundle.Render(filepath.Join(root, "test", "deploy", "testdata", "with-shards"))
	if err != nil {
		t.Fatal(err)
	}
	chart := renderChart(t, map[string]any{"sharding": map[string]any{"shards": []any{"a", "b"}}}, "v1.30.0")
	for _, name := range []string{"fieldops-controller-manager", "fieldops-controller-manager-shard-a", "fieldops-controller-manager-shard-b"} {
		want, got := find(config, "Deployment", name), find(chart, "Deployment", name)
		if want == nil || got == nil {
			t.Fatalf("Deployment %s: in config/ %v, in the chart %v", name, want != nil, got != nil)
		}
		wc, gc := managerContainer(t, want), managerContainer(t, got)
		for _, f := range []string{"args", "env"} {
			if !reflect.DeepEqual(gc[f], wc[f]) {
				g, _ := yaml.Marshal(gc[f])
				w, _ := yaml.Marshal(wc[f])
				t.Errorf("%s: manager container %s: chart\n%s\nconfig/\n%s", name, f, g, w)
			}
		}
		for _, path := range [][]string{{"spec", "selector", "matchLabels"}, {"spec", "template", "metadata", "labels"}, {"metadata", "labels"}} {
			w, _, _ := unstructured.NestedStringMap(want.Object, path...)
			g, _, _ := unstructured.NestedStringMap(got.Object, path...)
			for k, v := range w {
				if g[k] != v {
					t.Errorf("%s: %s[%s] is %q in the chart, %q in config/", name, strings.Join(path, "."), k, g[k], v)
				}
			}
		}
	}
	// In config/ too, each Deployment's selector matches its own pods only.
	for _, d := range deployments(config) {
		sel := selectorOf(t, d, "spec", "selector")
		for _, other := range deployments(config) {
			if sel.Matches(podLabels(other)) != (other == d) {
				t.Errorf("config/: Deployment %s's selector %s, Deployment %s's pods %v", d.GetName(), sel, other.GetName(), podLabels(other))
			}
		}
	}
	if n := len(deployments(chart)); n != 3 {
		t.Errorf("the chart with two shards renders %d Deployments, want 3", n)
	}
	plain := deployments(renderChart(t, nil, "v1.30.0"))
	if len(plain) != 1 {
		t.Fatalf("the chart without shards renders %d Deployments, want 1", len(plain))
	}
	for _, a := range managerContainer(t, plain[0])["args"].([]any) {
		if s, _ := a.(string); strings.HasPrefix(s, "--watch-label-selector") {
			t.Errorf("the chart without shards: the manager has %s", s)
		}
	}
}

// A shard name that cannot be a label value and a Deployment name's
// suffix, or one listed twice, is refused (values.schema.json) with a
// message naming it.
func TestChartShardNames(t *testing.T) {
	for _, tc := range []struct {
		shards []any
		want   string
	}{
		{[]any{"A"}, `/sharding/shards/0': 'A' does not match pattern`},
		{[]any{"a_b"}, `/sharding/shards/0': 'a_b' does not match pattern`},
		{[]any{"a", "a"}, `/sharding/shards': items at 0 and 1 are equal`},
		{[]any{strings.Repeat("a", 64)}, `/sharding/shards/0': maxLength: got 64, want 63`},
	} {
		_, err := renderChartErr(t, map[string]any{"sharding": map[string]any{"shards": tc.shards}}, "v1.30.0")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("shards %v: %v, want an error with %q", tc.shards, err, tc.want)
		}
	}
}

func deployments(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			out = append(out, o)
		}
	}
	return out
}
