/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

// objectsDesc describes fieldops_objects: how many objects of each
// fieldops kind are in each state. Its labels are bounded (no object
// names): kind (FieldPatch, ClusterFieldPatch, ManagedWorkload, PodSet),
// ready (the Ready condition's status: True, False, or Unknown when the
// object has no Ready condition yet), stalled (True when the Stalled
// condition is True, else False) and reason (the Ready condition's
// reason, "" without one).
var objectsDesc = prometheus.NewDesc("fieldops_objects",
	"fieldops objects by kind, Ready condition status (True, False, Unknown), Stalled (True, False) and the Ready condition's reason.",
	[]string{"kind", "ready", "stalled", "reason"}, nil)

// objectsListTimeout bounds the cache reads of one scrape.
const objectsListTimeout = 10 * time.Second

// ObjectsCollector computes fieldops_objects on each scrape from a
// reader of fieldops's objects (the manager's informer cache: the lists
// cost no request to the apiserver). Without a reader (SetReader not
// called) it reports nothing.
type ObjectsCollector struct {
	mu     sync.RWMutex
	reader client.Reader
}

// Objects is the fieldops_objects collector registered on
// controller-runtime's registry; the manager sets its reader.
var Objects = &ObjectsCollector{}

var _ prometheus.Collector = (*ObjectsCollector)(nil)

// SetReader sets the reader the collector lists fieldops's objects with
// (nil: report nothing).
func (c *ObjectsCollector) SetReader(r client.Reader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reader = r
}

// Describe sends the descriptor of fieldops_objects.
func (c *ObjectsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- objectsDesc }

// objectState is one label set of fieldops_objects.
type objectState struct{ kind, ready, stalled, reason string }

// Collect lists every FieldPatch, ClusterFieldPatch, ManagedWorkload and
// PodSet and sends one series per kind and state. A kind whose list fails
// (its CRD is not installed, the cache not synced in time) is left out of
// this scrape.
func (c *ObjectsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	r := c.reader
	c.mu.RUnlock()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), objectsListTimeout)
	defer cancel()
	for _, state := range CountObjects(ctx, r) {
		ch <- prometheus.MustNewConstMetric(objectsDesc, prometheus.GaugeValue, float64(state.Count), state.Kind, state.Ready, state.Stalled, state.Reason)
	}
}

// ObjectCount is one series of fieldops_objects.
type ObjectCount struct {
	Kind, Ready, Stalled, Reason string
	Count                        int
}

// CountObjects counts the fieldops objects r lists by kind, Ready status,
// Stalled and Ready reason. Kinds whose list fails are left out. The
// lists only read conditions, so an informer cache lends its own objects
// (client.UnsafeDisableDeepCopy) instead of copying every object on every
// scrape; other readers ignore the option.
func CountObjects(ctx context.Context, r client.Reader) []ObjectCount {
	counts := map[objectState]int{}
	var order []objectState
	add := func(kind string, conds []metav1.Condition) {
		s := objectState{kind: kind, ready: string(metav1.ConditionUnknown), stalled: string(metav1.ConditionFalse)}
		if c := meta.FindStatusCondition(conds, "Ready"); c != nil {
			s.ready, s.reason = string(c.Status), c.Reason
		}
		if meta.IsStatusConditionTrue(conds, "Stalled") {
			s.stalled = string(metav1.ConditionTrue)
		}
		if _, ok := counts[s]; !ok {
			order = append(order, s)
		}
		counts[s]++
	}
	var fps v1alpha1.FieldPatchList
	if err := r.List(ctx, &fps, client.UnsafeDisableDeepCopy); err == nil {
		for i := range fps.Items {
			add("FieldPatch", fps.Items[i].Status.Conditions)
		}
	}
	var cfps v1alpha1.ClusterFieldPatchList
	if err := r.List(ctx, &cfps, client.UnsafeDisableDeepCopy); err == nil {
		for i := range cfps.Items {
			add("ClusterFieldPatch", cfps.Items[i].Status.Conditions)
		}
	}
	var mws v1alpha1.ManagedWorkloadList
	if err := r.List(ctx, &mws, client.UnsafeDisableDeepCopy); err == nil {
		for i := range mws.Items {
			add("ManagedWorkload", mws.Items[i].Status.Conditions)
		}
	}
	var pss v1alpha1.PodSetList
	if err := r.List(ctx, &pss, client.UnsafeDisableDeepCopy); err == nil {
		for i := range pss.Items {
			add("PodSet", pss.Items[i].Status.Conditions)
		}
	}
	out := make([]ObjectCount, 0, len(order))
	for _, s := range order {
		out = append(out, ObjectCount{Kind: s.kind, Ready: s.ready, Stalled: s.stalled, Reason: s.reason, Count: counts[s]})
	}
	return out
}
