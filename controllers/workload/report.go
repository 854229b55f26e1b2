/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/conditions"
)

// reporter sets a workload's counts and conditions from its pass, and
// sends the events that go with them.
type reporter struct{ events recorder }

// report sets the counts and conditions and sends the summary event.
func (rp reporter) report(p *pass) {
	st, gen := &p.mw.Status, p.mw.Generation
	before := readyReason(st)
	conditions.SetPluginFailure(&st.Conditions, gen, p.pluginFailed)
	failures, contested, stalled := tally(st, p.requeue != 0)
	rp.appliedEvent(p)
	switch {
	case st.Failed > 0 && contested == st.Failed:
		conditions.SetWaiting(&st.Conditions, gen, ReasonContested, fmt.Sprintf("%d of %d objects contested: %s", contested, len(st.Inventory), strings.Join(failures, "; ")))
	case st.Failed > 0:
		msg := fmt.Sprintf("%d of %d objects failed: %s", st.Failed, len(st.Inventory), strings.Join(failures, "; "))
		if stalled {
			conditions.SetStalled(&st.Conditions, gen, ReasonObjectsFailed, msg)
		} else {
			conditions.SetWaiting(&st.Conditions, gen, ReasonObjectsFailed, msg)
		}
	case len(p.notConverged) > 0:
		conditions.SetWaiting(&st.Conditions, gen, ReasonNotConverged, fmt.Sprintf(
			"the legacy JSON patch did not hold on %s: another actor changes these fields back on every write (a mutating webhook?); the ServerSideApply gate leaves them to it", strings.Join(p.notConverged, "; ")))
	case p.migrated:
		// Not any requeue: a contest's recheck of a repair keeps Ready.
		conditions.SetWaiting(&st.Conditions, gen, ReasonMigrated, "field ownership migrated to Server-Side Apply; applying next")
	default:
		rp.reportReady(p, before)
	}
}

// readyReason is the reason of st's Ready condition, "" without one.
func readyReason(st *v1alpha1.ManagedWorkloadStatus) string {
	if c := meta.FindStatusCondition(st.Conditions, conditions.Ready); c != nil {
		return c.Reason
	}
	return ""
}

// tally counts the inventory's applied and failed entries into st and
// returns the failures as "<reason>: <message>", how many of them are
// contests, and whether they are stalled: no failure waits for a retry
// (requeued: the pass scheduled one).
func tally(st *v1alpha1.ManagedWorkloadStatus, requeued bool) (failures []string, contested int, stalled bool) {
	st.Applied, st.Failed = 0, 0
	stalled = true
	for _, e := range st.Inventory {
		if e.Reason == "" {
			st.Applied++
			continue
		}
		if e.Reason == ReasonContested {
			contested++
		}
		st.Failed++
		failures = append(failures, fmt.Sprintf("%s: %s", e.Reason, e.Message))
		if requeued {
			stalled = false
		}
	}
	return failures, contested, stalled
}

// appliedEvent sends the Applied event of a new generation that wrote,
// naming the objects it created; repairs of one already judged have
// their own events (DriftRepaired, Created).
func (rp reporter) appliedEvent(p *pass) {
	if p.created+p.configured == 0 || p.judged {
		return
	}
	st := &p.mw.Status
	created := ""
	if len(p.createdNames) > 0 {
		created = " (" + strings.Join(p.createdNames, ", ") + ")"
	}
	rp.events.event(p.mw, nil, corev1.EventTypeNormal, ReasonApplied, "applied %d objects (%s): %d created%s, %d configured", st.Applied, st.Mode, p.created, created, p.configured)
}

// reportReady sets Ready once every object is applied: Applied when the
// objects' health does not decide it (all healthy, or spec.wait false);
// otherwise reportHealth set it, the timeout is looked at again, and a
// change of Ready's reason from before (to another than Progressing) is a
// warning event.
func (rp reporter) reportReady(p *pass, before string) {
	st, gen := &p.mw.Status, p.mw.Generation
	set, left := reportHealth(p.mw, time.Now())
	if !set {
		msg := fmt.Sprintf("%d objects applied (%s)", st.Applied, st.Mode)
		if waits(p.mw) {
			msg = fmt.Sprintf("%d objects applied (%s) and healthy", st.Applied, st.Mode)
		}
		conditions.SetReady(&st.Conditions, gen, ReasonApplied, msg)
		return
	}
	if left > 0 {
		p.after(left) // look again at the timeout
	}
	if c := meta.FindStatusCondition(st.Conditions, conditions.Ready); c != nil && c.Reason != before && c.Reason != ReasonProgressing {
		rp.events.event(p.mw, nil, corev1.EventTypeWarning, c.Reason, "%s", c.Message)
	}
}
