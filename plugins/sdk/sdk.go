/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package sdk is what a fieldops plugin is written with: implement
// strategy.ConflictStrategy or strategy.IgnorablePaths (or both)
// in Go and call Serve from main. The handshake, the gRPC plumbing over
// hashicorp/go-plugin and the conversion to and from the wire protocol
// (plugins/proto) live here, so a plugin author writes none of them:
//
//	func main() {
//		sdk.Serve(sdk.Plugins{ConflictStrategy: myStrategy{}})
//	}
//
// The host side (plugins/host) uses the same package for its clients,
// which validate every answer before fieldops uses it.
package sdk

import (
	"github.com/hashicorp/go-plugin"

	"github.com/fieldops/fieldops/ownershipcore/strategy"
)

// Handshake values. ProtocolVersion must change, and with it the proto
// package version (fieldops.plugin.v1 → v2), whenever a message or method
// of plugins/proto changes incompatibly: a removed or renumbered field, a
// changed meaning of a field or of a Decision, a removed method. Adding an
// optional field or a new service does not need a change. go-plugin then
// refuses to pair a host and a plugin of different versions with a clear
// error instead of misreading each other. The cookie only tells a plugin it
// was started by fieldops (not a security measure: checksums are, see
// plugins/host).
const (
	ProtocolVersion  = 1
	MagicCookieKey   = "FIELDOPS_PLUGIN"
	MagicCookieValue = "5f2c7d8e-fieldops-field-ownership-plugin"
)

// Handshake is the go-plugin handshake of every fieldops plugin.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   MagicCookieKey,
	MagicCookieValue: MagicCookieValue,
}

// Names of the plugin kinds in the go-plugin plugin set; the `kind` of a
// plugin in the host's config.
const (
	KindConflictStrategy = "ConflictStrategy"
	KindIgnorablePaths   = "IgnorablePaths"
)

// Plugins are the implementations a plugin binary serves; at least one.
type Plugins struct {
	ConflictStrategy strategy.ConflictStrategy
	IgnorablePaths   strategy.IgnorablePaths
}

// PluginSet is the go-plugin plugin set of p (for Serve and for tests with
// plugin.TestPluginGRPCConn).
func PluginSet(p Plugins) plugin.PluginSet {
	set := plugin.PluginSet{}
	if p.ConflictStrategy != nil {
		set[KindConflictStrategy] = &ConflictStrategyPlugin{Impl: p.ConflictStrategy}
	}
	if p.IgnorablePaths != nil {
		set[KindIgnorablePaths] = &IgnorablePathsPlugin{Impl: p.IgnorablePaths}
	}
	return set
}

// ClientSet is the plugin set the host dispenses from: both kinds, with no
// implementation (the plugin process has it).
func ClientSet() plugin.PluginSet {
	return plugin.PluginSet{
		KindConflictStrategy: &ConflictStrategyPlugin{},
		KindIgnorablePaths:   &IgnorablePathsPlugin{},
	}
}

// Serve serves p over gRPC until the host stops the process. It does not
// return; call it last in main.
func Serve(p Plugins) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         PluginSet(p),
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}
