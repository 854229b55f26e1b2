/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package targetcache_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/controllers/internal/targetcache"
	"github.com/fieldops/fieldops/test/testkit"
)

var configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// selectorSink records what a selector watch tells.
type selectorSink struct {
	mu      sync.Mutex
	changed map[string][]bool // by name: gone, in order
	settled []error
}

func (s *selectorSink) SelectorChanged(h targetcache.Held, gone bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = map[string][]bool{}
	}
	s.changed[h.Name] = append(s.changed[h.Name], gone)
}

func (s *selectorSink) SelectorSettled(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settled = append(s.settled, err)
}

func (s *selectorSink) of(name string) []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.changed[name]...)
}

// labelledConfigMap creates ConfigMap ns/name with label proxy=value
// (owned by "owner").
func labelledConfigMap(t *testing.T, ns, name, value string) {
	t.Helper()
	kit.ApplyAs(t, "owner", fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata: {name: %s, namespace: %s, labels: {proxy: %q}}
data: {a: "%s"}
`, name, ns, value, strings.Repeat("x", 512)))
}

// A selector watch holds the objects its label selector matches, and only
// those: the apiserver filters (the list and the watch carry the
// selector), so 200 ConfigMaps that do not match are never held. An
// object relabelled out leaves it (told as gone), one relabelled in
// enters it, and the watch of two sinks with one key is one watch.
func TestSelectorWatchHoldsOnlyMatches(t *testing.T) {
	ns := kit.Namespace(t, "selector-watch")
	for i := 0; i < 50; i++ {
		labelledConfigMap(t, ns, fmt.Sprintf("yes-%03d", i), "yes")
	}
	for i := 0; i < 200; i++ {
		labelledConfigMap(t, ns, fmt.Sprintf("no-%03d", i), "no")
	}
	rec := &recorder{}
	cfg := rest.CopyConfig(restConfig)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &recording{recorder: rec, next: rt} })
	sel := targetcache.NewSelectors(cfg)
	t.Cleanup(sel.Stop)
	key := targetcache.SelectorKey{GVR: configMapGVR, GVK: configMapGVK, Namespace: ns, LabelSelector: "proxy=yes"}
	a, b := &selectorSink{}, &selectorSink{}
	w, err := sel.Acquire(key, a)
	if err != nil {
		t.Fatal(err)
	}
	if w2, err := sel.Acquire(key, b); err != nil || w2 != w || sel.Len() != 1 {
		t.Fatalf("second sink: %v, same watch %v, %d watches; want one watch", err, w2 == w, sel.Len())
	}
	testkit.Eventually(t, "synced", func() (bool, string) { ok, err := w.Synced(); return ok, fmt.Sprint(err) })
	if n := w.Len(); n != 50 {
		t.Fatalf("holds %d objects, want the 50 matching", n)
	}
	// Each ConfigMap's JSON is above 512 bytes; compressed, well under.
	if hb := w.HeldBytes(); hb <= 0 || hb > 50*1024 {
		t.Errorf("holds %d bytes for 50 ConfigMaps, want under 50 KiB", hb)
	}
	for _, h := range w.Objects() {
		if !strings.HasPrefix(h.Name, "yes-") {
			t.Errorf("holds %s, which does not match", h.Name)
		}
	}
	for _, r := range rec.since(0) {
		if strings.Contains(r.URL, "/configmaps") && !strings.Contains(r.URL, "labelSelector=proxy%3Dyes") {
			t.Errorf("request %s %s without the label selector", r.Method, r.URL)
		}
	}

	// Relabelled out: gone; relabelled in: held.
	relabel(t, ns, "yes-000", "no")
	relabel(t, ns, "no-000", "yes")
	testkit.Eventually(t, "relabels told", func() (bool, string) {
		out, in := a.of("yes-000"), a.of("no-000")
		return len(out) > 0 && out[len(out)-1] && len(in) > 0 && !in[len(in)-1], fmt.Sprint(out, in)
	})
	if n := w.Len(); n != 50 {
		t.Errorf("holds %d objects after the relabels, want 50", n)
	}
	var uid types.UID
	for _, h := range w.Objects() {
		if h.Name == "no-000" {
			uid = h.UID
		}
		if h.Name == "yes-000" {
			t.Errorf("still holds yes-000, relabelled out")
		}
	}
	h, ok := w.Get(uid)
	if !ok {
		t.Fatal("no-000, relabelled in, not held")
	}
	u, err := h.Object()
	if err != nil || u.GetLabels()["proxy"] != "yes" || u.GetKind() != "ConfigMap" {
		t.Fatalf("decoded %v: %v", u, err)
	}
	if len(b.of("yes-000")) == 0 {
		t.Error("the second sink was not told")
	}
	sel.Release(key, a)
	if sel.Len() != 1 {
		t.Error("released with a sink left")
	}
	sel.Release(key, b)
	if sel.Len() != 0 || w.Len() != 0 {
		t.Errorf("%d watches, %d objects after the last release, want none", sel.Len(), w.Len())
	}
}

func relabel(t *testing.T, ns, name, value string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(configMapGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{"proxy":%q}}}`, value))
	if err := k8s.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}

// A selector watch as an account that may not list the kind does not
// sync, and tells its sink the apiserver's Forbidden.
func TestSelectorWatchForbidden(t *testing.T) {
	ns := kit.Namespace(t, "selector-forbidden")
	labelledConfigMap(t, ns, "yes-0", "yes")
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "get-only", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "get-only", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "get-only"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "getter", APIGroup: "rbac.authorization.k8s.io"}}}
	for _, o := range []client.Object{role, rb} {
		if err := k8s.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	sel := targetcache.NewSelectors(restConfig)
	t.Cleanup(sel.Stop)
	s := &selectorSink{}
	w, err := sel.Acquire(targetcache.SelectorKey{GVR: configMapGVR, GVK: configMapGVK, Namespace: ns, UserName: "getter", LabelSelector: "proxy=yes"}, s)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "forbidden", func() (bool, string) {
		ok, err := w.Synced()
		return !ok && apierrors.IsForbidden(err), fmt.Sprint(ok, err)
	})
	if w.Len() != 0 {
		t.Errorf("holds %d objects, want none", w.Len())
	}
}
