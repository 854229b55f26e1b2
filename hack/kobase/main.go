/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command kobase writes a minimal non-root base image for ko, for builds
// without a registry (make release offline): an OCI image layout holding a
// linux/amd64 and linux/arm64 image of one layer with what the manager
// needs of gcr.io/distroless/static:nonroot (the users root, nobody and
// nonroot 65532 in /etc/passwd and /etc/group, /home/nonroot, /tmp), and
// the same configuration (user 65532, working directory /home/nonroot). It
// has no CA certificates and no time zone data: the manager talks to the
// apiserver only, with the cluster's CA from its ServiceAccount. The
// layout is written as ko's image cache (KOCACHE/img), which ko reads a
// base image named by digest from without a registry:
//
//	go run ./hack/kobase --cache bin/kocache   # prints the base image reference
//	KOCACHE=bin/kocache KO_DEFAULTBASEIMAGE=<that reference> ko build ...
//
// The images, index and layout are go-containerregistry's, the library
// ko builds on; the layer's files are the same on every run (fixed times
// and modes), so the digest is too.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Repository is the name the base image is referred to by; nothing is
// ever pulled from it (ko finds the digest in its cache).
const Repository = "fieldops.local/base/static-nonroot"

// platforms are the release's (.ko.yaml's defaultPlatforms, the
// Makefile's RELEASE_PLATFORMS), arm64 with its variant v8 as the base
// has always recorded it.
var platforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64", Variant: "v8"},
}

// epoch is every time the base records: its files', its images' and
// their history's.
var epoch = time.Unix(0, 0).UTC()

func main() {
	cache := flag.String("cache", "bin/kocache", "ko's cache directory (KOCACHE); the layout is written to its img/")
	flag.Parse()
	ref, err := write(filepath.Join(*cache, "img"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kobase:", err)
		os.Exit(1)
	}
	fmt.Println(ref)
}

// write replaces the OCI image layout at dir and returns the base image's
// reference, Repository@<digest of its index>.
func write(dir string) (string, error) {
	idx, err := index()
	if err != nil {
		return "", err
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return "", err
	}
	// ko's cache (ko's pkg/commands/cache.go) looks a digest up among the
	// layout index's own entries only (partial.FindManifests): the index
	// and each platform's image are listed there.
	if err := p.AppendIndex(idx); err != nil {
		return "", err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return "", err
	}
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return "", err
		}
		if err := p.AppendImage(img, layout.WithPlatform(*d.Platform)); err != nil {
			return "", err
		}
	}
	h, err := idx.Digest()
	if err != nil {
		return "", err
	}
	return Repository + "@" + h.String(), nil
}

// index is the base: an OCI image index of one image per platform, all
// of the one layer.
func index() (v1.ImageIndex, error) {
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		b, err := layer()
		return io.NopCloser(bytes.NewReader(b)), err
	}, tarball.WithCompressionLevel(gzip.BestCompression), tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	var adds []mutate.IndexAddendum
	for _, p := range platforms {
		img, err := image(p, l)
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return mutate.AppendManifests(empty.Index, adds...), nil
}

// image is p's OCI image of l, configured as distroless's static:nonroot
// is: user 65532, working directory /home/nonroot, the usual PATH.
func image(p v1.Platform, l v1.Layer) (v1.Image, error) {
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.ConfigFile(base, &v1.ConfigFile{
		Architecture: p.Architecture,
		OS:           p.OS,
		Variant:      p.Variant,
		Created:      v1.Time{Time: epoch},
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			User:       "65532",
			WorkingDir: "/home/nonroot",
			Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		},
	})
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{
		Layer:   l,
		History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "fieldops hack/kobase: users, /home/nonroot, /tmp"},
	})
}

// entry is one file or directory of the layer.
type entry struct {
	name     string
	mode     int64
	uid, gid int
	body     string
	dir      bool
}

// entries are the layer's files and directories, in the tar's order.
var entries = []entry{
	{name: "etc/", mode: 0o755, dir: true},
	{name: "etc/group", mode: 0o644, body: "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"},
	{name: "etc/passwd", mode: 0o644, body: "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
	{name: "home/", mode: 0o755, dir: true},
	{name: "home/nonroot/", mode: 0o700, uid: 65532, gid: 65532, dir: true},
	{name: "tmp/", mode: 0o1777, dir: true},
}

// layer is the base's one layer, as an uncompressed PAX tar. The library
// builds a layer from a tar but writes none of arbitrary files, modes
// and owners, so the tar is archive/tar's.
func layer() ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: epoch, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
