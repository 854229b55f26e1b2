package podset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
	"github.com/fieldops/fieldops/controllers/internal/conditions"
	"github.com/fieldops/fieldops/controllers/internal/notes"
	"github.com/fieldops/fieldops/feature"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
)

// ManagerPrefix: a PodSet applies pods with
// ownershipcore.ManagerName("fieldops-podset", namespace, name).
const ManagerPrefix = "fieldops-podset"

// ManagerName is the field manager of the PodSet namespace/name.
func ManagerName(namespace, name string) string {
	return ownershipcore.ManagerName(ManagerPrefix, namespace, name)
}

// Reconciler reconciles PodSets.
type Reconciler struct {
	// Concurrency is how many objects are reconciled at once (the
	// manager's --concurrency); 0 means 1.
	Concurrency int
	Client      client.Client
	Applier     *ownershipcore.Applier
	Recorder    events.EventRecorder
	// Gates are read on every reconcile: InPlacePodMetadata.
	Gates featuregate.FeatureGate

	// validated holds "<uid>/<revision>" of templates the apiserver
	// accepted in a dry run.
	validated sync.Map
}

// SetupWithManager registers the controller; events of the pods a PodSet
// controls reconcile it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.PodSet{}).
		Owns(&corev1.Pod{}).
		Named("podset").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.Concurrency)}).
		Complete(r)
}

// Reconcile: validate → scale down → create missing pods → update pods in
// place or recreate them → status, written once in the defer. Pods carry an
// ownerReference, so deleting the PodSet lets the garbage collector delete
// them.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	ps := &v1alpha1.PodSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, ps); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ps.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	before := ps.DeepCopy()
	defer func() {
		if equality.Semantic.DeepEqual(before.Status, ps.Status) {
			return
		}
		if err := r.Client.Status().Patch(ctx, ps, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
			retErr = errors.Join(retErr, fmt.Errorf("patch status: %w", err))
		}
	}()
	return r.reconcile(ctx, ps)
}

// invalidSpec is a spec problem: reported, nothing changed.
type invalidSpec struct{ msg string }

func (e invalidSpec) Error() string { return e.msg }

// validate checks what the CRD schema cannot: replicas, the selector and
// its match with the template labels, maxUnavailable. It returns the
// selector, the replicas and maxUnavailable (at least 1).
func validate(ps *v1alpha1.PodSet) (labels.Selector, int, int, error) {
	replicas := 1
	if ps.Spec.Replicas != nil {
		replicas = int(*ps.Spec.Replicas)
	}
	if replicas < 0 {
		return nil, 0, 0, invalidSpec{fmt.Sprintf("spec.replicas is %d; it must be 0 or more", replicas)}
	}
	if ps.Spec.Selector == nil || (len(ps.Spec.Selector.MatchLabels) == 0 && len(ps.Spec.Selector.MatchExpressions) == 0) {
		return nil, 0, 0, invalidSpec{"spec.selector is required and must not be empty"}
	}
	sel, err := metav1.LabelSelectorAsSelector(ps.Spec.Selector)
	if err != nil {
		return nil, 0, 0, invalidSpec{fmt.Sprintf("spec.selector: %v", err)}
	}
	if !sel.Matches(labels.Set(ps.Spec.Template.Metadata.Labels)) {
		return nil, 0, 0, invalidSpec{fmt.Sprintf("spec.selector %q does not match the template labels %v", sel.String(), ps.Spec.Template.Metadata.Labels)}
	}
	maxUnavailable := 1
	if mu := ps.Spec.UpdateStrategy.MaxUnavailable; mu != nil {
		v, err := intstr.GetScaledValueFromIntOrPercent(mu, replicas, false)
		if err != nil {
			return nil, 0, 0, invalidSpec{fmt.Sprintf("spec.updateStrategy.maxUnavailable: %v", err)}
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

// apply applies a desired pod with SSA under manager.
func (r *Reconciler) apply(ctx context.Context, pod *corev1.Pod, manager string) (ownershipcore.Result, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		return ownershipcore.Result{}, err
	}
	return r.Applier.Apply(ctx, &unstructured.Unstructured{Object: m}, ownershipcore.ApplyOptions{
		FieldManager: manager, Conflicts: ownershipcore.Static(ownershipcore.DecisionForce),
	})
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

// reconcile brings the pods to the spec.
func (r *Reconciler) reconcile(ctx context.Context, ps *v1alpha1.PodSet) (ctrl.Result, error) {
	st, gen := &ps.Status, ps.Generation
	sel, replicas, maxUnavailable, err := validate(ps)
	if err != nil {
		if c := meta.FindStatusCondition(st.Conditions, conditions.Ready); c == nil || c.Message != err.Error() {
			r.event(ps, nil, corev1.EventTypeWarning, ReasonInvalidSpec, "%v", err)
		}
		conditions.SetStalled(&st.Conditions, gen, ReasonInvalidSpec, err.Error())
		st.ObservedGeneration = gen
		return ctrl.Result{}, nil
	}
	manager := ManagerName(ps.Namespace, ps.Name)
	revision := Revision(&ps.Spec.Template.Spec)
	st.Selector, st.UpdateRevision = sel.String(), revision
	if st.CurrentRevision == "" {
		st.CurrentRevision = revision
	}
	// A template the apiserver rejects must not cost a running pod: check
	// each new revision with a server-side dry run before any write.
	if key := string(ps.UID) + "/" + revision; !r.isValidated(key) {
		probe := desiredPod(ps, 0, revision)
		probe.Name, probe.GenerateName = "", ps.Name+"-dry-run-"
		if err := r.Client.Create(ctx, probe, client.DryRunAll); err != nil {
			return r.podFailed(ps, "template", err)
		}
		r.validated.Store(key, true)
	}
	pods, strays, err := r.pods(ctx, ps, sel)
	if err != nil {
		return ctrl.Result{}, err
	}

	// Scale down, highest ordinal first; pods under foreign names go too.
	var ordinals []int
	for i := range pods {
		ordinals = append(ordinals, i)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(ordinals)))
	for _, i := range ordinals {
		if i < replicas {
			break
		}
		strays = append(strays, pods[i])
		delete(pods, i)
	}
	for _, p := range strays {
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID}); err != nil && !apierrors.IsNotFound(err) {
			return r.podFailed(ps, p.Name, err)
		}
		r.event(ps, p, corev1.EventTypeNormal, ReasonScaledDown, "deleted pod %s (replicas %d)", p.Name, replicas)
	}

	// Create the missing ordinals.
	for i := 0; i < replicas; i++ {
		if pods[i] != nil {
			continue
		}
		want := desiredPod(ps, i, revision)
		if _, err := r.apply(ctx, want, manager); err != nil {
			return r.podFailed(ps, want.Name, err)
		}
		r.event(ps, want, corev1.EventTypeNormal, ReasonCreated, "created pod %s at revision %s", want.Name, revision)
	}

	// Update: in place for metadata, recreate for the spec, highest
	// ordinal first, never more than maxUnavailable unready.
	unavailable := 0
	for i := 0; i < replicas; i++ {
		if !ready(pods[i]) {
			unavailable++
		}
	}
	inPlace := r.Gates.Enabled(feature.InPlacePodMetadata)
	updated, waiting := 0, 0
	for i := replicas - 1; i >= 0; i-- {
		p := pods[i]
		if p == nil || !p.DeletionTimestamp.IsZero() {
			continue
		}
		want := desiredPod(ps, i, revision)
		d, err := PodDiff(p, want, manager)
		if err != nil {
			return r.podFailed(ps, p.Name, err)
		}
		if d == MetadataOnly && !inPlace {
			d = RequiresRestart
		}
		switch d {
		case None:
			updated++
		case MetadataOnly:
			res, err := r.apply(ctx, want, manager)
			if err != nil {
				return r.podFailed(ps, p.Name, err)
			}
			updated++
			if res.Action != ownershipcore.ActionUnchanged { // a stale cache may ask twice
				metrics.PodUpdatesTotal.WithLabelValues(metrics.ModeInPlace).Inc()
				r.event(ps, p, corev1.EventTypeNormal, ReasonUpdatedInPlace, "applied the template's labels and annotations to pod %s in place", p.Name)
			}
		case RequiresRestart:
			wasReady := ready(p)
			if wasReady && unavailable >= maxUnavailable {
				waiting++
				continue
			}
			if err := r.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID}); err != nil && !apierrors.IsNotFound(err) {
				return r.podFailed(ps, p.Name, err)
			}
			if wasReady {
				unavailable++
			}
			metrics.PodUpdatesTotal.WithLabelValues(metrics.ModeRecreate).Inc()
			why := fmt.Sprintf("template.spec changed (revision %s → %s)", p.Labels[RevisionLabel], revision)
			if p.Labels[RevisionLabel] == revision {
				why = "labels or annotations changed and InPlacePodMetadata is off"
			}
			r.event(ps, p, corev1.EventTypeNormal, ReasonRestarted, "recreating pod %s: %s", p.Name, why)
		}
	}

	st.Replicas, st.ReadyReplicas, st.UpdatedReplicas = 0, 0, int32(updated)
	for i := 0; i < replicas; i++ {
		if pods[i] != nil {
			st.Replicas++
			if ready(pods[i]) {
				st.ReadyReplicas++
			}
		}
	}
	if updated == replicas {
		st.CurrentRevision = revision
	}
	st.ObservedGeneration = gen
	if updated == replicas && int(st.ReadyReplicas) == replicas && len(pods) == replicas {
		conditions.SetReady(&st.Conditions, gen, ReasonReady, fmt.Sprintf("%d/%d pods ready at revision %s", replicas, replicas, revision))
		return ctrl.Result{}, nil
	}
	msg := fmt.Sprintf("%d/%d pods ready, %d updated to revision %s", st.ReadyReplicas, replicas, updated, revision)
	if waiting > 0 {
		msg += fmt.Sprintf("; %d waiting to be recreated (maxUnavailable %d)", waiting, maxUnavailable)
	}
	conditions.SetWaiting(&st.Conditions, gen, ReasonProgressing, msg)
	return ctrl.Result{}, nil
}

// podFailed reports a failed pod write: PodRejected (stalled until the spec
// changes) when the apiserver refused the pod, otherwise PodFailed and a
// retry with backoff.
func (r *Reconciler) podFailed(ps *v1alpha1.PodSet, name string, err error) (ctrl.Result, error) {
	st, gen := &ps.Status, ps.Generation
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) {
		msg := fmt.Sprintf("the apiserver rejected the pod (%s): %v", name, err)
		if c := meta.FindStatusCondition(st.Conditions, conditions.Ready); c == nil || c.Message != msg {
			r.event(ps, nil, corev1.EventTypeWarning, ReasonPodRejected, "%s", msg)
		}
		conditions.SetStalled(&st.Conditions, gen, ReasonPodRejected, msg)
		st.ObservedGeneration = gen
		return ctrl.Result{}, nil
	}
	msg := fmt.Sprintf("pod %s: %v", name, err)
	r.event(ps, nil, corev1.EventTypeWarning, ReasonPodFailed, "%s", msg)
	conditions.SetWaiting(&st.Conditions, gen, ReasonPodFailed, msg)
	return ctrl.Result{}, errors.New(strings.TrimSpace(msg))
}
