/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package logcap

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Whatever the level zap is set to, V(8) (client-go's request and
// response bodies) is never enabled nor written; V(7) and below are as
// zap says.
func TestLoggerNeverEnablesBodyLogging(t *testing.T) {
	for _, level := range []int{0, 5, 7, 8, 10} {
		var buf bytes.Buffer
		l := Logger(zap.New(zap.WriteTo(&buf), zap.Level(zapcore.Level(-level))))
		for v := 0; v <= 10; v++ {
			want := v <= level && v <= MaxV
			if got := l.V(v).Enabled(); got != want {
				t.Errorf("zap level %d: V(%d) enabled %v, want %v", level, v, got, want)
			}
			l.WithName("x").WithValues("k", "v").V(v).Info("line", "v", v)
		}
		if n := strings.Count(buf.String(), `"msg":"line"`); n != min(level, MaxV)+1 {
			t.Errorf("zap level %d: %d lines written, want %d", level, n, min(level, MaxV)+1)
		}
	}
}
