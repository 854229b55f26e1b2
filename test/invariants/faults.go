/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package invariants

import (
	"errors"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// faults makes some of fieldops' writes fail while it is on, as a network
// or a crash would: with probability p a write (any request but a GET) is
// refused before it reaches the apiserver, or it is sent, done, and its
// answer lost, which is what a crash between a write and the next one
// looks like to the restarted manager. Events are left alone (the
// recorder sends them asynchronously and drops them on errors anyway).
//
// The run turns it on for the step and fieldops' first reaction, and off
// from the second round of settle on, so that fieldops must then reach
// the same invariants, and a fixed point, from wherever the failures left
// it.
type faults struct {
	next http.RoundTripper
	p    float64
	on   atomic.Bool

	mu  sync.Mutex
	rnd *rand.Rand
	// refused and lost count the writes failed each way.
	refused, lost atomic.Int64
}

func newFaults(p float64, seed int64) *faults {
	return &faults{p: p, rnd: rand.New(rand.NewSource(seed))}
}

// errFault is the error of a failed write.
var errFault = errors.New("injected fault")

// draw says whether this write fails and how (lose: after it was done).
func (f *faults) draw() (fail, lose bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rnd.Float64() >= f.p {
		return false, false
	}
	return true, f.rnd.Intn(2) == 0
}

func (f *faults) RoundTrip(r *http.Request) (*http.Response, error) {
	if !f.on.Load() || r.Method == http.MethodGet || strings.Contains(r.URL.Path, "/events") {
		return f.next.RoundTrip(r)
	}
	fail, lose := f.draw()
	if !fail {
		return f.next.RoundTrip(r)
	}
	if !lose {
		f.refused.Add(1)
		return nil, errFault
	}
	resp, err := f.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	f.lost.Add(1)
	return nil, errFault
}

// injected is how many writes failed so far.
func (f *faults) injected() int64 {
	if f == nil {
		return 0
	}
	return f.refused.Load() + f.lost.Load()
}

// set turns the faults on or off (a nil faults stays off).
func (f *faults) set(on bool) {
	if f != nil {
		f.on.Store(on)
	}
}
