/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package release

import (
	"strings"
	"testing"
)

// values.schema.json refuses, at render, values of the wrong type or
// shape, each error naming the value.
func TestChartSchemaRefuses(t *testing.T) {
	for _, tc := range []struct {
		values map[string]any
		path   string
	}{
		{map[string]any{"replicas": "two"}, "/replicas"},
		{map[string]any{"replicas": -1}, "/replicas"},
		{map[string]any{"replicas": 1.5}, "/replicas"},
		{map[string]any{"image": map[string]any{"digest": "sha256:abc"}}, "/image/digest"},
		{map[string]any{"image": map[string]any{"digest": "v0.2.0"}}, "/image/digest"},
		{map[string]any{"image": map[string]any{"pullPolicy": "Sometimes"}}, "/image/pullPolicy"},
		{map[string]any{"image": map[string]any{"repository": ""}}, "/image/repository"},
		{map[string]any{"imagePullSecrets": []any{"regcred"}}, "/imagePullSecrets/0"},
		{map[string]any{"namespace": map[string]any{"create": "yes"}}, "/namespace/create"},
		{map[string]any{"podDisruptionBudget": map[string]any{"maxUnavailable": "150%"}}, "/podDisruptionBudget/maxUnavailable"},
		{map[string]any{"podDisruptionBudget": map[string]any{"minAvailable": -1}}, "/podDisruptionBudget/minAvailable"},
		{map[string]any{"sharding": map[string]any{"shards": []any{"A"}}}, "/sharding/shards/0"},
		{map[string]any{"sharding": map[string]any{"shards": []any{"a", "a"}}}, "/sharding/shards"},
		{map[string]any{"sharding": map[string]any{"shards": "a"}}, "/sharding/shards"},
		{map[string]any{"tenancy": map[string]any{"actWithManagerRights": "false"}}, "/tenancy/actWithManagerRights"},
		{map[string]any{"networkPolicy": map[string]any{"enabled": 1}}, "/networkPolicy/enabled"},
		{map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "lots"}}}, "/resources/limits/memory"},
		{map[string]any{"resources": map[string]any{"limit": map[string]any{}}}, "/resources"},
		{map[string]any{"goMemLimit": "400MB"}, "/goMemLimit"},
		{map[string]any{"extraArgs": []any{"concurrency=8"}}, "/extraArgs/0"},
		{map[string]any{"nodeSelector": map[string]any{"disk": true}}, "/nodeSelector/disk"},
		{map[string]any{"replica": 2}, "replica"},
	} {
		_, err := renderChartErr(t, tc.values, "v1.30.0")
		if err == nil || !strings.Contains(err.Error(), "schema") || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("values %v: %v, want a schema error at %s", tc.values, err, tc.path)
		}
	}
}

// The defaults, every optional part on, and the examples values.yaml and
// the docs give render.
func TestChartSchemaAccepts(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"defaults":                  nil,
		"every optional value on":   allValuesOn(),
		"no replicas":               {"replicas": 0},
		"a digest":                  {"image": map[string]any{"digest": "sha256:" + strings.Repeat("0a", 32)}},
		"a tag and a pull policy":   {"image": map[string]any{"tag": "v0.2.0", "pullPolicy": "Always"}},
		"pull secrets":              {"imagePullSecrets": []any{map[string]any{"name": "regcred"}}},
		"budget in percent":         {"podDisruptionBudget": map[string]any{"enabled": true, "minAvailable": "50%"}},
		"budget minAvailable":       {"podDisruptionBudget": map[string]any{"enabled": true, "minAvailable": 1, "maxUnavailable": nil}},
		"memory limit as is":        {"goMemLimit": "400MiB"},
		"numeric quantities":        {"resources": map[string]any{"requests": map[string]any{"cpu": 0.5, "memory": "128Mi"}, "limits": map[string]any{"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"}}},
		"placement":                 {"nodeSelector": map[string]any{"kubernetes.io/os": "linux"}, "tolerations": []any{map[string]any{"key": "k", "operator": "Exists"}}, "priorityClassName": "system-cluster-critical"},
		"shards of the guide":       {"sharding": map[string]any{"shards": []any{"a", "b"}}},
		"a 63-character shard":      {"sharding": map[string]any{"shards": []any{strings.Repeat("a", 63)}}},
		"the namespace, created":    {"namespace": map[string]any{"create": true}},
		"manager rights (risky)":    {"tenancy": map[string]any{"actWithManagerRights": true}},
		"finalizers and prometheus": {"admissionPolicy": map[string]any{"finalizers": true}, "metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}}},
	} {
		if _, err := renderChartErr(t, values, "v1.36.0"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
