/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package app

import (
	"bytes"
	"encoding/json"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// The manager logs JSON lines (zap's production configuration) unless
// --zap-devel asks for development logging.
func TestLoggingDefaultsToProduction(t *testing.T) {
	for _, tc := range []struct {
		args []string
		json bool
	}{
		{nil, true},
		{[]string{"--zap-devel"}, false},
	} {
		var f Flags
		fs := f.NewFlagSet("manager", false)
		if _, err := Parse(fs, tc.args); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		log := zap.New(zap.UseFlagOptions(&f.zapOpts), zap.WriteTo(&out))
		log.Info("hello", "k", "v")
		var line map[string]any
		isJSON := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &line) == nil
		if isJSON != tc.json {
			t.Errorf("args %v: JSON %v, want %v: %s", tc.args, isJSON, tc.json, out.String())
		}
		if isJSON && (line["msg"] != "hello" || line["k"] != "v" || line["level"] != "info") {
			t.Errorf("args %v: %s", tc.args, out.String())
		}
	}
}
