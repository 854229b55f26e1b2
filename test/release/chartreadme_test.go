/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package release

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldops/fieldops/internal/chartgen"
)

// The chart's README.md is what `make chart` generates from
// README.md.gotmpl and values.yaml, and lists every value of values.yaml
// (each leaf, or a mapping documented as a whole) with its default and its
// comment.
func TestChartREADME(t *testing.T) {
	dir := filepath.Join(moduleRoot(t), chartgen.ChartDir)
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	c := loadChart(t)
	want, err := chartgen.README(read("README.md.gotmpl"), read("values.yaml"), c.Metadata.Version)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(read("README.md"))
	if readme != string(want) {
		t.Error("charts/fieldops/README.md is stale: run make chart")
	}
	for _, leaf := range leafPaths(c.Values, "") {
		if !documented(readme, leaf) {
			t.Errorf("value %s: no row in the README's table", leaf)
		}
	}
	for _, v := range []string{"replicas", "podDisruptionBudget.enabled", "namespace.create", "sharding.shards"} {
		if !strings.Contains(readme, "| `"+v+"` |") {
			t.Errorf("no row for %s", v)
		}
	}
}

// A value without a comment is refused: every value is documented.
func TestChartREADMEUndocumented(t *testing.T) {
	for _, y := range []string{
		"# Replicas.\nreplicas: 1\nextra: 2\n",
		"image:\n  # The repository.\n  repository: r\n  tag: \"\"\n",
	} {
		if _, err := chartgen.Values([]byte(y)); err == nil || !strings.Contains(err.Error(), "has no comment") {
			t.Errorf("%q: %v, want an error naming the undocumented value", y, err)
		}
	}
}

// leafPaths are the dotted paths of m's values that are not non-empty
// mappings.
func leafPaths(m map[string]any, prefix string) []string {
	var out []string
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			out = append(out, leafPaths(sub, prefix+k+".")...)
			continue
		}
		out = append(out, prefix+k)
	}
	return out
}

// documented: path, or a mapping holding it, has a row.
func documented(readme, path string) bool {
	for p := path; ; {
		if strings.Contains(readme, "| `"+p+"` |") {
			return true
		}
		i := strings.LastIndex(p, ".")
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}
