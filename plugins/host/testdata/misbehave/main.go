/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command misbehave is a test plugin that breaks the rules on request, to
// test the host: as a conflict strategy, the field manager it is asked
// about, or else the manager owning a conflicting field, picks the
// behaviour ("sleep": past any timeout; "crash": SIGKILL itself mid-call;
// "bad-decision": an unknown decision; anything else: force). As ignorable paths it answers a path that does not parse when the
// object is named "bad-path". It speaks the wire protocol directly, as a
// buggy plugin not using the SDK would.
package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pluginv1 "github.com/fieldops/fieldops/plugins/proto/fieldops/plugin/v1"
	"github.com/fieldops/fieldops/plugins/sdk"
)

type server struct {
	pluginv1.UnimplementedConflictStrategyServer
	pluginv1.UnimplementedIgnorablePathsServer
}

func (server) Resolve(ctx context.Context, req *pluginv1.ResolveRequest) (*pluginv1.ResolveResponse, error) {
	decision := pluginv1.Decision_DECISION_FORCE
	behaviour := req.GetFieldManager()
	for _, c := range req.GetConflicts() {
		if m := c.GetManager(); m == "sleep" || m == "crash" || m == "bad-decision" {
			behaviour = m
		}
	}
	switch behaviour {
	case "sleep":
		// Past any timeout: never an answer, so a call can only time out
		// (an answer sent when the server's copy of the deadline fires
		// could reach the host first and pass for a success).
		select {
		case <-time.After(time.Minute):
		case <-ctx.Done():
		}
		return nil, errors.New("misbehave: slept past the deadline")
	case "crash":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute)
	case "bad-decision":
		decision = pluginv1.Decision(42)
	}
	out := &pluginv1.ResolveResponse{}
	for range req.GetConflicts() {
		out.Resolutions = append(out.Resolutions, &pluginv1.Resolution{Decision: decision, Message: "misbehave"})
	}
	return out, nil
}

func (server) Paths(_ context.Context, req *pluginv1.PathsRequest) (*pluginv1.PathsResponse, error) {
	if bytes.Contains(req.GetObject(), []byte(`"name":"bad-path"`)) {
		return &pluginv1.PathsResponse{Paths: []string{"spec..replicas["}}, nil
	}
	return &pluginv1.PathsResponse{Paths: []string{".spec.replicas"}}, nil
}

type raw struct {
	plugin.NetRPCUnsupportedPlugin
	register func(*grpc.Server)
}

func (r *raw) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error { r.register(s); return nil }
func (r *raw) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (interface{}, error) {
	return nil, nil
}

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: sdk.Handshake,
		Plugins: plugin.PluginSet{
			sdk.KindConflictStrategy: &raw{register: func(s *grpc.Server) { pluginv1.RegisterConflictStrategyServer(s, server{}) }},
			sdk.KindIgnorablePaths:   &raw{register: func(s *grpc.Server) { pluginv1.RegisterIgnorablePathsServer(s, server{}) }},
		},
		GRPCServer: plugin.DefaultGRPCServer,
	})
}
