/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/controllers/internal/targetcache"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/internal/patchtarget"
)

// eventLog collects the events of a reconcile's target passes, by reason.
type eventLog struct {
	mu     sync.Mutex
	groups map[string]*eventGroup
	order  []string
}

type eventGroup struct {
	typ   string
	n     int
	first string
}

func (l *eventLog) add(typ, reason, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.groups == nil {
		l.groups = map[string]*eventGroup{}
	}
	g, ok := l.groups[reason]
	if !ok {
		g = &eventGroup{typ: typ, first: msg}
		l.groups[reason] = g
		l.order = append(l.order, reason)
	}
	g.n++
}

// emit records one event per reason on obj.
func (l *eventLog) emit(u *unit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, reason := range l.order {
		g := l.groups[reason]
		if g.n == 1 {
			u.event(g.typ, reason, "%s", g.first)
			continue
		}
		u.event(g.typ, reason, "%d targets; the first: %s", g.n, g.first)
	}
}

// compiledSelector is spec.targetSelector, checked and parsed.
type compiledSelector struct {
	gvk        schema.GroupVersionKind
	gvr        schema.GroupVersionResource
	namespaced bool
	// namespace is the FieldPatch's own, "" for a ClusterFieldPatch.
	namespace string
	labels    labels.Selector
	names     map[string]bool
	// nsLabels selects namespaces (ClusterFieldPatch of a namespaced kind).
	nsLabels labels.Selector
}

// compileSelector checks spec.targetSelector: a kind the apiserver
// serves, never one of fieldops's own kinds; a FieldPatch's targets are
// namespaced and in its own namespace (no namespaceSelector); a
// ClusterFieldPatch's namespaced targets need a namespaceSelector, and a
// cluster-scoped kind takes none. Errors are terminal InvalidTarget or
// ForbiddenTarget, or UnknownKind (retried: a CRD may be installed).
func (sr *selectorReconciler) compileSelector(obj v1alpha1.Patcher) (*compiledSelector, error) {
	ts := obj.PatchSpec().TargetSelector
	gv, err := schema.ParseGroupVersion(ts.APIVersion)
	if err != nil {
		return nil, skeleton.Terminal(ReasonInvalidTarget, "targetSelector.apiVersion %q: %v", ts.APIVersion, err)
	}
	c := &compiledSelector{gvk: gv.WithKind(ts.Kind), names: map[string]bool{}}
	if why, ok := patchtarget.Protected(c.gvk.Group, c.gvk.Kind, "", "", ""); ok {
		return nil, skeleton.Terminal(ReasonForbiddenTarget, "targetSelector selects %s, which is %s; fieldops does not patch its own objects", c.gvk.Kind, why)
	}
	mapping, err := sr.client.RESTMapper().RESTMapping(c.gvk.GroupKind(), c.gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			err = fmt.Errorf("kind %s is not served by the apiserver", c.gvk)
		}
		return nil, &skeleton.ReasonError{Reason: ReasonUnknownKind, Err: err}
	}
	c.gvr = mapping.Resource
	c.namespaced = mapping.Scope.Name() == meta.RESTScopeNameNamespace
	if err := selectorScope(sr.cluster, c.namespaced, ts.NamespaceSelector != nil, c.gvk.Kind); err != nil {
		return nil, err
	}
	if !sr.cluster {
		c.namespace = obj.GetNamespace()
	}
	if ts.LabelSelector == nil {
		return nil, skeleton.Terminal(ReasonInvalidTarget, "targetSelector.labelSelector is required ({} selects every object)")
	}
	if c.labels, err = metav1.LabelSelectorAsSelector(ts.LabelSelector); err != nil {
		return nil, skeleton.Terminal(ReasonInvalidTarget, "targetSelector.labelSelector: %v", err)
	}
	if ts.NamespaceSelector != nil {
		if c.nsLabels, err = metav1.LabelSelectorAsSelector(ts.NamespaceSelector); err != nil {
			return nil, skeleton.Terminal(ReasonInvalidTarget, "targetSelector.namespaceSelector: %v", err)
		}
	}
	for _, n := range ts.Names {
		c.names[n] = true
	}
	return c, nil
}

// selectorScope checks a selector's scope: a FieldPatch selects
// namespaced objects of its own namespace (no namespaceSelector); a
// ClusterFieldPatch needs a namespaceSelector for a namespaced kind, and
// takes none for a cluster-scoped one.
func selectorScope(cluster, namespaced, nsSelector bool, kind string) error {
	switch {
	case !cluster && !namespaced:
		return skeleton.Terminal(ReasonInvalidTarget, "targetSelector selects %s, which is cluster-scoped: use a ClusterFieldPatch", kind)
	case !cluster && nsSelector:
		return skeleton.Terminal(ReasonInvalidTarget, "targetSelector.namespaceSelector: a FieldPatch selects objects of its own namespace only; use a ClusterFieldPatch")
	case cluster && namespaced && !nsSelector:
		return skeleton.Terminal(ReasonInvalidTarget, "targetSelector.namespaceSelector is required for the namespaced kind %s ({} selects every namespace)", kind)
	case cluster && !namespaced && nsSelector:
		return skeleton.Terminal(ReasonInvalidTarget, "targetSelector.namespaceSelector: %s is cluster-scoped", kind)
	}
	return nil
}

// matchesPlace reports whether an object of the selector watch (whose
// labels the apiserver matched) in namespace, named name, is a target: in
// scope, its name listed (when names are), its namespace's labels matched
// (when namespaces are selected; a namespace not known yet matches
// nothing).
func (c *compiledSelector) matchesPlace(namespace, name string, nsLabels func(string) (map[string]string, bool)) bool {
	if c.namespace != "" && namespace != c.namespace {
		return false
	}
	if len(c.names) > 0 && !c.names[name] {
		return false
	}
	if c.nsLabels != nil {
		l, ok := nsLabels(namespace)
		if !ok || !c.nsLabels.Matches(labels.Set(l)) {
			return false
		}
	}
	return true
}

// watchKey is the key of the selector watch of c as account: the
// apiserver applies the label selector.
func (c *compiledSelector) watchKey(account tenant.Account) targetcache.SelectorKey {
	k := targetcache.SelectorKey{GVR: c.gvr, GVK: c.gvk, Namespace: c.namespace, LabelSelector: c.labels.String()}
	if !account.IsManager() {
		k.UserName = account.UserName()
	}
	return k
}
