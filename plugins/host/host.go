/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package host runs fieldops plugins: declared in a config file, each
// binary checked against its SHA-256 (go-plugin SecureConfig), started
// lazily on first use with AutoMTLS, one client per plugin, restarted when
// its process exits, every call bounded by a timeout and measured. A
// failing plugin never takes the manager down: calls return errors, and
// each use site falls back (WithFallback for conflict strategies; no extra
// paths for ignorable paths).
package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/plugins/sdk"
)

// DefaultTimeout bounds each plugin call.
const DefaultTimeout = 2 * time.Second

// ErrUnknownPlugin is returned for a name the config does not declare, or
// declares with another kind.
var ErrUnknownPlugin = errors.New("unknown plugin")

// Options tune a Host.
type Options struct {
	// Timeout bounds each call; DefaultTimeout if zero.
	Timeout time.Duration
	// Logger receives go-plugin's and the plugins' logs; silent if nil.
	Logger hclog.Logger
}

// Host owns the plugin processes. It is safe for concurrent use.
type Host struct {
	plugins map[string]PluginConfig
	opts    Options

	mu      sync.Mutex
	clients map[string]*plugin.Client
}

// New returns a Host for cfg; nothing starts until a plugin is called.
func New(cfg *Config, opts Options) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	h := &Host{plugins: map[string]PluginConfig{}, opts: opts, clients: map[string]*plugin.Client{}}
	for _, p := range cfg.Plugins {
		h.plugins[p.Name] = p
	}
	return h, nil
}

// Close stops every plugin process.
func (h *Host) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, c := range h.clients {
		c.Kill()
		delete(h.clients, name)
	}
}

// ConflictStrategy returns the conflict strategy plugin name, as an
// ownershipcore.ConflictStrategy. The process starts on the first call.
func (h *Host) ConflictStrategy(name string) (ownershipcore.ConflictStrategy, error) {
	if err := h.check(name, sdk.KindConflictStrategy); err != nil {
		return nil, err
	}
	return &conflictStrategy{h: h, name: name}, nil
}

// IgnorablePaths returns the ignorable-paths plugin name, as an
// ownershipcore.IgnorablePaths.
func (h *Host) IgnorablePaths(name string) (ownershipcore.IgnorablePaths, error) {
	if err := h.check(name, sdk.KindIgnorablePaths); err != nil {
		return nil, err
	}
	return &ignorablePaths{h: h, name: name}, nil
}

func (h *Host) check(name, kind string) error {
	p, ok := h.plugins[name]
	if !ok {
		return fmt.Errorf("%w %q: not in the plugin config", ErrUnknownPlugin, name)
	}
	if p.Kind != kind {
		return fmt.Errorf("%w %q: it is a %s plugin, not a %s", ErrUnknownPlugin, name, p.Kind, kind)
	}
	return nil
}

// dispense returns the plugin's implementation, starting (or restarting)
// its process if needed.
func (h *Host) dispense(name string) (interface{}, error) {
	p := h.plugins[name]
	h.mu.Lock()
	c, ok := h.clients[name]
	if ok && c.Exited() {
		c.Kill()
		ok = false
	}
	if !ok {
		sum, _ := hex.DecodeString(p.SHA256) // validated in New
		c = plugin.NewClient(&plugin.ClientConfig{
			HandshakeConfig:  sdk.Handshake,
			Plugins:          sdk.ClientSet(),
			Cmd:              exec.Command(p.Path),
			SecureConfig:     &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()},
			AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
			AutoMTLS:         true,
			Logger:           h.opts.Logger.Named(name),
		})
		h.clients[name] = c
	}
	h.mu.Unlock()
	rpc, err := c.Client()
	if err != nil {
		h.forget(name, c)
		return nil, fmt.Errorf("start plugin %q: %w", name, err)
	}
	impl, err := rpc.Dispense(p.Kind)
	if err != nil {
		h.forget(name, c)
		return nil, fmt.Errorf("dispense plugin %q: %w", name, err)
	}
	return impl, nil
}

// forget kills c and drops it, so that the next call starts a new process.
func (h *Host) forget(name string, c *plugin.Client) {
	c.Kill()
	h.mu.Lock()
	if h.clients[name] == c {
		delete(h.clients, name)
	}
	h.mu.Unlock()
}

// call runs fn against the plugin with the timeout, measures it, and
// classifies a failure for fieldops_plugin_failures_total.
func (h *Host) call(ctx context.Context, name, method string, fn func(ctx context.Context, impl interface{}) error) error {
	start := time.Now()
	defer func() { metrics.PluginCallDuration.WithLabelValues(name, method).Observe(time.Since(start).Seconds()) }()
	impl, err := h.dispense(name)
	if err != nil {
		metrics.PluginFailuresTotal.WithLabelValues(name, "start").Inc()
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, h.opts.Timeout)
	defer cancel()
	err = fn(ctx, impl)
	if err == nil {
		return nil
	}
	reason := "error"
	switch {
	case errors.Is(err, sdk.ErrMalformedAnswer):
		reason = "malformed"
	case ctx.Err() != nil, status.Code(err) == codes.DeadlineExceeded, pastDeadline(ctx):
		// gRPC may report the deadline (its own timer) a moment before
		// ctx.Err() is set, and the plugin's copy of the deadline may fire
		// first, its answer (an error of its own) arriving before either:
		// any failure that ends past the deadline is the timeout.
		reason = "timeout"
		err = fmt.Errorf("plugin %q: %s timed out after %s: %w", name, method, h.opts.Timeout, err)
	default:
		h.mu.Lock()
		c := h.clients[name]
		h.mu.Unlock()
		if c != nil && h.exited(c) {
			reason = "exited"
			h.forget(name, c)
			err = fmt.Errorf("plugin %q exited during %s (restarted on the next call): %w", name, method, err)
		}
	}
	metrics.PluginFailuresTotal.WithLabelValues(name, reason).Inc()
	if reason != "timeout" && reason != "exited" {
		err = fmt.Errorf("plugin %q: %s: %w", name, method, err)
	}
	return err
}

// exited waits briefly for go-plugin to notice a dead process: a call
// can fail a moment before the process's exit is reaped.
func (h *Host) exited(c *plugin.Client) bool {
	for i := 0; i < 20; i++ {
		if c.Exited() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

type conflictStrategy struct {
	h    *Host
	name string
}

func (s *conflictStrategy) Resolve(ctx context.Context, obj *unstructured.Unstructured, manager string, conflicts []ownershipcore.Conflict) ([]ownershipcore.Resolution, error) {
	var out []ownershipcore.Resolution
	err := s.h.call(ctx, s.name, "Resolve", func(ctx context.Context, impl interface{}) error {
		var err error
		out, err = impl.(ownershipcore.ConflictStrategy).Resolve(ctx, obj, manager, conflicts)
		return err
	})
	return out, err
}

type ignorablePaths struct {
	h    *Host
	name string
}

func (p *ignorablePaths) Paths(ctx context.Context, obj *unstructured.Unstructured) (*fieldpath.Set, error) {
	var out *fieldpath.Set
	err := p.h.call(ctx, p.name, "Paths", func(ctx context.Context, impl interface{}) error {
		var err error
		out, err = impl.(ownershipcore.IgnorablePaths).Paths(ctx, obj)
		return err
	})
	return out, err
}

// WithFallback returns a strategy that asks primary and, when it fails
// (an error, a timeout, a dead or misbehaving plugin), answers with
// fallback instead and reports the failure to onFailure (for a condition
// or an event). The apply goes on either way.
func WithFallback(primary, fallback ownershipcore.ConflictStrategy, onFailure func(error)) ownershipcore.ConflictStrategy {
	return fallbackStrategy{primary: primary, fallback: fallback, onFailure: onFailure}
}

type fallbackStrategy struct {
	primary, fallback ownershipcore.ConflictStrategy
	onFailure         func(error)
}

func (f fallbackStrategy) Resolve(ctx context.Context, obj *unstructured.Unstructured, manager string, conflicts []ownershipcore.Conflict) ([]ownershipcore.Resolution, error) {
	out, err := f.primary.Resolve(ctx, obj, manager, conflicts)
	if err == nil {
		return out, nil
	}
	if f.onFailure != nil {
		f.onFailure(err)
	}
	return f.fallback.Resolve(ctx, obj, manager, conflicts)
}

// ErrDisabled is returned when an object names a plugin but the manager
// runs without plugins (the ExternalPlugins gate is off, or no
// --plugin-config).
var ErrDisabled = errors.New("plugins are disabled: run the manager with --feature-gates=ExternalPlugins=true and --plugin-config")

// Strategy returns the conflict-strategy plugin name wrapped with
// WithFallback. A nil Host returns ErrDisabled.
func (h *Host) Strategy(name string, fallback ownershipcore.ConflictStrategy, onFailure func(error)) (ownershipcore.ConflictStrategy, error) {
	if h == nil {
		return nil, ErrDisabled
	}
	cs, err := h.ConflictStrategy(name)
	if err != nil {
		return nil, err
	}
	return WithFallback(cs, fallback, onFailure), nil
}

// IgnoredPaths unites the paths the ignorable-paths plugins names give for
// obj. A plugin that fails adds nothing; its error is returned in failed so
// the caller can report it, and the others still count. A nil Host with
// names returns ErrDisabled.
func (h *Host) IgnoredPaths(ctx context.Context, names []string, obj *unstructured.Unstructured) (set *fieldpath.Set, failed []error, err error) {
	set = fieldpath.NewSet()
	if len(names) == 0 {
		return set, nil, nil
	}
	if h == nil {
		return nil, nil, ErrDisabled
	}
	for _, name := range names {
		ip, err := h.IgnorablePaths(name)
		if err != nil {
			return nil, nil, err
		}
		paths, err := ip.Paths(ctx, obj)
		if err != nil {
			failed = append(failed, err)
			continue
		}
		set = set.Union(paths)
	}
	return set, failed, nil
}

// pastDeadline reports whether ctx's deadline has passed, whether or not
// its timer has fired yet.
func pastDeadline(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}
