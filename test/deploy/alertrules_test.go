/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// promtool is the promtool the Makefile builds from the pinned
// Prometheus module ($PROMTOOL, as make test and make test-alerts set it,
// else bin/promtool-<PROMETHEUS_VERSION>), or "" when it is not built.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROMTOOL"); p != "" {
		return p
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^PROMETHEUS_VERSION \?= (\S+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("Makefile: no PROMETHEUS_VERSION")
	}
	p := filepath.Join(root, "bin", "promtool-"+string(m[1]))
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// The alerts pass promtool's rule unit tests
// (config/prometheus/alerts_test.yaml): each fires on the series it is
// about after its for duration, with its labels and annotations
// (runbook_url among them), and not before or on other series. The
// PrometheusRule's spec is the rules file promtool reads.
func TestAlertRules(t *testing.T) {
	bin := promtool(t)
	if bin == "" {
		t.Skip("promtool is not built: make test-alerts (or make promtool) builds it")
	}
	rule := find(render(t, "config/prometheus"), "PrometheusRule", "fieldops-alerts")
	if rule == nil {
		t.Fatal("config/prometheus has no PrometheusRule fieldops-alerts")
	}
	spec, _, _ := unstructured.NestedMap(rule.Object, "spec")
	rules, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "alerts.rules.yaml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join(root, "config/prometheus/alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "check", "rules", filepath.Join(dir, "alerts.rules.yaml")).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "test", "rules", "alerts_test.yaml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	// Every alert has a test.
	for _, a := range alertNames(t, rule) {
		if !strings.Contains(string(tests), "alertname: "+a+"\n") {
			t.Errorf("alert %s has no promtool test in config/prometheus/alerts_test.yaml", a)
		}
	}
}

func alertNames(t *testing.T, rule *unstructured.Unstructured) []string {
	t.Helper()
	var names []string
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]interface{}), "rules")
		for _, r := range rules {
			if a, ok := r.(map[string]interface{})["alert"].(string); ok {
				names = append(names, a)
			}
		}
	}
	return names
}
