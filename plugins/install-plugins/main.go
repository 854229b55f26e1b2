/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command install-plugins is the entrypoint of a plugin image built with
// ko (the example plugins' image of `make release`): the image's kodata
// holds one directory per platform (linux_amd64, linux_arm64) with the
// plugin binaries, and
//
//	install-plugins DIR
//
// copies those of the platform it runs on into DIR, executable by every
// user (the manager runs as 65532). config/plugins runs it as the
// manager's init container, with DIR the volume the manager reads its
// plugins from; plugins.yaml pins each binary's SHA-256.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: install-plugins DIR")
		os.Exit(2)
	}
	n, err := install(dataDir(), runtime.GOOS+"_"+runtime.GOARCH, os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "install-plugins:", err)
		os.Exit(1)
	}
	fmt.Printf("installed %d plugins into %s\n", n, os.Args[1])
}

// dataDir is where ko puts the image's kodata.
func dataDir() string {
	if d := os.Getenv("KO_DATA_PATH"); d != "" {
		return d
	}
	return "/var/run/ko"
}

// install copies every regular file of data/platform into dir with mode
// 0755 and returns how many it copied. A platform without plugins is an
// error: the image was built without them.
func install(data, platform, dir string) (int, error) {
	src := filepath.Join(data, platform)
	entries, err := os.ReadDir(src)
	if err != nil {
		return 0, fmt.Errorf("no plugins for %s in this image: %w", platform, err)
	}
	n := 0
	for _, e := range entries {
		info, err := os.Stat(filepath.Join(src, e.Name())) // kodata entries may be symlinks
		if err != nil {
			return n, err
		}
		if !info.Mode().IsRegular() {
			continue
		}
		if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return n, err
		}
		n++
	}
	if n == 0 {
		return 0, fmt.Errorf("no plugins for %s in this image (%s is empty)", platform, src)
	}
	return n, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	// The umask may have taken bits off at creation.
	return os.Chmod(to, 0o755)
}
