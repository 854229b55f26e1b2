/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package host

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/plugins/sdk"
)

// Config is the --plugin-config file: every plugin the manager may start.
//
//	plugins:
//	- name: yield-to-autoscalers
//	  path: /plugins/yield-to-autoscalers     # relative: to the config file
//	  sha256: 3b1f…                            # of the binary, 64 hex digits
//	  kind: ConflictStrategy                   # or IgnorablePaths
type Config struct {
	Plugins []PluginConfig `json:"plugins"`
}

// PluginConfig declares one plugin.
type PluginConfig struct {
	// Name is how FieldPatches and ManagedWorkloads refer to the plugin.
	Name string `json:"name"`
	// Path of the binary.
	Path string `json:"path"`
	// SHA256 of the binary, hex: go-plugin refuses to start a binary whose
	// checksum differs (SecureConfig).
	SHA256 string `json:"sha256"`
	// Kind is ConflictStrategy or IgnorablePaths.
	Kind string `json:"kind"`
}

// LoadConfig reads and validates a config file. Relative paths are
// resolved against the file's directory.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plugin config: %w", err)
	}
	cfg := &Config{}
	if err := yaml.UnmarshalStrict(b, cfg); err != nil {
		return nil, fmt.Errorf("plugin config %s: %w", path, err)
	}
	for i := range cfg.Plugins {
		if p := &cfg.Plugins[i]; p.Path != "" && !filepath.IsAbs(p.Path) {
			p.Path = filepath.Join(filepath.Dir(path), p.Path)
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("plugin config %s: %w", path, err)
	}
	return cfg, nil
}

// Validate checks names (unique, non-empty), kinds, paths and checksums.
func (c *Config) Validate() error {
	seen := map[string]bool{}
	for i, p := range c.Plugins {
		switch {
		case p.Name == "":
			return fmt.Errorf("plugins[%d]: name is required", i)
		case seen[p.Name]:
			return fmt.Errorf("plugins[%d]: duplicate name %q", i, p.Name)
		case p.Path == "":
			return fmt.Errorf("plugin %q: path is required", p.Name)
		case p.Kind != sdk.KindConflictStrategy && p.Kind != sdk.KindIgnorablePaths:
			return fmt.Errorf("plugin %q: kind %q is not %s or %s", p.Name, p.Kind, sdk.KindConflictStrategy, sdk.KindIgnorablePaths)
		}
		if sum, err := hex.DecodeString(p.SHA256); err != nil || len(sum) != 32 {
			return fmt.Errorf("plugin %q: sha256 must be 64 hex digits", p.Name)
		}
		seen[p.Name] = true
	}
	return nil
}
