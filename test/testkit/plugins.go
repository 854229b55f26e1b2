package testkit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/plugins/host"
)

// ExamplePlugins builds the example plugins of plugins/examples (by
// directory name, with their kind: "yield-to-autoscalers" is a
// ConflictStrategy, "ignore-policy-annotations" IgnorablePaths) and the
// host's test plugin "misbehave" (a ConflictStrategy that breaks the
// protocol on request, plugins/host/testdata/misbehave) into a temporary
// directory and returns a Host for them, with their real checksums, and a
// cleanup.
func ExamplePlugins(names ...string) (*host.Host, func(), error) {
	path, cleanup, err := ExamplePluginConfig(names...)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := host.LoadConfig(path)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	h, err := host.New(cfg, host.Options{})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return h, func() { h.Close(); cleanup() }, nil
}

// ExamplePluginConfig builds the plugins as ExamplePlugins does and
// writes their --plugin-config file (plugins.yaml, beside them); it
// returns its path and a cleanup.
func ExamplePluginConfig(names ...string) (string, func(), error) {
	kinds := map[string]string{"yield-to-autoscalers": "ConflictStrategy", "ignore-policy-annotations": "IgnorablePaths", "misbehave": "ConflictStrategy"}
	sources := map[string]string{"misbehave": "./plugins/host/testdata/misbehave"}
	root, err := localcp.ModuleRoot()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "fieldops-example-plugins-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	cfg := &host.Config{}
	for _, name := range names {
		bin := filepath.Join(dir, name)
		src, ok := sources[name]
		if !ok {
			src = "./plugins/examples/" + name
		}
		cmd := exec.Command("go", "build", "-o", bin, src)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			cleanup()
			return "", nil, fmt.Errorf("build plugin %s: %v\n%s", name, err, out)
		}
		b, err := os.ReadFile(bin)
		if err != nil {
			cleanup()
			return "", nil, err
		}
		sum := sha256.Sum256(b)
		cfg.Plugins = append(cfg.Plugins, host.PluginConfig{Name: name, Path: bin, SHA256: hex.EncodeToString(sum[:]), Kind: kinds[name]})
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	path := filepath.Join(dir, "plugins.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		cleanup()
		return "", nil, err
	}
	return path, cleanup, nil
}
