/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package targetcache_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/controllers/internal/targetcache"
	"github.com/fieldops/fieldops/test/testkit"
)

// testCache is a Cache of the test's own, sharing watches from shareAt
// objects, whose requests (its watches' and its live reads') are
// recorded. user, when not "", is impersonated.
type testCache struct {
	*targetcache.Cache
	requests *recorder
	live     *countingReader
	ns       string
}

func newTestCache(t *testing.T, ns string, shareAt int, user string) *testCache {
	t.Helper()
	rec := &recorder{}
	cfg := rest.CopyConfig(restConfig)
	if user != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &recording{recorder: rec, next: rt} })
	live := &countingReader{Reader: k8s}
	c := newCache(t, cfg, live)
	c.ShareAt = shareAt
	t.Cleanup(c.Stop)
	return &testCache{Cache: c, requests: rec, live: live, ns: ns}
}

func (c *testCache) target(name string) targetcache.Target {
	return targetcache.Target{GVK: configMapGVK, Namespace: c.ns, Name: name}
}

func (c *testCache) acquire(t *testing.T, ref targetcache.Ref, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := c.Acquire(ref, c.target(n), false); err != nil {
			t.Fatal(err)
		}
	}
}

func (c *testCache) read(name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(configMapGVK)
	return u, c.Get(context.Background(), types.NamespacedName{Namespace: c.ns, Name: name}, u)
}

func (c *testCache) waitStats(t *testing.T, want targetcache.Stats) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("target cache %+v", want), func() (bool, string) {
		got := c.Stats()
		return got == want, fmt.Sprintf("%+v", got)
	})
}

// lists are the lists and watches of configmaps the cache sent since n:
// by name (fieldSelector metadata.name=...) and of the whole namespace.
func (c *testCache) lists(t *testing.T, n int) (byName, whole int) {
	t.Helper()
	for _, r := range c.requests.since(n) {
		u, err := url.Parse(r.URL)
		if err != nil {
			t.Fatal(err)
		}
		if r.Method != "GET" || u.Path != "/api/v1/namespaces/"+c.ns+"/configmaps" {
			continue
		}
		if u.Query().Get("fieldSelector") == "" {
			whole++
		} else {
			byName++
		}
	}
	return byName, whole
}

// told records what its sink is told, by target name.
type told struct {
	mu sync.Mutex
	rv map[string][]string
}

func (s *told) TargetChanged(t targetcache.Target, rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rv == nil {
		s.rv = map[string][]string{}
	}
	s.rv[t.Name] = append(s.rv[t.Name], rv)
}

func (s *told) of(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rv[name]...)
}

func (s *told) all() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for k, v := range s.rv {
		out[k] = append([]string(nil), v...)
	}
	return out
}

func setData(t *testing.T, ns, name, value string) string {
	t.Helper()
	return kit.ApplyAs(t, "owner", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: %s}, data: {a: %q}}", name, ns, value)).GetResourceVersion()
}

// Issue 11: from ShareAt objects of a kind in a namespace, one watch of
// the namespace serves them all. The objects watched alone move to it at
// its first sync; a later one is read without a request; changes of the
// watched objects are told, those of the others are not; the shared
// watch stops with the last reference.
func TestSharedWatchOfANamespace(t *testing.T) {
	ns := kit.Namespace(t, "shared-ns")
	for i := 0; i < 8; i++ {
		configMap(t, ns, fmt.Sprintf("cm-%d", i))
	}
	c := newTestCache(t, ns, 3, "")
	s := &told{}
	ref := targetcache.Ref{Sink: s, Referrer: types.NamespacedName{Namespace: ns, Name: "p"}}

	c.acquire(t, ref, "cm-0", "cm-1")
	c.waitStats(t, targetcache.Stats{Watches: 2, Objects: 2, Refs: 2})
	if byName, whole := c.lists(t, 0); byName != 2 || whole != 0 {
		t.Fatalf("%d watches by name and %d of the namespace for two objects, want 2 (watch-lists) and 0", byName, whole)
	}
	// The third shares: one watch of the namespace holds all 8.
	from := c.requests.count()
	c.acquire(t, ref, "cm-2")
	c.waitStats(t, targetcache.Stats{Watches: 3, Objects: 3, Refs: 3, Shared: 1, Held: 8})
	if byName, whole := c.lists(t, from); byName != 0 || whole != 2 {
		t.Fatalf("%d lists or watches by name and %d of the namespace when sharing, want 0 and 2 (one list, one watch)", byName, whole)
	}
	// A later one: no request at all, read from the shared watch.
	from = c.requests.count()
	c.acquire(t, ref, "cm-7")
	for _, n := range []string{"cm-0", "cm-1", "cm-2", "cm-7"} {
		got, err := c.read(n)
		if err != nil || got.GetName() != n || got.GetManagedFields() == nil {
			t.Fatalf("read %s: %v %v", n, got, err)
		}
	}
	if n := c.requests.count() - from; n != 0 || c.live.gets.Load() != 0 {
		t.Fatalf("%d requests and %d live reads to add and read a shared object, want none", n, c.live.gets.Load())
	}
	// A copy each time.
	got, _ := c.read("cm-7")
	got.SetLabels(map[string]string{"mutated": "yes"})
	if again, _ := c.read("cm-7"); again.GetLabels()["mutated"] != "" {
		t.Fatal("the shared watch handed out its own object")
	}

	// A change of a watched object is told once, with its version; the
	// objects moved from their own watches are told by the shared one
	// only (their own watches stopped).
	before := s.all()
	rv0, rv7, rv5 := setData(t, ns, "cm-0", "2"), setData(t, ns, "cm-7", "2"), setData(t, ns, "cm-5", "2")
	testkit.Eventually(t, "changes told", func() (bool, string) {
		a := s.all()
		return len(a["cm-0"]) > len(before["cm-0"]) && len(a["cm-7"]) > len(before["cm-7"]), fmt.Sprint(a)
	})
	if got := s.of("cm-0")[len(before["cm-0"]):]; fmt.Sprint(got) != fmt.Sprint([]string{rv0}) {
		t.Errorf("cm-0 told %v, want once at %s", got, rv0)
	}
	if got := s.of("cm-7")[len(before["cm-7"]):]; fmt.Sprint(got) != fmt.Sprint([]string{rv7}) {
		t.Errorf("cm-7 told %v, want once at %s", got, rv7)
	}
	if got := s.of("cm-5"); len(got) != 0 {
		t.Errorf("cm-5 (not watched) told %v at %s", got, rv5)
	}
	if got, _ := c.read("cm-0"); got.GetResourceVersion() != rv0 {
		t.Errorf("cm-0 read at %s, want %s", got.GetResourceVersion(), rv0)
	}

	// Deleted: told, and its absence confirmed live.
	if err := k8s.Delete(context.Background(), kit.Live(t, &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "cm-1", "namespace": ns}}})); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "deletion told", func() (bool, string) {
		g := s.of("cm-1")
		return len(g) > 0 && g[len(g)-1] == "", fmt.Sprint(g)
	})
	if _, err := c.read("cm-1"); !apierrors.IsNotFound(err) || c.live.gets.Load() != 1 {
		t.Fatalf("deleted object: %v after %d live reads, want NotFound from one", err, c.live.gets.Load())
	}

	// Below ShareAt the shared watch stays; with the last reference gone
	// it stops.
	for _, n := range []string{"cm-1", "cm-2", "cm-7"} {
		c.Release(ref, c.target(n))
	}
	c.waitStats(t, targetcache.Stats{Watches: 1, Objects: 1, Refs: 1, Shared: 1, Held: 7})
	c.Release(ref, c.target("cm-0"))
	c.waitStats(t, targetcache.Stats{})
}

// Secrets are never shared, whatever their number (issue 16).
func TestSecretsNeverShared(t *testing.T) {
	ns := kit.Namespace(t, "secrets-alone")
	c := newTestCache(t, ns, 2, "")
	ref := targetcache.Ref{Sink: &told{}}
	for i := 0; i < 4; i++ {
		name := fmt.Sprintf("s-%d", i)
		secret(t, ns, name, 64)
		if err := c.Acquire(ref, targetcache.Target{GVK: secretGVK, Namespace: ns, Name: name}, false); err != nil {
			t.Fatal(err)
		}
	}
	c.waitStats(t, targetcache.Stats{Watches: 4, Objects: 4, Refs: 4})
	for _, r := range c.requests.since(0) {
		if u, _ := url.Parse(r.URL); u.Query().Get("fieldSelector") == "" {
			t.Errorf("a request for secrets beyond one by name: %s %s", r.Method, r.URL)
		}
	}
}

// A manager that may list and watch only some names (RBAC resourceNames)
// is refused the shared watch: the objects go back to watches of their
// own, and are read from them.
func TestSharedWatchForbidden(t *testing.T) {
	ctx := context.Background()
	ns := kit.Namespace(t, "shared-forbidden")
	names := []string{"cm-0", "cm-1", "cm-2", "cm-3"}
	for _, n := range names {
		configMap(t, ns, n)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "by-name", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: names, Verbs: []string{"get", "list", "watch"}}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "by-name", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "by-name"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "narrow", APIGroup: "rbac.authorization.k8s.io"}}}
	for _, o := range []client.Object{role, rb} {
		if err := k8s.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	c := newTestCache(t, ns, 2, "narrow")
	s := &told{}
	ref := targetcache.Ref{Sink: s}
	c.acquire(t, ref, names...)
	c.waitStats(t, targetcache.Stats{Watches: 4, Objects: 4, Refs: 4})
	if byName, whole := c.lists(t, 0); whole == 0 || byName < len(names) {
		t.Errorf("%d watches of the namespace and %d by name, want the shared one tried and %d by name", whole, byName, len(names))
	}
	gets := c.live.gets.Load()
	for _, n := range names {
		if got, err := c.read(n); err != nil || got.GetName() != n {
			t.Fatalf("read %s: %v", n, err)
		}
	}
	if n := c.live.gets.Load() - gets; n != 0 {
		t.Errorf("%d live reads after falling back to watches by name, want 0", n)
	}
	rv := setData(t, ns, "cm-3", "2")
	testkit.Eventually(t, "change told", func() (bool, string) {
		g := s.of("cm-3")
		return len(g) > 0 && g[len(g)-1] == rv, fmt.Sprint(g)
	})
	for _, n := range names {
		c.Release(ref, c.target(n))
	}
	c.waitStats(t, targetcache.Stats{})
}

// Randomized: acquires, releases, changes, deletions and re-creations of
// objects in one namespace, with a shared watch from 4 objects on. After
// every step, each watched object is read at its live version (or read
// live as absent) once the sinks were told, and every change of a watched
// object is told. Seed: FIELDOPS_SEED (printed).
func TestSharedWatchRandomized(t *testing.T) {
	seed := time.Now().UnixNano()
	if s, err := strconv.ParseInt(os.Getenv("FIELDOPS_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewSource(seed))
	ns := kit.Namespace(t, "shared-random")
	const objects = 10
	for i := 0; i < objects; i++ {
		configMap(t, ns, fmt.Sprintf("cm-%d", i))
	}
	c := newTestCache(t, ns, 4, "")
	s := &told{}
	ref := targetcache.Ref{Sink: s}
	held := map[string]bool{}
	exists := map[string]bool{}
	for i := 0; i < objects; i++ {
		exists[fmt.Sprintf("cm-%d", i)] = true
	}
	for step := 0; step < 150; step++ {
		name := fmt.Sprintf("cm-%d", rnd.Intn(objects))
		var did string
		switch op := rnd.Intn(5); {
		case op == 0 && !held[name]:
			c.acquire(t, ref, name)
			held[name], did = true, "acquire"
		case op == 1 && held[name]:
			c.Release(ref, c.target(name))
			delete(held, name)
			did = "release"
		case op == 2 && exists[name]:
			obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": name, "namespace": ns}}}
			if err := k8s.Delete(context.Background(), obj); err != nil {
				t.Fatal(err)
			}
			exists[name], did = false, "delete"
		default:
			setData(t, ns, name, fmt.Sprintf("step-%d", step)) // never a no-op
			exists[name], did = true, "write"
		}
		// Every watched object converges to its live version.
		for n := range held {
			want := ""
			l := &unstructured.Unstructured{}
			l.SetGroupVersionKind(configMapGVK)
			if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: n}, l); err == nil {
				want = l.GetResourceVersion()
			} else if !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			testkit.Eventually(t, fmt.Sprintf("step %d (%s %s): %s read at %q", step, did, name, n, want), func() (bool, string) {
				got, err := c.read(n)
				if apierrors.IsNotFound(err) {
					return want == "", "absent"
				}
				if err != nil {
					return false, err.Error()
				}
				return got.GetResourceVersion() == want, got.GetResourceVersion()
			})
			// A shared watch holds every object of the namespace.
			testkit.Eventually(t, fmt.Sprintf("step %d (%s %s): shared watch holds all", step, did, name), func() (bool, string) {
				st, want := c.Stats(), 0
				for _, e := range exists {
					if e {
						want++
					}
				}
				return st.Shared == 0 || st.Held == want, fmt.Sprintf("%+v, want %d held", st, want)
			})
			if n == name && (did == "write" || did == "delete") {
				testkit.Eventually(t, fmt.Sprintf("step %d (%s %s) told", step, did, name), func() (bool, string) {
					g := s.of(n)
					return len(g) > 0 && g[len(g)-1] == want, fmt.Sprint(g)
				})
			}
		}
	}
	for n := range held {
		c.Release(ref, c.target(n))
	}
	c.waitStats(t, targetcache.Stats{})
}

func newCache(t testing.TB, cfg *rest.Config, live client.Reader) *targetcache.Cache {
	t.Helper()
	c, err := targetcache.New(cfg, nil, k8s.RESTMapper(), live)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Issue 11: FieldPatches whose targets share one watch decide exactly as
// with watches of their own. 20 FieldPatches on 20 ConfigMaps of one
// namespace converge through one shared watch; a change of a field none
// of them owns on one target costs no write; a change of a label one owns
// is repaired with one apply of that target, and nothing else is written.
func TestSharedWatchDrift(t *testing.T) {
	ns := kit.Namespace(t, "shared-drift")
	const n = 20
	fps := make([]client.Object, n)
	for i := 0; i < n; i++ {
		configMap(t, ns, fmt.Sprintf("cm-%02d", i))
	}
	for i := 0; i < n; i++ {
		fps[i] = fieldPatch(t, labelPatch(fmt.Sprintf("fp-%02d", i), ns, "ConfigMap", fmt.Sprintf("cm-%02d", i), "patched"))
	}
	for _, fp := range fps {
		waitReason(t, fp, "Applied")
	}
	waitStats(t, targetcache.Stats{Watches: n, Objects: n, Refs: n, Shared: 1, Held: n})
	// Every list and watch of this namespace's configmaps since: none.
	from := requests.count()
	kit.ApplyAs(t, "owner", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cm-03, namespace: %s}, data: {a: changed}}", ns))
	kit.ApplyAs(t, "rival", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cm-03, namespace: %s, labels: {patched: \"no\"}}}", ns))
	testkit.Eventually(t, "label patched repaired", func() (bool, string) {
		l := kit.Live(t, &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "cm-03", "namespace": ns}}}).GetLabels()
		return l["patched"] == "yes", fmt.Sprint(l)
	})
	waitReason(t, fps[3], "Applied")
	writes := map[string]int{}
	for _, r := range requests.since(from) {
		if r.Method != "GET" && strings.Contains(r.URL, "/namespaces/"+ns+"/configmaps") {
			u, _ := url.Parse(r.URL)
			writes[r.Method+" "+u.Path]++
		}
		if r.Method == "GET" && strings.Contains(r.URL, "/namespaces/"+ns+"/configmaps") {
			t.Errorf("a read of a target beyond the shared watch: %s", r.URL)
		}
	}
	want := map[string]int{"PATCH /api/v1/namespaces/" + ns + "/configmaps/cm-03": 1}
	if fmt.Sprint(writes) != fmt.Sprint(want) {
		t.Errorf("writes of targets %v, want %v (one repair, nothing for the change of a field no FieldPatch owns)", writes, want)
	}
	for _, fp := range fps {
		kit.DeleteAndWait(t, fp)
	}
	waitStats(t, targetcache.Stats{})
}

// A shared watch holds each of its objects as the JSON the apiserver sent
// (what a target costs the manager while it is patched), no more, and
// every read is the object the apiserver serves.
func TestSharedWatchHoldsJSON(t *testing.T) {
	ns := kit.Namespace(t, "shared-bytes")
	const n = 12
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("cm-%d", i)
		kit.ApplyAs(t, "helm", fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata:
  name: %[1]s
  namespace: %[2]s
  labels: {app.kubernetes.io/name: %[1]s, app.kubernetes.io/instance: bench, app.kubernetes.io/managed-by: Helm, helm.sh/chart: bench-1.0.0}
  annotations: {meta.helm.sh/release-name: bench, meta.helm.sh/release-namespace: %[2]s}
data: {LOG_LEVEL: info, PORT: "8080", LISTEN_ADDRESS: "0.0.0.0:8080", METRICS_ADDRESS: "0.0.0.0:9090", NAME: %[1]s}
`, names[i], ns))
	}
	c := newTestCache(t, ns, 2, "")
	c.acquire(t, targetcache.Ref{Sink: &told{}, Referrer: types.NamespacedName{Namespace: ns, Name: "p"}}, names...)
	c.waitStats(t, targetcache.Stats{Watches: n, Objects: n, Refs: n, Shared: 1, Held: n})
	jsonBytes := 0
	for _, name := range names {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(configMapGVK)
		if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, live); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(live.Object)
		if err != nil {
			t.Fatal(err)
		}
		jsonBytes += len(b)
		got, err := c.read(name)
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(got.Object, live.Object) {
			t.Errorf("%s read from the shared watch:\n%v\nlive:\n%v", name, got.Object, live.Object)
		}
	}
	// Each object is held as the JSON the apiserver sent, once (no map,
	// no copy of the list's body); the apiserver's encoding may differ
	// from this one's in spacing and key order, not in size by much.
	if held := c.HeldBytes(); held == 0 || 10*held > 11*jsonBytes {
		t.Errorf("the shared watch holds %d bytes for %d bytes of JSON, want about that", held, jsonBytes)
	}
}

// A referrer that reads live (a tenant's FieldPatch, through its account)
// and joins a shared watch that has synced is told nothing at the join:
// it reads after Acquire, so its read is at least as new as the watch;
// a later change is told, once.
func TestLiveReaderJoinsSyncedWatchUntold(t *testing.T) {
	ns := kit.Namespace(t, "shared-live")
	for i := 0; i < 4; i++ {
		configMap(t, ns, fmt.Sprintf("cm-%d", i))
	}
	c := newTestCache(t, ns, 2, "")
	s := &told{}
	c.acquire(t, targetcache.Ref{Sink: s, Referrer: types.NamespacedName{Namespace: ns, Name: "p"}}, "cm-0", "cm-1")
	c.waitStats(t, targetcache.Stats{Watches: 2, Objects: 2, Refs: 2, Shared: 1, Held: 4})
	tenant := targetcache.Ref{Sink: s, Referrer: types.NamespacedName{Namespace: ns, Name: "tenant"}}
	if err := c.Acquire(tenant, c.target("cm-3"), true); err != nil {
		t.Fatal(err)
	}
	rv := setData(t, ns, "cm-3", "2")
	testkit.Eventually(t, "change told", func() (bool, string) { return len(s.of("cm-3")) > 0, "" })
	if got := s.of("cm-3"); fmt.Sprint(got) != fmt.Sprint([]string{rv}) {
		t.Errorf("cm-3 told %v, want only its change at %s", got, rv)
	}
}
