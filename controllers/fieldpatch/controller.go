package fieldpatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/notes"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/controllers/internal/watch"
	"github.com/fieldops/fieldops/internal/patchtarget"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/plugins/host"
)

// Finalizer holds a FieldPatch until its fields are handed back.
const Finalizer = "fieldops.dev/hand-back"

// Manager name prefixes: a FieldPatch applies with
// "fieldops-fieldpatch/<namespace>/<name>", a ClusterFieldPatch with
// "fieldops-clusterfieldpatch/<name>" (ownershipcore.ManagerName).
const (
	ManagerPrefix        = patchtarget.ManagerPrefix
	ClusterManagerPrefix = patchtarget.ClusterManagerPrefix
	// OwnManagerPrefix marks field managers of fieldops itself; objects
	// with such a manager are never FieldPatch targets.
	OwnManagerPrefix = patchtarget.OwnManagerPrefix
)

// transientRetry is how long to wait after an error a retry may fix
// (a kind not served yet, a failed request).
const transientRetry = 30 * time.Second

// Reconciler reconciles FieldPatch (Cluster false) or ClusterFieldPatch
// (Cluster true).
type Reconciler struct {
	// Concurrency is how many objects are reconciled at once (the
	// manager's --concurrency); 0 means 1.
	Concurrency int
	Client      client.Client
	// APIReader reads FieldPatches without the cache where a stale copy
	// would be wrong (the record of previous owners). Nil means Client.
	APIReader client.Reader
	Applier   *ownershipcore.Applier
	Recorder  events.EventRecorder
	Cluster   bool
	// Plugins runs conflictPlugin and ignorePlugins; nil when the
	// ExternalPlugins gate is off.
	Plugins *host.Host
	// Tenants gives each patch the Applier of the account it acts as
	// (spec.serviceAccountName); nil: every patch uses Applier.
	Tenants *tenant.Appliers
	// Tenancy are the manager-wide tenant settings (default account, own
	// namespace).
	Tenancy tenant.Options
	// ContestBase is the unit of the contest backoff; 0 means
	// ownershipcore.ContestBase (tests scale it down).
	ContestBase time.Duration

	watches      *watch.Watches
	contests     *ownershipcore.Contests
	contestsOnce sync.Once
	// written are, per FieldPatch, the resourceVersions it had just before
	// this process last wrote it (finalizer, status): a cached copy at one
	// of them is older than our own write (see Reconcile).
	written sync.Map // types.NamespacedName → ownWrites
}

// staleRecheck is how soon a reconcile that found the cache behind our own
// write looks again (the watch event of a status write does not queue one:
// status changes do not pass the predicates).
const staleRecheck = 100 * time.Millisecond

// wrote records that obj, at resourceVersion before, was just written by
// this process, obj holding the apiserver's answer. A write that changed
// nothing (same resourceVersion) leaves no record: no cache can be behind
// it, and a record would make every later reconcile wait forever.
func (r *Reconciler) wrote(obj client.Object, before string) {
	if obj.GetResourceVersion() == before {
		return
	}
	r.writtenAt(obj, before, obj.GetResourceVersion())
}

// ownWrites are the resourceVersions of one FieldPatch that this process
// has written over: every version before one of its writes, and every
// version its writes produced but the last.
type ownWrites struct {
	stale  []string
	latest string
}

// writtenAt records a write of obj from resourceVersion before to after.
func (r *Reconciler) writtenAt(obj client.Object, before, after string) {
	key := client.ObjectKeyFromObject(obj)
	var w ownWrites
	if v, ok := r.written.Load(key); ok {
		w = v.(ownWrites)
	}
	stale := append([]string{}, w.stale...)
	stale = append(stale, before)
	if w.latest != "" && w.latest != after {
		stale = append(stale, w.latest)
	}
	if len(stale) > 8 {
		stale = stale[len(stale)-8:]
	}
	r.written.Store(key, ownWrites{stale: stale, latest: after})
}

// behind reports whether the cached obj predates one of our own writes of
// it; once the cache has caught up, the record is dropped.
func (r *Reconciler) behind(obj client.Object) bool {
	key := client.ObjectKeyFromObject(obj)
	v, ok := r.written.Load(key)
	if !ok {
		return false
	}
	for _, rv := range v.(ownWrites).stale {
		if rv == obj.GetResourceVersion() {
			return true
		}
	}
	r.written.Delete(key)
	return false
}

func (r *Reconciler) newObject() v1alpha1.Patcher {
	if r.Cluster {
		return &v1alpha1.ClusterFieldPatch{}
	}
	return &v1alpha1.FieldPatch{}
}

// SetupWithManager registers the controller, its target index, and the
// on-demand target watches.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.contestsOnce.Do(func() { r.contests = ownershipcore.NewContestsBase(r.ContestBase) })
	obj, list := client.Object(&v1alpha1.FieldPatch{}), client.ObjectList(&v1alpha1.FieldPatchList{})
	name := "fieldpatch"
	if r.Cluster {
		obj, list, name = &v1alpha1.ClusterFieldPatch{}, &v1alpha1.ClusterFieldPatchList{}, "clusterfieldpatch"
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), obj, targetIndex, func(o client.Object) []string {
		p := o.(v1alpha1.Patcher)
		gv, err := schema.ParseGroupVersion(p.PatchSpec().Target.APIVersion)
		if err != nil {
			return nil
		}
		return []string{watch.Key(gv.WithKind(p.PatchSpec().Target.Kind).GroupKind(), p.TargetNamespace(), p.PatchSpec().Target.Name)}
	}); err != nil {
		return err
	}
	c, err := ctrl.NewControllerManagedBy(mgr).
		For(obj, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Named(name).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.Concurrency)}).
		Build(r)
	if err != nil {
		return err
	}
	r.watches, err = watch.New(mgr, c, list, targetIndex)
	return err
}

// targetIndex is the field index of FieldPatches by target (watch.Key).
const targetIndex = "fieldops.dev/target"

// Reconcile: get → delete or finalizer → reconcile → status written once,
// in the defer.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	r.contestsOnce.Do(func() { r.contests = ownershipcore.NewContestsBase(r.ContestBase) })
	obj := r.newObject()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			metrics.SetContested(r.controllerName(), req.Namespace, req.Name, "")
			r.watches.Release(req.NamespacedName) // its target is watched no more
			r.written.Delete(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if r.behind(obj) {
		// The cache has not seen our last write of this FieldPatch yet:
		// deciding on the older copy would redo that write (issue 11).
		return ctrl.Result{RequeueAfter: staleRecheck}, nil
	}
	before := obj.DeepCopyObject().(v1alpha1.Patcher)
	defer func() {
		if !obj.GetDeletionTimestamp().IsZero() && !controllerutil.ContainsFinalizer(obj, Finalizer) {
			metrics.SetContested(r.controllerName(), obj.GetNamespace(), obj.GetName(), "")
			return // gone
		}
		metrics.SetContested(r.controllerName(), obj.GetNamespace(), obj.GetName(), obj.PatchStatus().ContestedBy)
		if err := r.patchStatus(ctx, before, obj); err != nil && !apierrors.IsNotFound(err) {
			retErr = errors.Join(retErr, err)
		}
	}()

	if !obj.GetDeletionTimestamp().IsZero() {
		return r.reconcileDelete(ctx, obj)
	}
	if controllerutil.AddFinalizer(obj, Finalizer) {
		rv := obj.GetResourceVersion()
		if err := r.Client.Patch(ctx, obj, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
		r.wrote(obj, rv)
		before = obj.DeepCopyObject().(v1alpha1.Patcher)
	}
	return r.reconcileNormal(ctx, obj)
}

func (r *Reconciler) patchStatus(ctx context.Context, before, obj v1alpha1.Patcher) error {
	if equality.Semantic.DeepEqual(before.PatchStatus(), obj.PatchStatus()) {
		return nil
	}
	rv := obj.GetResourceVersion()
	if err := r.Client.Status().Patch(ctx, obj, client.MergeFrom(before)); err != nil {
		return err
	}
	r.wrote(obj, rv)
	return nil
}

// controllerName is the controller label of the fieldops_ metrics.
func (r *Reconciler) controllerName() string {
	if r.Cluster {
		return metrics.ControllerClusterFieldPatch
	}
	return metrics.ControllerFieldPatch
}

// managerName is the field manager of obj.
func (r *Reconciler) managerName(obj v1alpha1.Patcher) string {
	return ManagerName(r.Cluster, obj.GetNamespace(), obj.GetName())
}

// ManagerName is the field manager a FieldPatch (cluster false) or a
// ClusterFieldPatch (cluster true, namespace ignored) applies with:
// "fieldops-fieldpatch/<namespace>/<name>" or
// "fieldops-clusterfieldpatch/<name>" (patchtarget.ManagerName).
func ManagerName(cluster bool, namespace, name string) string {
	return patchtarget.ManagerName(cluster, namespace, name)
}

// targetError is a problem with the spec: Stalled with Reason until the
// spec changes (or, with Retry, until the world may have changed). The
// target's own refusals come from patchtarget, which plan shares.
type targetError = patchtarget.Error

func stalled(reason string, format string, args ...interface{}) error {
	return &targetError{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// resolveTarget validates the target reference and returns an empty
// object naming it (patchtarget.Resolve: the rules plan applies too).
func (r *Reconciler) resolveTarget(obj v1alpha1.Patcher) (*unstructured.Unstructured, error) {
	return patchtarget.Resolve(r.Client.RESTMapper(), obj, r.Cluster, r.Tenancy.OwnNamespace)
}

// event records an event about obj; its note is cleaned and bounded
// (notes.Event), so that the apiserver accepts it.
func (r *Reconciler) event(obj v1alpha1.Patcher, typ, reason, format string, args ...interface{}) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, nil, typ, reason, "Reconcile", "%s", notes.Event(format, args...))
	}
}

// fail records err in status and as an event and decides the retry. What
// it reports (and returns, for the controller's log) is
// ownershipcore.SafeMessage(err): no Go internals, no values of the target.
func (r *Reconciler) fail(obj v1alpha1.Patcher, err error) (ctrl.Result, error) {
	st, gen := obj.PatchStatus(), obj.GetGeneration()
	msg := ownershipcore.SafeMessage(err)
	var te *targetError
	if errors.As(err, &te) {
		setStalled(st, gen, te.Reason, notes.Condition(msg))
		r.event(obj, corev1.EventTypeWarning, te.Reason, "%s", msg)
		if te.Retry {
			return ctrl.Result{RequeueAfter: transientRetry}, nil
		}
		return ctrl.Result{}, nil
	}
	if apierrors.IsForbidden(err) {
		// The account may not do this: retried slowly (RBAC may change),
		// never in a hot loop.
		setWaiting(st, gen, ReasonForbidden, notes.Condition(msg))
		r.event(obj, corev1.EventTypeWarning, ReasonForbidden, "%s", msg)
		return ctrl.Result{RequeueAfter: transientRetry}, nil
	}
	setWaiting(st, gen, ReasonApplyFailed, notes.Condition(msg))
	r.event(obj, corev1.EventTypeWarning, ReasonApplyFailed, "%s", msg)
	return ctrl.Result{}, errors.New(msg)
}

// applierFor returns the Applier of the account obj acts as, and that
// account.
func (r *Reconciler) applierFor(obj v1alpha1.Patcher) (*ownershipcore.Applier, tenant.Account, error) {
	spec := obj.PatchSpec()
	account, err := tenant.Resolve(r.Tenancy, obj.GetNamespace(), spec.ServiceAccountName, spec.ServiceAccountNamespace)
	if err != nil {
		return nil, account, stalled(ReasonInvalidTarget, "%v", err)
	}
	if r.Tenants == nil || account.IsManager() {
		return r.Applier, account, nil
	}
	a, err := r.Tenants.For(account)
	return a, account, err
}
