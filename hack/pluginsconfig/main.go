/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command pluginsconfig prints config/plugins/plugins.yaml with each
// plugin's sha256 set to that of the binary of the same name in --dir:
// the plugins.yaml that goes with a plugin image holding those binaries
// (make release writes one per platform).
//
//	go run ./hack/pluginsconfig --dir dist/plugins/linux_amd64 > plugins.yaml
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/plugins/host"
)

func main() {
	dir := flag.String("dir", "", "directory holding the plugin binaries; required")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "pluginsconfig:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	if dir == "" {
		return fmt.Errorf("--dir is required")
	}
	root, err := localcp.ModuleRoot()
	if err != nil {
		return err
	}
	// Read as plain YAML: the committed sums are placeholders.
	raw, err := os.ReadFile(filepath.Join(root, "config", "plugins", "plugins.yaml"))
	if err != nil {
		return err
	}
	var cfg host.Config
	var plain struct {
		Plugins []map[string]any `json:"plugins"`
	}
	if err := yaml.Unmarshal(raw, &plain); err != nil {
		return err
	}
	for _, p := range plain.Plugins {
		path, _ := p["path"].(string)
		b, err := os.ReadFile(filepath.Join(dir, filepath.Base(path)))
		if err != nil {
			return fmt.Errorf("plugin %v: %w", p["name"], err)
		}
		sum := sha256.Sum256(b)
		name, _ := p["name"].(string)
		kind, _ := p["kind"].(string)
		cfg.Plugins = append(cfg.Plugins, host.PluginConfig{Name: name, Path: path, SHA256: hex.EncodeToString(sum[:]), Kind: kind})
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	fmt.Printf("# The plugins of the example plugin image, for config/plugins\n# (--plugin-config); the sums are those of %s.\n", filepath.Base(dir))
	_, err = os.Stdout.Write(out)
	return err
}
