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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/controllers/internal/watch"
	"github.com/fieldops/fieldops/internal/patchtarget"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
	"github.com/fieldops/fieldops/ownershipcore/redact"
	"github.com/fieldops/fieldops/plugins/host"
)

// objectApplier applies the objects of a workload one by one, on the
// Server-Side Apply path (ssa.go) or the legacy one (legacy.go): it checks
// each object against the tenancy settings, ensures its watch, applies it
// through the pass's Applier (the workload's account) and records the
// outcome in its inventory entry. It holds only what applying needs.
type objectApplier struct {
	// differ is the manager's Applier, for diffs and field removals only:
	// every write goes through the pass's Applier.
	differ   *ownershipcore.Applier
	plugins  *host.Host // runs ignorePlugins; nil when the ExternalPlugins gate is off
	tenancy  tenant.Options
	watches  *watch.Watches
	contests *ownershipcore.Contests
	legacy   legacyPath
	events   recorder
}

// reconcileObject applies one object and returns its inventory entry.
func (a *objectApplier) reconcileObject(ctx context.Context, p *pass, o *object) v1alpha1.InventoryEntry {
	e, prev, hadPrev := p.entry(o)
	oe := o.Err
	if oe == nil {
		oe = a.checkTarget(p, o)
	}
	if oe == nil {
		if err := a.watches.Ensure(p.mw, p.account, o.Intent); err != nil {
			oe = objErr(ReasonApplyFailed, true, "%v", err)
		}
	}
	writes := p.created + p.configured
	if oe == nil {
		if p.ssa {
			oe = a.applySSA(ctx, p, o, &e, prev, hadPrev)
		} else {
			oe = a.applyLegacyObject(ctx, p, o, &e, hadPrev && prev.UID != "")
		}
	}
	if oe != nil {
		a.objectFailed(p, o, &e, oe, prev, hadPrev)
	}
	if action := appliedAction(e.Action, oe != nil, p.created+p.configured > writes); action != "" {
		metrics.ApplyTotal.WithLabelValues(metrics.ControllerWorkload, e.Kind, action).Inc()
	}
	return e
}

// appliedAction is the action label fieldops_apply_total counts for one
// object of this reconcile, or "" for none. Only what happened in this
// reconcile counts: a write (wrote: Created, Configured; Migrated, whose
// entry only the reconcile that moved the managers sets) or a failed
// attempt (Failed, Conflicted). An entry that keeps the last write's
// action over an apply that changed nothing, and a repair held back by a
// contest, count nothing.
func appliedAction(action string, failed, wrote bool) string {
	switch {
	case failed && (action == ActionFailed || action == string(ownershipcore.ActionConflicted)):
		return action
	case failed:
		return ""
	case wrote, action == ActionMigrated:
		return action
	}
	return ""
}

// entry starts o's inventory entry and finds its entry in the last
// inventory (by key, else by index), if any.
func (p *pass) entry(o *object) (e, prev v1alpha1.InventoryEntry, hadPrev bool) {
	e = v1alpha1.InventoryEntry{Index: o.Index}
	prev, hadPrev = p.prevByIndex[o.Index]
	if o.Intent == nil {
		return e, prev, hadPrev
	}
	e.APIVersion, e.Kind, e.Namespace, e.Name = o.Intent.GetAPIVersion(), o.Intent.GetKind(), o.Intent.GetNamespace(), o.Intent.GetName()
	if pk, ok := p.prev[o.Key]; ok && o.Key != "" {
		prev, hadPrev = pk, true
	}
	if hadPrev && entryKey(prev) == o.Key {
		e.UID = prev.UID // kept when this apply fails
	}
	return e, prev, hadPrev
}

// objectFailed records oe in o's entry e, schedules the retry and sends
// an event unless the last inventory already reported the same.
func (a *objectApplier) objectFailed(p *pass, o *object, e *v1alpha1.InventoryEntry, oe *objectError, prev v1alpha1.InventoryEntry, hadPrev bool) {
	if e.Action == "" {
		e.Action = ActionFailed
	}
	e.Reason, e.Message = oe.Reason, oe.Message
	if oe.Retry {
		p.after(transientRetry)
	}
	if !hadPrev || prev.Reason != oe.Reason || prev.Message != oe.Message {
		a.events.event(p.mw, o.Intent, corev1.EventTypeWarning, oe.Reason, "%s", oe.Message)
	}
}

// ignoreFor is the ignore set for one object: spec.ignorePaths and what
// the ignorePlugins name for obj (the live object, or the intent). A
// failing plugin adds nothing and is reported once per reconcile.
func (a *objectApplier) ignoreFor(ctx context.Context, p *pass, obj *unstructured.Unstructured) *fieldset.Set {
	if len(p.mw.Spec.IgnorePlugins) == 0 {
		return p.ignore
	}
	extra, failed, err := a.plugins.IgnoredPaths(ctx, p.mw.Spec.IgnorePlugins, obj)
	if err != nil {
		failed = append(failed, err)
	}
	for _, f := range failed {
		if p.pluginFailed == "" {
			a.events.event(p.mw, obj, corev1.EventTypeWarning, ReasonPluginFailed, "%v; no extra paths ignored", f)
			p.pluginFailed = fmt.Sprintf("%v; no extra paths ignored", f)
		}
	}
	if extra == nil {
		return p.ignore
	}
	return p.ignore.Union(extra)
}

// createdObject counts a created object. The objects a new generation
// creates are named by its Applied event (one event, not one per
// object); an object created again for a generation already judged
// (deleted by someone else) has its own Created event.
func (a *objectApplier) createdObject(p *pass, o *object, name string) {
	p.created++
	if !p.judged {
		p.createdNames = append(p.createdNames, name)
		return
	}
	a.events.event(p.mw, o.Intent, corev1.EventTypeNormal, ReasonCreated, "created %s", name)
}

// adoptsClientSideApply is spec.adoptClientSideApply (default true).
func adoptsClientSideApply(mw *v1alpha1.ManagedWorkload) bool {
	return mw.Spec.AdoptClientSideApply == nil || *mw.Spec.AdoptClientSideApply
}

// drifter reports whether fields this workload owns on live drifted from
// the intent (without ignore), and the manager that owns a drifted field
// now (empty when it was removed and nobody owns it). A field now owned by
// a manager yields names is that manager's: not drift.
func (a *objectApplier) drifter(live, intent *unstructured.Unstructured, ignore *fieldset.Set, manager string, yields func(string, metav1.ManagedFieldsOperationType) bool) (string, bool) {
	if ignore != nil && !ignore.Empty() {
		var err error
		if intent, err = a.differ.RemoveFields(intent, ignore); err != nil {
			return "", false
		}
	}
	diff, err := a.differ.OwnedDiff(live, intent, manager)
	if err != nil || diff.Empty() {
		return "", false
	}
	who, diff, err := ownershipcore.Drift(live, diff, manager, yields)
	if err != nil {
		return "", true
	}
	return who, !diff.Empty()
}

// drift counts and reports a repair of owned fields.
func (a *objectApplier) drift(p *pass, name string, live, intent *unstructured.Unstructured) {
	metrics.DriftTotal.WithLabelValues(metrics.ControllerWorkload, live.GetKind()).Inc()
	detail := ""
	if diff, err := a.differ.OwnedDiff(live, intent, p.manager); err == nil && !diff.Empty() {
		paths := ownershipcore.FormatSet(diff)
		if len(paths) > 5 {
			paths = append(paths[:5], fmt.Sprintf("and %d more", len(paths)-5))
		}
		detail = ": " + strings.Join(paths, ", ")
		if owners, err := ownershipcore.Owners(live); err == nil {
			if who := owners.OwnersOf(diff, p.manager).Managers(); len(who) > 0 {
				detail += fmt.Sprintf(" (changed by %s)", strings.Join(who, ", "))
			}
		}
	}
	a.events.event(p.mw, live, corev1.EventTypeNormal, ReasonDriftRepaired, "repaired owned fields of %s%s", name, detail)
}

// applyLegacyObject takes the legacy path for one object.
func (a *objectApplier) applyLegacyObject(ctx context.Context, p *pass, o *object, e *v1alpha1.InventoryEntry, applied bool) *objectError {
	name := fmt.Sprintf("%s %s", e.Kind, refName(e.Namespace, e.Name))
	action, obj, residual, err := a.legacy.applyLegacy(ctx, p.applier, o.Intent, p.manager, func(obj *unstructured.Unstructured) *fieldset.Set {
		return a.ignoreFor(ctx, p, obj)
	})
	if err != nil {
		return classify(name, err)
	}
	e.Action, e.UID = string(action), obj.GetUID()
	setHealth(e, obj)
	switch action {
	case ownershipcore.ActionCreated:
		a.createdObject(p, o, name)
	case ownershipcore.ActionConfigured:
		p.configured++
		if applied && p.judged {
			metrics.DriftTotal.WithLabelValues(metrics.ControllerWorkload, e.Kind).Inc()
		}
	}
	if len(residual) > 0 {
		p.notConverged = append(p.notConverged, fmt.Sprintf("%s (%s)", name, strings.Join(residual, ", ")))
		p.after(legacyRecheck)
	}
	return nil
}

// classify turns an apply error into an object error, its message
// redact.Message(err). An object that can never be applied as
// it is (ownershipcore.IsTerminal: refused locally, or by the apiserver
// with 422, 400 or a 500 for a patch it cannot type) is Rejected without
// retry: only a change of the spec helps.
func classify(name string, err error) *objectError {
	msg := redact.Message(err)
	switch {
	case errors.Is(err, ownershipcore.ErrUnknownKind):
		return objErr(ReasonUnknownKind, true, "%s: %s", name, msg)
	case errors.Is(err, ownershipcore.ErrInvalidIntent):
		return objErr(ReasonRejected, false, "%s: %s", name, msg)
	case ownershipcore.IsTerminal(err):
		return objErr(ReasonRejected, false, "%s: the apiserver rejected the object: %s", name, msg)
	case apierrors.IsForbidden(err) && strings.Contains(msg, "cannot "):
		// RBAC: the account may not (the message names verb, resource
		// and account). Retried every 30 s: roles may change.
		return objErr(ReasonForbidden, true, "%s: %s", name, msg)
	case apierrors.IsForbidden(err):
		return objErr(ReasonRejected, true, "%s: forbidden: %s", name, msg)
	default:
		return objErr(ReasonApplyFailed, true, "%s: %s", name, msg)
	}
}

// checkTarget refuses objects that are part of fieldops itself and, with
// --no-cross-namespace-refs, objects of another namespace (never held),
// and cluster-scoped objects of a workload acting with the manager's
// rights in a namespace a cluster administrator did not list
// (--manager-rights-namespaces). A cluster-scoped object of a workload
// acting as an account is the account's RBAC to judge, as Flux lets a
// Kustomization acting as its account hold what that account may write:
// a write it may not do is Forbidden at the apiserver.
func (a *objectApplier) checkTarget(p *pass, o *object) *objectError {
	if o.Intent == nil {
		return nil
	}
	gvk := o.Intent.GroupVersionKind()
	if why, ok := patchtarget.Protected(gvk.Group, gvk.Kind, o.Intent.GetNamespace(), o.Intent.GetName(), a.tenancy.OwnNamespace); ok {
		return objErr(ReasonForbiddenObject, false, "%s %s is %s; fieldops does not change its own objects", gvk.Kind, refName(o.Intent.GetNamespace(), o.Intent.GetName()), why)
	}
	if !a.tenancy.NoCrossNamespaceRefs {
		return nil
	}
	switch {
	case o.Namespaced && o.Intent.GetNamespace() != p.mw.Namespace:
		return objErr(ReasonForbiddenObject, false, "%s %s is outside the workload's namespace %q (--no-cross-namespace-refs)", gvk.Kind, refName(o.Intent.GetNamespace(), o.Intent.GetName()), p.mw.Namespace)
	case !o.Namespaced && p.account.IsManager() && !a.tenancy.ManagerRights(p.mw.Namespace):
		return objErr(ReasonForbiddenObject, false, "%s %s is cluster-scoped and the workload acts with the manager's rights (--no-cross-namespace-refs): name a spec.serviceAccountName whose RBAC may write it", gvk.Kind, o.Intent.GetName())
	}
	return nil
}
