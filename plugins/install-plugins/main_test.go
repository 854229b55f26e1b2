/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInstall(t *testing.T) {
	data, dir := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(data, "linux_arm64"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "linux_arm64", "p"), []byte("plugin"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := install(data, "linux_arm64", dir)
	if err != nil || n != 1 {
		t.Fatalf("install: %d, %v", n, err)
	}
	info, err := os.Stat(filepath.Join(dir, "p"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755 (the manager runs as another user)", info.Mode().Perm())
	}
	if _, err := install(data, "linux_amd64", dir); err == nil || !strings.Contains(err.Error(), "no plugins for linux_amd64") {
		t.Errorf("a platform without plugins: %v", err)
	}
}
