/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package host_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/plugins/host"
	"github.com/fieldops/fieldops/plugins/sdk"
	"github.com/fieldops/fieldops/test/testkit"
)

// binDir holds the plugins built for the tests: the two examples and
// misbehave.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fieldops-plugins-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	built, _, err := testkit.BuildPlugins()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The tests write configs and links beside the binaries: copies in a
	// directory of their own.
	for _, name := range []string{"yield-to-autoscalers", "ignore-policy-annotations", "misbehave"} {
		if err := copyFile(filepath.Join(built, name), filepath.Join(dir, name)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// copyFile copies the executable from to to.
func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

func sum(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// newHost writes a config file naming the plugins (name:kind) with their
// real checksums, loads it, and returns the Host.
func newHost(t testing.TB, timeout time.Duration, plugins ...string) *host.Host {
	t.Helper()
	var b strings.Builder
	b.WriteString("plugins:\n")
	for _, p := range plugins {
		name, kind, _ := strings.Cut(p, ":")
		fmt.Fprintf(&b, "- {name: %s, path: %s, sha256: %s, kind: %s}\n", name, name, sum(t, filepath.Join(binDir, name)), kind)
	}
	cfgPath := filepath.Join(binDir, t.Name()+".yaml")
	if err := os.WriteFile(cfgPath, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := host.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(cfg, host.Options{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func object(name string, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace("default")
	u.SetName(name)
	u.SetAnnotations(annotations)
	return u
}

func conflicts(t *testing.T, specs ...string) []ownershipcore.Conflict {
	t.Helper()
	var out []ownershipcore.Conflict
	for _, s := range specs {
		manager, path, _ := strings.Cut(s, " ")
		p, err := ownershipcore.ParsePath(path)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ownershipcore.Conflict{Manager: manager, Operation: "Update", Path: p})
	}
	return out
}

func decisions(rs []ownershipcore.Resolution) []ownershipcore.Decision {
	var out []ownershipcore.Decision
	for _, r := range rs {
		out = append(out, r.Decision)
	}
	return out
}

// Discovery from the config, and the two example plugins as real
// subprocesses.
func TestExamplePlugins(t *testing.T) {
	h := newHost(t, 0, "yield-to-autoscalers:ConflictStrategy", "ignore-policy-annotations:IgnorablePaths")
	cs, err := h.ConflictStrategy("yield-to-autoscalers")
	if err != nil {
		t.Fatal(err)
	}
	got, err := cs.Resolve(context.Background(), object("web", nil), "fieldops-fieldpatch/default/web",
		conflicts(t, "hpa .spec.replicas", "helm .spec.template.spec.serviceAccountName", "keda-operator .spec.replicas"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []ownershipcore.Decision{ownershipcore.DecisionYield, ownershipcore.DecisionForce, ownershipcore.DecisionYield}; fmt.Sprint(decisions(got)) != fmt.Sprint(want) {
		t.Fatalf("decisions %v, want %v", decisions(got), want)
	}

	ip, err := h.IgnorablePaths("ignore-policy-annotations")
	if err != nil {
		t.Fatal(err)
	}
	set, err := ip.Paths(context.Background(), object("web", map[string]string{
		"policies.kyverno.io/last-applied-patches": "x", "sidecar.istio.io/status": "{}", "example.com/keep": "y",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`.metadata.annotations["policies.kyverno.io/last-applied-patches"]`, `.metadata.annotations["sidecar.istio.io/status"]`}
	if got := ownershipcore.FormatSet(set); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("paths %v, want %v", got, want)
	}

	if _, err := h.ConflictStrategy("ignore-policy-annotations"); !errors.Is(err, host.ErrUnknownPlugin) {
		t.Fatalf("a plugin of the other kind: %v", err)
	}
	if _, err := h.IgnorablePaths("nope"); !errors.Is(err, host.ErrUnknownPlugin) {
		t.Fatalf("an undeclared plugin: %v", err)
	}
}

func TestChecksumMismatchRefused(t *testing.T) {
	cfg := &host.Config{Plugins: []host.PluginConfig{{
		Name: "yield-to-autoscalers", Path: filepath.Join(binDir, "yield-to-autoscalers"),
		SHA256: strings.Repeat("ab", 32), Kind: sdk.KindConflictStrategy,
	}}}
	h, err := host.New(cfg, host.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	cs, _ := h.ConflictStrategy("yield-to-autoscalers")
	failures := testutil.ToFloat64(metrics.PluginFailuresTotal.WithLabelValues("yield-to-autoscalers", "start"))
	_, err = cs.Resolve(context.Background(), object("web", nil), "m", conflicts(t, "hpa .spec.replicas"))
	if err == nil || !strings.Contains(err.Error(), "checksums did not match") {
		t.Fatalf("checksum mismatch: %v", err)
	}
	if testutil.ToFloat64(metrics.PluginFailuresTotal.WithLabelValues("yield-to-autoscalers", "start")) != failures+1 {
		t.Fatal("the start failure was not counted")
	}
}

// A plugin killed by SIGKILL in the middle of a call: the call falls back,
// the next call starts a new process and succeeds; the host never panics.
func TestKilledPluginFallsBackAndRestarts(t *testing.T) {
	h := newHost(t, 5*time.Second, "misbehave:ConflictStrategy")
	cs, _ := h.ConflictStrategy("misbehave")
	var failure error
	strategy := host.WithFallback(cs, ownershipcore.Static(ownershipcore.DecisionFail), func(err error) { failure = err })
	cf := conflicts(t, "hpa .spec.replicas")

	got, err := strategy.Resolve(context.Background(), object("web", nil), "crash", cf)
	if err != nil || got[0].Decision != ownershipcore.DecisionFail {
		t.Fatalf("fallback after a crash: %v %v", got, err)
	}
	if failure == nil || !strings.Contains(failure.Error(), "exited") {
		t.Fatalf("failure reported: %v", failure)
	}
	got, err = strategy.Resolve(context.Background(), object("web", nil), "fine", cf)
	if err != nil || got[0].Decision != ownershipcore.DecisionForce {
		t.Fatalf("the call after the restart: %v %v", got, err)
	}
}

func TestTimeoutFallsBack(t *testing.T) {
	h := newHost(t, 300*time.Millisecond, "misbehave:ConflictStrategy")
	cs, _ := h.ConflictStrategy("misbehave")
	strategy := host.WithFallback(cs, ownershipcore.Static(ownershipcore.DecisionYield), nil)
	start := time.Now()
	got, err := strategy.Resolve(context.Background(), object("web", nil), "sleep", conflicts(t, "hpa .spec.replicas"))
	if err != nil || got[0].Decision != ownershipcore.DecisionYield {
		t.Fatalf("fallback after a timeout: %v %v", got, err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the call took %s; the timeout is 300ms", took)
	}
	if _, err := cs.Resolve(context.Background(), object("web", nil), "sleep", conflicts(t, "hpa .spec.replicas")); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("timeout error: %v", err)
	}
}

func TestMalformedAnswersRejected(t *testing.T) {
	// The same binary serves both kinds; declare it twice.
	if err := os.Link(filepath.Join(binDir, "misbehave"), filepath.Join(binDir, "paths")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	h := newHost(t, 0, "misbehave:ConflictStrategy", "paths:IgnorablePaths")
	cs, _ := h.ConflictStrategy("misbehave")
	if _, err := cs.Resolve(context.Background(), object("web", nil), "bad-decision", conflicts(t, "hpa .spec.replicas")); !errors.Is(err, sdk.ErrMalformedAnswer) {
		t.Fatalf("unknown decision: %v", err)
	}
	ip, _ := h.IgnorablePaths("paths")
	if _, err := ip.Paths(context.Background(), object("bad-path", nil)); !errors.Is(err, sdk.ErrMalformedAnswer) {
		t.Fatalf("invalid path: %v", err)
	}
	if set, err := ip.Paths(context.Background(), object("web", nil)); err != nil || set.Empty() {
		t.Fatalf("a good answer after bad ones: %v %v", set, err)
	}
	if testutil.ToFloat64(metrics.PluginFailuresTotal.WithLabelValues("paths", "malformed")) < 1 {
		t.Fatal("malformed answers were not counted")
	}
}

func TestLoadConfigErrors(t *testing.T) {
	good := strings.Repeat("ab", 32)
	for _, c := range []struct{ yaml, want string }{
		{"plugins: [{name: a, path: /x, sha256: " + good + ", kind: Nope}]", "kind \"Nope\""},
		{"plugins: [{name: a, path: /x, sha256: abc, kind: IgnorablePaths}]", "64 hex digits"},
		{"plugins: [{path: /x, sha256: " + good + ", kind: IgnorablePaths}]", "name is required"},
		{"plugins: [{name: a, sha256: " + good + ", kind: IgnorablePaths}]", "path is required"},
		{"plugins: [{name: a, path: /x, sha256: " + good + ", kind: IgnorablePaths}, {name: a, path: /y, sha256: " + good + ", kind: IgnorablePaths}]", "duplicate name"},
		{"plugin: []", "unknown field"},
	} {
		p := filepath.Join(t.TempDir(), "plugins.yaml")
		if err := os.WriteFile(p, []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := host.LoadConfig(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.yaml, err, c.want)
		}
	}
}
