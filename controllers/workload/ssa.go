/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/internal/conflicts"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// ssaObject is the state of one object's Server-Side Apply in a pass.
type ssaObject struct {
	o *object
	// e is the object's new inventory entry; prev its last one, if hadPrev.
	e       *v1alpha1.InventoryEntry
	prev    v1alpha1.InventoryEntry
	hadPrev bool
	// name is "<Kind> <namespace/name>", for messages.
	name string
	// live is the object as read before the apply (nil: absent); subject
	// is live, or the intent when absent: what the ignore plugins and the
	// watch see.
	live, subject *unstructured.Unstructured
	ignore        *fieldset.Set
	// key names the object's contest: one per workload, object and UID
	// (a recreated object starts with none); now is when it was judged.
	key string
	now time.Time
	// drifted: fields this workload owns drifted since its last apply;
	// drifter is the manager that owns a drifted field now ("" if none).
	drifter string
	drifted bool
}

// applySSA applies one object with Server-Side Apply, migrating legacy
// ownership first.
func (a *objectApplier) applySSA(ctx context.Context, p *pass, o *object, e *v1alpha1.InventoryEntry, prev v1alpha1.InventoryEntry, hadPrev bool) *objectError {
	s := &ssaObject{o: o, e: e, prev: prev, hadPrev: hadPrev, name: fmt.Sprintf("%s %s", e.Kind, refName(e.Namespace, e.Name))}
	var err error
	if s.live, err = p.applier.Get(ctx, o.Intent); err != nil {
		return classify(s.name, tenant.Explain(p.account, err))
	}
	if migrated, oe := a.migrateManagers(ctx, p, s); migrated || oe != nil {
		return oe
	}
	s.subject = s.live
	if s.subject == nil {
		s.subject = o.Intent
	}
	s.ignore = a.ignoreFor(ctx, p, s.subject)
	s.key, s.now = string(p.mw.UID)+"/"+o.Key, time.Now()
	if s.live != nil {
		s.key += "/" + string(s.live.GetUID())
	}
	if oe := a.checkDrift(p, s); oe != nil {
		return oe
	}
	res, oe := a.sendApply(ctx, p, s)
	if oe != nil {
		return oe
	}
	recordApplied(p, s, res)
	if oe := a.afterApply(p, s, res.Action); oe != nil {
		return oe
	}
	log.FromContext(ctx).V(1).Info("applied", "object", s.name, "action", res.Action, "forced", len(res.Forced))
	return nil
}

// migrateManagers moves the fields of this workload's legacy field
// managers (and of client-side apply's, when adopted) into its Apply
// entry (ownershipcore.UpgradeManagers). migrated: they moved; the
// object is applied on the requeue, once the cache has the new managed
// fields.
func (a *objectApplier) migrateManagers(ctx context.Context, p *pass, s *ssaObject) (migrated bool, oe *objectError) {
	from, adopt := ourManagers(p.mw, p.manager), adoptsClientSideApply(p.mw) && ownershipcore.FirstApplyOverClientSideApply(s.live, p.manager)
	if adopt {
		from.Insert(ownershipcore.ClientSideApplyManagers...)
	}
	if s.live == nil || !ownershipcore.NeedsUpgrade(s.live, sets.List(from)) {
		return false, nil
	}
	migrated, err := p.applier.UpgradeManagers(ctx, s.o.Intent, sets.List(from), p.manager)
	if err != nil {
		return false, objErr(ReasonApplyFailed, true, "%s: %v", s.name, tenant.Explain(p.account, err))
	}
	if !migrated {
		return false, nil
	}
	how := "moved"
	if adopt {
		how = "adopted from client-side apply: moved"
	}
	a.events.event(p.mw, s.o.Intent, corev1.EventTypeNormal, ReasonMigrated, "%s: %s the fields of field managers %s (Update) into %q (Apply)", s.name, how, strings.Join(sets.List(from), ", "), p.manager)
	s.e.UID, s.e.Action = s.live.GetUID(), ActionMigrated
	s.e.OwnedFields = s.prev.OwnedFields
	p.migrated = true
	p.after(migratedRecheck) // apply once the cache has the new managed fields
	return true, nil
}

// checkDrift looks for drift since our last apply, caused by another
// manager: it is repaired, unless that manager keeps taking the fields
// back (then the repair backs off), or is another fieldops object (then
// never: it is reported). Only an object this workload applied before
// (same UID, not just migrated) in a generation already judged can drift.
func (a *objectApplier) checkDrift(p *pass, s *ssaObject) *objectError {
	live, prev := s.live, s.prev
	if live == nil || !s.hadPrev || prev.UID != live.GetUID() || prev.Action == ActionMigrated || !p.judged {
		return nil
	}
	s.drifter, s.drifted = a.drifter(live, s.o.Intent, s.ignore, p.manager, conflicts.Yields(p.mw.Spec.ConflictRules, p.mw.Spec.ConflictPolicy == v1alpha1.WorkloadConflictPolicyYield))
	if rival, ok := ownershipcore.ParseManager(s.drifter); ok {
		s.e.UID, s.e.Action, s.e.OwnedFields = live.GetUID(), ReasonContested, prev.OwnedFields
		return objErr(ReasonContested, false, "%s: %s (field manager %q) took fields of this workload; fieldops objects do not fight each other: change or delete one of them", s.name, rival, s.drifter)
	}
	if at := a.contests.Next(s.key, s.drifter, s.now); s.drifted && !at.IsZero() {
		s.e.UID, s.e.Action, s.e.OwnedFields = live.GetUID(), ReasonContested, prev.OwnedFields
		p.after(at.Sub(s.now))
		return objErr(ReasonContested, false, "%s: field manager %q keeps taking back fields of this workload; next repair at %s", s.name, s.drifter, at.UTC().Format(time.RFC3339))
	}
	return nil
}

// sendApply applies the intent under the workload's field manager, on the
// read the drift check decided on, and counts the conflicts forced or
// refused (conflictPolicy Fail: Conflicted).
func (a *objectApplier) sendApply(ctx context.Context, p *pass, s *ssaObject) (ownershipcore.Result, *objectError) {
	var res ownershipcore.Result
	var err error
	a.watches.Write(p.mw, s.subject, func() *unstructured.Unstructured {
		res, err = p.applier.Apply(ctx, s.o.Intent, ownershipcore.ApplyOptions{
			FieldManager: p.manager, Conflicts: conflicts.Workload(p.mw.Spec.ConflictPolicy, p.mw.Spec.ConflictRules), Ignore: s.ignore,
			Live: s.live, Absent: s.live == nil, // the read the drift check decided on; nothing wrote since
		})
		if err == nil && res.Wrote() {
			return res.Object // its watch event is our own write
		}
		return nil
	})
	err = tenant.Explain(p.account, err)
	countConflicts(res.Forced)
	var conflictErr *ownershipcore.ConflictError
	switch {
	case errors.As(err, &conflictErr):
		countConflicts(conflictErr.Conflicts)
		s.e.Action = string(ownershipcore.ActionConflicted)
		return res, objErr(ReasonConflict, false, "%s: %v (conflictPolicy Fail)", s.name, conflictErr)
	case err != nil:
		return res, classify(s.name, err)
	}
	return res, nil
}

// countConflicts counts conflicts per manager in fieldops_conflicts_total.
func countConflicts(cs []ownershipcore.Conflict) {
	for _, c := range cs {
		metrics.ConflictsTotal.WithLabelValues(metrics.ControllerWorkload, c.Manager).Inc()
	}
}

// recordApplied writes an apply's result into the object's entry: action,
// health, UID and the number of fields this workload owns. What the last
// write did stays until the next one: an apply that changes nothing writes
// no status either.
func recordApplied(p *pass, s *ssaObject, res ownershipcore.Result) {
	e, prev := s.e, s.prev
	e.Action = string(res.Action)
	if res.Action == ownershipcore.ActionUnchanged && s.hadPrev && prev.UID == e.UID && (prev.Action == string(ownershipcore.ActionCreated) || prev.Action == string(ownershipcore.ActionConfigured)) {
		e.Action = prev.Action
	}
	setHealth(e, res.Object)
	if res.Object == nil {
		return
	}
	e.UID = res.Object.GetUID()
	if owners, err := ownershipcore.Owners(res.Object); err == nil {
		if ours := owners.Applied(p.manager); ours != nil {
			e.OwnedFields = len(ownershipcore.FormatSet(ours.Fields))
		}
	}
}

// afterApply counts what the apply did and follows the object's contest:
// a repair of drift is reported and, when the same manager took the
// fields back again, backed off; an apply that wrote nothing settles the
// contest, or keeps reporting it while its backoff runs.
func (a *objectApplier) afterApply(p *pass, s *ssaObject, action ownershipcore.Action) *objectError {
	switch action {
	case ownershipcore.ActionCreated:
		a.createdObject(p, s.o, s.name)
	case ownershipcore.ActionConfigured:
		p.configured++
		// Drift (seen before the apply, only when the spec did not change
		// and not right after a migration) was repaired.
		if !s.drifted {
			return nil
		}
		a.drift(p, s.name, s.live, s.o.Intent)
		if s.drifter != "" && a.contests.Repaired(s.key, s.drifter, s.now) >= 2 {
			p.after(a.contests.Base()) // see whether the repair holds
			return objErr(ReasonContested, false, "%s: field manager %q took fields of this workload back again; repairs are backed off", s.name, s.drifter)
		}
	default:
		if d := a.contests.Settle(s.key, s.now); d > 0 {
			p.after(d)
			if c := a.contests.Current(s.key, s.now); c != "" {
				return objErr(ReasonContested, false, "%s: field manager %q keeps taking back fields of this workload; repairs are backed off", s.name, c)
			}
		}
	}
	return nil
}
