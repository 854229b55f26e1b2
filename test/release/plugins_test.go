/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package release

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// The example plugins `make plugins` builds start where the manager runs
// them, in a distroless static image: no C library, no dynamic loader. Each
// is a static ELF (no PT_INTERP, no DT_NEEDED) and starts from an empty
// root (a chroot holding only the binary, when the test runs as root) or
// at least from an empty directory with an empty environment, where it
// answers as a go-plugin binary run by hand does.
func TestPluginsAreStatic(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ELF binaries and chroot: Linux only")
	}
	out := t.TempDir()
	cmd := exec.Command("make", "plugins", "PLUGINS_DIR="+out)
	cmd.Dir = moduleRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make plugins: %v\n%s", err, b)
	}
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"yield-to-autoscalers", "ignore-policy-annotations"} {
		t.Run(name, func(t *testing.T) {
			bin := filepath.Join(out, name)
			if !bytes.Contains(sums, []byte("  "+name+"\n")) {
				t.Errorf("SHA256SUMS does not list %s:\n%s", name, sums)
			}
			checkStatic(t, bin)
			root := t.TempDir()
			data, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, name), data, 0o755); err != nil {
				t.Fatal(err)
			}
			run := exec.Command(filepath.Join(root, name))
			run.Dir = root
			run.Env = []string{}
			if os.Geteuid() == 0 {
				run = exec.Command("/" + name)
				run.Dir = "/"
				run.Env = []string{}
				run.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
			}
			b, err := run.CombinedOutput()
			// go-plugin's Serve, run without the host's handshake cookie,
			// prints this and exits 1: the binary started.
			if !strings.Contains(string(b), "This binary is a plugin") {
				t.Errorf("%s did not start in an empty root (chroot: %v): %v\n%s", name, os.Geteuid() == 0, err, b)
			}
		})
	}
}

// checkStatic fails unless path is an ELF executable without an
// interpreter and without shared-library dependencies.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has an ELF interpreter (dynamically linked): build it with CGO_ENABLED=0", path)
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	if len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v: build it with CGO_ENABLED=0", path, libs)
	}
}
