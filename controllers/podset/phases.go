/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package podset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/conditions"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/feature"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
)

// pass is the state the phases of one reconcile of one PodSet share.
type pass struct {
	ps                       *v1alpha1.PodSet
	sel                      labels.Selector
	replicas, maxUnavailable int
	manager, revision        string
	// pods are the pods the PodSet controls, by ordinal; strays are the
	// ones to delete (beyond replicas, or under a foreign name).
	pods   map[int]*corev1.Pod
	strays []*corev1.Pod
	// updated pods are at the revision with the template's metadata;
	// waiting ones wait for maxUnavailable to be recreated.
	updated, waiting int
	// created and inPlace are the pods this reconcile created and updated
	// in place: one event for each kind of write, naming them (not one
	// per pod), sent when the reconcile ends (flush).
	created, inPlace []*corev1.Pod
}

// phaseValidate checks the spec (validate): an invalid one is Stalled
// with InvalidSpec, a terminal error, and nothing is changed.
func (r *Reconciler) phaseValidate(_ context.Context, p *pass) (skeleton.Step, error) {
	st, gen := &p.ps.Status, p.ps.Generation
	sel, replicas, maxUnavailable, err := validate(p.ps)
	if err != nil {
		msg := skeleton.Message(err)
		if c := meta.FindStatusCondition(st.Conditions, conditions.Ready); c == nil || c.Message != msg {
			r.event(p.ps, nil, corev1.EventTypeWarning, ReasonInvalidSpec, "%s", msg)
		}
		conditions.SetStalled(&st.Conditions, gen, ReasonInvalidSpec, msg)
		return skeleton.Stop(ctrl.Result{}), err
	}
	p.sel, p.replicas, p.maxUnavailable = sel, replicas, maxUnavailable
	p.manager = ManagerName(p.ps.Namespace, p.ps.Name)
	return skeleton.Next(), nil
}

// phaseRevision sets the revision of the template.
func (r *Reconciler) phaseRevision(_ context.Context, p *pass) (skeleton.Step, error) {
	st := &p.ps.Status
	p.revision = Revision(&p.ps.Spec.Template.Spec)
	st.Selector, st.UpdateRevision = p.sel.String(), p.revision
	if st.CurrentRevision == "" {
		st.CurrentRevision = p.revision
	}
	return skeleton.Next(), nil
}

// phaseDryRun checks each new revision with a server-side dry run before
// any write: a template the apiserver rejects must not cost a running
// pod.
func (r *Reconciler) phaseDryRun(ctx context.Context, p *pass) (skeleton.Step, error) {
	key := string(p.ps.UID) + "/" + p.revision
	if r.isValidated(key) || converged(p) {
		// A converged PodSet writes no pod: the dry run guards writes, and
		// is not worth a request per PodSet after a restart of the manager. Not marked validated: the next write still waits
		// for it.
		return skeleton.Next(), nil
	}
	probe := desiredPod(p.ps, 0, p.revision)
	probe.Name, probe.GenerateName = "", p.ps.Name+"-dry-run-"
	if err := r.Client.Create(ctx, probe, client.DryRunAll); err != nil {
		return r.podFailed(p, "template", err)
	}
	r.validated.Store(key, true)
	return skeleton.Next(), nil
}

// phaseListPods lists the pods the PodSet controls.
func (r *Reconciler) phaseListPods(ctx context.Context, p *pass) (skeleton.Step, error) {
	pods, strays, err := r.pods(ctx, p.ps, p.sel)
	if err != nil {
		return skeleton.Stop(ctrl.Result{}), err
	}
	p.pods, p.strays = pods, strays
	return skeleton.Next(), nil
}

// phaseScaleDown deletes the pods beyond replicas, highest ordinal first,
// and those under foreign names.
func (r *Reconciler) phaseScaleDown(ctx context.Context, p *pass) (skeleton.Step, error) {
	var ordinals []int
	for i := range p.pods {
		ordinals = append(ordinals, i)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(ordinals)))
	for _, i := range ordinals {
		if i < p.replicas {
			break
		}
		p.strays = append(p.strays, p.pods[i])
		delete(p.pods, i)
	}
	for _, pod := range p.strays {
		if !pod.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); err != nil && !apierrors.IsNotFound(err) {
			return r.podFailed(p, pod.Name, err)
		}
		r.podWrites.Forget(client.ObjectKeyFromObject(pod))
		r.event(p.ps, pod, corev1.EventTypeNormal, ReasonScaledDown, "deleted pod %s (replicas %d)", pod.Name, p.replicas)
	}
	return skeleton.Next(), nil
}

// phaseCreate creates the missing ordinals.
func (r *Reconciler) phaseCreate(ctx context.Context, p *pass) (skeleton.Step, error) {
	for i := 0; i < p.replicas; i++ {
		if p.pods[i] != nil {
			continue
		}
		want := desiredPod(p.ps, i, p.revision)
		if _, err := r.apply(ctx, want, nil, p.manager); err != nil {
			return r.podFailed(p, want.Name, err)
		}
		p.created = append(p.created, want)
	}
	return skeleton.Next(), nil
}

// phaseUpdate brings each pod to the template: in place for metadata,
// recreated for the spec, highest ordinal first, never more than
// maxUnavailable unready.
func (r *Reconciler) phaseUpdate(ctx context.Context, p *pass) (skeleton.Step, error) {
	unavailable := 0
	for i := 0; i < p.replicas; i++ {
		if !ready(p.pods[i]) {
			unavailable++
		}
	}
	inPlace := r.Gates.Enabled(feature.InPlacePodMetadata)
	for i := p.replicas - 1; i >= 0; i-- {
		pod := p.pods[i]
		if pod == nil || !pod.DeletionTimestamp.IsZero() {
			continue
		}
		want := desiredPod(p.ps, i, p.revision)
		d, err := PodDiff(pod, want, p.manager)
		if err != nil {
			return r.podFailed(p, pod.Name, err)
		}
		if d == MetadataOnly && !inPlace {
			d = RequiresRestart
		}
		if err := r.updatePod(ctx, p, pod, want, d, &unavailable); err != nil {
			return r.podFailed(p, pod.Name, err)
		}
	}
	return skeleton.Next(), nil
}

// updatePod brings one pod to want as d says, counting it in p.updated
// or p.waiting; unavailable counts the pods not ready.
func (r *Reconciler) updatePod(ctx context.Context, p *pass, pod, want *corev1.Pod, d Diff, unavailable *int) error {
	switch d {
	case None:
		p.updated++
	case MetadataOnly:
		if r.podWrites.Behind(pod) {
			// The cache has not seen our own apply of this pod yet: it
			// is at the template, and its watch event queues another
			// reconcile; applying again would be a request for nothing.
			p.updated++
			return nil
		}
		res, err := r.apply(ctx, want, pod, p.manager)
		if err != nil {
			return err
		}
		p.updated++
		if res.Action != ownershipcore.ActionUnchanged { // a stale cache may ask twice
			metrics.PodUpdatesTotal.WithLabelValues(metrics.ModeInPlace).Inc()
			p.inPlace = append(p.inPlace, pod)
			if res.Object != nil {
				r.podWrites.WrittenAt(pod, pod.ResourceVersion, res.Object.GetResourceVersion())
			}
		}
	case RequiresRestart:
		wasReady := ready(pod)
		if wasReady && *unavailable >= p.maxUnavailable {
			p.waiting++
			return nil
		}
		if err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		r.podWrites.Forget(client.ObjectKeyFromObject(pod))
		if wasReady {
			*unavailable++
		}
		metrics.PodUpdatesTotal.WithLabelValues(metrics.ModeRecreate).Inc()
		why := fmt.Sprintf("template.spec changed (revision %s → %s)", pod.Labels[RevisionLabel], p.revision)
		if pod.Labels[RevisionLabel] == p.revision {
			why = "labels or annotations changed and InPlacePodMetadata is off"
		}
		r.event(p.ps, pod, corev1.EventTypeNormal, ReasonRestarted, "recreating pod %s: %s", pod.Name, why)
	}
	return nil
}

// phaseReport counts the pods and sets the conditions: Ready when every
// pod is ready at the revision, else Progressing.
func (r *Reconciler) phaseReport(_ context.Context, p *pass) (skeleton.Step, error) {
	r.flush(p)
	st, gen, replicas := &p.ps.Status, p.ps.Generation, p.replicas
	st.Replicas, st.ReadyReplicas, st.UpdatedReplicas = 0, 0, int32(p.updated)
	for i := 0; i < replicas; i++ {
		if p.pods[i] != nil {
			st.Replicas++
			if ready(p.pods[i]) {
				st.ReadyReplicas++
			}
		}
	}
	if p.updated == replicas {
		st.CurrentRevision = p.revision
	}
	if p.updated == replicas && int(st.ReadyReplicas) == replicas && len(p.pods) == replicas {
		conditions.SetReady(&st.Conditions, gen, ReasonReady, fmt.Sprintf("%d/%d pods ready at revision %s", replicas, replicas, p.revision))
		return skeleton.Next(), nil
	}
	msg := fmt.Sprintf("%d/%d pods ready, %d updated to revision %s", st.ReadyReplicas, replicas, p.updated, p.revision)
	if p.waiting > 0 {
		msg += fmt.Sprintf("; %d waiting to be recreated (maxUnavailable %d)", p.waiting, p.maxUnavailable)
	}
	conditions.SetWaiting(&st.Conditions, gen, ReasonProgressing, msg)
	return skeleton.Next(), nil
}

// podFailed reports a failed pod write: PodRejected (Stalled, a terminal
// error until the spec changes) when the apiserver refused the pod,
// otherwise PodFailed and a retry with backoff.
func (r *Reconciler) podFailed(p *pass, name string, err error) (skeleton.Step, error) {
	r.flush(p) // what was written before the failure
	ps := p.ps
	st, gen := &ps.Status, ps.Generation
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) {
		msg := fmt.Sprintf("the apiserver rejected the pod (%s): %v", name, err)
		if c := meta.FindStatusCondition(st.Conditions, conditions.Ready); c == nil || c.Message != msg {
			r.event(ps, nil, corev1.EventTypeWarning, ReasonPodRejected, "%s", msg)
		}
		conditions.SetStalled(&st.Conditions, gen, ReasonPodRejected, msg)
		return skeleton.Stop(ctrl.Result{}), skeleton.Terminal(ReasonPodRejected, "%s", msg)
	}
	msg := fmt.Sprintf("pod %s: %v", name, err)
	r.event(ps, nil, corev1.EventTypeWarning, ReasonPodFailed, "%s", msg)
	conditions.SetWaiting(&st.Conditions, gen, ReasonPodFailed, msg)
	return skeleton.Stop(ctrl.Result{}), errors.New(strings.TrimSpace(msg))
}

// flush sends the events of the pods this reconcile created and updated
// in place: one per kind of write, naming every pod (related: the pod,
// when there is one).
func (r *Reconciler) flush(p *pass) {
	if len(p.created) > 0 {
		r.event(p.ps, only(p.created), corev1.EventTypeNormal, ReasonCreated, "created %s at revision %s", podNames(p.created), p.revision)
	}
	if len(p.inPlace) > 0 {
		r.event(p.ps, only(p.inPlace), corev1.EventTypeNormal, ReasonUpdatedInPlace, "applied the template's labels and annotations to %s in place", podNames(p.inPlace))
	}
	p.created, p.inPlace = nil, nil
}

// only is the pod of a list of one, else nil.
func only(pods []*corev1.Pod) *corev1.Pod {
	if len(pods) == 1 {
		return pods[0]
	}
	return nil
}

// podNames is "pod a" or "pods a, b, c", in ordinal order.
func podNames(pods []*corev1.Pod) string {
	names := make([]string, len(pods))
	for i, pod := range pods {
		names[i] = pod.Name
	}
	sort.Slice(names, func(i, j int) bool {
		if len(names[i]) != len(names[j]) {
			return len(names[i]) < len(names[j]) // web-2 before web-10
		}
		return names[i] < names[j]
	})
	if len(names) == 1 {
		return "pod " + names[0]
	}
	return "pods " + strings.Join(names, ", ")
}

// converged reports whether the pods need no write: exactly the ordinals
// below replicas, each at the revision with the template's metadata.
func converged(p *pass) bool {
	if len(p.strays) > 0 || len(p.pods) != p.replicas {
		return false
	}
	for i := 0; i < p.replicas; i++ {
		pod := p.pods[i]
		if pod == nil || !pod.DeletionTimestamp.IsZero() {
			return false
		}
		if d, err := PodDiff(pod, desiredPod(p.ps, i, p.revision), p.manager); err != nil || d != None {
			return false
		}
	}
	return true
}
