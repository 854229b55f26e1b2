/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package app

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers"
)

// --watch-label-selector takes Kubernetes label selector syntax; anything
// else is refused by Check, naming the flag, before the manager starts.
func TestWatchLabelSelectorFlag(t *testing.T) {
	for _, tc := range []struct {
		arg, want, err string
	}{
		{arg: "", want: ""},
		{arg: "sharding.fieldops.dev/key=a", want: "sharding.fieldops.dev/key=a"},
		{arg: "!sharding.fieldops.dev/key", want: "!sharding.fieldops.dev/key"},
		{arg: "sharding.fieldops.dev/key in (a, b)", want: "sharding.fieldops.dev/key in (a,b)"},
		{arg: "sharding.fieldops.dev/key=a=b", err: "--watch-label-selector \"sharding.fieldops.dev/key=a=b\" is not a label selector"},
		{arg: "sharding.fieldops.dev/key in a", err: "is not a label selector"},
		{arg: "Bad Key=a", err: "is not a label selector"},
	} {
		var f Flags
		if err := f.NewFlagSet("manager", false).Parse([]string{"--watch-label-selector=" + tc.arg}); err != nil {
			t.Fatal(err)
		}
		err := f.Check()
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want an error with %q", tc.arg, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.arg, err)
		case f.watchSelector.String() != tc.want:
			t.Errorf("%q: selector %q, want %q", tc.arg, f.watchSelector, tc.want)
		}
	}
}

// The unsharded manager and the main instance beside shards share the
// Lease fieldops.dev; every other selector has its own, the same for two
// spellings of one selector, and always a valid Lease name.
func TestLeaderElectionID(t *testing.T) {
	id := func(s string) string {
		t.Helper()
		sel, err := ParseWatchSelector(s)
		if err != nil {
			t.Fatal(err)
		}
		return LeaderElectionID(sel)
	}
	if got := LeaderElectionID(nil); got != "fieldops.dev" {
		t.Errorf("nil selector: %q", got)
	}
	for _, s := range []string{"", v1alpha1.UnshardedSelector, " !sharding.fieldops.dev/key "} {
		if got := id(s); got != "fieldops.dev" {
			t.Errorf("%q: Lease %q, want fieldops.dev", s, got)
		}
	}
	a, b := id("sharding.fieldops.dev/key=a"), id("sharding.fieldops.dev/key=b")
	if a == b || a == "fieldops.dev" || b == "fieldops.dev" {
		t.Errorf("shards a and b: Leases %q and %q, want two of their own", a, b)
	}
	if got := id("sharding.fieldops.dev/key==a"); got != a {
		t.Errorf("key==a: %q, want key=a's %q", got, a)
	}
	if x, y := id("x=1,sharding.fieldops.dev/key=a"), id("sharding.fieldops.dev/key=a, x=1"); x != y {
		t.Errorf("one selector in two orders: %q and %q", x, y)
	}
	name := regexp.MustCompile(`^[0-9a-f]{10}\.fieldops\.dev$`)
	for _, s := range []string{"sharding.fieldops.dev/key=a", "sharding.fieldops.dev/key notin (A_b, c.d)", "tier"} {
		got := id(s)
		if !name.MatchString(got) || len(validation.IsDNS1123Subdomain(got)) > 0 {
			t.Errorf("%q: Lease %q is not <10 hex>.fieldops.dev", s, got)
		}
	}
}

// The selector restricts the informers of the four fieldops kinds, each
// kept in one ByObject entry with the managed fields transform of
// controllers.CacheOptions; the CRDs' informer is not restricted.
func TestWatchLabelSelectorCache(t *testing.T) {
	sel, err := ParseWatchSelector("sharding.fieldops.dev/key=a")
	if err != nil {
		t.Fatal(err)
	}
	opts := controllers.WatchLabelSelector(controllers.CacheOptions(cache.Options{}), sel)
	seen := map[reflect.Type]int{}
	for obj, by := range opts.ByObject {
		seen[reflect.TypeOf(obj)]++
		own := false
		switch obj.(type) {
		case *v1alpha1.FieldPatch, *v1alpha1.ClusterFieldPatch, *v1alpha1.ManagedWorkload, *v1alpha1.PodSet:
			own = true
		}
		if by.Transform == nil {
			t.Errorf("%T: the managed fields transform is lost", obj)
		}
		switch {
		case own && (by.Label == nil || by.Label.String() != sel.String()):
			t.Errorf("%T: label selector %v, want %q", obj, by.Label, sel)
		case !own && by.Label != nil:
			t.Errorf("%T: restricted by %q; only fieldops's own kinds are", obj, by.Label)
		}
	}
	for _, obj := range []client.Object{&v1alpha1.FieldPatch{}, &v1alpha1.ClusterFieldPatch{}, &v1alpha1.ManagedWorkload{}, &v1alpha1.PodSet{}} {
		if n := seen[reflect.TypeOf(obj)]; n != 1 {
			t.Errorf("%T: %d ByObject entries, want 1", obj, n)
		}
	}
	// No selector: the options are CacheOptions's, untouched.
	if got, want := controllers.WatchLabelSelector(controllers.CacheOptions(cache.Options{}), labels.Everything()), controllers.CacheOptions(cache.Options{}); len(got.ByObject) != len(want.ByObject) {
		t.Errorf("an empty selector changes the cache options: %d entries, want %d", len(got.ByObject), len(want.ByObject))
	}
	for _, by := range controllers.WatchLabelSelector(controllers.CacheOptions(cache.Options{}), nil).ByObject {
		if by.Label != nil {
			t.Errorf("a nil selector restricts an informer by %q", by.Label)
		}
	}
}
