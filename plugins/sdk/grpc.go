/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package sdk

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/fieldops/fieldops/ownershipcore/fieldset"
	"github.com/fieldops/fieldops/ownershipcore/strategy"
	pluginv1 "github.com/fieldops/fieldops/plugins/proto/fieldops/plugin/v1"
)

// ErrMalformedAnswer wraps every answer of a plugin that breaks the
// protocol (a wrong count, an unknown decision, a path that does not
// parse). The host counts it as reason "malformed" and falls back.
var ErrMalformedAnswer = errors.New("malformed plugin answer")

var decisionsToWire = map[strategy.Decision]pluginv1.Decision{
	strategy.DecisionForce: pluginv1.Decision_DECISION_FORCE,
	strategy.DecisionYield: pluginv1.Decision_DECISION_YIELD,
	strategy.DecisionFail:  pluginv1.Decision_DECISION_FAIL,
}

var decisionsFromWire = map[pluginv1.Decision]strategy.Decision{
	pluginv1.Decision_DECISION_FORCE: strategy.DecisionForce,
	pluginv1.Decision_DECISION_YIELD: strategy.DecisionYield,
	pluginv1.Decision_DECISION_FAIL:  strategy.DecisionFail,
}

func gvkOf(obj *unstructured.Unstructured) *pluginv1.GroupVersionKind {
	gvk := obj.GroupVersionKind()
	return &pluginv1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}
}

func decodeObject(b []byte) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, fmt.Errorf("decode object: %w", err)
	}
	return u, nil
}

// ConflictStrategyPlugin is the go-plugin plugin of a conflict strategy:
// Impl on the plugin side, a validating client on the host side.
type ConflictStrategyPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl strategy.ConflictStrategy
}

// GRPCServer registers Impl.
func (p *ConflictStrategyPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pluginv1.RegisterConflictStrategyServer(s, &conflictServer{impl: p.Impl})
	return nil
}

// GRPCClient returns a *ConflictStrategyClient.
func (p *ConflictStrategyPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (interface{}, error) {
	return &ConflictStrategyClient{client: pluginv1.NewConflictStrategyClient(c)}, nil
}

type conflictServer struct {
	pluginv1.UnimplementedConflictStrategyServer
	impl strategy.ConflictStrategy
}

func (s *conflictServer) Resolve(ctx context.Context, req *pluginv1.ResolveRequest) (*pluginv1.ResolveResponse, error) {
	obj, err := decodeObject(req.GetObject())
	if err != nil {
		return nil, err
	}
	conflicts := make([]strategy.Conflict, len(req.GetConflicts()))
	for i, c := range req.GetConflicts() {
		p, err := fieldset.ParsePath(c.GetPath())
		if err != nil {
			return nil, fmt.Errorf("conflict %d: %w", i, err)
		}
		conflicts[i] = strategy.Conflict{Manager: c.GetManager(), Operation: metav1.ManagedFieldsOperationType(c.GetOperation()), Path: p}
	}
	answers, err := s.impl.Resolve(ctx, obj, req.GetFieldManager(), conflicts)
	if err != nil {
		return nil, callError(ctx, err)
	}
	out := &pluginv1.ResolveResponse{}
	for _, a := range answers {
		out.Resolutions = append(out.Resolutions, &pluginv1.Resolution{Decision: decisionsToWire[a.Decision], Message: a.Message})
	}
	return out, nil
}

// ConflictStrategyClient is the host's view of a conflict-strategy plugin.
// It implements strategy.ConflictStrategy and validates each answer:
// one resolution per conflict, each a known decision; otherwise an error
// wrapping ErrMalformedAnswer.
type ConflictStrategyClient struct {
	client pluginv1.ConflictStrategyClient
}

var _ strategy.ConflictStrategy = (*ConflictStrategyClient)(nil)

// Resolve implements strategy.ConflictStrategy.
func (c *ConflictStrategyClient) Resolve(ctx context.Context, obj *unstructured.Unstructured, manager string, conflicts []strategy.Conflict) ([]strategy.Resolution, error) {
	b, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	req := &pluginv1.ResolveRequest{Object: b, Gvk: gvkOf(obj), FieldManager: manager}
	for _, cf := range conflicts {
		req.Conflicts = append(req.Conflicts, &pluginv1.Conflict{Manager: cf.Manager, Operation: string(cf.Operation), Path: fieldset.FormatPath(cf.Path)})
	}
	resp, err := c.client.Resolve(ctx, req)
	if err != nil {
		return nil, err
	}
	return ValidateResolutions(resp, len(conflicts))
}

// ValidateResolutions checks a ResolveResponse against the number of
// conflicts asked about and converts it.
func ValidateResolutions(resp *pluginv1.ResolveResponse, want int) ([]strategy.Resolution, error) {
	if got := len(resp.GetResolutions()); got != want {
		return nil, fmt.Errorf("%w: %d resolutions for %d conflicts", ErrMalformedAnswer, got, want)
	}
	out := make([]strategy.Resolution, want)
	for i, r := range resp.GetResolutions() {
		d, ok := decisionsFromWire[r.GetDecision()]
		if !ok {
			return nil, fmt.Errorf("%w: resolution %d has unknown decision %v", ErrMalformedAnswer, i, r.GetDecision())
		}
		out[i] = strategy.Resolution{Decision: d, Message: r.GetMessage()}
	}
	return out, nil
}

// IgnorablePathsPlugin is the go-plugin plugin of an ignorable-paths
// provider.
type IgnorablePathsPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl strategy.IgnorablePaths
}

// GRPCServer registers Impl.
func (p *IgnorablePathsPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pluginv1.RegisterIgnorablePathsServer(s, &pathsServer{impl: p.Impl})
	return nil
}

// GRPCClient returns an *IgnorablePathsClient.
func (p *IgnorablePathsPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (interface{}, error) {
	return &IgnorablePathsClient{client: pluginv1.NewIgnorablePathsClient(c)}, nil
}

type pathsServer struct {
	pluginv1.UnimplementedIgnorablePathsServer
	impl strategy.IgnorablePaths
}

func (s *pathsServer) Paths(ctx context.Context, req *pluginv1.PathsRequest) (*pluginv1.PathsResponse, error) {
	obj, err := decodeObject(req.GetObject())
	if err != nil {
		return nil, err
	}
	set, err := s.impl.Paths(ctx, obj)
	if err != nil {
		return nil, callError(ctx, err)
	}
	out := &pluginv1.PathsResponse{}
	if set != nil {
		set.Iterate(func(p fieldpath.Path) { out.Paths = append(out.Paths, fieldset.FormatPath(p)) })
	}
	return out, nil
}

// IgnorablePathsClient is the host's view of an ignorable-paths plugin. It
// implements strategy.IgnorablePaths; a path that does not parse
// fails the whole answer with ErrMalformedAnswer.
type IgnorablePathsClient struct {
	client pluginv1.IgnorablePathsClient
}

var _ strategy.IgnorablePaths = (*IgnorablePathsClient)(nil)

// Paths implements strategy.IgnorablePaths.
func (c *IgnorablePathsClient) Paths(ctx context.Context, obj *unstructured.Unstructured) (*fieldpath.Set, error) {
	b, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	resp, err := c.client.Paths(ctx, &pluginv1.PathsRequest{Object: b, Gvk: gvkOf(obj)})
	if err != nil {
		return nil, err
	}
	return ValidatePaths(resp.GetPaths())
}

// ValidatePaths parses a plugin's paths into a set.
func ValidatePaths(paths []string) (*fieldpath.Set, error) {
	set, err := fieldset.ParsePathSet(paths)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedAnswer, err)
	}
	return set, nil
}

// callError is what a plugin's failed call returns to the host: the
// deadline or cancellation, when the call's context (the host's deadline,
// propagated by gRPC) is done, whatever the plugin said; else its error.
// The host names a call past its deadline a timeout, even when the
// plugin's answer arrives a moment before the host's own timer fires.
func callError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	return err
}
