package fieldpatch_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/test/localcp"
)

var (
	k8s        client.Client // the test's own client (other field managers)
	restConfig *rest.Config
	requests   = &writeCounter{byPath: map[string]int{}}
)

// writeCounter counts the manager's write requests per URL path.
type writeCounter struct {
	next   http.RoundTripper
	mu     sync.Mutex
	byPath map[string]int
}

func (c *writeCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet {
		c.mu.Lock()
		c.byPath[r.URL.Path]++
		c.mu.Unlock()
	}
	return c.next.RoundTrip(r)
}

// writes returns the manager's writes to paths ending in suffix.
func (c *writeCounter) writes(suffix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for p, v := range c.byPath {
		if strings.HasSuffix(p, suffix) {
			n += v
		}
	}
	return n
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	cp, err := localcp.Start(localcp.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	restConfig = cp.Config
	if k8s, err = client.New(cp.Config, client.Options{Scheme: controllers.Scheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mcfg := rest.CopyConfig(cp.Config)
	mcfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { requests.next = rt; return requests })
	mgr, err := ctrl.NewManager(mcfg, ctrl.Options{Scheme: controllers.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := controllers.Setup(mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return m.Run()
}

func obj(t testing.TB, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func applyAs(t testing.TB, manager, y string) *unstructured.Unstructured {
	t.Helper()
	u := obj(t, y)
	if err := k8s.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership); err != nil {
		t.Fatalf("apply as %s: %v", manager, err)
	}
	return u
}

func namespace(t testing.TB, name string) string {
	t.Helper()
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	if err := k8s.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
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

func get(t testing.TB, o client.Object) {
	t.Helper()
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
		t.Fatal(err)
	}
}

func live(t testing.TB, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	l := &unstructured.Unstructured{}
	l.SetGroupVersionKind(u.GroupVersionKind())
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(u), l); err != nil {
		t.Fatal(err)
	}
	return l
}

// eventually polls cond every 100 ms for up to 20 s.
func eventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
	}
	t.Fatalf("timed out waiting for %s: %s", what, last)
}

// waitReady waits until the patch's Ready condition has the reason.
func waitReason(t testing.TB, fp client.Object, reason string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s reason %s", fp.GetName(), reason), func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fp), fp); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(fp.(v1alpha1.Patcher).PatchStatus().Conditions, "Ready")
		if c == nil {
			return false, "no Ready condition"
		}
		return c.Reason == reason, fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
	})
}

func readyCondition(p v1alpha1.Patcher) metav1.Condition {
	if c := meta.FindStatusCondition(p.PatchStatus().Conditions, "Ready"); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// hasEvent waits for an event about name with the reason whose note
// contains substr.
func hasEvent(t testing.TB, ns, name, reason, substr string) {
	t.Helper()
	eventually(t, "event "+reason, func() (bool, string) {
		var l eventsv1.EventList
		if err := k8s.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
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

// owners returns path → managers ("name/Operation") of an object.
func owners(t testing.TB, u *unstructured.Unstructured) map[string][]string {
	t.Helper()
	mf, err := ownershipcore.Owners(u)
	if err != nil {
		t.Fatal(err)
	}
	return mf.ByPath()
}

func deleteAndWait(t testing.TB, o client.Object) {
	t.Helper()
	if err := k8s.Delete(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	eventually(t, "deletion of "+o.GetName(), func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object))
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}
