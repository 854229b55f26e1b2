/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package invariants

import (
	"fmt"
	"strings"
	"sync"

	"github.com/go-logr/logr"

	"github.com/fieldops/fieldops/ownershipcore"
)

// reconciles counts, per controller and object, the reconciles that
// started and ended, from the "Reconciling" and "Reconcile successful /
// done / Reconciler error" lines controller-runtime logs through the
// manager's logger, and keeps the divergences the ownership core logs
// (ownershipcore.MessageDivergence). That is the signal that a reconcile started after a
// given moment has finished, without sleeping.
type reconciles struct {
	mu      sync.Mutex
	started map[string]int
	ended   map[string]int
	errs    map[string]string
	// workers counts the controllers that started their workers (their
	// informers synced).
	workers int
	// divergences are fieldops' writes whose answer differed from the
	// Applier's prediction (ownershipcore.MessageDivergence), in order.
	divergences []string
}

func newReconciles() *reconciles {
	return &reconciles{started: map[string]int{}, ended: map[string]int{}, errs: map[string]string{}}
}

func reconcileKey(controller, namespace, name string) string {
	return controller + " " + namespace + "/" + name
}

// counts returns how many reconciles of key started and ended.
func (r *reconciles) counts(key string) (started, ended int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started[key], r.ended[key]
}

// lastError is the error of key's last failed reconcile, if any.
func (r *reconciles) lastError(key string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errs[key]
}

// controllersStarted is how many controllers started their workers.
func (r *reconciles) controllersStarted() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.workers
}

func (r *reconciles) record(key string, start bool, err string) {
	if key == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if start {
		r.started[key]++
		return
	}
	r.ended[key]++
	if err != "" {
		r.errs[key] = err
	}
}

// logger is a logr.Logger that feeds r and discards everything else.
func (r *reconciles) logger() logr.Logger { return logr.New(&reconcileSink{r: r}) }

type reconcileSink struct {
	r  *reconciles
	kv []interface{}
}

func (s *reconcileSink) Init(logr.RuntimeInfo) {}
func (s *reconcileSink) Enabled(int) bool      { return true }

func (s *reconcileSink) Info(_ int, msg string, kv ...interface{}) {
	switch {
	case msg == ownershipcore.MessageDivergence:
		s.r.mu.Lock()
		s.r.divergences = append(s.r.divergences, s.divergence(kv))
		s.r.mu.Unlock()
	case msg == "Starting workers":
		s.r.mu.Lock()
		s.r.workers++
		s.r.mu.Unlock()
	case msg == "Reconciling":
		s.r.record(s.key(), true, "")
	case msg == "Reconcile successful", strings.HasPrefix(msg, "Reconcile done"):
		s.r.record(s.key(), false, "")
	}
}

func (s *reconcileSink) Error(err error, msg string, _ ...interface{}) {
	if msg == "Reconciler error" {
		s.r.record(s.key(), false, err.Error())
	}
}

func (s *reconcileSink) WithValues(kv ...interface{}) logr.LogSink {
	return &reconcileSink{r: s.r, kv: append(append([]interface{}{}, s.kv...), kv...)}
}

func (s *reconcileSink) WithName(string) logr.LogSink { return s }

// divergence describes a MessageDivergence line: the write, by whom, in
// which reconcile, and how the answer differed.
func (s *reconcileSink) divergence(kv []interface{}) string {
	v := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		k, _ := kv[i].(string)
		v[k] = fmt.Sprint(kv[i+1])
	}
	in := ""
	if key := s.key(); key != "" {
		in = " (reconcile of " + key + ")"
	}
	d := fmt.Sprintf("fieldops' %s by %q to %s%s: the apiserver's answer differs from the prediction: %s",
		v["operation"], v["manager"], v["object"], in, v["difference"])
	if v["redefaulted"] == "true" {
		d = redefaulted + d
	}
	return d
}

// redefaulted prefixes a divergence that the apiserver's defaulting
// explains (ownershipcore.Model.Redefaulted): a field the write removed
// comes back with its default, recorded as the writer's. The model runs no
// defaulting; such a divergence is a note, not a violation (the Applier
// releases such a field again, and invariants (1) and (2) judge the
// result).
const redefaulted = "redefaulted: "

// divergenceCount is how many divergences fieldops reported so far.
func (r *reconciles) divergenceCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.divergences)
}

// divergencesSince returns the divergences reported after the first n.
func (r *reconciles) divergencesSince(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.divergences[n:]...)
}

// key is "<controller> <namespace>/<name>" from the values controller-runtime
// attaches to a reconcile's logger, or "" for other lines.
func (s *reconcileSink) key() string {
	var controller, namespace, name string
	for i := 0; i+1 < len(s.kv); i += 2 {
		v, _ := s.kv[i+1].(string)
		switch s.kv[i] {
		case "controller":
			controller = v
		case "namespace":
			namespace = v
		case "name":
			name = v
		}
	}
	if controller == "" || name == "" {
		return ""
	}
	return reconcileKey(controller, namespace, name)
}
