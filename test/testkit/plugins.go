/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package testkit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/unix"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/plugins/host"
)

// pluginSources are the packages of the plugins the tests use, by binary
// name: the example plugins of plugins/examples and the host's test plugin
// "misbehave" (a ConflictStrategy that breaks the protocol on request).
var pluginSources = map[string]string{
	"yield-to-autoscalers":      "./plugins/examples/yield-to-autoscalers",
	"ignore-policy-annotations": "./plugins/examples/ignore-policy-annotations",
	"misbehave":                 "./plugins/host/testdata/misbehave",
}

// BuildPlugins builds every test plugin (pluginSources) into bin/test-plugins
// of the module and returns that directory. The directory is shared by
// every test package: `go build` relinks only what changed (a binary whose
// build ID matches its inputs is left alone, in well under a second), and a
// file lock keeps one package from reading a binary another is writing.
// It returns the binaries' SHA-256 checksums (hex) by name, read under
// that lock.
func BuildPlugins() (string, map[string]string, error) {
	root, err := localcp.ModuleRoot()
	if err != nil {
		return "", nil, err
	}
	dir := filepath.Join(root, "bin", "test-plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", nil, err
	}
	defer func() { _ = lock.Close() }()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return "", nil, fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer func() { _ = unix.Flock(int(lock.Fd()), unix.LOCK_UN) }()
	// -trimpath and CGO_ENABLED=0 as `make test` builds: the plugins
	// share its build cache, whichever clone it runs in.
	args := []string{"build", "-trimpath", "-o", dir + string(filepath.Separator)}
	for _, src := range pluginSources {
		args = append(args, src)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("build the test plugins: %v\n%s", err, out)
	}
	sums := map[string]string{}
	for name := range pluginSources {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "", nil, err
		}
		sum := sha256.Sum256(b)
		sums[name] = hex.EncodeToString(sum[:])
	}
	return dir, sums, nil
}

// pluginConfig is the host config of the named test plugins (BuildPlugins),
// with their real checksums and their kinds: "yield-to-autoscalers" is a
// ConflictStrategy, "ignore-policy-annotations" IgnorablePaths,
// "misbehave" a ConflictStrategy.
func pluginConfig(names ...string) (*host.Config, error) {
	kinds := map[string]string{"yield-to-autoscalers": "ConflictStrategy", "ignore-policy-annotations": "IgnorablePaths", "misbehave": "ConflictStrategy"}
	dir, sums, err := BuildPlugins()
	if err != nil {
		return nil, err
	}
	cfg := &host.Config{}
	for _, name := range names {
		if _, ok := pluginSources[name]; !ok {
			return nil, fmt.Errorf("no test plugin %q", name)
		}
		cfg.Plugins = append(cfg.Plugins, host.PluginConfig{Name: name, Path: filepath.Join(dir, name), SHA256: sums[name], Kind: kinds[name]})
	}
	return cfg, nil
}

// ExamplePlugins returns a Host for the named test plugins (pluginConfig)
// and a cleanup that closes it.
func ExamplePlugins(names ...string) (*host.Host, func(), error) {
	cfg, err := pluginConfig(names...)
	if err != nil {
		return nil, nil, err
	}
	h, err := host.New(cfg, host.Options{})
	if err != nil {
		return nil, nil, err
	}
	return h, h.Close, nil
}

// ExamplePluginConfig writes the --plugin-config file of the named test
// plugins (pluginConfig) into a temporary directory; it returns its path
// and a cleanup that removes it.
func ExamplePluginConfig(names ...string) (string, func(), error) {
	cfg, err := pluginConfig(names...)
	if err != nil {
		return "", nil, err
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "fieldops-plugin-config-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	path := filepath.Join(dir, "plugins.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		cleanup()
		return "", nil, err
	}
	return path, cleanup, nil
}
