/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package served waits until the apiserver serves custom resources: each
// CRD Established, its versions listed by discovery, and a LIST of it
// answered. Established alone (kstatus's Current for a CRD, `kubectl wait
// --for=condition=Established`) is not enough: the apiserver adds a new
// group-version to discovery asynchronously, and right after Established
// a client that maps kinds through discovery (kubectl, controller-runtime's
// client) can get "no matches for kind"
// (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#create-a-customresourcedefinition).
// Not waited for: a MutatingAdmissionPolicy with failurePolicy Fail that
// matches a new kind refuses its creates with 503 "Resource kind ... not
// found" until it next reads the schemas of /openapi/v3; a LIST does not
// pass admission.
package served

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Group is fieldops's API group.
const Group = "fieldops.dev"

// Interval is how often Wait asks again.
const Interval = 250 * time.Millisecond

// Wait returns nil once every CRD of group is served: it exists, is
// Established, each of its served versions is listed by discovery and a
// LIST of it (limit 1, every namespace) is answered 200. It asks every
// Interval until ctx ends, then returns an error naming what was not
// served yet (a CRD missing, not Established, or the last error of its
// LIST). want is how many CRDs of the group must exist (0: at least one).
func Wait(ctx context.Context, cfg *rest.Config, group string, want int) error {
	cl, err := newClients(cfg)
	if err != nil {
		return err
	}
	var missing []string
	err = wait.PollUntilContextCancel(ctx, Interval, true, func(ctx context.Context) (bool, error) {
		missing, err = cl.notServed(ctx, group, want)
		if err != nil {
			missing = []string{err.Error()}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%s kinds not served yet: %s", group, strings.Join(missing, "; "))
	}
	return nil
}

// Check asks once what Wait waits for and returns what is not served
// yet (nil: everything is), or the error of a request that is not about
// the kinds (the CRD list, a client).
func Check(ctx context.Context, cfg *rest.Config, group string, want int) ([]string, error) {
	cl, err := newClients(cfg)
	if err != nil {
		return nil, err
	}
	return cl.notServed(ctx, group, want)
}

type clients struct {
	c   client.Client
	dc  discovery.DiscoveryInterface
	dyn dynamic.Interface
}

func newClients(cfg *rest.Config) (*clients, error) {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &clients{c: c, dc: dc, dyn: dyn}, nil
}

// notServed lists what of group is not served yet.
func (cl *clients) notServed(ctx context.Context, group string, want int) ([]string, error) {
	var list apiextensionsv1.CustomResourceDefinitionList
	if err := cl.c.List(ctx, &list); err != nil {
		return nil, err
	}
	var crds []apiextensionsv1.CustomResourceDefinition
	for _, crd := range list.Items {
		if crd.Spec.Group == group {
			crds = append(crds, crd)
		}
	}
	if len(crds) == 0 || len(crds) < want {
		return []string{fmt.Sprintf("%d CRDs of group %s exist, want %d", len(crds), group, max(want, 1))}, nil
	}
	var missing []string
	for _, crd := range crds {
		if !established(&crd) {
			missing = append(missing, crd.Name+" is not Established")
			continue
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gv := schema.GroupVersion{Group: group, Version: v.Name}
			if m := servedVersion(ctx, cl.dc, cl.dyn, gv, crd.Spec.Names.Plural); m != "" {
				missing = append(missing, m)
			}
		}
	}
	sort.Strings(missing)
	return missing, nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// servedVersion returns "" when discovery lists plural in gv and a LIST of
// it is answered, or else what failed.
func servedVersion(ctx context.Context, dc discovery.DiscoveryInterface, dyn dynamic.Interface, gv schema.GroupVersion, plural string) string {
	rl, err := dc.ServerResourcesForGroupVersion(gv.String())
	if err != nil {
		return fmt.Sprintf("discovery of %s: %v", gv, err)
	}
	found := false
	for _, r := range rl.APIResources {
		if r.Name == plural {
			found = true
		}
	}
	if !found {
		return fmt.Sprintf("discovery does not list %s in %s", plural, gv)
	}
	if _, err := dyn.Resource(gv.WithResource(plural)).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		if meta.IsNoMatchError(err) {
			return fmt.Sprintf("%s.%s: no match", plural, gv)
		}
		return fmt.Sprintf("list %s.%s: %v", plural, gv, err)
	}
	return ""
}
