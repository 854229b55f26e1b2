/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	_ "github.com/fieldops/fieldops/controllers" // registers every fieldops_ metric
)

// knownMetrics are the metric families the manager exposes, with their
// label names, read from the registry the manager serves.
func knownMetrics(t *testing.T) map[string][]string {
	t.Helper()
	ch := make(chan *prometheus.Desc, 512)
	go func() { ctrlmetrics.Registry.(prometheus.Collector).Describe(ch); close(ch) }()
	descRE := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	known := map[string][]string{}
	for d := range ch {
		m := descRE.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read %s", d)
		}
		known[m[1]] = strings.Split(m[2], ",")
	}
	return known
}

var (
	metricRE = regexp.MustCompile(`\b(fieldops_[a-z_]+|controller_runtime_[a-z_]+)`)
	byRE     = regexp.MustCompile(`by \(([^)]*)\)`)
)

// checkExpr reports metrics an expression names that the manager does not
// expose, and grouping labels none of its metrics carry.
func checkExpr(t *testing.T, where, expr string, known map[string][]string) {
	t.Helper()
	labels := map[string]bool{"le": true}
	names := metricRE.FindAllString(expr, -1)
	if len(names) == 0 {
		t.Errorf("%s: %q names no fieldops or controller-runtime metric", where, expr)
	}
	for _, name := range names {
		base := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if _, ok := known[base]; !ok {
				base = strings.TrimSuffix(base, suffix)
			}
		}
		ls, ok := known[base]
		if !ok {
			t.Errorf("%s: metric %s is not exposed by the manager", where, name)
		}
		for _, l := range ls {
			labels[l] = true
		}
	}
	for _, m := range byRE.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(m[1], ",") {
			if l = strings.TrimSpace(l); !labels[l] {
				t.Errorf("%s: groups by label %q, which %v do not carry", where, l, names)
			}
		}
	}
}

// The Grafana dashboard queries only metrics and labels the manager
// exposes, and has a panel for each thing the issue names.
func TestGrafanaDashboard(t *testing.T) {
	known := knownMetrics(t)
	b, err := os.ReadFile(filepath.Join(root, "config/grafana/fieldops-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	var titles []string
	for _, p := range d.Panels {
		titles = append(titles, p.Title)
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			checkExpr(t, "panel "+p.Title, q.Expr, known)
		}
	}
	for _, want := range []string{"Applies by action", "Conflicts by field manager", "Drift repaired", "Hand-backs", "PodSet pod updates: in place vs recreate", "Plugin call latency", "Plugin failures", "Contested objects", "Reconcile errors", "Objects by state", "Objects not Ready"} {
		if !slices.Contains(titles, want) {
			t.Errorf("dashboard has no panel %q (has %q)", want, titles)
		}
	}
}

// The PrometheusRule's alerts query metrics the manager exposes; the
// rule's acceptance by the apiserver is TestConfigRendersAndIsAccepted's.
func TestAlerts(t *testing.T) {
	known := knownMetrics(t)
	rule := find(render(t, "config/prometheus"), "PrometheusRule", "fieldops-alerts")
	if rule == nil {
		t.Fatal("config/prometheus has no PrometheusRule fieldops-alerts")
	}
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	alerts := map[string]map[string]interface{}{}
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]interface{}), "rules")
		for _, r := range rules {
			r := r.(map[string]interface{})
			alerts[r["alert"].(string)] = r
			checkExpr(t, "alert "+r["alert"].(string), r["expr"].(string), known)
		}
	}
	for name, forDur := range map[string]string{"FieldopsFieldContested": "15m", "FieldopsPluginFailing": "10m", "FieldopsReconcileErrors": "15m", "FieldopsObjectNotReady": "15m"} {
		a, ok := alerts[name]
		if !ok {
			t.Errorf("no alert %s", name)
			continue
		}
		if a["for"] != forDur {
			t.Errorf("%s fires after %v, want %s", name, a["for"], forDur)
		}
	}
}

// Every alert has a runbook_url into a section of docs/troubleshooting.md
// that exists (GitHub's anchor of a heading: lower case, spaces to -,
// punctuation dropped).
func TestAlertRunbooks(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs/troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(string(doc), -1) {
		a := strings.ToLower(strings.TrimSpace(m[1]))
		a = regexp.MustCompile(`[^a-z0-9 _-]`).ReplaceAllString(a, "")
		anchors[strings.ReplaceAll(a, " ", "-")] = true
	}
	rule := find(render(t, "config/prometheus"), "PrometheusRule", "fieldops-alerts")
	if rule == nil {
		t.Fatal("config/prometheus has no PrometheusRule fieldops-alerts")
	}
	const prefix = "https://github.com/fieldops/fieldops/blob/main/docs/troubleshooting.md#"
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]interface{}), "rules")
		for _, r := range rules {
			name, _, _ := unstructured.NestedString(r.(map[string]interface{}), "alert")
			url, _, _ := unstructured.NestedString(r.(map[string]interface{}), "annotations", "runbook_url")
			anchor, ok := strings.CutPrefix(url, prefix)
			if !ok || !anchors[anchor] {
				t.Errorf("alert %s: runbook_url %q is not a section of docs/troubleshooting.md", name, url)
			}
		}
	}
}

// The ServiceMonitor keeps the labels of the manager's own series: the
// Prometheus Operator attaches target labels (namespace, pod, ...) that
// would otherwise win, renaming fieldops_contested's namespace to
// exported_namespace, so FieldopsFieldContested would name the manager's
// namespace instead of the contested FieldPatch's.
func TestServiceMonitorHonorsLabels(t *testing.T) {
	targetLabels := []string{"namespace", "service", "pod", "container", "endpoint", "job", "instance"}
	var colliding []string
	for name, labels := range knownMetrics(t) {
		for _, l := range labels {
			if slices.Contains(targetLabels, l) {
				colliding = append(colliding, name+"{"+l+"}")
			}
		}
	}
	if !slices.Contains(colliding, "fieldops_contested{namespace}") {
		t.Fatalf("fieldops_contested no longer has a namespace label (colliding: %v): revisit honorLabels", colliding)
	}
	sm := find(render(t, "config/prometheus"), "ServiceMonitor", "fieldops-controller-manager-metrics-monitor")
	if sm == nil {
		t.Fatal("config/prometheus has no ServiceMonitor fieldops-controller-manager-metrics-monitor")
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) == 0 {
		t.Fatal("the ServiceMonitor has no endpoints")
	}
	for i, e := range endpoints {
		if honor, _, _ := unstructured.NestedBool(e.(map[string]interface{}), "honorLabels"); !honor {
			t.Errorf("ServiceMonitor endpoint %d lacks honorLabels: true; these labels of the manager's series would be renamed exported_*: %v", i, colliding)
		}
	}
}
