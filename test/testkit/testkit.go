/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package testkit holds the helpers the suites that run against the local
// control plane share: a write counter on the manager's transport, object
// builders, polling, and event lookups.
package testkit

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/internal/localcp"
)

// WriteCounter counts write requests (every method but GET) and reads
// (GET: gets, lists and watches) per URL path. Install it with Wrap on the
// manager's rest.Config.
type WriteCounter struct {
	next   http.RoundTripper
	mu     sync.Mutex
	byPath map[string]int
	reads  map[string]int
}

// Wrap makes cfg's transport count through c.
func (c *WriteCounter) Wrap(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { c.next = rt; return c })
}

// RoundTrip counts r and sends it on.
func (c *WriteCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	if c.byPath == nil {
		c.byPath, c.reads = map[string]int{}, map[string]int{}
	}
	if r.Method != http.MethodGet {
		c.byPath[r.URL.Path]++
	} else {
		c.reads[r.URL.Path]++
	}
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

// Reads returns the GET requests (gets, lists, watches) of paths ending in
// suffix.
func (c *WriteCounter) Reads(suffix string) int { return c.count(c.reads, suffix) }

// count sums the counts of m's paths ending in suffix.
func (c *WriteCounter) count(m map[string]int, suffix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for p, v := range m {
		if strings.HasSuffix(p, suffix) {
			n += v
		}
	}
	return n
}

// Writes returns the writes to paths ending in suffix.
func (c *WriteCounter) Writes(suffix string) int { return c.count(c.byPath, suffix) }

// WritesUnder returns the writes to dir and to the paths below it (an
// event created in dir, and the series updates of that event).
func (c *WriteCounter) WritesUnder(dir string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for p, v := range c.byPath {
		if strings.HasSuffix(p, dir) || strings.Contains(p, dir+"/") {
			n += v
		}
	}
	return n
}

// Obj parses YAML into an unstructured object.
func Obj(t testing.TB, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// Kit is a test's own client: the other field managers of a test.
type Kit struct {
	Client client.Client
	// Reconciles counts the manager's reconciles (RunSuite sets it).
	Reconciles *Reconciles
	// Targets reads objects as FieldPatch and ManagedWorkload see their
	// targets (controllers.TargetReader; RunSuite sets it).
	Targets client.Reader
}

// TargetSeen waits until the controllers' target cache (Targets) holds u
// as the apiserver has it now, or a later version of it: a reconcile that
// starts afterwards reads every change made to u so far. A later version
// counts because u may change again meanwhile (a Deployment's status,
// written by the Deployment controller): the cache then never holds the
// version read here. Versions are ordered as KEP-5504 orders them
// (resourceversion.CompareResourceVersion); two that cannot be ordered
// must be equal.
func (k Kit) TargetSeen(t testing.TB, u *unstructured.Unstructured) {
	t.Helper()
	if k.Targets == nil {
		t.Fatal("testkit: TargetSeen needs the Kit of RunSuite")
	}
	rv := k.Live(t, u).GetResourceVersion()
	Eventually(t, fmt.Sprintf("the target cache to hold %s %s at %s or later", u.GetKind(), u.GetName(), rv), func() (bool, string) {
		seen := &unstructured.Unstructured{}
		seen.SetGroupVersionKind(u.GroupVersionKind())
		if err := k.Targets.Get(context.Background(), client.ObjectKeyFromObject(u), seen); err != nil {
			return false, err.Error()
		}
		got := seen.GetResourceVersion()
		if c, err := resourceversion.CompareResourceVersion(got, rv); err == nil {
			return c >= 0, "resourceVersion " + got
		}
		return got == rv, "resourceVersion " + got
	})
}

// ApplyAs applies the YAML object with force under manager.
func (k Kit) ApplyAs(t testing.TB, manager, y string) *unstructured.Unstructured {
	t.Helper()
	u := Obj(t, y)
	if err := k.Client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership); err != nil {
		t.Fatalf("apply as %s: %v", manager, err)
	}
	return u
}

// Namespace creates the namespace name if needed and returns name.
func (k Kit) Namespace(t testing.TB, name string, labels ...string) string {
	t.Helper()
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	if len(labels) > 0 {
		l := map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			l[labels[i]] = labels[i+1]
		}
		ns.SetLabels(l)
	}
	if err := k.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
}

// Live reads the live object u names.
func (k Kit) Live(t testing.TB, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	l := &unstructured.Unstructured{}
	l.SetGroupVersionKind(u.GroupVersionKind())
	if err := k.Client.Get(context.Background(), client.ObjectKeyFromObject(u), l); err != nil {
		t.Fatal(err)
	}
	return l
}

// Exists reports whether the object u names exists.
func (k Kit) Exists(t testing.TB, u *unstructured.Unstructured) bool {
	t.Helper()
	l := &unstructured.Unstructured{}
	l.SetGroupVersionKind(u.GroupVersionKind())
	err := k.Client.Get(context.Background(), client.ObjectKeyFromObject(u), l)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// Get reads o in place.
func (k Kit) Get(t testing.TB, o client.Object) {
	t.Helper()
	if err := k.Client.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
		t.Fatal(err)
	}
}

// Eventually polls cond every 100 ms for up to 20 s.
func Eventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	Within(t, 20*time.Second, what, cond)
}

// Within polls cond every 100 ms for up to d: a test that claims
// something happens within d ends as soon as it did.
func Within(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
	}
	t.Fatalf("timed out waiting for %s: %s", what, last)
}

// HasEvent waits for an event about name with the reason whose note
// contains substr.
func (k Kit) HasEvent(t testing.TB, ns, name, reason, substr string) {
	t.Helper()
	Eventually(t, "event "+reason, func() (bool, string) {
		var l eventsv1.EventList
		if err := k.Client.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range l.Items {
			if e.Regarding.Name == name && e.Reason == reason && strings.Contains(e.Note, substr) {
				return true, ""
			}
			seen = append(seen, e.Reason+": "+e.Note)
		}
		return false, strings.Join(seen, " | ")
	})
}

// DeleteAndWait deletes o and waits until it is gone.
func (k Kit) DeleteAndWait(t testing.TB, o client.Object) {
	t.Helper()
	if err := k.Client.Delete(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	Eventually(t, "deletion of "+o.GetName(), func() (bool, string) {
		err := k.Client.Get(context.Background(), client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object))
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// Sample reads config/samples/<file> into obj (strict YAML).
func Sample(t testing.TB, file string, obj interface{}) {
	t.Helper()
	root, err := localcp.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "config", "samples", file))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, obj); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// SampleAccounts applies the objects of config/samples/accounts.yaml that
// are in namespace from (the least-rights ServiceAccounts, Roles and
// RoleBindings a sample acts as) into namespace to, so that a sample
// moved to a test's namespace finds its account there.
func (k Kit) SampleAccounts(t testing.TB, from, to string) {
	t.Helper()
	root, err := localcp.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "config", "samples", "accounts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := localcp.DecodeAll(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetNamespace() != from {
			continue
		}
		o.SetNamespace(to)
		if o.GetKind() == "RoleBinding" {
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			for _, s := range subjects {
				if m, ok := s.(map[string]interface{}); ok && m["namespace"] == from {
					m["namespace"] = to
				}
			}
			_ = unstructured.SetNestedSlice(o.Object, subjects, "subjects")
		}
		if err := k.Client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("platform-admin"), client.ForceOwnership); err != nil {
			t.Fatalf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// Kubeconfig adds user to the control plane cp and writes a kubeconfig
// of that user into a directory of the test; it returns its path.
func Kubeconfig(t testing.TB, cp *localcp.ControlPlane, user envtest.User) string {
	t.Helper()
	u, err := cp.Env.ControlPlane.AddUser(user, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
