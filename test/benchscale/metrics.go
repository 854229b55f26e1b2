/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// requestCounts are API requests by HTTP method, and under reconciles
// the FieldPatch controller's reconciles (not a request: left out of the
// total).
type requestCounts map[string]float64

// reconciles is the key of controller_runtime_reconcile_total{controller="fieldpatch"}.
const reconciles = "#reconciles"

func (r requestCounts) total() float64 {
	var t float64
	for m, v := range r {
		if m != reconciles {
			t += v
		}
	}
	return t
}

// minus returns r - before, per method.
func (r requestCounts) minus(before requestCounts) requestCounts {
	d := requestCounts{}
	for m, v := range r {
		if v-before[m] != 0 {
			d[m] = v - before[m]
		}
	}
	return d
}

// scrape GETs a metrics endpoint without compression: the harness
// scrapes every 250 ms while it waits for the requests to settle, and the
// gzip writer of each compressed answer (a large buffer, pooled by
// promhttp only until the next garbage collections) would be a cost of the
// measurement, not of the manager, which Prometheus scrapes every 15 s
// or more.
func scrape(url string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept-Encoding", "identity")
	return http.DefaultClient.Do(req)
}

// scrapeRequests reads client-go's rest_client_requests_total (labels code,
// host, method) from a Prometheus text endpoint and sums it by method.
func scrapeRequests(url string) (requestCounts, error) {
	resp, err := scrape(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	counts := requestCounts{}
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if rest, ok := strings.CutPrefix(line, `controller_runtime_reconcile_total{controller="fieldpatch",`); ok {
			if _, value, ok := strings.Cut(rest, "} "); ok {
				v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
				if err != nil {
					return nil, fmt.Errorf("metrics line %q: %w", line, err)
				}
				counts[reconciles] += v
			}
			continue
		}
		rest, ok := strings.CutPrefix(line, "rest_client_requests_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			return nil, fmt.Errorf("metrics line %q", line)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		method := "?"
		for _, l := range strings.Split(labels, ",") {
			if m, ok := strings.CutPrefix(l, `method="`); ok {
				method = strings.TrimSuffix(m, `"`)
			}
		}
		counts[method] += v
	}
	return counts, s.Err()
}

// settle scrapes until the request total has not moved for quiet (at most
// max), so requests sent just after the last FieldPatch turned Ready (a
// final status write, an event) are counted, and returns the last counts.
func settle(url string, quiet, max time.Duration) (requestCounts, error) {
	deadline := time.Now().Add(max)
	last, err := scrapeRequests(url)
	if err != nil {
		return nil, err
	}
	since := time.Now()
	for time.Now().Before(deadline) && time.Since(since) < quiet {
		time.Sleep(250 * time.Millisecond)
		cur, err := scrapeRequests(url)
		if err != nil {
			return nil, err
		}
		if cur.total() != last.total() {
			since = time.Now()
		}
		last = cur
	}
	return last, nil
}

// heapStats is the Go heap of a process, in bytes, from the Go
// collector's go_memstats_heap_alloc_bytes (live and not yet swept
// objects), go_memstats_heap_inuse_bytes (the spans holding them),
// go_memstats_heap_idle_bytes less go_memstats_heap_released_bytes (free
// spans still resident: the scavenger returns them to the OS over time),
// go_memstats_stack_inuse_bytes and go_memstats_next_gc_bytes (the heap
// size at which the next collection starts).
type heapStats struct{ alloc, inuse, idle, released, stacks, nextGC float64 }

// scrapeHeap reads heapStats from a Prometheus text endpoint.
func scrapeHeap(url string) (heapStats, error) {
	var h heapStats
	resp, err := scrape(url)
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return h, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		name, value, ok := strings.Cut(s.Text(), " ")
		var dst *float64
		switch {
		case !ok:
			continue
		case name == "go_memstats_heap_alloc_bytes":
			dst = &h.alloc
		case name == "go_memstats_heap_inuse_bytes":
			dst = &h.inuse
		case name == "go_memstats_heap_idle_bytes":
			dst = &h.idle
		case name == "go_memstats_heap_released_bytes":
			dst = &h.released
		case name == "go_memstats_stack_inuse_bytes":
			dst = &h.stacks
		case name == "go_memstats_next_gc_bytes":
			dst = &h.nextGC
		default:
			continue
		}
		if *dst, err = strconv.ParseFloat(strings.TrimSpace(value), 64); err != nil {
			return h, fmt.Errorf("metrics line %q: %w", s.Text(), err)
		}
	}
	return h, s.Err()
}
