/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldplan

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/names"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/internal/patchplan"
	"github.com/fieldops/fieldops/internal/patchtarget"
	"github.com/fieldops/fieldops/ownershipcore/redact"
)

// planSelectorPatch plans obj, a patch with spec.targetSelector
// (planSelector); plan --delete refuses it.
func (p *Planner) planSelectorPatch(ctx context.Context, obj v1alpha1.Patcher) ([]Plan, error) {
	kind := "FieldPatch"
	existing := v1alpha1.Patcher(&v1alpha1.FieldPatch{})
	if _, cluster := obj.(*v1alpha1.ClusterFieldPatch); cluster {
		kind, existing = "ClusterFieldPatch", &v1alpha1.ClusterFieldPatch{}
	}
	if p.Delete {
		return p.planDeleteSelector(ctx, obj, existing, kind)
	}
	return p.planSelector(ctx, obj, existing)
}

// planDeleteAny plans the deletion of obj as it is on the cluster: of
// each of its targets for a selector patch (planDeleteSelector), else of
// its one target (planDelete).
func (p *Planner) planDeleteAny(ctx context.Context, obj, existing v1alpha1.Patcher, cluster bool) ([]Plan, error) {
	onCluster := existing.DeepCopyObject().(v1alpha1.Patcher)
	if err := p.Client.Get(ctx, client.ObjectKeyFromObject(obj), onCluster); err == nil && onCluster.PatchSpec().TargetSelector != nil {
		return p.planDeleteSelector(ctx, obj, existing, map[bool]string{false: "FieldPatch", true: "ClusterFieldPatch"}[cluster])
	}
	plan, err := p.planDelete(ctx, obj, existing, cluster)
	if err != nil {
		return nil, err
	}
	return []Plan{plan}, nil
}

// planDeleteSelector plans the deletion of a selector patch: one plan per
// target in its status.targets.records, each as the controller gives that
// target back (planDelete's rows, with the target's record, and its
// Secret of previous values under Restore).
func (p *Planner) planDeleteSelector(ctx context.Context, obj, existing v1alpha1.Patcher, kind string) ([]Plan, error) {
	_, cluster := obj.(*v1alpha1.ClusterFieldPatch)
	head := Plan{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Action: ActionDelete}
	if err := p.Client.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		if apierrors.IsNotFound(err) {
			head.Action, head.Message = ActionTargetNotFound, "the patch is not on the cluster: deleting it does nothing"
			return []Plan{head}, nil
		}
		return nil, err
	}
	head.Exists = true
	spec, st := existing.PatchSpec(), existing.PatchStatus()
	manager := st.FieldManager
	if manager == "" {
		manager = names.FieldPatch(cluster, existing.GetNamespace(), existing.GetName())
	}
	head.FieldManager = manager
	gv, err := schema.ParseGroupVersion(spec.TargetSelector.APIVersion)
	if err != nil || st.Targets == nil || len(st.Targets.Records) == 0 {
		head.Action, head.Message = "Unchanged", "the patch wrote to no target: deleting it lets it go at once"
		return []Plan{head}, nil
	}
	var plans []Plan
	for _, rec := range st.Targets.Records {
		one := perTarget(existing, &unstructured.Unstructured{})
		one.PatchSpec().TargetSelector = spec.TargetSelector // the Secret of previous values is the target's own
		one.PatchSpec().Target = v1alpha1.TargetReference{APIVersion: gv.String(), Kind: spec.TargetSelector.Kind, Namespace: rec.Namespace, Name: rec.Name}
		rs := st.Targets.RecordStatus(rec.UID)
		rs.FieldManager = manager
		*one.PatchStatus() = rs
		plan := head
		pp := &PatchPlan{Type: string(patchintent.TypeOrApply(spec.Type)), DeletionPolicy: string(deletionPolicy(spec.DeletionPolicy)), ConflictPolicy: string(spec.ConflictPolicy),
			Target: ObjectRef{APIVersion: gv.String(), Kind: spec.TargetSelector.Kind, Namespace: rec.Namespace, Name: rec.Name}}
		plan.Patch = pp
		live, err := p.deletionTarget(ctx, one, cluster)
		if err != nil || live == nil {
			plan.Action, plan.Message = "Unchanged", "the target is not there: nothing to give back"
			plans = append(plans, plan)
			continue
		}
		rows, notes, writes, err := p.deletionRows(ctx, one, cluster, live, manager)
		switch {
		case err != nil:
			plan.Action, plan.Message = ActionFailed, redact.Message(err)
		case len(rows) == 0:
			plan.Action, plan.Message = "Unchanged", "the patch owns no field of the target: deleting it changes nothing there"
		}
		pp.Deletion, pp.Notes, pp.Writes = rows, notes, writes
		plans = append(plans, plan)
	}
	return plans, nil
}

// planSelector plans a patch with spec.targetSelector: one plan per
// object the selector matches now (listed with the user's rights, as kubectl
// get would), each planned as the controller reconciles that target: as a
// patch whose target names it, continuing the target's record in
// status.targets (planPatchWith). With no match, one TargetNotFound plan
// says so; the controller patches the objects that appear.
func (p *Planner) planSelector(ctx context.Context, obj, existing v1alpha1.Patcher) ([]Plan, error) {
	_, cluster := obj.(*v1alpha1.ClusterFieldPatch)
	kind := map[bool]string{false: "FieldPatch", true: "ClusterFieldPatch"}[cluster]
	manager := names.FieldPatch(cluster, obj.GetNamespace(), obj.GetName())
	head := Plan{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), FieldManager: manager}
	exists, err := p.admit(ctx, obj, existing)
	if err != nil {
		head.Action, head.Message = ActionInvalid, redact.Message(err)
		return []Plan{head}, nil
	}
	head.Exists = exists
	var stored *v1alpha1.TargetsStatus
	if exists {
		stored = existing.PatchStatus().Targets
	}
	targets, err := p.selectorTargets(ctx, obj, cluster)
	if err != nil {
		head.Action, head.Message = ActionInvalid, fmt.Sprintf("list the targets: %s", redact.Message(err))
		return []Plan{head}, nil
	}
	if len(targets) == 0 {
		sel := obj.PatchSpec().TargetSelector
		head.Action, head.Message = ActionTargetNotFound, fmt.Sprintf("no %s matches targetSelector; the controller patches the ones that appear", sel.Kind)
		return []Plan{head}, nil
	}
	var plans []Plan
	for _, t := range targets {
		one := perTarget(obj, t)
		st := stored.RecordStatus(string(t.GetUID()))
		plan, err := p.planPatchWith(ctx, one, &st, exists, nil)
		if err != nil {
			return nil, err
		}
		gvk := t.GroupVersionKind()
		if _, protected := patchtarget.Protected(gvk.Group, gvk.Kind, t.GetNamespace(), t.GetName(), p.OwnNamespace); plan.Patch != nil && st.TargetUID == "" && !protected {
			// A target with no record yet gets one before any write (the
			// controller's recordAhead), whatever its pass then does: its
			// deletion finds it there. fieldops's own objects get none.
			plan.Patch.Writes = append([]patchplan.Write{patchplan.WriteRecord}, plan.Patch.Writes...)
		}
		plans = append(plans, plan)
	}
	return plans, nil
}

// perTarget is obj as a patch of target t alone (its status left empty).
func perTarget(obj v1alpha1.Patcher, t *unstructured.Unstructured) v1alpha1.Patcher {
	spec := obj.PatchSpec().DeepCopy()
	spec.TargetSelector = nil
	spec.Target = v1alpha1.TargetReference{APIVersion: t.GetAPIVersion(), Kind: t.GetKind(), Name: t.GetName(), Namespace: t.GetNamespace()}
	switch o := obj.(type) {
	case *v1alpha1.ClusterFieldPatch:
		return &v1alpha1.ClusterFieldPatch{TypeMeta: o.TypeMeta, ObjectMeta: o.ObjectMeta, Spec: *spec}
	case *v1alpha1.FieldPatch:
		return &v1alpha1.FieldPatch{TypeMeta: o.TypeMeta, ObjectMeta: o.ObjectMeta, Spec: *spec}
	}
	return obj
}

// selectedNamespaces are the namespaces a namespaceSelector matches.
func (p *Planner) selectedNamespaces(ctx context.Context, selector *metav1.LabelSelector) (map[string]bool, error) {
	nsSel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, fmt.Errorf("targetSelector.namespaceSelector: %w", err)
	}
	nss := &corev1.NamespaceList{}
	if err := p.Client.List(ctx, nss, client.MatchingLabelsSelector{Selector: nsSel}); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, ns := range nss.Items {
		out[ns.Name] = nsSel.Matches(labels.Set(ns.Labels))
	}
	return out, nil
}

// selectorTargets lists the objects obj's targetSelector matches, sorted
// by namespace and name: of its own namespace for a FieldPatch; for a
// ClusterFieldPatch of a namespaced kind, of the namespaces its
// namespaceSelector matches.
func (p *Planner) selectorTargets(ctx context.Context, obj v1alpha1.Patcher, cluster bool) ([]*unstructured.Unstructured, error) {
	sel := obj.PatchSpec().TargetSelector
	gv, err := schema.ParseGroupVersion(sel.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("targetSelector.apiVersion %q: %w", sel.APIVersion, err)
	}
	ls, err := metav1.LabelSelectorAsSelector(sel.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("targetSelector.labelSelector: %w", err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gv.WithKind(sel.Kind + "List"))
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: ls}}
	if !cluster {
		opts = append(opts, client.InNamespace(obj.GetNamespace()))
	}
	if err := p.Client.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	var inNamespaces map[string]bool
	if cluster && sel.NamespaceSelector != nil {
		if inNamespaces, err = p.selectedNamespaces(ctx, sel.NamespaceSelector); err != nil {
			return nil, err
		}
	}
	wanted := map[string]bool{}
	for _, n := range sel.Names {
		wanted[n] = true
	}
	var out []*unstructured.Unstructured
	for i := range list.Items {
		u := &list.Items[i]
		if len(wanted) > 0 && !wanted[u.GetName()] {
			continue
		}
		if inNamespaces != nil && !inNamespaces[u.GetNamespace()] {
			continue
		}
		u.SetGroupVersionKind(gv.WithKind(sel.Kind))
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GetNamespace() != out[j].GetNamespace() {
			return out[i].GetNamespace() < out[j].GetNamespace()
		}
		return out[i].GetName() < out[j].GetName()
	})
	return out, nil
}
