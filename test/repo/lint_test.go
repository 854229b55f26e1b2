/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package repo

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The licence header golangci-lint's goheader checks every Go file for
// (.golangci.yml) is hack/boilerplate.go.txt, the one controller-gen
// writes into generated code, without its comment markers.
func TestLintHeaderMatchesBoilerplate(t *testing.T) {
	var cfg struct {
		Linters struct {
			Settings struct {
				Goheader struct {
					Template string `json:"template"`
				} `json:"goheader"`
			} `json:"settings"`
		} `json:"linters"`
	}
	if err := yaml.Unmarshal([]byte(read(t, ".golangci.yml")), &cfg); err != nil {
		t.Fatal(err)
	}
	b := strings.TrimSpace(read(t, "hack/boilerplate.go.txt"))
	if !strings.HasPrefix(b, "/*") || !strings.HasSuffix(b, "*/") {
		t.Fatalf("hack/boilerplate.go.txt is not one /* */ comment:\n%s", b)
	}
	want := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(b, "/*"), "*/"))
	if got := cfg.Linters.Settings.Goheader.Template; got != want {
		t.Errorf(".golangci.yml goheader template:\n%s\nhack/boilerplate.go.txt:\n%s", got, want)
	}
}

// .ci/run is what CI runs: generated files first, then lint, then
// exactly the README's test command.
func TestCIRun(t *testing.T) {
	var steps []string
	for _, l := range strings.Split(read(t, ".ci/run"), "\n") {
		if strings.HasPrefix(l, "make ") {
			steps = append(steps, l)
		}
	}
	want := []string{"make verify-generated", "make lint", "make test"}
	if strings.Join(steps, "|") != strings.Join(want, "|") {
		t.Errorf(".ci/run runs %q, want %q", steps, want)
	}
	if !strings.Contains(read(t, "README.md"), "make test") {
		t.Error("README.md does not name make test")
	}
}
