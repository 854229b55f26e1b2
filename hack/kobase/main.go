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
// The files are the same on every run (fixed times and modes), so the
// digest is too.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Repository is the name the base image is referred to by; nothing is
// ever pulled from it (ko finds the digest in its cache).
const Repository = "fieldops.local/base/static-nonroot"

const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

type descriptor struct {
	MediaType string            `json:"mediaType"`
	Digest    string            `json:"digest"`
	Size      int64             `json:"size"`
	Platform  *platform         `json:"platform,omitempty"`
	Annotate  map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Variant      string `json:"variant,omitempty"`
}

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
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		return "", err
	}
	l := layout{dir: dir}
	tarball, err := layer()
	if err != nil {
		return "", err
	}
	diffID := sha256.Sum256(tarball)
	gz, err := gzipped(tarball)
	if err != nil {
		return "", err
	}
	layerDesc, err := l.blob(mediaLayer, gz, nil)
	if err != nil {
		return "", err
	}
	var manifests []descriptor
	for _, p := range []platform{{Architecture: "amd64", OS: "linux"}, {Architecture: "arm64", OS: "linux", Variant: "v8"}} {
		d, err := l.image(p, layerDesc, "sha256:"+hex.EncodeToString(diffID[:]))
		if err != nil {
			return "", err
		}
		manifests = append(manifests, d)
	}
	idxDesc, err := l.json(mediaIndex, map[string]any{"schemaVersion": 2, "mediaType": mediaIndex, "manifests": manifests}, nil)
	if err != nil {
		return "", err
	}
	// ko's cache looks a digest up among the layout index's own entries:
	// the index and each platform's image are listed.
	top, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mediaIndex, "manifests": append([]descriptor{idxDesc}, manifests...)})
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "index.json"), top, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		return "", err
	}
	return Repository + "@" + idxDesc.Digest, nil
}

// layout writes blobs into an OCI image layout.
type layout struct{ dir string }

// blob writes b and returns its descriptor.
func (l layout) blob(mediaType string, b []byte, p *platform) (descriptor, error) {
	sum := sha256.Sum256(b)
	h := hex.EncodeToString(sum[:])
	if err := os.WriteFile(filepath.Join(l.dir, "blobs", "sha256", h), b, 0o644); err != nil {
		return descriptor{}, err
	}
	return descriptor{MediaType: mediaType, Digest: "sha256:" + h, Size: int64(len(b)), Platform: p}, nil
}

// json writes v as a JSON blob.
func (l layout) json(mediaType string, v any, p *platform) (descriptor, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return descriptor{}, err
	}
	return l.blob(mediaType, b, p)
}

// image writes the configuration and manifest of p's image of the one
// layer and returns the manifest's descriptor.
func (l layout) image(p platform, layer descriptor, diffID string) (descriptor, error) {
	epoch := time.Unix(0, 0).UTC()
	cfg := map[string]any{
		"architecture": p.Architecture,
		"os":           p.OS,
		"created":      epoch,
		"config": map[string]any{
			"User":       "65532",
			"WorkingDir": "/home/nonroot",
			"Env":        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{diffID}},
		"history": []map[string]any{{"created": epoch, "created_by": "fieldops hack/kobase: users, /home/nonroot, /tmp"}},
	}
	if p.Variant != "" {
		cfg["variant"] = p.Variant
	}
	cfgDesc, err := l.json(mediaConfig, cfg, nil)
	if err != nil {
		return descriptor{}, err
	}
	return l.json(mediaManifest, map[string]any{"schemaVersion": 2, "mediaType": mediaManifest, "config": cfgDesc, "layers": []descriptor{layer}}, &p)
}

// layer is the base's one layer, as an uncompressed tar.
func layer() ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	for _, e := range []struct {
		name     string
		mode     int64
		uid, gid int
		body     string
		dir      bool
	}{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, body: "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"},
		{name: "etc/passwd", mode: 0o644, body: "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: 65532, gid: 65532, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	} {
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

func gzipped(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
