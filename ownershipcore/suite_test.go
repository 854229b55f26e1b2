/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/ownershipcore"
)

var (
	cfg    *rest.Config
	schema *ownershipcore.Schema
)

func TestMain(m *testing.M) {
	cp, err := localcp.Start(localcp.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg = cp.Config
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	schema = ownershipcore.NewSchema(dc)
	code := m.Run()
	_ = cp.Stop()
	os.Exit(code)
}

// counter counts the requests of a client by method.
type counter struct {
	next   http.RoundTripper
	writes atomic.Int64
	reads  atomic.Int64
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		c.reads.Add(1)
	} else {
		c.writes.Add(1)
	}
	return c.next.RoundTrip(r)
}

// newClient returns a client and its request counter.
func newClient(t testing.TB) (client.Client, *counter) {
	t.Helper()
	c := &counter{}
	cc := rest.CopyConfig(cfg)
	cc.Wrap(func(rt http.RoundTripper) http.RoundTripper { c.next = rt; return c })
	cl, err := client.New(cc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cl, c
}

func newApplier(t testing.TB) (*ownershipcore.Applier, *counter) {
	cl, c := newClient(t)
	return &ownershipcore.Applier{Client: cl, Reader: cl, Schema: schema}, c
}

// obj reads YAML into an unstructured object.
func obj(t testing.TB, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// applyAs applies y with SSA under manager (force).
func applyAs(t testing.TB, c client.Client, manager, y string) *unstructured.Unstructured {
	t.Helper()
	u := obj(t, y)
	if err := c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership); err != nil {
		t.Fatalf("apply as %s: %v", manager, err)
	}
	return u
}

// owners returns path → managers ("name/Operation") of an object.
func owners(t testing.TB, u *unstructured.Unstructured) map[string][]string {
	t.Helper()
	mf, err := ownershipcore.Owners(u)
	if err != nil {
		t.Fatal(err)
	}
	return mf.ByPath()
}

func get(t testing.TB, c client.Client, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(u), live); err != nil {
		t.Fatal(err)
	}
	return live
}

func sprintf(format string, args ...interface{}) string { return fmt.Sprintf(format, args...) }
