/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

// Issue 15, defects 6 and 12: admission refuses a conflictPluginFallback
// of Plugin and target references the apiserver could never serve (which
// made FieldPatches that could never be deleted), and accepts the
// unusual names it does serve.
func TestAdmissionRefusesInvalidSpecs(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "fp-admission")
	long := strings.Repeat("a", 254)
	for _, tc := range []struct {
		name    string
		cluster bool
		spec    string
		refused string // substring of the apiserver's message; "" means accepted
	}{
		{name: "fallback-plugin", spec: `{target: {apiVersion: v1, kind: ConfigMap, name: c}, patch: {data: {a: "1"}}, conflictPolicy: Plugin, conflictPlugin: p, conflictPluginFallback: Plugin}`, refused: "spec.conflictPluginFallback"},
		{name: "fallback-bogus", spec: `{target: {apiVersion: v1, kind: ConfigMap, name: c}, patch: {data: {a: "1"}}, conflictPolicy: Plugin, conflictPlugin: p, conflictPluginFallback: Bogus}`, refused: "spec.conflictPluginFallback"},
		{name: "policy-bogus", spec: `{target: {apiVersion: v1, kind: ConfigMap, name: c}, patch: {data: {a: "1"}}, conflictPolicy: Bogus}`, refused: "spec.conflictPolicy"},
		{name: "name-slash", spec: `{target: {apiVersion: v1, kind: ConfigMap, name: a/b}, patch: {data: {a: "1"}}}`, refused: "name may not contain '/' or '%'"},
		{name: "name-percent", spec: `{target: {apiVersion: v1, kind: ConfigMap, name: "a%2fb"}, patch: {data: {a: "1"}}}`, refused: "name may not contain '/' or '%'"},
		{name: "name-dotdot", spec: `{target: {apiVersion: v1, kind: ConfigMap, name: ".."}, patch: {data: {a: "1"}}}`, refused: "name may not be '.' or '..'"},
		{name: "name-dot", spec: `{target: {apiVersion: v1, kind: ConfigMap, name: "."}, patch: {data: {a: "1"}}}`, refused: "name may not be '.' or '..'"},
		{name: "name-too-long", spec: `{target: {apiVersion: v1, kind: ConfigMap, name: ` + long + `}, patch: {data: {a: "1"}}}`, refused: "spec.target.name"},
		{name: "name-empty", spec: `{target: {apiVersion: v1, kind: ConfigMap, name: ""}, patch: {data: {a: "1"}}}`, refused: "spec.target.name"},
		{name: "namespace-upper", cluster: true, spec: `{target: {apiVersion: v1, kind: ConfigMap, name: c, namespace: Kube-System}, patch: {data: {a: "1"}}}`, refused: "spec.target.namespace"},
		{name: "namespace-slash", cluster: true, spec: `{target: {apiVersion: v1, kind: ConfigMap, name: c, namespace: a/b}, patch: {data: {a: "1"}}}`, refused: "spec.target.namespace"},
		{name: "namespace-too-long", cluster: true, spec: `{target: {apiVersion: v1, kind: ConfigMap, name: c, namespace: ` + strings.Repeat("n", 64) + `}, patch: {data: {a: "1"}}}`, refused: "spec.target.namespace"},
		{name: "apiversion-extra-slash", spec: `{target: {apiVersion: apps/v1/x, kind: Deployment, name: web}, patch: {spec: {replicas: 1}}}`, refused: "spec.target.apiVersion"},
		{name: "apiversion-empty-group", spec: `{target: {apiVersion: /v1, kind: Deployment, name: web}, patch: {spec: {replicas: 1}}}`, refused: "spec.target.apiVersion"},
		{name: "apiversion-upper", spec: `{target: {apiVersion: Apps/v1, kind: Deployment, name: web}, patch: {spec: {replicas: 1}}}`, refused: "spec.target.apiVersion"},
		{name: "kind-space", spec: `{target: {apiVersion: apps/v1, kind: "Deploy ment", name: web}, patch: {spec: {replicas: 1}}}`, refused: "spec.target.kind"},
		{name: "kind-digit", spec: `{target: {apiVersion: apps/v1, kind: 1Deployment, name: web}, patch: {spec: {replicas: 1}}}`, refused: "spec.target.kind"},
		{name: "cluster-name-slash", cluster: true, spec: `{target: {apiVersion: v1, kind: Namespace, name: a/b}, patch: {metadata: {labels: {a: b}}}}`, refused: "name may not contain '/' or '%'"},

		// spec.targetSelector (issue 31): exactly one of target and targetSelector.
		{name: "selector-and-target", spec: `{target: {apiVersion: v1, kind: ConfigMap, name: c}, targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {}}, patch: {data: {a: "1"}}}`, refused: "set exactly one of target"},
		{name: "neither-target", spec: `{patch: {data: {a: "1"}}}`, refused: "set exactly one of target"},
		{name: "selector-no-labels", spec: `{targetSelector: {apiVersion: v1, kind: ConfigMap}, patch: {data: {a: "1"}}}`, refused: "spec.targetSelector.labelSelector"},
		{name: "selector-kind-digit", spec: `{targetSelector: {apiVersion: v1, kind: 1Map, labelSelector: {}}, patch: {data: {a: "1"}}}`, refused: "spec.targetSelector.kind"},
		{name: "selector-empty-name", spec: `{targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {}, names: [""]}, patch: {data: {a: "1"}}}`, refused: "spec.targetSelector.names"},

		// Accepted: names the apiserver serves.
		{name: "selector", spec: `{targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {app: none}}, names: [c]}, patch: {data: {a: "1"}}}`},
		{name: "cluster-selector", cluster: true, spec: `{targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {app: none}}, namespaceSelector: {matchLabels: {team: none}}}, patch: {data: {a: "1"}}}`},
		{name: "fallback-yield", spec: `{target: {apiVersion: v1, kind: ConfigMap, name: c}, patch: {data: {a: "1"}}, conflictPolicy: Plugin, conflictPlugin: p, conflictPluginFallback: Yield}`},
		{name: "name-colon", cluster: true, spec: `{target: {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, name: "system:fieldops-test"}, patch: {metadata: {labels: {a: b}}}}`},
		{name: "name-253", spec: `{target: {apiVersion: v1, kind: ConfigMap, name: ` + long[:253] + `}, patch: {data: {a: "1"}}}`},
		{name: "crd-version", spec: `{target: {apiVersion: example.com/v1beta2, kind: Widget, name: w}, patch: {spec: {size: 1}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var obj v1alpha1.Patcher
			var y string
			if tc.cluster {
				obj = &v1alpha1.ClusterFieldPatch{}
				y = fmt.Sprintf("{apiVersion: fieldops.dev/v1alpha1, kind: ClusterFieldPatch, metadata: {name: fp-admission-%s}, spec: %s}", tc.name, tc.spec)
			} else {
				obj = &v1alpha1.FieldPatch{}
				y = fmt.Sprintf("{apiVersion: fieldops.dev/v1alpha1, kind: FieldPatch, metadata: {name: %s, namespace: %s}, spec: %s}", tc.name, ns, tc.spec)
			}
			if err := yaml.UnmarshalStrict([]byte(y), obj); err != nil {
				t.Fatal(err)
			}
			err := k8s.Create(context.Background(), obj)
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				deleteAndWait(t, obj)
				return
			}
			if err == nil {
				deleteAndWait(t, obj)
				t.Fatalf("admitted; want a refusal mentioning %q", tc.refused)
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("error %v; want Invalid mentioning %q", err, tc.refused)
			}
		})
	}
}
