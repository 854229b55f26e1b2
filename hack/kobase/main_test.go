/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"archive/tar"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The base is the same on every run (its digest is the cache key ko finds
// it by), and lists the index and each platform's image at the layout's
// top, where ko's cache looks digests up (partial.FindManifests over the
// layout's index, as ko's pkg/commands/cache.go does).
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
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := v1.NewHash(strings.TrimPrefix(a, Repository+"@"))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := top.ImageIndex(h)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIImageIndex || len(m.Manifests) != len(platforms) {
		t.Fatalf("index %s of %d manifests", m.MediaType, len(m.Manifests))
	}
	for i, d := range append([]v1.Descriptor{{Digest: h, MediaType: types.OCIImageIndex}}, m.Manifests...) {
		found, err := partial.FindManifests(top, match.Digests(d.Digest))
		if err != nil || len(found) != 1 || found[0].MediaType != d.MediaType {
			t.Errorf("the layout's index lists %s as %+v (%v)", d.Digest, found, err)
		}
		if i > 0 && !reflect.DeepEqual(*d.Platform, platforms[i-1]) {
			t.Errorf("manifest %d is for %+v, want %+v", i-1, *d.Platform, platforms[i-1])
		}
	}
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		checkConfig(t, img, *d.Platform)
		checkFiles(t, img)
	}
}

// checkConfig: p's image is an OCI image run as distroless's
// static:nonroot runs, created at the epoch.
func checkConfig(t *testing.T, img v1.Image, p v1.Platform) {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := v1.Config{
		User:       "65532",
		WorkingDir: "/home/nonroot",
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
	}
	if cfg.OS != p.OS || cfg.Architecture != p.Architecture || cfg.Variant != p.Variant || !reflect.DeepEqual(cfg.Config, want) {
		t.Errorf("%s: config %+v", p, cfg)
	}
	if !cfg.Created.Equal(epoch) || len(cfg.History) != 1 || !cfg.History[0].Created.Equal(epoch) || len(cfg.RootFS.DiffIDs) != 1 {
		t.Errorf("%s: created %s, history %+v, diff_ids %v", p, cfg.Created, cfg.History, cfg.RootFS.DiffIDs)
	}
	mt, err := img.MediaType()
	if err != nil || mt != types.OCIManifestSchema1 {
		t.Errorf("%s: manifest media type %s (%v)", p, mt, err)
	}
}

// wantFiles are the layer's entries: type, mode, owner, time and body.
var wantFiles = []string{
	"etc/ 5 755 0:0 0 ",
	"etc/group 0 644 0:0 0 root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n",
	"etc/passwd 0 644 0:0 0 root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
	"home/ 5 755 0:0 0 ",
	"home/nonroot/ 5 700 65532:65532 0 ",
	"tmp/ 5 1777 0:0 0 ",
}

// checkFiles: the image's one OCI gzip layer holds wantFiles.
func checkFiles(t *testing.T, img v1.Image) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %v (%v)", layers, err)
	}
	if mt, err := layers[0].MediaType(); err != nil || mt != types.OCILayer {
		t.Errorf("layer media type %s (%v)", mt, err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %c %o %d:%d %d %s", h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.ModTime.Unix(), body))
	}
	if !reflect.DeepEqual(got, wantFiles) {
		t.Errorf("the layer holds\n%q\nwant\n%q", got, wantFiles)
	}
}
