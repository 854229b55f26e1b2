/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// defaultOwnNamespace is the namespace plan assumes the manager runs in
// when it finds no trace of it (kustomize's config/default).
const defaultOwnNamespace = "fieldops-system"

// leaderElectionLease is the manager's leader election Lease (its
// LeaderElectionID), in the namespace it runs in.
const leaderElectionLease = "fieldops.dev"

// managerSelector selects the manager's Deployment, whichever way it was
// installed (config/manager, the OLM bundle's install strategy).
var managerSelector = client.MatchingLabels{"app.kubernetes.io/name": "fieldops", "control-plane": "controller-manager"}

// findOwnNamespace finds the namespace the fieldops manager runs in, as
// the manager knows it ($POD_NAMESPACE, its pod's namespace): the
// namespace of its leader election Lease fieldops.dev, else of its
// Deployment (labels app.kubernetes.io/name=fieldops,
// control-plane=controller-manager). It returns defaultOwnNamespace, and
// a note saying so, when it finds neither or may not list them; an error
// when managers run in several namespaces.
func findOwnNamespace(ctx context.Context, c client.Reader) (ns, note string, err error) {
	found := sets.New[string]()
	var leases coordinationv1.LeaseList
	leaseErr := c.List(ctx, &leases, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", leaderElectionLease)})
	if leaseErr == nil {
		for _, l := range leases.Items {
			found.Insert(l.Namespace)
		}
	}
	if found.Len() == 0 {
		var deps appsv1.DeploymentList
		if err := c.List(ctx, &deps, managerSelector); err == nil {
			for _, d := range deps.Items {
				found.Insert(d.Namespace)
			}
		} else if leaseErr != nil {
			return defaultOwnNamespace, fmt.Sprintf("could not find the fieldops manager (%v); assuming it runs in %s: set --fieldops-namespace", err, defaultOwnNamespace), nil
		}
	}
	switch found.Len() {
	case 0:
		return defaultOwnNamespace, fmt.Sprintf("found no fieldops manager (no Lease %s, no Deployment labelled app.kubernetes.io/name=fieldops); assuming it runs in %s: set --fieldops-namespace", leaderElectionLease, defaultOwnNamespace), nil
	case 1:
		return sets.List(found)[0], "", nil
	}
	list := sets.List(found)
	sort.Strings(list)
	return "", "", fmt.Errorf("fieldops managers run in several namespaces (%s): set --fieldops-namespace", strings.Join(list, ", "))
}
