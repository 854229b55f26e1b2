/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchtarget

import "testing"

// Protected refuses fieldops's own objects, not every object of the
// namespace it runs in: installed by OLM into the shared namespace
// operators, the other operators there stay patchable.
func TestProtected(t *testing.T) {
	for _, tc := range []struct {
		name                                 string
		group, kind, namespace, objName, own string
		want                                 bool
	}{
		{"a fieldops object", "fieldops.dev", "FieldPatch", "team", "p", "operators", true},
		{"fieldops's CRD", "apiextensions.k8s.io", "CustomResourceDefinition", "", "fieldpatches.fieldops.dev", "operators", true},
		{"another CRD", "apiextensions.k8s.io", "CustomResourceDefinition", "", "widgets.example.com", "operators", false},
		{"fieldops's ClusterRole", "rbac.authorization.k8s.io", "ClusterRole", "", "fieldops-manager-role", "operators", true},
		{"OLM's ClusterRole of the CSV", "rbac.authorization.k8s.io", "ClusterRole", "", "fieldops.v0.1.0-6bd9f8b7c4", "operators", true},
		{"another ClusterRole", "rbac.authorization.k8s.io", "ClusterRole", "", "cert-manager-controller", "operators", false},
		{"the manager's Deployment", "apps", "Deployment", "operators", "fieldops-controller-manager", "operators", true},
		{"the manager's ServiceAccount", "", "ServiceAccount", "operators", "fieldops-controller-manager", "operators", true},
		{"the leader election Lease", "coordination.k8s.io", "Lease", "operators", "fieldops.dev", "operators", true},
		{"the leader election Role", "rbac.authorization.k8s.io", "Role", "operators", "fieldops-leader-election-role", "operators", true},
		{"OLM's CSV", "operators.coreos.com", "ClusterServiceVersion", "operators", "fieldops.v0.1.0", "operators", true},
		{"another operator's Deployment in the shared namespace", "apps", "Deployment", "operators", "cert-manager", "operators", false},
		{"another operator's ConfigMap in the shared namespace", "", "ConfigMap", "operators", "cert-manager-config", "operators", false},
		{"a name that only starts like fieldops", "apps", "Deployment", "operators", "fieldopsx", "operators", false},
		{"the manager's namespace itself", "", "Namespace", "", "operators", "operators", true},
		{"a fieldops-named object elsewhere", "apps", "Deployment", "team", "fieldops-controller-manager", "operators", false},
		{"own namespace unknown", "apps", "Deployment", "operators", "fieldops-controller-manager", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, got := Protected(tc.group, tc.kind, tc.namespace, tc.objName, tc.own)
			if got != tc.want {
				t.Errorf("Protected(%s %s %s/%s, own %q) = %v (%s), want %v", tc.group, tc.kind, tc.namespace, tc.objName, tc.own, got, why, tc.want)
			}
			if got && why == "" {
				t.Error("a refusal without a reason")
			}
		})
	}
}
