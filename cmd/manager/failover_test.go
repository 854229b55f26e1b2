/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/internal/localcp"
)

// The failover test's size and the leader election timing of its two
// managers. `make test` runs 40 FieldPatches with a 4 s lease; the
// issue's run is -failover-n=200, and -failover-lease=15s
// -failover-renew=10s -failover-retry=2s measures the defaults.
var (
	failoverN     = flag.Int("failover-n", 40, "TestFailover: how many ConfigMaps and FieldPatches (half of them deleted).")
	failoverLease = flag.Duration("failover-lease", 4*time.Second, "TestFailover: --leader-elect-lease-duration of both managers.")
	failoverRenew = flag.Duration("failover-renew", 3*time.Second, "TestFailover: --leader-elect-renew-deadline of both managers.")
	failoverRetry = flag.Duration("failover-retry", time.Second, "TestFailover: --leader-elect-retry-period of both managers.")
)

const (
	failoverNS    = "failover"
	leaseNS       = "fieldops-system"
	leaseName     = "fieldops.dev" // the manager's LeaderElectionID
	helmManager   = "helm"
	leaderStarted = "Successfully acquired lease"
	candidateUp   = "Attempting to acquire leader lease"
)

// Two manager processes (this test binary re-executed as cmd/manager's
// main) elect a leader; the leader is killed with SIGKILL while it
// converges N FieldPatches, half of which the test deletes as soon as they
// are Ready. The follower takes over, and then every record of a previous
// owner and every hand-back is exact, and no object is written in a loop.
// A graceful stop (SIGTERM) of the new leader then releases the Lease to a
// third manager at once instead of after a lease duration.
//
// The takeover time (kill to the new leader's acquireTime, and kill to its
// first write) is logged. The only bound checked on it is the one client-go
// guarantees, on recorded timestamps, with slack for a loaded machine: a
// follower takes an expired Lease at its next try, at most
// (1+leaderelection.JitterFactor)×RetryPeriod apart.
func TestFailover(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	n := *failoverN
	if n < 4 {
		t.Fatal("-failover-n must be at least 4")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute+time.Duration(n)*time.Second)
	defer cancel()

	c, dir := failoverCluster(t, ctx)

	// N ConfigMaps applied by "helm"; their managed fields before any patch.
	before := make([][]metav1.ManagedFieldsEntry, n)
	if err := parallel(n, 8, func(i int) error {
		ac := corev1ac.ConfigMap(cmName(i), failoverNS).WithData(map[string]string{"key": "helm", "other": "helm"})
		obj := &corev1.ConfigMap{}
		if err := c.Apply(ctx, ac, client.FieldOwner(helmManager)); err != nil {
			return err
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: cmName(i)}, obj); err != nil {
			return err
		}
		before[i] = obj.ManagedFields
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// The leader, then the follower once the leader holds the Lease.
	a := startManager(t, ctx, dir, "a")
	a.waitLog(t, ctx, leaderStarted)
	var lease coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: leaseNS, Name: leaseName}, &lease); err != nil {
		t.Fatal(err)
	}
	leaderA := *lease.Spec.HolderIdentity
	b := startManager(t, ctx, dir, "b")
	b.waitLog(t, ctx, candidateUp)

	// Watch the FieldPatches and ConfigMaps: delete the first half as soon
	// as each is Ready, kill the leader when half of all are Ready.
	w := newWatcher(t, ctx, c, n)
	if err := parallel(n, 4, func(i int) error { return c.Create(ctx, fieldPatch(i)) }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.halfReady:
	case <-ctx.Done():
		t.Fatalf("half of the FieldPatches not Ready before the kill: %v", ctx.Err())
	}
	killed := a.kill(t)
	w.setKilled(killed)
	t.Logf("killed the leader (SIGKILL) with %d of %d FieldPatches Ready, %d deletions issued", n/2, n, w.deletions())

	// Every deleted FieldPatch gone, every other Ready.
	done := w.waitConverged(t, ctx)
	if err := c.Get(ctx, client.ObjectKey{Namespace: leaseNS, Name: leaseName}, &lease); err != nil {
		t.Fatal(err)
	}
	holder := *lease.Spec.HolderIdentity
	if holder == leaderA || holder == "" {
		t.Fatalf("the Lease is held by %q after the kill, want the follower (the killed leader was %q)", holder, leaderA)
	}
	acquired := lease.Spec.AcquireTime.Time
	takeover := acquired.Sub(killed)
	firstWrite := w.firstWriteAfter(acquired).Sub(killed)
	t.Logf("lease %s, renew deadline %s, retry period %s: the follower acquired the Lease %.2f s after the kill; its first write %.2f s after; all %d converged %.2f s after",
		*failoverLease, *failoverRenew, *failoverRetry, takeover.Seconds(), firstWrite.Seconds(), n, done.Sub(killed).Seconds())
	slack := 5 * time.Second
	if limit := *failoverLease + time.Duration(2.2*float64(*failoverRetry)) + slack; takeover < 0 || takeover > limit {
		t.Errorf("the Lease's acquireTime is %s after the kill, want between 0 and lease duration + 2.2 retry periods + %s = %s", takeover, slack, limit)
	}

	// Records and hand-backs, object by object.
	for i := range n {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: cmName(i)}, cm); err != nil {
			t.Fatal(err)
		}
		if got, want := cm.Data["key"], fmt.Sprintf("patched-%d", i); got != want {
			t.Errorf("%s: data.key %q, want %q (the patch's value, kept by a hand-back)", cmName(i), got, want)
		}
		if i < n/2 {
			if got, want := entries(cm.ManagedFields), entries(before[i]); !reflect.DeepEqual(got, want) {
				t.Errorf("%s after its FieldPatch was deleted: managed fields\n%s\nwant them as before the patch\n%s", cmName(i), got, want)
			}
			continue
		}
		fp := &v1alpha1.FieldPatch{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: fpName(i)}, fp); err != nil {
			t.Fatal(err)
		}
		checkRecord(t, fp, cm)
	}

	// No write loop: each ConfigMap written once by its patch (twice with
	// the hand-back), and nothing written while the new leader renews its
	// Lease three more times after converging.
	for i := range n {
		want := 1
		if i < n/2 {
			want = 2
		}
		// A write repeated because the leader died between the write and
		// its status is idempotent; more is a loop.
		if got := w.configMapWrites(i); got < want || got > want+1 {
			t.Errorf("%s written %d times by the managers, want %d (at most one more across the kill)", cmName(i), got, want)
		}
	}
	quiet := w.eventCount()
	lastRenew := lease.Spec.RenewTime.Time
	for renewals := 0; renewals < 3; {
		if err := c.Get(ctx, client.ObjectKey{Namespace: leaseNS, Name: leaseName}, &lease); err != nil {
			t.Fatal(err)
		}
		if lease.Spec.RenewTime.After(lastRenew) {
			lastRenew = lease.Spec.RenewTime.Time
			renewals++
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(*failoverRetry / 4):
		}
	}
	if after := w.eventCount() - quiet; after > 0 {
		t.Errorf("%d writes to ConfigMaps or FieldPatches after everything converged, while the leader renewed its Lease three times: a write loop", after)
	}
	t.Logf("writes to the ConfigMaps: %d in all for %d objects (%d deleted)", w.totalConfigMapWrites(), n, n/2)

	// A graceful stop of the leader releases the Lease: a third manager
	// takes it at its next try, not a lease duration later.
	third := startManager(t, ctx, dir, "c")
	third.waitLog(t, ctx, candidateUp)
	lw, err := c.Watch(ctx, &coordinationv1.LeaseList{}, client.InNamespace(leaseNS), client.MatchingFields{"metadata.name": leaseName})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Stop()
	term := time.Now()
	b.terminate(t)
	released, taken := false, false
	for ev := range lw.ResultChan() {
		l, ok := ev.Object.(*coordinationv1.Lease)
		if !ok {
			t.Fatalf("Lease watch: %v", ev.Object)
		}
		h := ""
		if l.Spec.HolderIdentity != nil {
			h = *l.Spec.HolderIdentity
		}
		if h == "" {
			released = true
		}
		if h != "" && h != holder {
			t.Logf("SIGTERM to the leader: the third manager acquired the Lease %.2f s later (released first: %v)", l.Spec.AcquireTime.Sub(term).Seconds(), released)
			taken = true
			break
		}
	}
	if !taken {
		t.Fatal("the Lease watch ended before the third manager took the Lease")
	}
	if !released {
		t.Error("the stopped leader did not release the Lease (an empty holderIdentity) before the third manager took it")
	}
	third.terminate(t)
}

// writeKubeconfig writes a kubeconfig of a system:masters user of cp.
// failoverCluster starts a local control plane for the test (stopped when
// it ends), writes the kubeconfig its managers read into dir, creates the
// Lease's and the objects' namespaces, and returns a client without rate
// limits and dir.
func failoverCluster(t *testing.T, ctx context.Context) (client.WithWatch, string) {
	t.Helper()
	cp, err := localcp.Start(localcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	dir := t.TempDir()
	writeKubeconfig(t, cp, dir)
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{leaseNS, failoverNS} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	return c, dir
}

func writeKubeconfig(t *testing.T, cp *localcp.ControlPlane, dir string) string {
	t.Helper()
	user, err := cp.Env.ControlPlane.AddUser(envtest.User{Name: "failover", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func cmName(i int) string { return fmt.Sprintf("cm-%d", i) }
func fpName(i int) string { return fmt.Sprintf("fp-%d", i) }

// fieldPatch takes data.key of ConfigMap cm-i from helm.
func fieldPatch(i int) *v1alpha1.FieldPatch {
	fp := &v1alpha1.FieldPatch{
		ObjectMeta: metav1.ObjectMeta{Name: fpName(i), Namespace: failoverNS},
		Spec: v1alpha1.FieldPatchSpec{
			Target:         v1alpha1.TargetReference{APIVersion: "v1", Kind: "ConfigMap", Name: cmName(i)},
			ConflictPolicy: v1alpha1.ConflictPolicyForce,
			DeletionPolicy: v1alpha1.DeletionPolicyHandBack,
		},
	}
	fp.Spec.Patch.Raw = fmt.Appendf(nil, `{"data":{"key":"patched-%d"}}`, i)
	return fp
}

// checkRecord checks that fp recorded helm as the one previous owner of
// data.key, and that cm's managed fields are helm's data.other and the
// patch's data.key.
func checkRecord(t *testing.T, fp *v1alpha1.FieldPatch, cm *corev1.ConfigMap) {
	t.Helper()
	if len(fp.Status.PreviousOwners) != 1 {
		t.Errorf("%s: %d previous owners, want 1 (helm): %+v", fp.Name, len(fp.Status.PreviousOwners), fp.Status.PreviousOwners)
		return
	}
	po := fp.Status.PreviousOwners[0]
	got := entry{po.Manager, string(po.Operation), po.APIVersion, po.Subresource, strings.Join(po.Fields, ",")}
	want := entry{helmManager, "Apply", "v1", "", ".data.key"}
	if got != want || po.Via != "" || po.Shared != nil || po.FieldsV1 != nil {
		t.Errorf("%s: previous owner %+v (via %q, shared %v), want %+v", fp.Name, got, po.Via, po.Shared, want)
	}
	// helm keeps data.other; its "." of data (the map itself) is not in
	// its entry while the patch holds data.key, as the apiserver leaves
	// it (the hand-back returns it: the deleted half is checked whole).
	wantCM := []entry{
		{fp.Status.FieldManager, "Apply", "v1", "", `{"f:data":{"f:key":{}}}`},
		{helmManager, "Apply", "v1", "", `{"f:data":{"f:other":{}}}`},
	}
	if gotCM := entries(cm.ManagedFields); !reflect.DeepEqual(gotCM, wantCM) {
		t.Errorf("%s with %s: managed fields\n%v\nwant\n%v", cm.Name, fp.Name, gotCM, wantCM)
	}
}

// entry is a managed fields entry without its time.
type entry struct{ manager, operation, apiVersion, subresource, fields string }

// entries are the managed fields without their times, sorted by manager.
func entries(mf []metav1.ManagedFieldsEntry) []entry {
	out := make([]entry, 0, len(mf))
	for _, e := range mf {
		out = append(out, entry{e.Manager, string(e.Operation), e.APIVersion, e.Subresource, fieldsJSON(e.FieldsV1)})
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j].manager < out[i].manager {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// fieldsJSON is f in a canonical JSON form (sorted keys).
func fieldsJSON(f *metav1.FieldsV1) string {
	if f == nil {
		return ""
	}
	var v any
	if err := json.Unmarshal(f.GetRawBytes(), &v); err != nil {
		return "invalid: " + err.Error()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// parallel runs f(0..n-1) on workers goroutines and returns the first error.
func parallel(n, workers int, f func(i int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		next = make(chan int)
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// managerProc is a manager process: this test binary re-executed as
// cmd/manager's main, with leader election on the short timings.
type managerProc struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

// startManager starts the manager name with leader election on the test's
// timings, and extra flags after the others.
func startManager(t *testing.T, ctx context.Context, dir, name string, extra ...string) *managerProc {
	t.Helper()
	args := []string{"--kubeconfig=" + filepath.Join(dir, "kubeconfig"),
		"--leader-elect", "--leader-elect-namespace=" + leaseNS,
		"--leader-elect-lease-duration=" + failoverLease.String(),
		"--leader-elect-renew-deadline=" + failoverRenew.String(),
		"--leader-elect-retry-period=" + failoverRetry.String(),
		"--namespace=" + leaseNS, "--manager-rights-namespaces=*",
		"--metrics-bind-address=0", "--health-probe-bind-address=0"}
	args = append(args, extra...)
	p := &managerProc{name: name, log: filepath.Join(dir, "manager-"+name+".log"), exited: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), "FIELDOPS_TEST_MANAGER_ARGS="+strings.Join(args, " "))
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	// The manager dies with the test.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); _ = logf.Close(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			if len(b) > 8000 {
				b = b[len(b)-8000:]
			}
			t.Logf("manager %s's log (tail):\n%s", p.name, b)
		}
	})
	return p
}

// waitLog waits up to a minute until the manager's log has a line
// containing s (client-go's leader election logs through the manager's
// logger).
func (p *managerProc) waitLog(t *testing.T, ctx context.Context, s string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		if f, err := os.Open(p.log); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if strings.Contains(sc.Text(), s) {
					_ = f.Close()
					return
				}
			}
			_ = f.Close()
		}
		select {
		case <-p.exited:
			t.Fatalf("manager %s exited before logging %q", p.name, s)
		case <-ctx.Done():
			t.Fatalf("manager %s did not log %q: %v", p.name, s, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// kill sends SIGKILL and returns when it was sent.
func (p *managerProc) kill(t *testing.T) time.Time {
	t.Helper()
	at := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	return at
}

// terminate sends SIGTERM and waits for the exit.
func (p *managerProc) terminate(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.exited
}

// watcher follows the FieldPatches and ConfigMaps of the test namespace.
type watcher struct {
	t         *testing.T
	c         client.WithWatch
	n         int
	halfReady chan struct{}

	mu       sync.Mutex
	ready    map[int]bool
	deleting map[int]bool
	gone     map[int]bool
	fps      map[int]*v1alpha1.FieldPatch
	cmWrites map[int]int
	killed   time.Time
	// managerWrites are when the managers' writes to FieldPatches after
	// the kill were seen (the first ones may be the killed leader's, in
	// flight at the kill).
	managerWrites []time.Time
	events        int // FieldPatch events and ConfigMap writes

	converged     chan struct{}
	convergedOnce sync.Once
}

func newWatcher(t *testing.T, ctx context.Context, c client.WithWatch, n int) *watcher {
	w := &watcher{t: t, c: c, n: n, halfReady: make(chan struct{}), converged: make(chan struct{}),
		ready: map[int]bool{}, deleting: map[int]bool{}, gone: map[int]bool{}, fps: map[int]*v1alpha1.FieldPatch{}, cmWrites: map[int]int{}}
	fpw, err := c.Watch(ctx, &v1alpha1.FieldPatchList{}, client.InNamespace(failoverNS))
	if err != nil {
		t.Fatal(err)
	}
	cmw, err := c.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(failoverNS))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fpw.Stop(); cmw.Stop() })
	deletes := make(chan int, n)
	go func() {
		for i := range deletes {
			if err := c.Delete(ctx, &v1alpha1.FieldPatch{ObjectMeta: metav1.ObjectMeta{Name: fpName(i), Namespace: failoverNS}}); err != nil && ctx.Err() == nil {
				t.Errorf("delete %s: %v", fpName(i), err)
			}
		}
	}()
	go func() {
		defer close(deletes)
		for ev := range fpw.ResultChan() {
			if ctx.Err() != nil {
				// The test returned: its context's cancel closes the
				// stream, which may end in an error event.
				return
			}
			w.onFieldPatch(ev, deletes)
		}
	}()
	go func() {
		for ev := range cmw.ResultChan() {
			if ctx.Err() != nil {
				return
			}
			w.onConfigMap(ev)
		}
	}()
	return w
}

// index is i of fp-i or cm-i, or -1.
func index(name, prefix string) int {
	var i int
	if _, err := fmt.Sscanf(name, prefix+"%d", &i); err != nil {
		return -1
	}
	return i
}

// onFieldPatch records one event and issues the deletes.
func (w *watcher) onFieldPatch(ev watch.Event, deletes chan<- int) {
	fp, ok := ev.Object.(*v1alpha1.FieldPatch)
	if !ok {
		w.t.Errorf("FieldPatch watch: %v", ev.Object)
		return
	}
	i := index(fp.Name, "fp-")
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	w.events++
	prev := w.fps[i]
	w.fps[i] = fp
	// The test's own writes: the create, and the delete (only the deletion
	// timestamp changes). Anything else is a manager's.
	own := ev.Type == watch.Added ||
		(ev.Type == watch.Modified && prev != nil && prev.DeletionTimestamp == nil && fp.DeletionTimestamp != nil &&
			reflect.DeepEqual(prev.Status, fp.Status) && reflect.DeepEqual(prev.Finalizers, fp.Finalizers))
	if !own && !w.killed.IsZero() {
		w.managerWrites = append(w.managerWrites, now)
	}
	switch ev.Type {
	case watch.Deleted:
		w.gone[i] = true
	case watch.Added, watch.Modified:
		c := meta.FindStatusCondition(fp.Status.Conditions, "Ready")
		if c != nil && c.Status == metav1.ConditionTrue && fp.Status.ObservedGeneration == fp.Generation && !w.ready[i] {
			w.ready[i] = true
			if len(w.ready) == w.n/2 {
				close(w.halfReady)
			}
			if i < w.n/2 && !w.deleting[i] {
				w.deleting[i] = true
				deletes <- i
			}
		}
	}
	if ev.Type == watch.Deleted && i >= w.n/2 {
		w.t.Errorf("%s is gone, but the test never deleted it", fp.Name)
	}
	if len(w.gone) == w.n/2 && len(w.ready) == w.n {
		w.convergedOnce.Do(func() { close(w.converged) })
	}
}

func (w *watcher) onConfigMap(ev watch.Event) {
	cm, ok := ev.Object.(*corev1.ConfigMap)
	if !ok || ev.Type != watch.Modified {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	w.cmWrites[index(cm.Name, "cm-")]++
}

func (w *watcher) setKilled(at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.killed = at
}

func (w *watcher) deletions() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.deleting)
}

// firstWriteAfter is when the first manager write to a FieldPatch after
// t was seen.
func (w *watcher) firstWriteAfter(t time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, at := range w.managerWrites {
		if !at.Before(t) {
			return at
		}
	}
	return time.Time{}
}

func (w *watcher) configMapWrites(i int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cmWrites[i]
}

func (w *watcher) totalConfigMapWrites() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	total := 0
	for _, n := range w.cmWrites {
		total += n
	}
	return total
}

// eventCount is the number of FieldPatch events and ConfigMap writes seen.
func (w *watcher) eventCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events
}

// waitConverged waits until every FieldPatch to delete is gone and every
// other Ready, and returns when.
func (w *watcher) waitConverged(t *testing.T, ctx context.Context) time.Time {
	t.Helper()
	select {
	case <-w.converged:
		return time.Now()
	case <-ctx.Done():
		w.mu.Lock()
		defer w.mu.Unlock()
		t.Fatalf("not converged: %d of %d Ready, %d of %d deleted: %v", len(w.ready), w.n, len(w.gone), w.n/2, ctx.Err())
		return time.Time{}
	}
}
