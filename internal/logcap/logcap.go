/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package logcap keeps the manager's log below the verbosity at which
// client-go writes request and response bodies.
//
// client-go's REST client logs every request and response body at V(8)
// through the logger of the request's context (k8s.io/client-go/rest,
// logBody), and a controller's context carries the manager's logger: a
// Secret's data, a target's values and the previous values fieldops keeps
// would reach the log at --zap-log-level=8 or more. fieldops puts no
// target value in its logs at any level, so the manager never enables
// V(8).
package logcap

import "github.com/go-logr/logr"

// MaxV is the highest verbosity the manager logs at: one below client-go's
// body logging (V(8)).
const MaxV = 7

// Logger returns l with every level above MaxV disabled, whatever l's own
// level.
func Logger(l logr.Logger) logr.Logger {
	if l.GetSink() == nil {
		return l
	}
	return logr.New(sink{l.GetSink()})
}

// sink is a logr.LogSink that disables levels above MaxV.
type sink struct{ next logr.LogSink }

func (s sink) Init(info logr.RuntimeInfo) {
	info.CallDepth++
	s.next.Init(info)
}
func (s sink) Enabled(level int) bool { return level <= MaxV && s.next.Enabled(level) }
func (s sink) Info(level int, msg string, kv ...any) {
	if level <= MaxV {
		s.next.Info(level, msg, kv...)
	}
}
func (s sink) Error(err error, msg string, kv ...any) { s.next.Error(err, msg, kv...) }
func (s sink) WithValues(kv ...any) logr.LogSink      { return sink{s.next.WithValues(kv...)} }
func (s sink) WithName(name string) logr.LogSink      { return sink{s.next.WithName(name)} }

// WithCallDepth keeps the caller annotations of the sink below right.
func (s sink) WithCallDepth(depth int) logr.LogSink {
	if d, ok := s.next.(logr.CallDepthLogSink); ok {
		return sink{d.WithCallDepth(depth)}
	}
	return s
}
