/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package podset

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/featuregate"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/notes"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/internal/names"
	"github.com/fieldops/fieldops/ownershipcore"
)

// ManagerPrefix: a PodSet applies pods with
// ownershipcore.ManagerName("fieldops-podset", namespace, name).
const ManagerPrefix = names.PodSetPrefix

// ManagerName is the field manager of the PodSet namespace/name.
func ManagerName(namespace, name string) string {
	return names.PodSet(namespace, name)
}

// Reconciler reconciles PodSets.
type Reconciler struct {
	// Concurrency is how many objects are reconciled at once (the
	// manager's --concurrency); 0 means 1.
	Concurrency int
	Client      client.Client
	// APIReader, when not nil, reads an object without the cache after a
	// write of it failed (skeleton.Writes.Unsure).
	APIReader client.Reader
	Applier   *ownershipcore.Applier
	Recorder  events.EventRecorder
	// Gates are read on every reconcile: InPlacePodMetadata.
	Gates featuregate.FeatureGate

	// validated holds "<uid>/<revision>" of templates the apiserver
	// accepted in a dry run.
	validated sync.Map
	// podWrites are our own in-place applies of pods, until the cache
	// has seen them.
	podWrites skeleton.Writes
	once      sync.Once
	skel      *skeleton.Reconciler[*v1alpha1.PodSet, *pass]
}

// SetupWithManager registers the controller; events of the pods a PodSet
// controls reconcile it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.skeleton()
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.PodSet{}).
		Owns(&corev1.Pod{}).
		Named("podset").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.Concurrency)}).
		Complete(r)
}

// Reconcile is the shared skeleton (controllers/internal/skeleton): get →
// status written once, in the defer → the phases: validate → revision →
// list pods → dry run of a new revision (unless no pod needs a write) →
// scale down → create missing pods → update pods in place or
// recreate them → report. There is no finalizer: pods carry an
// ownerReference, so deleting the PodSet lets the garbage collector
// delete them.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.skeleton().Reconcile(ctx, req)
}

// skeleton is the reconcile's shape, built once.
func (r *Reconciler) skeleton() *skeleton.Reconciler[*v1alpha1.PodSet, *pass] {
	r.once.Do(func() {
		r.skel = &skeleton.Reconciler[*v1alpha1.PodSet, *pass]{
			Client:             r.Client,
			APIReader:          r.APIReader,
			New:                func() *v1alpha1.PodSet { return &v1alpha1.PodSet{} },
			Status:             func(ps *v1alpha1.PodSet) any { return ps.Status },
			Conditions:         func(ps *v1alpha1.PodSet) *[]metav1.Condition { return &ps.Status.Conditions },
			ObservedGeneration: func(ps *v1alpha1.PodSet) *int64 { return &ps.Status.ObservedGeneration },
			Scope:              func(ps *v1alpha1.PodSet) *pass { return &pass{ps: ps} },
			Phases: []skeleton.Phase[*pass]{
				{Name: "validate", Run: r.phaseValidate},
				{Name: "revision", Run: r.phaseRevision},
				{Name: "list pods", Run: r.phaseListPods},
				{Name: "dry run", Run: r.phaseDryRun},
				{Name: "scale down", Run: r.phaseScaleDown},
				{Name: "create pods", Run: r.phaseCreate},
				{Name: "update pods", Run: r.phaseUpdate},
				{Name: "report", Run: r.phaseReport},
			},
		}
	})
	return r.skel
}

// validate checks what the CRD schema cannot: replicas, the selector and
// its match with the template labels, maxUnavailable. It returns the
// selector, the replicas and maxUnavailable (at least 1).
func validate(ps *v1alpha1.PodSet) (labels.Selector, int, int, error) {
	replicas := 1
	if ps.Spec.Replicas != nil {
		replicas = int(*ps.Spec.Replicas)
	}
	if replicas < 0 {
		return nil, 0, 0, skeleton.Terminal(ReasonInvalidSpec, "spec.replicas is %d; it must be 0 or more", replicas)
	}
	if ps.Spec.Selector == nil || (len(ps.Spec.Selector.MatchLabels) == 0 && len(ps.Spec.Selector.MatchExpressions) == 0) {
		return nil, 0, 0, skeleton.Terminal(ReasonInvalidSpec, "spec.selector is required and must not be empty")
	}
	sel, err := metav1.LabelSelectorAsSelector(ps.Spec.Selector)
	if err != nil {
		return nil, 0, 0, skeleton.Terminal(ReasonInvalidSpec, "spec.selector: %v", err)
	}
	if !sel.Matches(labels.Set(ps.Spec.Template.Metadata.Labels)) {
		return nil, 0, 0, skeleton.Terminal(ReasonInvalidSpec, "spec.selector %q does not match the template labels %v", sel.String(), ps.Spec.Template.Metadata.Labels)
	}
	maxUnavailable := 1
	if mu := ps.Spec.UpdateStrategy.MaxUnavailable; mu != nil {
		v, err := intstr.GetScaledValueFromIntOrPercent(mu, replicas, false)
		if err != nil {
			return nil, 0, 0, skeleton.Terminal(ReasonInvalidSpec, "spec.updateStrategy.maxUnavailable: %v", err)
		}
		if v > 1 {
			maxUnavailable = v
		}
	}
	return sel, replicas, maxUnavailable, nil
}

// pods returns the pods ps controls, by ordinal, and those it controls
// under a name that is not one of its ordinals.
func (r *Reconciler) pods(ctx context.Context, ps *v1alpha1.PodSet, sel labels.Selector) (map[int]*corev1.Pod, []*corev1.Pod, error) {
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, client.InNamespace(ps.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, nil, err
	}
	byOrdinal := map[int]*corev1.Pod{}
	var strays []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != ps.UID {
			continue
		}
		if n := ordinal(ps, p.Name); n >= 0 {
			byOrdinal[n] = p
		} else {
			strays = append(strays, p)
		}
	}
	return byOrdinal, strays, nil
}

func ready(p *corev1.Pod) bool {
	if p == nil || !p.DeletionTimestamp.IsZero() {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// apply applies a desired pod with SSA under manager. live is the pod as
// this reconcile read it (nil: absent) from the manager's cache of pods,
// the read PodDiff decided on: Apply decides "unchanged" on that same
// copy rather than on a second read of the pod as an unstructured object
// (a second informer, which may lag behind the one whose event queued
// this reconcile: a drift seen there was then judged unchanged, and never
// repaired).
func (r *Reconciler) apply(ctx context.Context, pod, live *corev1.Pod, manager string) (ownershipcore.Result, error) {
	want, err := toUnstructured(pod)
	if err != nil {
		return ownershipcore.Result{}, err
	}
	opts := ownershipcore.ApplyOptions{FieldManager: manager, Conflicts: ownershipcore.Static(ownershipcore.DecisionForce), Absent: live == nil}
	if live != nil {
		if opts.Live, err = toUnstructured(live); err != nil {
			return ownershipcore.Result{}, err
		}
	}
	return r.Applier.Apply(ctx, want, opts)
}

// toUnstructured converts a pod, naming its apiVersion and kind (a pod
// read from the cache has neither).
func toUnstructured(pod *corev1.Pod) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("v1")
	u.SetKind("Pod")
	return u, nil
}

func (r *Reconciler) isValidated(key string) bool {
	_, ok := r.validated.Load(key)
	return ok
}

// event records an event regarding ps, and pod when not nil; its note is
// cleaned and bounded (notes.Event), so the apiserver accepts it.
func (r *Reconciler) event(ps *v1alpha1.PodSet, pod *corev1.Pod, typ, reason, format string, args ...interface{}) {
	if r.Recorder == nil {
		return
	}
	var related runtime.Object
	if pod != nil {
		related = pod
	}
	r.Recorder.Eventf(ps, related, typ, reason, "Reconcile", "%s", notes.Event(format, args...))
}
