/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/internal/localcp"
)

var (
	update     = flag.Bool("update", false, "rewrite the golden files in testdata/")
	kubeconfig string
	k8s        client.Client
	restConfig *rest.Config
	// controlPlane is the tests' local control plane (AddUser: a user of
	// other rights than kubeconfig's).
	controlPlane *localcp.ControlPlane
)

// TestMain starts the local control plane (no manager: the tests write
// the statuses they print; TestPlan runs one of its own while it runs)
// and a kubeconfig for the plugin's flags.
func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 1 }
	cp, err := localcp.Start(localcp.Options{})
	if err != nil {
		return fail(err)
	}
	defer func() { _ = cp.Stop() }()
	controlPlane = cp
	user, err := cp.Env.ControlPlane.AddUser(envtest.User{Name: "plugin-test", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fail(err)
	}
	b, err := user.KubeConfig()
	if err != nil {
		return fail(err)
	}
	dir, err := os.MkdirTemp("", "kubectl-fieldops")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, b, 0o600); err != nil {
		return fail(err)
	}
	restConfig = cp.Config
	if k8s, err = client.New(cp.Config, client.Options{Scheme: controllers.Scheme()}); err != nil {
		return fail(err)
	}
	return m.Run()
}

// plugin runs kubectl-fieldops with args against the control plane. A
// plan is told, as --manager-rights-namespaces, that every namespace's
// patches act with the manager's rights, as they do under the managers
// of these tests (the zero tenant options); a patch that names
// spec.serviceAccountName acts as that account either way.
func plugin(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	if len(args) > 0 && args[0] == "plan" {
		args = append([]string{"plan", "--manager-rights-namespaces=*"}, args[1:]...)
	}
	return pluginIn(t, "", append(args, "--kubeconfig", kubeconfig)...)
}

// pluginIn runs kubectl-fieldops with args as they are (no kubeconfig
// added) and stdin as its standard input.
func pluginIn(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewCommand(genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

var volatile = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`uid: [0-9a-f-]{36}`), "uid: UID"},
	{regexp.MustCompile(`resourceVersion: "\d+"`), `resourceVersion: "RV"`},
	{regexp.MustCompile(`creationTimestamp: "[^"]+"`), `creationTimestamp: "TIME"`},
	{regexp.MustCompile(`"time": "[^"]+"`), `"time": "TIME"`},
	{regexp.MustCompile(`time: "[^"]+"`), `time: "TIME"`},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`), `TIME`},
}

// golden compares got, with server-set values (uid, resourceVersion,
// timestamps) replaced, to testdata/name; -update rewrites it.
func golden(t *testing.T, name, got string) {
	t.Helper()
	for _, v := range volatile {
		got = v.re.ReplaceAllString(got, v.repl)
	}
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/kubectl-fieldops -update)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (-update rewrites it):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func createNamespace(t *testing.T, name string) {
	t.Helper()
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

func applyAs(t *testing.T, manager, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	return u
}

func mergeAs(t *testing.T, manager string, obj client.Object, patch string) {
	t.Helper()
	if err := k8s.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(manager)); err != nil {
		t.Fatal(err)
	}
}

// fixClock sets the plugin's clock three hours after the newest managed
// fields entry of obj, so every age prints as 3h0m.
func fixClock(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	live := obj.DeepCopy()
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), live); err != nil {
		t.Fatal(err)
	}
	var newest time.Time
	for _, e := range live.GetManagedFields() {
		if e.Time != nil && e.Time.After(newest) {
			newest = e.Time.Time
		}
	}
	old := now
	now = func() time.Time { return newest.Add(3 * time.Hour) }
	t.Cleanup(func() { now = old })
}

// version prints the release, Go version and platform, contacting no
// server; -o json and jsonpath print the same.
func TestVersion(t *testing.T) {
	out, stderr, err := pluginIn(t, "", "version")
	if err != nil || !regexp.MustCompile(`^kubectl-fieldops \S+( \(\w+(-dirty)?\))? go\S+ \w+/\w+\n$`).MatchString(out) {
		t.Errorf("version: %v %q %q", err, out, stderr)
	}
	out, _, err = pluginIn(t, "", "version", "-o", "json")
	var v VersionInfo
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Version == "" || v.GoVersion == "" || v.Platform == "" {
		t.Errorf("version -o json: %v %q", err, out)
	}
	if out, _, err := pluginIn(t, "", "version", "-o", "jsonpath={.platform}"); err != nil || out != v.Platform {
		t.Errorf("version -o jsonpath: %v %q, want %q", err, out, v.Platform)
	}
}
