/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/notes"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
)

// selectorCounts are the counts and problems of a reconcile's targets.
type selectorCounts struct {
	ts       *v1alpha1.TargetsStatus
	problems []v1alpha1.TargetProblem
	firstErr error
	requeue  time.Duration
	wrote    bool
	// terminalOnly: every target not applied failed on a spec error.
	terminalOnly bool
	fields       int32
}

// count merges the results into the records and counts them.
func (sp *selectorPass) count() selectorCounts {
	c := selectorCounts{ts: &v1alpha1.TargetsStatus{Matched: int32(len(sp.matched))}, terminalOnly: true}
	for i, res := range sp.results {
		uid := sp.matched[i].UID
		if res.entry != nil {
			sp.entries[uid] = res.entry
			c.fields += res.entry.rec.Fields
		} else {
			delete(sp.entries, uid)
		}
		c.wrote = c.wrote || res.wrote
		if res.requeue > 0 && (c.requeue == 0 || res.requeue < c.requeue) {
			c.requeue = res.requeue
		}
		if res.class == classApplied {
			c.ts.Applied++
			sp.w.setReason(uid, "")
			continue
		}
		c.add(res.class)
		sp.w.setReason(uid, res.reason)
		if !res.terminal && res.class != classSkipped {
			c.terminalOnly = false
		}
		if res.err != nil && c.firstErr == nil {
			c.firstErr = res.err
		}
		c.problems = append(c.problems, v1alpha1.TargetProblem{Namespace: sp.matched[i].Namespace, Name: sp.matched[i].Name, Reason: res.reason, Message: notes.Condition(res.message)})
	}
	return c
}

// add counts a target not applied of class.
func (c *selectorCounts) add(class int) {
	switch class {
	case classContested:
		c.ts.Contested++
	case classForbidden:
		c.ts.Forbidden++
	case classSkipped:
		c.ts.Skipped++
	default:
		c.ts.Failed++
	}
}

// reportSelector writes status.targets and the conditions, records the
// reconcile's events, and ends the reconcile.
func (sr *selectorReconciler) reportSelector(sp *selectorPass, leaveErrs []error) (skeleton.Step, error) {
	obj := sp.obj
	st, gen := obj.PatchStatus(), obj.GetGeneration()
	c := sp.count()
	ts := c.ts
	notApplied := len(c.problems)
	if len(c.problems) > v1alpha1.MaxNotApplied {
		c.problems = c.problems[:v1alpha1.MaxNotApplied]
	}
	ts.NotApplied = c.problems
	ts.Records, ts.Ledgers = writeTargets(sp.entries)
	st.Targets = ts
	st.FieldCount = int(c.fields)
	st.TargetUID, st.ManagedFields = "", nil
	st.SetRecord(v1alpha1.TargetLedger{})
	st.ContestedBy, st.ContestedSince = "", nil
	if c.wrote {
		st.LastAppliedTime = &metav1.Time{Time: sp.now}
	}
	sp.events.emit(sr.patchUnit(obj))

	kind := sp.sel.gvk.Kind
	switch {
	case len(leaveErrs) > 0:
		msg := fmt.Sprintf("giving back the fields of targets that no longer match: %v", errors.Join(leaveErrs...))
		setWaiting(st, gen, ReasonDeleteFailed, notes.Condition(msg))
		sr.patchUnit(obj).event(corev1.EventTypeWarning, ReasonDeleteFailed, "%s", msg)
		return skeleton.Stop(ctrl.Result{RequeueAfter: transientRetry}), nil
	case notApplied == 0:
		msg := fmt.Sprintf("applied to %d of %d matching %s (%d fields)", ts.Applied, ts.Matched, kind, c.fields)
		setReady(st, gen, msg)
	case ts.Skipped == int32(notApplied):
		setReady(st, gen, notes.Condition(fmt.Sprintf("applied to %d of %d matching %s; %d skipped: %s", ts.Applied, ts.Matched, kind, ts.Skipped, describeProblems(c.problems))))
	default:
		msg := fmt.Sprintf("%d of %d matching %s not applied (%d contested, %d failed, %d forbidden, %d skipped): %s", notApplied, ts.Matched, kind, ts.Contested, ts.Failed, ts.Forbidden, ts.Skipped, describeProblems(c.problems))
		reason := ReasonTargetsNotApplied
		if ts.Contested == int32(notApplied) {
			reason = ReasonContested
		}
		if c.terminalOnly && ts.Applied == 0 {
			setStalled(st, gen, c.problems[0].Reason, notes.Condition(msg))
		} else {
			setWaiting(st, gen, reason, notes.Condition(msg))
		}
	}
	if c.firstErr != nil {
		if c.requeue == 0 || c.requeue > transientRetry {
			c.requeue = transientRetry
		}
		return skeleton.Stop(ctrl.Result{RequeueAfter: c.requeue}), nil
	}
	return skeleton.Finish(ctrl.Result{RequeueAfter: c.requeue}), nil
}

// describeProblems prints the first targets not applied.
func describeProblems(ps []v1alpha1.TargetProblem) string {
	var parts []string
	for i, p := range ps {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more (status.targets.notApplied)", len(ps)-3))
			break
		}
		name := p.Name
		if p.Namespace != "" {
			name = p.Namespace + "/" + name
		}
		parts = append(parts, fmt.Sprintf("%s: %s: %s", name, p.Reason, p.Message))
	}
	return strings.Join(parts, "; ")
}

// classify sets the class, reason and message of a target's pass from
// the Ready and Stalled conditions its phases left on the target unit's
// status st, and err, the phases' error.
func classify(out *targetResult, st *v1alpha1.FieldPatchStatus, err error) {
	c := meta.FindStatusCondition(st.Conditions, ConditionReady)
	switch {
	case c != nil && c.Status == metav1.ConditionTrue && err == nil:
		out.class = classApplied
		return
	case c == nil:
		out.class, out.reason, out.message = classFailed, ReasonApplyFailed, "not applied"
	default:
		out.reason, out.message = c.Reason, c.Message
		out.class = classFailed
		switch c.Reason {
		case ReasonContested, ReasonContestTimeout:
			out.class = classContested
		case ReasonForbidden:
			out.class = classForbidden
		case ReasonForbiddenTarget:
			out.class = classSkipped
		}
		stalled := meta.FindStatusCondition(st.Conditions, ConditionStalled)
		out.terminal = stalled != nil && stalled.Status == metav1.ConditionTrue && c.Reason != ReasonContestTimeout
	}
	if err != nil && !skeleton.IsTerminal(err) {
		out.err = err
	}
}
