/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command benchscale is `make bench-scale N=1000` (issue 11): it starts one
// local control plane (internal/localcp) and runs, one after the other on the
// same kube-apiserver, two managers on the same kind of intent:
//
//   - Flux: the ssa ResourceManager's ApplyAll (fluxcd/pkg/ssa, built from
//     its own module in test/benchscale/flux), a separate process applying
//     N partial Deployments;
//   - fieldops: the manager binary (cmd/manager), a separate process, with N
//     FieldPatches created by this harness.
//
// The intent: N Deployments created with Server-Side Apply by the field
// manager "helm" (a namespace per side), and N partial intents that each add
// one env var to one Deployment's container. Per side it measures the
// converge wall time (Flux: ApplyAll returns; fieldops: every FieldPatch
// Ready, from the first create), requests per object by HTTP method (Flux: a
// wrapping RoundTripper in its process; fieldops: rest_client_requests_total
// scraped from its metrics endpoint), manager CPU seconds and peak RSS
// (VmHWM) from /proc, and kube-apiserver+etcd CPU from /proc; then the
// fieldops hand-back (delete all N FieldPatches: time until all are gone,
// requests per object). It prints one table with both sides and the ratios
// fieldops/Flux. Timings are printed, never asserted: they depend on the
// machine and what else runs on it.
//
// With -shards S (make bench-scale SHARDS=4), the same N FieldPatches then
// run over S manager processes on the same apiserver (shards.go), beside
// the one-manager run: the manager side of the converge (from the last
// create until all are Ready), and each shard's CPU and memory.
//
// With -selector (the default), after the per-object run: one FieldPatch
// with spec.targetSelector over N new Deployments (selector.go): its
// converge, a quiet period, the repair of drift on 100 targets and the
// hand-back, beside Flux's ApplyAll.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/internal/localcp"
)

// The intent both sides apply.
const (
	helmManager = "helm"
	container   = "app"
	envName     = "FIELDOPS_BENCH"
	fluxNS      = "bench-flux"
	fieldopsNS  = "bench-fieldops"
	warmupNS    = "bench-warmup"
)

// rssInterval is how often a side's resident memory is sampled during
// its converge, for the file-backed part of its peak.
const rssInterval = 100 * time.Millisecond

// options are the command's flags.
type options struct {
	n           int
	concurrency int
	// finalizerPolicy installs config/admission (the finalizers at
	// creation), as config/default does.
	finalizerPolicy bool
	managerBin      string
	// managerGOGC is the manager's GOGC ("": the environment's).
	managerGOGC string
	// managerGODEBUG is the manager's GODEBUG ("": the environment's).
	managerGODEBUG string
	fluxBin        string
	logDir         string
	pprofDir       string
	pprofSeconds   int
	timeout        time.Duration
	// shards, when positive, adds the sharded run (shards.go), with
	// FieldPatches placed by shardLayout.
	shards      int
	shardLayout string
	// selector adds the selector run (selector.go): one FieldPatch with
	// spec.targetSelector over N Deployments, with selectorQuiet of
	// quiet after its converge.
	selector      bool
	selectorQuiet time.Duration
	// tenant runs the FieldPatches as the default install does (tenant.go).
	tenant bool
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 1000, "Number of Deployments and intents per side.")
	flag.BoolVar(&o.finalizerPolicy, "finalizer-policy", true, "Install config/admission/finalizers.yaml (an overlay adds it to config/default on Kubernetes 1.36+) before the fieldops side: FieldPatches get their finalizer at creation.")
	flag.IntVar(&o.concurrency, "concurrency", 4, "Workers of both managers: fieldops --concurrency and Flux ResourceManager.SetConcurrency (kustomize-controller's --concurrent-ssa default).")
	flag.StringVar(&o.managerBin, "manager", "bin/manager", "The fieldops manager binary (go build ./cmd/manager).")
	flag.StringVar(&o.managerGOGC, "manager-gogc", "", "If set, the manager's GOGC (Go's garbage collector target, percent of the live heap; default 100), to measure memory against CPU.")
	flag.StringVar(&o.managerGODEBUG, "manager-godebug", "", "If set, the manager's GODEBUG: memprofilerate=1 makes -pprof-dir's heap profile record every allocation, exact to the byte, at the cost of the manager's speed (converge times are then not comparable).")
	flag.StringVar(&o.fluxBin, "flux", "bin/benchscale-flux", "The Flux side's binary (cd test/benchscale/flux && go build).")
	flag.StringVar(&o.logDir, "log-dir", "", "Where the managers' logs go (default: a new temporary directory, printed).")
	flag.StringVar(&o.pprofDir, "pprof-dir", "", "If set, run the manager with --pprof-bind-address and save a CPU profile of the converge (-pprof-seconds) and a heap profile after it here, and kube-apiserver's CPU profiles of both sides' converge, for go tool pprof.")
	flag.IntVar(&o.pprofSeconds, "pprof-seconds", 20, "Length of the CPU profile with -pprof-dir.")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "Give up after this long.")
	flag.IntVar(&o.shards, "shards", 0, "If positive, after the one-manager run: the same N FieldPatches over this many manager processes, each with --watch-label-selector="+v1alpha1.ShardLabel+"=shard-<i>, FieldPatch i labelled shard-<i mod shards> (converge only, no hand-back).")
	flag.StringVar(&o.shardLayout, "shard-layout", layoutMod, "With -shards: "+layoutMod+" puts all N FieldPatches and Deployments in one namespace; "+layoutNamespace+" puts FieldPatch i and its Deployment in namespace "+shardsNS+"-<i mod shards>, so that each shard's targets have a namespace of their own.")
	flag.BoolVar(&o.tenant, "tenant", false, "Run fieldops as the default install does: each FieldPatch acts as its namespace's "+tenantAccount+" ServiceAccount (--default-service-account), here bound to a Role that may read, list, watch and patch the namespace's Deployments, and its targets are read through an impersonating client; without it, with the manager's rights (--manager-rights-namespaces=*) from the manager's watches.")
	flag.BoolVar(&o.selector, "selector", true, "After the per-object run: one FieldPatch with spec.targetSelector over N new Deployments (a new manager process): converge, a quiet period (-selector-quiet), drift of 100 targets by another field manager, hand-back.")
	flag.DurationVar(&o.selectorQuiet, "selector-quiet", time.Minute, "With -selector: how long the quiet period after the converge lasts, counting the manager's requests.")
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	r, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		os.Exit(1)
	}
	r.print(os.Stdout)
	r.printSelector(os.Stdout)
	r.printShards(os.Stdout)
}

// sideResult is one side's converge.
type sideResult struct {
	wall     time.Duration
	requests requestCounts // by method, for all N
	mgrCPU   float64       // seconds
	cpCPU    float64       // kube-apiserver + etcd, seconds
	peakRSS  int64         // KiB, VmHWM
	peak     rssSample     // the largest sample during the converge, with its split
	before   rssSample     // just before the converge
	after    rssSample     // at the end of the converge
	heap     heapStats     // the Go heap after the converge (fieldops only)
	applied  int           // Deployments carrying the env var afterwards
	flux     *fluxResult
	// afterCreates is the manager side of the converge (fieldops): from
	// the last FieldPatch created until all are Ready.
	afterCreates time.Duration
}

// handBack is the fieldops hand-back of all N FieldPatches.
type handBack struct {
	wall     time.Duration
	requests requestCounts
	mgrCPU   float64
	cpCPU    float64
	left     int // Deployments still carrying the env var afterwards
}

// result is the whole run.
type result struct {
	o        options
	flux     sideResult
	fieldops sideResult
	handBack handBack
	sharded  *shardedResult  // with -shards
	selector *selectorResult // with -selector
	logDir   string
}

// bench holds what both sides share.
type bench struct {
	o          options
	c          client.WithWatch
	apiserver  *http.Client // authenticated as cluster admin, for /debug/pprof
	host       string
	kubeconfig string
	cpPIDs     []int
	logDir     string
}

func run(o options) (*result, error) {
	if o.n < 1 {
		return nil, errors.New("-n must be at least 1")
	}
	for _, b := range []*string{&o.managerBin, &o.fluxBin} {
		abs, err := filepath.Abs(*b)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("%w (make bench-scale builds it)", err)
		}
		*b = abs
	}
	logDir, err := makeLogDir(o.logDir)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	cp, err := localcp.Start(localcp.Options{})
	if err != nil {
		return nil, err
	}
	defer func() { _ = cp.Stop() }()
	b, err := newBench(o, cp, logDir)
	if err != nil {
		return nil, err
	}
	res := &result{o: o, logDir: logDir}
	fmt.Fprintf(os.Stderr, "benchscale: N=%d, logs and kubeconfig in %s\n", o.n, logDir)
	if err := b.runAll(ctx, res); err != nil {
		return nil, err
	}
	return res, nil
}

// makeLogDir makes dir, or a new temporary directory when dir is "".
func makeLogDir(dir string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "benchscale-")
	}
	return dir, os.MkdirAll(dir, 0o755)
}

// newBench connects to the control plane cp as cluster admin, with no
// client-side rate limit, and writes the managers' kubeconfig to logDir.
func newBench(o options, cp *localcp.ControlPlane, logDir string) (*bench, error) {
	pids, err := childPIDs("kube-apiserver", "etcd")
	if err != nil {
		return nil, err
	}
	kubeconfig, err := writeKubeconfig(cp, logDir)
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		return nil, err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &bench{o: o, c: c, apiserver: hc, host: strings.TrimSuffix(cfg.Host, "/"), kubeconfig: kubeconfig, cpPIDs: []int{pids["kube-apiserver"], pids["etcd"]}, logDir: logDir}, nil
}

// runAll runs the sides in order into res: Flux, fieldops (after the
// Flux side's Deployments are gone and, with -finalizer-policy, the
// policy is installed), then the selector and sharded runs as the options
// say.
func (b *bench) runAll(ctx context.Context, res *result) error {
	var err error
	if res.flux, err = b.runFlux(ctx); err != nil {
		return fmt.Errorf("flux side: %w", err)
	}
	// The apiserver and etcd of the fieldops side hold no Deployment of
	// the Flux side.
	if err := b.deleteEach(ctx, b.o.n, func(i int) client.Object {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: fmt.Sprintf("bench-%d", i)}}
	}); err != nil {
		return err
	}
	if b.o.finalizerPolicy {
		if err := localcp.InstallFinalizerPolicy(ctx, b.c, "default", nil); err != nil {
			return err
		}
	}
	if res.fieldops, res.handBack, err = b.runFieldops(ctx); err != nil {
		return fmt.Errorf("fieldops side: %w", err)
	}
	if b.o.selector {
		if res.selector, err = b.runSelector(ctx); err != nil {
			return fmt.Errorf("selector run: %w", err)
		}
	}
	if b.o.shards > 0 {
		if res.sharded, err = b.runSharded(ctx); err != nil {
			return fmt.Errorf("sharded fieldops side: %w", err)
		}
	}
	return nil
}

// createDeployments creates namespace ns and N Deployments in it with
// Server-Side Apply as the field manager "helm".
func (b *bench) createDeployments(ctx context.Context, ns string, n int) error {
	if err := b.createNamespace(ctx, ns); err != nil {
		return err
	}
	return parallel(n, 8, func(i int) error {
		d := deployment(ns, fmt.Sprintf("bench-%d", i))
		return b.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(d), client.FieldOwner(helmManager), client.ForceOwnership)
	})
}

// createNamespace creates ns, and with -tenant its tenant account's rights
// (grantTenant).
func (b *bench) createNamespace(ctx context.Context, ns string) error {
	if err := b.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	if b.o.tenant {
		return b.grantTenant(ctx, ns)
	}
	return nil
}

// deployment is a Helm-chart-like Deployment: one container with a port,
// resources, probes and two env vars.
func deployment(ns, name string) *unstructured.Unstructured {
	labels := map[string]any{"app.kubernetes.io/name": name, "app.kubernetes.io/instance": "bench"}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{
			"app.kubernetes.io/name": name, "app.kubernetes.io/instance": "bench", "app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "bench-1.0.0",
		}, "annotations": map[string]any{"meta.helm.sh/release-name": "bench", "meta.helm.sh/release-namespace": ns}},
		"spec": map[string]any{
			"replicas": int64(2),
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": container, "image": "registry.example/bench:1.0.0",
					"ports":          []any{map[string]any{"name": "http", "containerPort": int64(8080)}},
					"env":            []any{map[string]any{"name": "LOG_LEVEL", "value": "info"}, map[string]any{"name": "PORT", "value": "8080"}},
					"resources":      map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}, "limits": map[string]any{"memory": "256Mi"}},
					"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/healthz", "port": "http"}},
				}}},
			},
		},
	}}
}

// countApplied counts the Deployments of ns whose container carries the
// env var.
func (b *bench) countApplied(ctx context.Context, ns string) (int, error) {
	var l appsv1.DeploymentList
	if err := b.c.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	n := 0
	for _, d := range l.Items {
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if c.Name == container && e.Name == envName {
					n++
				}
			}
		}
	}
	return n, nil
}

// fluxResult is the line the Flux side prints after ApplyAll.
type fluxResult struct {
	WallSeconds float64        `json:"wallSeconds"`
	Requests    map[string]int `json:"requests"`
	DryRun      int            `json:"dryRun"`
	Actions     map[string]int `json:"actions"`
	Error       string         `json:"error"`
}

func (b *bench) runFlux(ctx context.Context) (sideResult, error) {
	var r sideResult
	if err := b.createDeployments(ctx, fluxNS, b.o.n); err != nil {
		return r, err
	}
	p, err := b.startFlux(ctx)
	if err != nil {
		return r, err
	}
	defer p.close()
	pid := p.cmd.Process.Pid
	cpu0, cp0, err := b.cpuNow(pid)
	if err != nil {
		return r, err
	}
	var profile sync.WaitGroup
	defer profile.Wait()
	if b.o.pprofDir != "" {
		profile.Go(func() { b.profileAPIServer("apiserver-flux-converge-cpu.pb.gz") })
	}
	if r.before, err = readRSS(pid); err != nil {
		return r, err
	}
	fr, err := p.applyAll(&r)
	if err != nil {
		return r, err
	}
	u, err := b.endOf(pid, cpu0, cp0)
	if err != nil {
		return r, err
	}
	r.mgrCPU, r.cpCPU, r.peakRSS, r.after = u.mgrCPU, u.cpCPU, u.peakRSS, u.after
	r.wall = time.Duration(fr.WallSeconds * float64(time.Second))
	r.requests = requestCounts{}
	for m, v := range fr.Requests {
		r.requests[m] = float64(v)
	}
	r.flux = fr
	r.applied, err = b.countApplied(ctx, fluxNS)
	return r, err
}

// fluxProc is the running Flux side: it prints a line when ready, reads
// "go" to run ApplyAll, then prints its fluxResult.
type fluxProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner
	log   *os.File
}

// startFlux starts the Flux side, logging to flux.log, and waits until it
// is ready.
func (b *bench) startFlux(ctx context.Context) (*fluxProc, error) {
	logf, err := os.Create(filepath.Join(b.logDir, "flux.log"))
	if err != nil {
		return nil, err
	}
	p := &fluxProc{log: logf}
	p.cmd = exec.CommandContext(ctx, b.o.fluxBin, "--kubeconfig", b.kubeconfig, "--namespace", fluxNS,
		"--n", strconv.Itoa(b.o.n), "--concurrency", strconv.Itoa(b.o.concurrency), "--container", container, "--env", envName)
	p.cmd.Stderr = logf
	stdout, err := p.pipes()
	if err == nil {
		err = p.cmd.Start()
	}
	if err != nil {
		_ = logf.Close()
		return nil, err
	}
	p.lines = bufio.NewScanner(stdout)
	if !p.lines.Scan() {
		p.close()
		return nil, fmt.Errorf("flux side exited before ready (see %s)", logf.Name())
	}
	return p, nil
}

// pipes connects the Flux side's standard input and returns its standard
// output.
func (p *fluxProc) pipes() (io.Reader, error) {
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	return p.cmd.StdoutPipe()
}

// applyAll runs ApplyAll and returns its result, sampling the resident
// memory meanwhile into r.peak.
func (p *fluxProc) applyAll(r *sideResult) (*fluxResult, error) {
	pid := p.cmd.Process.Pid
	peak := watchRSS(pid, rssInterval)
	if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
		peak.stop()
		return nil, err
	}
	ok := p.lines.Scan()
	r.peak = peak.stop()
	if !ok {
		return nil, fmt.Errorf("flux side exited during ApplyAll (see %s)", p.log.Name())
	}
	var fr fluxResult
	if err := json.Unmarshal(p.lines.Bytes(), &fr); err != nil {
		return nil, err
	}
	if fr.Error != "" {
		return nil, fmt.Errorf("ApplyAll: %s", fr.Error)
	}
	return &fr, nil
}

// close ends the Flux side's input, waits for its exit and closes its log.
func (p *fluxProc) close() {
	_ = p.stdin.Close()
	_ = p.cmd.Wait()
	_ = p.log.Close()
}

// cpuNow is the CPU seconds of pid and of the control plane so far.
func (b *bench) cpuNow(pid int) (mgr, cp float64, err error) {
	if mgr, err = cpuOf(pid); err != nil {
		return 0, 0, err
	}
	cp, err = cpuOf(b.cpPIDs...)
	return mgr, cp, err
}

// freeAddr returns a free 127.0.0.1 address.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// manager is the running fieldops manager process.
type manager struct {
	cmd        *exec.Cmd
	exited     chan struct{}
	metricsURL string
	pprofURL   string
}

func (b *bench) startManager(ctx context.Context) (*manager, error) {
	return b.startManagerWith(ctx, "manager.log")
}

// startManagerWith starts the manager with extra flags after the usual
// ones, logging to logName in the log directory, and waits until it is
// ready.
func (b *bench) startManagerWith(ctx context.Context, logName string, extra ...string) (*manager, error) {
	metricsAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	probeAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	// The FieldPatches act with the manager's rights (reading targets from
	// its watches), or with -tenant as the default install runs them
	// (rightsFlag).
	args := []string{"--kubeconfig", b.kubeconfig, "--concurrency", strconv.Itoa(b.o.concurrency),
		"--metrics-bind-address", metricsAddr, "--metrics-secure=false", "--health-probe-bind-address", probeAddr,
		b.rightsFlag()}
	args = append(args, extra...)
	m := &manager{metricsURL: "http://" + metricsAddr + "/metrics"}
	if b.o.pprofDir != "" {
		pprofAddr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		args = append(args, "--pprof-bind-address", pprofAddr)
		m.pprofURL = "http://" + pprofAddr + "/debug/pprof/"
	}
	logf, err := os.Create(filepath.Join(b.logDir, logName))
	if err != nil {
		return nil, err
	}
	m.cmd = exec.Command(b.o.managerBin, args...)
	m.cmd.Env = b.managerEnv()
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	if err := m.cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, err
	}
	m.exited = make(chan struct{})
	go func() { _ = m.cmd.Wait(); _ = logf.Close(); close(m.exited) }()
	if err := m.waitReady(ctx, "http://"+probeAddr+"/readyz", logf.Name()); err != nil {
		return nil, err
	}
	return m, nil
}

// managerEnv is the manager's environment: nil (this process's) unless
// -manager-gogc or -manager-godebug set GOGC or GODEBUG.
func (b *bench) managerEnv() []string {
	if b.o.managerGOGC == "" && b.o.managerGODEBUG == "" {
		return nil
	}
	env := os.Environ()
	if b.o.managerGOGC != "" {
		env = append(env, "GOGC="+b.o.managerGOGC)
	}
	if b.o.managerGODEBUG != "" {
		env = append(env, "GODEBUG="+b.o.managerGODEBUG)
	}
	return env
}

// waitReady polls readyz every 100 ms until it answers OK; the manager
// is stopped when that takes over a minute or ctx ends, and an exit is
// an error naming its log.
func (m *manager) waitReady(ctx context.Context, readyz, log string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(readyz)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			m.stop()
			return fmt.Errorf("manager not ready after a minute (see %s)", log)
		}
		select {
		case <-m.exited:
			return fmt.Errorf("manager exited (see %s)", log)
		case <-ctx.Done():
			m.stop()
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM, then SIGKILL after 15 s, and waits for the exit.
func (m *manager) stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(15 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
}

// fieldPatch is the intent of Deployment bench-i: one env var.
func fieldPatch(ns string, i int) *v1alpha1.FieldPatch {
	fp := &v1alpha1.FieldPatch{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", i), Namespace: ns},
		Spec: v1alpha1.FieldPatchSpec{
			Target: v1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: fmt.Sprintf("bench-%d", i)},
		},
	}
	fp.Spec.Patch.Raw = fmt.Appendf(nil, `{"spec":{"template":{"spec":{"containers":[{"name":%q,"env":[{"name":%q,"value":"%d"}]}]}}}}`, container, envName, i)
	return fp
}

func (b *bench) runFieldops(ctx context.Context) (sideResult, handBack, error) {
	var (
		r sideResult
		h handBack
	)
	if err := b.createDeployments(ctx, fieldopsNS, b.o.n); err != nil {
		return r, h, err
	}
	if err := b.createDeployments(ctx, warmupNS, 1); err != nil {
		return r, h, err
	}
	m, err := b.startManager(ctx)
	if err != nil {
		return r, h, err
	}
	defer m.stop()

	// Warm up: one FieldPatch on a Deployment elsewhere starts the
	// manager's Deployment watch, as in a running operator.
	warm := newTracker(b.c, warmupNS)
	go warm.run(ctx)
	if err := b.c.Create(ctx, fieldPatch(warmupNS, 0)); err != nil {
		return r, h, err
	}
	if _, err := warm.wait(ctx, func(ready, present int) bool { return ready == 1 }); err != nil {
		return r, h, fmt.Errorf("warm-up FieldPatch: %w", err)
	}
	before, err := settle(m.metricsURL, 2*time.Second, 20*time.Second)
	if err != nil {
		return r, h, err
	}
	t := newTracker(b.c, fieldopsNS)
	go t.run(ctx)
	if _, err := t.wait(ctx, func(int, int) bool { return true }); err != nil { // listed and watching
		return r, h, err
	}
	after, err := b.convergeFieldops(ctx, m, t, before, &r)
	if err != nil {
		return r, h, err
	}
	if before, err = b.profileConverged(m, after); err != nil {
		return r, h, err
	}
	h, err = b.handBackFieldops(ctx, m, t, before)
	return r, h, err
}

// convergeFieldops creates the N FieldPatches and measures into r until
// all are Ready (t follows them), the requests from the manager's counts
// before; it returns the counts once settled. With -pprof-dir it profiles
// the manager's and the apiserver's CPU meanwhile.
func (b *bench) convergeFieldops(ctx context.Context, m *manager, t *tracker, before requestCounts, r *sideResult) (requestCounts, error) {
	pid := m.cmd.Process.Pid
	cpu0, cp0, err := b.cpuNow(pid)
	if err != nil {
		return nil, err
	}
	var profile sync.WaitGroup
	b.profileConverge(&profile, m, "fieldops-converge-cpu.pb.gz", "apiserver-fieldops-converge-cpu.pb.gz")
	if r.before, err = readRSS(pid); err != nil {
		return nil, err
	}
	peak := watchRSS(pid, rssInterval)
	start := time.Now()
	if err := parallel(b.o.n, 8, func(i int) error { return b.c.Create(ctx, fieldPatch(fieldopsNS, i)) }); err != nil {
		peak.stop()
		return nil, err
	}
	created := time.Now()
	n := b.o.n
	done, err := t.wait(ctx, func(ready, present int) bool { return ready == n })
	if err != nil {
		peak.stop()
		return nil, err
	}
	r.wall, r.afterCreates = done.Sub(start), done.Sub(created)
	after, err := settle(m.metricsURL, 2*time.Second, 30*time.Second)
	r.peak = peak.stop()
	if err != nil {
		return nil, err
	}
	u, err := b.endOf(pid, cpu0, cp0)
	if err != nil {
		return nil, err
	}
	r.mgrCPU, r.cpCPU, r.peakRSS, r.after = u.mgrCPU, u.cpCPU, u.peakRSS, u.after
	if r.heap, err = scrapeHeap(m.metricsURL); err != nil {
		return nil, err
	}
	r.requests = after.minus(before)
	if r.applied, err = b.countApplied(ctx, fieldopsNS); err != nil {
		return nil, err
	}
	profile.Wait()
	return after, nil
}

// profileConverge starts in profile, with -pprof-dir, CPU profiles of the
// manager m and of the apiserver, saved as managerName and apiserverName.
func (b *bench) profileConverge(profile *sync.WaitGroup, m *manager, managerName, apiserverName string) {
	if m.pprofURL != "" {
		profile.Go(func() { b.profileManager(m, managerName) })
		profile.Go(func() { b.profileAPIServer(apiserverName) })
	}
}

// profileConverged saves, with -pprof-dir, the heap profiles of the
// converged manager and returns its request counts once settled again;
// without, after.
func (b *bench) profileConverged(m *manager, after requestCounts) (requestCounts, error) {
	if m.pprofURL == "" {
		return after, nil
	}
	if err := save(http.DefaultClient, m.pprofURL+"heap?gc=1", filepath.Join(b.o.pprofDir, "fieldops-converged-heap.pb.gz")); err != nil {
		fmt.Fprintln(os.Stderr, "benchscale: heap profile:", err)
	}
	// The text form ends with runtime.MemStats read just after a
	// collection: HeapAlloc there is the live heap, exactly (the
	// profile above samples it).
	if err := save(http.DefaultClient, m.pprofURL+"heap?gc=1&debug=1", filepath.Join(b.o.pprofDir, "fieldops-converged-heap.txt")); err != nil {
		fmt.Fprintln(os.Stderr, "benchscale: heap profile:", err)
	}
	return settle(m.metricsURL, 2*time.Second, 20*time.Second)
}

// handBackFieldops deletes every FieldPatch and measures until all are
// gone (t follows them), from the manager's request counts before.
func (b *bench) handBackFieldops(ctx context.Context, m *manager, t *tracker, before requestCounts) (handBack, error) {
	var h handBack
	pid := m.cmd.Process.Pid
	cpu0, cp0, err := b.cpuNow(pid)
	if err != nil {
		return h, err
	}
	start := time.Now()
	if err := b.deleteEach(ctx, b.o.n, func(i int) client.Object { return fieldPatch(fieldopsNS, i) }); err != nil {
		return h, err
	}
	done, err := t.wait(ctx, func(ready, present int) bool { return present == 0 })
	if err != nil {
		return h, err
	}
	h.wall = done.Sub(start)
	after, err := settle(m.metricsURL, 2*time.Second, 30*time.Second)
	if err != nil {
		return h, err
	}
	cpu1, cp1, err := b.cpuNow(pid)
	if err != nil {
		return h, err
	}
	h.requests, h.mgrCPU, h.cpCPU = after.minus(before), cpu1-cpu0, cp1-cp0
	h.left, err = b.countApplied(ctx, fieldopsNS)
	return h, err
}

// deleteEach deletes obj(0) … obj(n-1), 8 at a time, as they were
// created: one DeleteCollection of many objects runs one deletion after
// another in the apiserver and outlasts its request timeout (10000
// FieldPatches with finalizers do).
func (b *bench) deleteEach(ctx context.Context, n int, obj func(i int) client.Object) error {
	return parallel(n, 8, func(i int) error { return b.c.Delete(ctx, obj(i)) })
}

// profileManager saves a CPU profile of the fieldops manager m
// (-pprof-seconds long) into -pprof-dir as name; a failure is printed,
// not returned.
func (b *bench) profileManager(m *manager, name string) {
	url := fmt.Sprintf("%sprofile?seconds=%d", m.pprofURL, b.o.pprofSeconds)
	if err := save(http.DefaultClient, url, filepath.Join(b.o.pprofDir, name)); err != nil {
		fmt.Fprintln(os.Stderr, "benchscale: CPU profile:", err)
	}
}

// profileAPIServer saves a CPU profile of kube-apiserver (-pprof-seconds
// long) into -pprof-dir as name; a failure is printed, not returned.
func (b *bench) profileAPIServer(name string) {
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", b.host, b.o.pprofSeconds)
	if err := save(b.apiserver, url, filepath.Join(b.o.pprofDir, name)); err != nil {
		fmt.Fprintln(os.Stderr, "benchscale: kube-apiserver CPU profile:", err)
	}
}

// save writes the body of GET url, sent with c, to path.
func save(c *http.Client, url, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// parallel runs f(0) … f(n-1) on workers goroutines and returns the first
// error.
func parallel(n, workers int, f func(i int) error) error {
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
					for range next { // drain
					}
					return
				}
			}
		})
	}
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case err := <-errs:
			close(next)
			wg.Wait()
			return err
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// tracker follows the FieldPatches of one namespace with a list and a
// watch: which exist and which are Ready. One watch costs the apiserver far
// less than polling lists of N objects.
type tracker struct {
	c       client.WithWatch
	ns      string
	mu      sync.Mutex
	synced  bool
	ready   map[string]bool
	errored error
}

func newTracker(c client.WithWatch, ns string) *tracker {
	return &tracker{c: c, ns: ns, ready: map[string]bool{}}
}

func (t *tracker) set(fp *v1alpha1.FieldPatch) {
	t.ready[fp.Name] = meta.IsStatusConditionTrue(fp.Status.Conditions, "Ready")
}

// run lists and watches until ctx ends, re-listing when the watch closes.
func (t *tracker) run(ctx context.Context) {
	for ctx.Err() == nil {
		var l v1alpha1.FieldPatchList
		if err := t.c.List(ctx, &l, client.InNamespace(t.ns)); err != nil {
			t.fail(err)
			return
		}
		w, err := t.c.Watch(ctx, &v1alpha1.FieldPatchList{}, client.InNamespace(t.ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: l.ResourceVersion}})
		if err != nil {
			t.fail(err)
			return
		}
		t.mu.Lock()
		t.ready = map[string]bool{}
		for i := range l.Items {
			t.set(&l.Items[i])
		}
		t.synced = true
		t.mu.Unlock()
		for ev := range w.ResultChan() {
			fp, ok := ev.Object.(*v1alpha1.FieldPatch)
			if !ok {
				continue // a watch error (e.g. expired): list again
			}
			t.mu.Lock()
			switch ev.Type {
			case watch.Added, watch.Modified:
				t.set(fp)
			case watch.Deleted:
				delete(t.ready, fp.Name)
			}
			t.mu.Unlock()
		}
		w.Stop()
	}
}

func (t *tracker) fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.errored == nil && !errors.Is(err, context.Canceled) {
		t.errored = err
	}
}

// wait returns the time at which cond(ready, present) first held, checked
// every 50 ms.
func (t *tracker) wait(ctx context.Context, cond func(ready, present int) bool) (time.Time, error) {
	return pollUntil(ctx, func() (bool, error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.errored != nil || !t.synced {
			return false, t.errored
		}
		ready := 0
		for _, r := range t.ready {
			if r {
				ready++
			}
		}
		return cond(ready, len(t.ready)), nil
	})
}

// pollUntil returns the time at which check first reported true (or an
// error), checked every 50 ms, or the context's error.
func pollUntil(ctx context.Context, check func() (bool, error)) (time.Time, error) {
	for {
		ok, err := check()
		now := time.Now()
		if err != nil || ok {
			return now, err
		}
		select {
		case <-ctx.Done():
			return now, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func writeKubeconfig(cp *localcp.ControlPlane, dir string) (string, error) {
	user, err := cp.Env.ControlPlane.AddUser(envtest.User{Name: "benchscale", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", err
	}
	b, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, b, 0o600)
}

// usage is what a side used by the end of its converge: CPU seconds of
// the manager and of the control plane since cpu0 and cp0, the manager's
// peak RSS (VmHWM, KiB) and its resident set now.
type usage struct {
	mgrCPU, cpCPU float64
	peakRSS       int64
	after         rssSample
}

// endOf reads the usage of pid at the end of a side's converge.
func (b *bench) endOf(pid int, cpu0, cp0 float64) (usage, error) {
	var u usage
	cpu1, err := cpuOf(pid)
	if err != nil {
		return u, err
	}
	cp1, err := cpuOf(b.cpPIDs...)
	if err != nil {
		return u, err
	}
	if u.peakRSS, err = peakRSSKiB(pid); err != nil {
		return u, err
	}
	if u.after, err = readRSS(pid); err != nil {
		return u, err
	}
	u.mgrCPU, u.cpCPU = cpu1-cpu0, cp1-cp0
	return u, nil
}
