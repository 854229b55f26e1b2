/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The base is the same on every run (its digest is the cache key ko finds
// it by), lists the index and each platform's image at the layout's top
// (where ko's cache looks digests up), runs as 65532 and holds the users.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	a, err := write(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := write(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a != b || !strings.HasPrefix(a, Repository+"@sha256:") {
		t.Fatalf("references %s and %s", a, b)
	}
	read := func(v any, parts ...string) {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(append([]string{dir}, parts...)...))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatal(err)
		}
	}
	blobPath := func(digest string) []string {
		return []string{"blobs", "sha256", strings.TrimPrefix(digest, "sha256:")}
	}
	var top struct{ Manifests []descriptor }
	read(&top, "index.json")
	if len(top.Manifests) != 3 || "sha256:"+strings.SplitN(a, "@sha256:", 2)[1] != top.Manifests[0].Digest {
		t.Fatalf("index.json lists %+v", top.Manifests)
	}
	for _, m := range top.Manifests[1:] {
		var man struct {
			Config descriptor
			Layers []descriptor
		}
		read(&man, blobPath(m.Digest)...)
		var cfg struct {
			Architecture string
			Config       struct{ User, WorkingDir string }
		}
		read(&cfg, blobPath(man.Config.Digest)...)
		if cfg.Architecture != m.Platform.Architecture || cfg.Config.User != "65532" || cfg.Config.WorkingDir != "/home/nonroot" {
			t.Errorf("%s: config %+v", m.Platform.Architecture, cfg)
		}
		if len(man.Layers) != 1 {
			t.Fatalf("%d layers", len(man.Layers))
		}
	}
	raw, err := layer()
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatal("the layer has no etc/passwd")
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "etc/passwd" {
			b, _ := io.ReadAll(tr)
			if !strings.Contains(string(b), "nonroot:x:65532:65532:") {
				t.Errorf("etc/passwd:\n%s", b)
			}
			break
		}
	}
}
