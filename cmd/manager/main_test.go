/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMain runs the manager's main instead of the tests when re-executed by
// runManagerBinary, so the flag tests see the real exit code and stderr.
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv("FIELDOPS_TEST_MANAGER_ARGS"); ok {
		os.Args = append([]string{"manager"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runManagerBinary(t *testing.T, args string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FIELDOPS_TEST_MANAGER_ARGS="+args, "KUBECONFIG=/nonexistent")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), stderr.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, stderr.String()
}

// g. An unknown gate or a bad value stops the manager with a clear message
// before it connects anywhere.
func TestFeatureGateFlag(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"--feature-gates=NoSuchGate=true", "unrecognized feature gate: NoSuchGate"},
		{"--feature-gates=ServerSideApply=maybe", "invalid value of ServerSideApply=maybe"},
		{"--feature-gates=ServerSideApply", "missing bool value for ServerSideApply"},
		{"--plugin-config=/nonexistent.yaml", "--plugin-config needs --feature-gates=ExternalPlugins=true"},
		{"--feature-gates=ExternalPlugins=true --plugin-config=/nonexistent.yaml", "read plugin config"},
	} {
		code, stderr := runManagerBinary(t, c.args)
		if code != 1 || !strings.Contains(stderr, "fieldops: ") || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant exit 1 and %q", c.args, code, stderr, c.want)
		}
	}
}

// --help lists every gate with its stage and default.
func TestFeatureGateHelp(t *testing.T) {
	code, stderr := runManagerBinary(t, "--help")
	if code != 0 {
		t.Fatalf("--help: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"ServerSideApply=true|false (BETA - default=true)", "InPlacePodMetadata=true|false (BETA - default=true)", "ExternalPlugins=true|false (ALPHA - default=false)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--help lacks %q:\n%s", want, stderr)
		}
	}
}

// --kubeconfig (controller-runtime's flag, registered before the Go flag
// set is copied into the manager's) and --pprof-bind-address are accepted:
// the manager fails on the missing file, not with "unknown flag" (issue 11).
func TestKubeconfigAndPprofFlags(t *testing.T) {
	code, stderr := runManagerBinary(t, "--pprof-bind-address=127.0.0.1:0 --kubeconfig=/nonexistent/kubeconfig")
	if code != 1 || strings.Contains(stderr, "unknown flag") || !strings.Contains(stderr, "/nonexistent/kubeconfig") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 naming /nonexistent/kubeconfig", code, stderr)
	}
}
