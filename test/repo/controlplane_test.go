/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package repo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
)

// The commands `make control-plane` builds from k8s.io/kubernetes, in one
// `go build` so that their shared packages compile once.
var kubeCommands = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// pinned returns the version root/gomod requires of module.
func pinned(t *testing.T, gomod, module string) string {
	t.Helper()
	f, err := modfile.ParseLax(gomod, []byte(read(t, gomod)), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Require {
		if r.Mod.Path == module {
			return r.Mod.Version
		}
	}
	t.Fatalf("%s requires no %s", gomod, module)
	return ""
}

// makeN returns what `make -n control-plane` would run with LOCALBIN=bin.
func makeN(t *testing.T, bin string) string {
	t.Helper()
	cmd := exec.Command("make", "-n", "control-plane", "LOCALBIN="+bin)
	cmd.Dir = root(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n control-plane: %v\n%s", err, out)
	}
	return string(out)
}

// `make control-plane` keys "already built" on the pinned versions (each
// binary's directory is named after its version), never on file times:
// binaries copied into a fresh clone, older than every source file, are
// not rebuilt. And it stamps the Kubernetes version with ldflags, so
// /version and `kubectl version` report it.
func TestControlPlaneBuild(t *testing.T) {
	kube := pinned(t, "test/tools/go.mod", "k8s.io/kubernetes")
	etcd := pinned(t, "test/tools/go.mod", "go.etcd.io/etcd/server/v3")
	kwok := pinned(t, "test/tools/kwok/go.mod", "sigs.k8s.io/kwok")
	bin := t.TempDir()
	want := []string{filepath.Join(bin, "etcd-"+etcd, "etcd"), filepath.Join(bin, "kwok-"+kwok, "kwok"), filepath.Join(bin, "kwok-"+kwok, "stages.yaml")}
	for _, c := range kubeCommands {
		want = append(want, filepath.Join(bin, "kubernetes-"+kube, c))
	}

	// Nothing built: one go build for the Kubernetes commands, stamped.
	out := makeN(t, bin)
	var kubeBuild string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "go build") && strings.Contains(line, "k8s.io/kubernetes/cmd/") {
			if kubeBuild != "" {
				t.Errorf("more than one go build of k8s.io/kubernetes commands:\n%s", out)
			}
			kubeBuild = line
		}
	}
	for _, c := range kubeCommands {
		if !strings.Contains(kubeBuild, " k8s.io/kubernetes/cmd/"+c) {
			t.Errorf("the go build of k8s.io/kubernetes does not build %s:\n%s", c, kubeBuild)
		}
	}
	major, minor, _ := strings.Cut(strings.TrimPrefix(kube, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	for _, flag := range []string{"k8s.io/component-base/version.gitVersion=" + kube, "k8s.io/component-base/version.gitMajor=" + major,
		"k8s.io/component-base/version.gitMinor=" + minor, "k8s.io/client-go/pkg/version.gitVersion=" + kube, "k8s.io/component-base/version.buildDate=20"} {
		if !strings.Contains(kubeBuild, flag) {
			t.Errorf("the go build of k8s.io/kubernetes lacks -X %s:\n%s", flag, kubeBuild)
		}
	}
	for _, p := range want {
		if !strings.Contains(out, filepath.Dir(p)) {
			t.Errorf("make control-plane does not build into %s:\n%s", filepath.Dir(p), out)
		}
	}

	// Copied binaries, older than everything: nothing to do.
	old := time.Unix(0, 0)
	for _, p := range want {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if out := makeN(t, bin); strings.Contains(out, "go build") {
		t.Errorf("make control-plane rebuilds binaries already built from the pinned versions:\n%s", out)
	}
}
