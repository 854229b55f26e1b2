/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package targetcache_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/targetcache"
	"github.com/fieldops/fieldops/test/testkit"
)

const mib = 1 << 20

var secretGVK = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
var configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// heapInuse is the heap in use after a full collection.
func heapInuse() uint64 {
	var ms runtime.MemStats
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func fieldPatch(t testing.TB, y string) *v1alpha1.FieldPatch {
	t.Helper()
	fp := &v1alpha1.FieldPatch{}
	if err := yaml.UnmarshalStrict([]byte(y), fp); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(context.Background(), fp); err != nil {
		t.Fatal(err)
	}
	return fp
}

func labelPatch(name, ns, kind, target, label string) string {
	return fmt.Sprintf(`
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: %s, namespace: %s}
spec:
  target: {apiVersion: v1, kind: %s, name: %s}
  patch: {metadata: {labels: {%s: "yes"}}}
`, name, ns, kind, target, label)
}

func waitReason(t testing.TB, fp client.Object, reason string) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("%s reason %s", fp.GetName(), reason), func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fp), fp); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(fp.(v1alpha1.Patcher).PatchStatus().Conditions, "Ready")
		if c == nil {
			return false, "no Ready condition"
		}
		return c.Reason == reason && c.ObservedGeneration == fp.GetGeneration(), fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
	})
}

func waitStats(t testing.TB, want targetcache.Stats) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("target cache %+v", want), func() (bool, string) {
		got := targets.Stats()
		return got == want, fmt.Sprintf("%+v", got)
	})
}

func secret(t testing.TB, ns, name string, size int) {
	t.Helper()
	data := make([]byte, size)
	_, _ = rand.Read(data)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"blob": data}}
	if err := k8s.Create(context.Background(), s); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func configMap(t testing.TB, ns, name string) *unstructured.Unstructured {
	t.Helper()
	return kit.ApplyAs(t, "owner", fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata: {name: %s, namespace: %s}
data: {a: "1"}
`, name, ns))
}

// Issue 16, escalation 6: one tenant FieldPatch on one Secret makes the
// manager hold that Secret, not the 300 Secrets of 48 KiB elsewhere, and
// drop it when the FieldPatch goes.
func TestOneSecretPatchHoldsOneSecret(t *testing.T) {
	tenant, other := kit.Namespace(t, "team-a"), kit.Namespace(t, "team-b")
	var wg sync.WaitGroup
	work := make(chan int)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				secret(t, other, fmt.Sprintf("bulk-%03d", i), 48<<10)
			}
		}()
	}
	for i := 0; i < 300; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	secret(t, tenant, "api-key", 1<<10)
	secret(t, tenant, "warm-up", 1<<10)

	// The first FieldPatch on a Secret also pays what is paid once for
	// all (the schema of core/v1, the field manager, the event recorder):
	// it is measured, then deleted before the baseline of the second.
	cold := heapInuse()
	warm := fieldPatch(t, labelPatch("warm-up", tenant, "Secret", "warm-up", "patched"))
	waitReason(t, warm, "Applied")
	waitStats(t, targetcache.Stats{Watches: 1, Objects: 1, Refs: 1})
	first := int64(heapInuse()) - int64(cold)
	kit.DeleteAndWait(t, warm)
	waitStats(t, targetcache.Stats{})

	base := heapInuse()
	fp := fieldPatch(t, labelPatch("tag-api-key", tenant, "Secret", "api-key", "patched"))
	waitReason(t, fp, "Applied")
	waitStats(t, targetcache.Stats{Watches: 1, Objects: 1, Refs: 1})
	if !targets.Watched(targetcache.Target{GVK: secretGVK, Namespace: tenant, Name: "api-key"}) {
		t.Fatal("the patched Secret is not the one watched")
	}
	patched := heapInuse()

	kit.DeleteAndWait(t, fp)
	waitStats(t, targetcache.Stats{})
	deleted := heapInuse()

	grew, left := int64(patched)-int64(base), int64(deleted)-int64(base)
	t.Logf("heap in use: %.1f MiB before any FieldPatch, %+.2f MiB with the first; baseline %.1f MiB after its deletion, %+.2f MiB with the second FieldPatch, %+.2f MiB after its deletion (the other namespace holds %d MiB of Secrets)",
		float64(cold)/mib, float64(first)/mib, float64(base)/mib, float64(grew)/mib, float64(left)/mib, 300*48/1024)
	if first >= 5*mib {
		t.Errorf("the heap grew by %.1f MiB with the first FieldPatch on one Secret, want < 5 MiB", float64(first)/mib)
	}
	if grew >= 5*mib {
		t.Errorf("the heap grew by %.1f MiB with one FieldPatch on one Secret, want < 5 MiB", float64(grew)/mib)
	}
	if left >= 1*mib {
		t.Errorf("the heap is %.1f MiB above the baseline after the FieldPatch was deleted, want < 1 MiB", float64(left)/mib)
	}
}

// The manager never lists or watches Secrets beyond the patched one: every
// list and watch of secrets names it with a field selector, in its
// namespace.
func TestSecretsWatchedByNameOnly(t *testing.T) {
	ns := kit.Namespace(t, "team-c")
	secret(t, ns, "token", 1<<10)
	secret(t, ns, "unrelated", 1<<10)
	from := requests.count()
	fp := fieldPatch(t, labelPatch("tag-token", ns, "Secret", "token", "patched"))
	waitReason(t, fp, "Applied")
	kit.DeleteAndWait(t, fp)
	waitStats(t, targetcache.Stats{})

	watches := 0
	for _, r := range requests.since(from) {
		u, err := url.Parse(r.URL)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(u.Path, "/secrets") {
			continue
		}
		q := u.Query()
		switch {
		case u.Path == "/api/v1/namespaces/"+ns+"/secrets/token":
			// a read or write of the patched Secret itself
		case r.Method == "GET" && u.Path == "/api/v1/namespaces/"+ns+"/secrets" && q.Get("fieldSelector") == "metadata.name=token":
			if q.Get("watch") == "true" || q.Get("watch") == "1" {
				watches++
			}
		default:
			t.Errorf("request beyond the patched Secret: %s %s", r.Method, r.URL)
		}
	}
	if watches == 0 {
		t.Errorf("no watch of secrets with fieldSelector=metadata.name%%3Dtoken among %v", requests.since(from))
	}
	// And in this whole suite, no list or watch of secrets or configmaps
	// without a name.
	for _, r := range requests.since(0) {
		u, _ := url.Parse(r.URL)
		if r.Method != "GET" || (!strings.HasSuffix(u.Path, "/secrets") && !strings.HasSuffix(u.Path, "/configmaps")) {
			continue
		}
		if sel := u.Query().Get("fieldSelector"); !strings.HasPrefix(sel, "metadata.name=") || strings.Contains(sel, ",") {
			t.Errorf("list or watch of a whole kind: %s %s", r.Method, r.URL)
		}
	}
}

// Two FieldPatches on one object share its watch; drift on either's
// fields is repaired from the watch's events; the watch stops with the
// last of them.
func TestSharedWatchRefCounted(t *testing.T) {
	ns := kit.Namespace(t, "shared-watch")
	cm := configMap(t, ns, "shared")
	p1 := fieldPatch(t, labelPatch("one", ns, "ConfigMap", "shared", "one"))
	p2 := fieldPatch(t, labelPatch("two", ns, "ConfigMap", "shared", "two"))
	waitReason(t, p1, "Applied")
	waitReason(t, p2, "Applied")
	waitStats(t, targetcache.Stats{Watches: 1, Objects: 1, Refs: 2})

	kit.DeleteAndWait(t, p1)
	waitStats(t, targetcache.Stats{Watches: 1, Objects: 1, Refs: 1})

	// Another manager takes p2's label: the watch event brings p2 back.
	kit.ApplyAs(t, "rival", fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata: {name: shared, namespace: %s, labels: {two: "no"}}
`, ns))
	testkit.Eventually(t, "label two repaired", func() (bool, string) {
		l := kit.Live(t, cm).GetLabels()
		return l["two"] == "yes", fmt.Sprint(l)
	})

	kit.DeleteAndWait(t, p2)
	waitStats(t, targetcache.Stats{})
}

// A ManagedWorkload watches its objects; an object that leaves its spec is
// watched no more, and the rest stop with the workload.
func TestWorkloadWatchesFollowSpec(t *testing.T) {
	ns := kit.Namespace(t, "workload-watch")
	doc := func(name string) string {
		return fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: %s}, data: {k: v}}", name)
	}
	raw := func(docs ...string) []k8sruntime.RawExtension {
		out := make([]k8sruntime.RawExtension, len(docs))
		for i, d := range docs {
			b, err := yaml.YAMLToJSON([]byte(d))
			if err != nil {
				t.Fatal(err)
			}
			out[i] = k8sruntime.RawExtension{Raw: b}
		}
		return out
	}
	mw := &v1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pair"}}
	mw.Spec.Resources = raw(doc("cm-x"), doc("cm-y"))
	if err := k8s.Create(context.Background(), mw); err != nil {
		t.Fatal(err)
	}
	x := targetcache.Target{GVK: configMapGVK, Namespace: ns, Name: "cm-x"}
	y := targetcache.Target{GVK: configMapGVK, Namespace: ns, Name: "cm-y"}
	waitStats(t, targetcache.Stats{Watches: 2, Objects: 2, Refs: 2})
	if !targets.Watched(x) || !targets.Watched(y) {
		t.Fatal("x and y are not the objects watched")
	}

	// The controller writes the workload's status meanwhile: retry on
	// conflicts.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		kit.Get(t, mw)
		mw.Spec.Resources = raw(doc("cm-x"))
		return k8s.Update(context.Background(), mw)
	}); err != nil {
		t.Fatal(err)
	}
	waitStats(t, targetcache.Stats{Watches: 1, Objects: 1, Refs: 1})
	if !targets.Watched(x) {
		t.Fatal("x is not watched")
	}

	kit.DeleteAndWait(t, mw)
	waitStats(t, targetcache.Stats{})
}

// countingReader counts the reads that reach the apiserver.
type countingReader struct {
	client.Reader
	gets atomic.Int32
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

// sink records the targets it is told about.
type sink struct {
	mu      sync.Mutex
	changes []targetcache.Target
}

func (s *sink) TargetChanged(t targetcache.Target, _ string) {
	s.mu.Lock()
	s.changes = append(s.changes, t)
	s.mu.Unlock()
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.changes)
}

// The reader's contract: a watched, synced, existing object is read with
// no request; every miss (not watched, absent) is a live read, never a
// NotFound from the store; changes are reported to the referrers' sinks.
func TestReaderMissesReadLive(t *testing.T) {
	ns := kit.Namespace(t, "reader")
	live := &countingReader{Reader: k8s}
	c := newCache(t, restConfig, live)
	defer c.Stop()
	s := &sink{}
	ref := targetcache.Ref{Sink: s, Referrer: types.NamespacedName{Namespace: ns, Name: "referrer"}}
	later := targetcache.Target{GVK: configMapGVK, Namespace: ns, Name: "later"}
	read := func(name string) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(configMapGVK)
		return u, c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, u)
	}

	if err := c.Acquire(ref, later, false); err != nil {
		t.Fatal(err)
	}
	if _, err := read("later"); !apierrors.IsNotFound(err) || live.gets.Load() != 1 {
		t.Fatalf("absent target: %v after %d live reads, want NotFound from 1", err, live.gets.Load())
	}
	configMap(t, ns, "later")
	testkit.Eventually(t, "creation reported", func() (bool, string) { return s.count() > 0, "" })
	got, err := read("later")
	if err != nil || got.GetName() != "later" || got.GetManagedFields() == nil || live.gets.Load() != 1 {
		t.Fatalf("watched target: %v %v after %d live reads, want it whole from the store", got, err, live.gets.Load())
	}
	// A copy: changing it changes nothing held.
	got.SetLabels(map[string]string{"mutated": "yes"})
	if again, _ := read("later"); again.GetLabels()["mutated"] != "" {
		t.Fatal("the store handed out its own object")
	}

	// Not watched: live.
	configMap(t, ns, "elsewhere")
	if _, err := read("elsewhere"); err != nil || live.gets.Load() != 2 {
		t.Fatalf("unwatched object: %v after %d live reads, want 2", err, live.gets.Load())
	}

	// A second referrer shares the watch; the last release stops it.
	ref2 := targetcache.Ref{Sink: s, Referrer: types.NamespacedName{Namespace: ns, Name: "other"}}
	if err := c.Acquire(ref2, later, false); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st != (targetcache.Stats{Watches: 1, Objects: 1, Refs: 2}) {
		t.Fatalf("stats %+v", st)
	}
	c.Release(ref, later)
	if !c.Watched(later) {
		t.Fatal("released with a reference left")
	}
	c.Release(ref2, later)
	if st := c.Stats(); st != (targetcache.Stats{}) {
		t.Fatalf("stats after the last release %+v", st)
	}
	if _, err := read("later"); err != nil || live.gets.Load() != 3 {
		t.Fatalf("released target: %v after %d live reads, want a live read", err, live.gets.Load())
	}

	// A deleted target: the store's absence is confirmed live.
	if err := c.Acquire(ref, later, false); err != nil {
		t.Fatal(err)
	}
	if _, err := read("later"); err != nil {
		t.Fatal(err)
	}
	n := live.gets.Load()
	if err := k8s.Delete(context.Background(), kit.Live(t, &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "later", "namespace": ns}}})); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "deletion seen", func() (bool, string) { return c.Stats().Objects == 0, fmt.Sprintf("%+v", c.Stats()) })
	if _, err := read("later"); !apierrors.IsNotFound(err) || live.gets.Load() != n+1 {
		t.Fatalf("deleted target: %v after %d live reads, want NotFound from a live read", err, live.gets.Load()-n)
	}
	c.Release(ref, later)

	// A watch not synced in time: the read goes live, and the first sync
	// is reported, since it may be newer than that read.
	c.SyncTimeout = time.Nanosecond
	elsewhere := targetcache.Target{GVK: configMapGVK, Namespace: ns, Name: "elsewhere"}
	if err := c.Acquire(ref, elsewhere, false); err != nil {
		t.Fatal(err)
	}
	n, reported := live.gets.Load(), s.count()
	if _, err := read("elsewhere"); err != nil || live.gets.Load() != n+1 {
		t.Fatalf("unsynced target: %v after %d live reads, want one", err, live.gets.Load()-n)
	}
	testkit.Eventually(t, "first sync reported", func() (bool, string) { return s.count() > reported, "" })
	c.Release(ref, elsewhere)

	// A referrer that reads elsewhere (through an account's client): the
	// first sync is reported too.
	c.SyncTimeout = targetcache.DefaultSyncTimeout
	configMap(t, ns, "third")
	third := targetcache.Target{GVK: configMapGVK, Namespace: ns, Name: "third"}
	reported = s.count()
	if err := c.Acquire(ref, third, true); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "first sync reported", func() (bool, string) { return s.count() > reported, "" })
	c.Release(ref, third)
}

// A tenant's FieldPatch: its target is watched by the manager, as any
// other (one object, by name), and an event only queues a reconcile whose
// reads go through the tenant's account: nothing is listed or watched as
// the account, so an account that may only get and patch its target
// (as the operator's guide says suffices) converges and has its drift
// repaired from the manager's watch.
func TestTenantReadsThroughItsAccount(t *testing.T) {
	ctx := context.Background()
	ns := kit.Namespace(t, "tenant-watch")
	if err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "getter", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "get-patch", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "patch"}}}}
	if err := k8s.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "getter", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "get-patch"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "getter", Namespace: ns}}}
	if err := k8s.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	cm := configMap(t, ns, "tenant-cm")
	user := "system:serviceaccount:" + ns + ":getter"

	from := requests.count()
	fp := fieldPatch(t, fmt.Sprintf(`
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: as-getter, namespace: %s}
spec:
  serviceAccountName: getter
  target: {apiVersion: v1, kind: ConfigMap, name: tenant-cm}
  patch: {metadata: {labels: {tenant: "yes"}}}
`, ns))
	waitReason(t, fp, "Applied")
	waitStats(t, targetcache.Stats{Watches: 1, Objects: 1, Refs: 1})
	reads := 0
	for _, r := range requests.since(from) {
		switch {
		case !strings.Contains(r.URL, "/configmaps"):
		case strings.Contains(r.URL, "/configmaps?") && r.User != "":
			t.Errorf("a list or watch as %s: %s %s", r.User, r.Method, r.URL)
		case r.Method == "GET" && strings.HasSuffix(r.URL, "/configmaps/tenant-cm") && r.User == user:
			reads++
		case r.Method == "GET" && strings.HasSuffix(r.URL, "/configmaps/tenant-cm"):
			t.Errorf("a read of the target as %q, not as the account: %s", r.User, r.URL)
		}
	}
	if reads == 0 {
		t.Error("the target was never read as the account")
	}

	from = requests.count()
	kit.ApplyAs(t, "rival", fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata: {name: tenant-cm, namespace: %s, labels: {tenant: "no"}}
`, ns))
	testkit.Eventually(t, "label tenant repaired", func() (bool, string) {
		l := kit.Live(t, cm).GetLabels()
		return l["tenant"] == "yes", fmt.Sprint(l)
	})
	for _, r := range requests.since(from) {
		if strings.Contains(r.URL, "/configmaps/tenant-cm") && r.User != user {
			t.Errorf("the repair read or wrote as %q, not as the account: %s %s", r.User, r.Method, r.URL)
		}
	}

	kit.DeleteAndWait(t, fp)
	waitStats(t, targetcache.Stats{})
}
