/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command flux is the Flux side of `make bench-scale`: it applies N partial
// Deployments, each adding one env var to the container of a Deployment
// another field manager owns, with the Flux ssa ResourceManager's ApplyAll
// (github.com/fluxcd/pkg/ssa), as kustomize-controller does, and reports the
// wall time of ApplyAll and its requests by HTTP method.
//
// It lives in its own Go module so the fieldops go.mod never requires
// fluxcd/pkg. The harness (test/benchscale) runs it as a separate process
// and drives it over stdin and stdout, one JSON object per line:
//
//	stdout {"ready":true}                 client built, RESTMapper warm
//	stdin  go                             start ApplyAll
//	stdout {"wallSeconds":…,"requests":…} ApplyAll returned
//	stdin  EOF                            exit (after the harness read /proc)
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
)

// counter counts requests by HTTP method; dry-run requests (the ?dryRun=All
// PATCH of ApplyAll's drift check) are counted apart as well.
type counter struct {
	next   http.RoundTripper
	mu     sync.Mutex
	method map[string]int
	dryRun int
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.method[r.Method]++
	if q, err := url.ParseQuery(r.URL.RawQuery); err == nil && q.Get("dryRun") != "" {
		c.dryRun++
	}
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

func (c *counter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.method, c.dryRun = map[string]int{}, 0
}

// Result is what the harness reads after ApplyAll.
type Result struct {
	WallSeconds float64        `json:"wallSeconds"`
	Requests    map[string]int `json:"requests"`
	DryRun      int            `json:"dryRun"`
	Actions     map[string]int `json:"actions"`
	Error       string         `json:"error,omitempty"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchscale-flux:", err)
		os.Exit(1)
	}
}

// flags are the command's flags.
type flags struct {
	namespace, manager, container, envName string
	n, concurrency                         int
}

func run() error {
	var f flags
	// config.GetConfig reads --kubeconfig (registered by its package) or
	// $KUBECONFIG and turns client-side rate limiting off, as it does for
	// the fieldops manager.
	flag.StringVar(&f.namespace, "namespace", "bench-flux", "Namespace of the Deployments.")
	flag.IntVar(&f.n, "n", 1000, "Number of Deployments (bench-0 … bench-N-1).")
	flag.IntVar(&f.concurrency, "concurrency", 4, "ResourceManager.SetConcurrency: concurrent reads and dry-runs of ApplyAll (kustomize-controller's --concurrent-ssa defaults to 4).")
	flag.StringVar(&f.manager, "field-manager", "kustomize-controller", "Field manager of the applies.")
	flag.StringVar(&f.container, "container", "app", "Container the env var is added to.")
	flag.StringVar(&f.envName, "env", "FIELDOPS_BENCH", "Name of the env var added (value: the Deployment's index).")
	flag.Parse()

	rm, requests, err := newResourceManager(f.manager, f.concurrency)
	if err != nil {
		return err
	}
	objects := make([]*unstructured.Unstructured, f.n)
	for i := range objects {
		objects[i] = intent(f.namespace, fmt.Sprintf("bench-%d", i), f.container, f.envName, strconv.Itoa(i))
	}

	out := json.NewEncoder(os.Stdout)
	if err := out.Encode(map[string]bool{"ready": true}); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "go" {
		return fmt.Errorf("expected 'go' on stdin")
	}
	if err := out.Encode(applyAll(rm, requests, objects)); err != nil {
		return err
	}
	for in.Scan() { // until the harness closes stdin
	}
	return nil
}

// newResourceManager is the ssa ResourceManager of field manager
// manager with concurrency workers, its requests counted, its RESTMapper
// warm as a running kustomize-controller has it.
func newResourceManager(manager string, concurrency int) (*ssa.ResourceManager, *counter, error) {
	cfg, err := config.GetConfig()
	if err != nil {
		return nil, nil, err
	}
	requests := &counter{method: map[string]int{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { requests.next = rt; return requests })
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, nil, err
	}
	if _, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1"); err != nil {
		return nil, nil, err
	}
	rm := ssa.NewResourceManager(c, nil, ssa.Owner{Field: manager, Group: "bench.fieldops.dev"})
	rm.SetConcurrency(concurrency)
	return rm, requests, nil
}

// applyAll runs ApplyAll on objects and returns its wall time, the
// requests it sent and its actions, or its error.
func applyAll(rm *ssa.ResourceManager, requests *counter, objects []*unstructured.Unstructured) Result {
	requests.reset()
	start := time.Now()
	cs, err := rm.ApplyAll(context.Background(), objects, ssa.DefaultApplyOptions())
	res := Result{WallSeconds: time.Since(start).Seconds(), Actions: map[string]int{}}
	requests.mu.Lock()
	res.Requests, res.DryRun = requests.method, requests.dryRun
	requests.mu.Unlock()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	for _, e := range cs.Entries {
		res.Actions[e.Action.String()]++
	}
	return res
}

// intent is the partial Deployment: only the container's name (its list
// key) and one env var.
func intent(namespace, name, container, envName, value string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{
				"name": container,
				"env":  []any{map[string]any{"name": envName, "value": value}},
			}},
		}}},
	}}
}
