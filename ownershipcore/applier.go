package ownershipcore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Action says what Apply did.
type Action string

const (
	// ActionCreated: the object did not exist and was created.
	ActionCreated Action = "Created"
	// ActionConfigured: the object or its managed fields changed.
	ActionConfigured Action = "Configured"
	// ActionUnchanged: nothing would change; no write was sent.
	ActionUnchanged Action = "Unchanged"
	// ActionConflicted: the conflict strategy failed the apply; no write.
	ActionConflicted Action = "Conflicted"
)

// ApplyOptions configure one Apply.
type ApplyOptions struct {
	// FieldManager is the manager the intent is applied with. Required.
	FieldManager string
	// Conflicts decides each conflict. Nil fails on any conflict, as SSA
	// without force does.
	Conflicts ConflictStrategy
	// Ignore are fields removed from the intent before anything else.
	Ignore *fieldpath.Set
	// UID, when set, makes the apply conditional on the object having this
	// UID: the request carries metadata.uid, so the apiserver refuses it
	// when the object was deleted ("uid mismatch", instead of creating it
	// anew) or replaced. Apply then returns ErrTargetGone. Unset, an apply
	// to a missing object creates it.
	UID types.UID
	// DryRun sends the apply with dryRun=All: the apiserver runs
	// admission, validation and the field manager and answers with the
	// object as it would be, without storing it. Result.Action is then
	// Created, Configured or Unchanged as the real apply would have been.
	DryRun bool
	// Live is the object as the caller read it in the same decision (a
	// reconcile's own read of the target), used instead of reading it
	// again: the decision and the apply then see one version, and a
	// reader that is no cache (an account's impersonating client) is asked
	// once per reconcile, not twice. Nil: Apply reads it through Reader.
	// A caller that wrote to the object since must leave it nil.
	Live *unstructured.Unstructured
	// Absent says that the caller's read in the same decision found no
	// object (Live is nil): Apply does not read it again, and creates it
	// (an apply that meets an object after all updates it, as SSA does,
	// and reports Created). Ignored when Live is set.
	Absent bool
	// BeforeForce, when set, is called with the conflicts the strategy
	// forces (Result.Forced), right before the request that forces them;
	// an error stops the apply, nothing forced is sent, and Apply returns
	// it. A caller that records which fields it shares with other managers
	// saves that record there: the forced write takes those fields from
	// them, and should the write land and a later save be lost (a crash),
	// the record would read as those managers letting the fields go. Not
	// called for a dry run.
	BeforeForce func(ctx context.Context, forced []Conflict) error
}

// ErrTargetGone is returned (wrapped) by Apply with ApplyOptions.UID when
// the object with that UID no longer exists: nothing was written.
var ErrTargetGone = errors.New("the object was deleted or replaced")

// isUIDMismatch reports the apiserver's answer to an apply whose
// metadata.uid names no existing object (a 409 "uid mismatch") or another
// object than the one stored (a 409 precondition failure).
func isUIDMismatch(err error) bool {
	if !apierrors.IsConflict(err) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "uid mismatch") || strings.Contains(msg, "Precondition failed: UID")
}

// Result is what Apply did and why.
type Result struct {
	Action Action
	// Object is the object after the apply: the server's answer, or the
	// live object when nothing was written. Nil if it does not exist.
	Object *unstructured.Unstructured
	// Forced are the conflicts taken with force (fields taken from others).
	Forced []Conflict
	// Yielded are the conflicts left to their owners.
	Yielded []Conflict
	// Failed are the conflicts that failed the apply.
	Failed []Conflict
	// Messages are the strategy's messages, one per resolved conflict.
	Messages []string
	// Removed are fields Relinquish removed itself because the apiserver
	// left them after the empty apply (nil otherwise).
	Removed *fieldpath.Set
	// Kept are fields Relinquish could not remove, because the object
	// would be invalid without them (the apiserver refused the empty
	// apply); they stay with their values and no owner. Nil otherwise.
	Kept *fieldpath.Set
}

// Wrote reports whether the apply wrote the object (created or
// configured it).
func (r Result) Wrote() bool {
	return r.Action == ActionCreated || r.Action == ActionConfigured
}

// Applier applies intents with Server-Side Apply. It reads live objects
// through Reader (an informer cache, so a steady-state Apply costs no
// request) and decides locally, with the apiserver's own field manager
// code, whether the apply would change the object or its managed fields:
// only then does it send the request. It is safe for concurrent use.
type Applier struct {
	// Client sends apply requests.
	Client client.Client
	// Reader reads live objects; usually the manager's cache.
	Reader client.Reader
	// APIReader reads without a cache, where a stale read would be wrong
	// (HandBack, Relinquish). Nil means Reader.
	APIReader client.Reader
	// Schema gives the apiserver's types.
	Schema *Schema
}

// NewApplier returns an Applier that writes through c, reads live objects
// through reader (an informer cache, or c itself) and, where a stale read
// would be wrong, through apiReader (nil: reader), with the types of
// schema (NewSchema, or NewStaticSchema offline). It fails when c, reader
// or schema is nil.
func NewApplier(c client.Client, reader, apiReader client.Reader, schema *Schema) (*Applier, error) {
	switch {
	case c == nil:
		return nil, errors.New("new applier: no client")
	case reader == nil:
		return nil, errors.New("new applier: no reader")
	case schema == nil:
		return nil, errors.New("new applier: no schema")
	}
	if apiReader == nil {
		apiReader = reader
	}
	return &Applier{Client: c, Reader: reader, APIReader: apiReader, Schema: schema}, nil
}

func (a *Applier) freshReader() client.Reader {
	if a.APIReader != nil {
		return a.APIReader
	}
	return a.Reader
}

// Apply applies desired (a partial object: apiVersion, kind, name,
// namespace and the fields of the intent) under opts.FieldManager.
//
// Conflicts are resolved by opts.Conflicts: yielded fields are dropped from
// the intent, forced ones taken; any failed one aborts with a
// *ConflictError and Action Conflicted. Errors from the apiserver are
// returned wrapped; a missing kind wraps ErrUnknownKind.
func (a *Applier) Apply(ctx context.Context, desired *unstructured.Unstructured, opts ApplyOptions) (Result, error) {
	if opts.FieldManager == "" {
		return Result{}, errors.New("apply: field manager is required")
	}
	intent, err := a.cleanIntent(desired, opts.Ignore)
	if err != nil {
		return Result{}, err
	}
	live := opts.Live
	if live == nil && !opts.Absent {
		if live, err = a.live(ctx, intent); err != nil {
			return Result{}, err
		}
	}
	if opts.UID != "" && (live == nil || live.GetUID() != opts.UID) {
		return Result{}, fmt.Errorf("apply %s: %w", describe(intent), ErrTargetGone)
	}
	var res Result
	force, emptied, shielded := false, false, false
	// At most three times: conflicts found locally (or by the server, when
	// the cache was stale) are resolved, then those the server alone saw
	// (entries of another version), then the apply is final.
	for attempt := 0; ; attempt++ {
		var conflictErr error
		var merged *unstructured.Unstructured
		if live != nil {
			var changed bool
			changed, merged, err = a.wouldChange(live, intent, opts.FieldManager, force)
			switch {
			case err == nil && !changed:
				res.Action, res.Object = ActionUnchanged, live
				if emptied {
					res.Action = ActionConfigured // the removal wrote
				}
				return res, nil
			case err != nil && apierrors.IsConflict(err):
				conflictErr = err
			case err != nil:
				// An intent the apiserver's field manager refuses
				// (duplicate list-map keys, a wrong type) is never
				// sent: the request could only fail.
				if invalid := a.invalidIntent(intent, err); invalid != nil {
					return res, fmt.Errorf("apply %s: %w", describe(intent), invalid)
				}
			}
		}
		if conflictErr == nil {
			out := intent.DeepCopy()
			if opts.UID != "" {
				out.SetUID(opts.UID)
			}
			applyOpts := []client.ApplyOption{client.FieldOwner(opts.FieldManager)}
			if force {
				applyOpts = append(applyOpts, client.ForceOwnership)
			}
			if opts.DryRun {
				applyOpts = append(applyOpts, client.DryRunAll)
			}
			if live != nil && !opts.DryRun && !shielded {
				// Once, before the first write: what the intent drops
				// must not take another manager's field with it.
				shielded = true
				if live, err = a.shieldDropped(ctx, intent, live, opts.FieldManager); err != nil {
					return res, fmt.Errorf("apply %s: %w", describe(intent), err)
				}
			}
			if force && !opts.DryRun && opts.BeforeForce != nil {
				if err := opts.BeforeForce(ctx, res.Forced); err != nil {
					return res, fmt.Errorf("apply %s: %w", describe(intent), err)
				}
			}
			err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(out), applyOpts...)
			if err == nil {
				res.Object = out
				switch {
				case live == nil:
					res.Action = ActionCreated
				case opts.DryRun && sameObject(live, out):
					// A dry run keeps the resourceVersion either way.
					res.Action = ActionUnchanged
				case !opts.DryRun && live.GetResourceVersion() == out.GetResourceVersion():
					res.Action = ActionUnchanged
				default:
					res.Action = ActionConfigured
				}
				return res, nil
			}
			if isUIDMismatch(err) {
				return res, fmt.Errorf("apply %s: %w", describe(intent), ErrTargetGone)
			}
			if apierrors.IsInvalid(err) && !emptied && !opts.DryRun && live != nil {
				// The apply removes the last keys of a map another manager
				// owns: structured-merge-diff leaves it null, which a
				// custom resource's schema refuses (kubernetes/kubernetes
				// issues 103011, 117447). Those keys go first, in one
				// guarded JSON patch, and the apply is decided again.
				// With entries of other versions, which the local result
				// left out, only keys manager owns alone on live go; when
				// the map's owner is such an entry, the local result drops
				// the map rather than leaving it null, and the keys are
				// found from ownership (droppedMapKeys). Ownership is
				// compared across versions only when they share field
				// paths (sameFieldPaths): else nothing goes, and the
				// apiserver's refusal stands.
				var ops []map[string]interface{}
				otherVersions := withEntriesOfVersion(live, intent.GetAPIVersion()) != live
				comparable := !otherVersions || a.sameFieldPaths(ctx, live, intent.GetAPIVersion())
				if merged != nil && comparable {
					ops = emptiedMaps(live.Object, merged.Object)
				}
				if len(ops) > 0 && otherVersions && !ownedAlone(live, opts.FieldManager, ops) {
					ops = nil
				}
				if len(ops) == 0 && otherVersions && comparable {
					if fields, ferr := a.FieldSet(intent); ferr == nil {
						ops = droppedMapKeys(live, fields, opts.FieldManager)
					}
				}
				if len(ops) > 0 {
					emptied = true
					if live, err = a.removeEmptied(ctx, live, ops, opts.FieldManager); err != nil {
						return res, fmt.Errorf("apply %s: %w", describe(intent), err)
					}
					attempt--
					continue
				}
			}
			if !apierrors.IsConflict(err) {
				return res, fmt.Errorf("apply %s: %w", describe(intent), err)
			}
			conflictErr = err
		}
		// A second round of conflicts comes from the apiserver after the
		// local ones were yielded: conflicts with entries of another
		// version, which the local decision leaves out. They are resolved
		// too, once; a forced apply has no field conflicts left.
		if attempt > 1 || force {
			return res, fmt.Errorf("apply %s: %w", describe(intent), conflictErr)
		}
		intent, force, err = a.resolve(ctx, &res, intent, live, opts, conflictErr)
		if err != nil {
			res.Action, res.Object = ActionConflicted, live
			return res, err
		}
	}
}

// shieldDropped hands to their owners the list items and maps that
// manager's Apply entry holds and intent drops, when another manager owns a
// field in them: the apiserver removes a list item or map its applier
// drops with every field in it, another manager's too (an Update entry
// that set a field of the item owns that field, not the item; SSA docs,
// "Field management"; test/invariants seed 7200016), as it does for an
// empty apply (see relinquishOnce). It returns the object after the
// hand-off (one guarded patch of managed fields, values untouched), or
// live when nothing needed it. Entries of another version are compared
// only when their paths agree (SameFieldPaths).
func (a *Applier) shieldDropped(ctx context.Context, intent, live *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error) {
	owners, err := Owners(live)
	if err != nil {
		return nil, err
	}
	ours := owners.Applied(manager)
	if ours == nil {
		return live, nil
	}
	fields, err := a.FieldSet(intent)
	if err != nil {
		return nil, err
	}
	dropped := ours.Fields.Difference(fields)
	if dropped.Empty() {
		return live, nil
	}
	shield := holders(owners.others(manager), dropped)
	if shield.Empty() || !a.sameFieldPaths(ctx, live, intent.GetAPIVersion()) {
		return live, nil
	}
	ref := intent.DeepCopy()
	ref.SetUID(live.GetUID())
	_, handed, err := a.HandBackFrom(ctx, ref, live, manager, holderOwners(owners, manager, shield))
	if err != nil {
		return nil, err
	}
	if handed == nil || handed.GetResourceVersion() == "" {
		return live, nil
	}
	return handed, nil
}

// resolve asks the strategy about the conflicts in err and returns the
// intent without yielded fields and whether to force.
func (a *Applier) resolve(ctx context.Context, res *Result, intent, live *unstructured.Unstructured, opts ApplyOptions, err error) (*unstructured.Unstructured, bool, error) {
	fields, ferr := a.FieldSet(intent)
	if ferr != nil {
		return nil, false, ferr
	}
	conflicts, ok := conflictsFrom(err, fields)
	if !ok {
		return nil, false, fmt.Errorf("apply %s: %w", describe(intent), err)
	}
	strategy := opts.Conflicts
	if strategy == nil {
		strategy = Static(DecisionFail)
	}
	subject := live
	if subject == nil {
		subject = intent
	}
	answers, rerr := strategy.Resolve(ctx, subject.DeepCopy(), opts.FieldManager, conflicts)
	if rerr == nil && len(answers) != len(conflicts) {
		rerr = fmt.Errorf("conflict strategy answered %d of %d conflicts", len(answers), len(conflicts))
	}
	if rerr != nil {
		res.Failed = conflicts
		return nil, false, fmt.Errorf("resolve conflicts: %w", rerr)
	}
	yield := fieldpath.NewSet()
	for i, c := range conflicts {
		if answers[i].Message != "" {
			res.Messages = append(res.Messages, fmt.Sprintf("%s: %s", FormatPath(c.Path), answers[i].Message))
		}
		switch answers[i].Decision {
		case DecisionForce:
			res.Forced = append(res.Forced, c)
		case DecisionYield:
			res.Yielded = append(res.Yielded, c)
			yield.Insert(c.Path)
		case DecisionFail:
			res.Failed = append(res.Failed, c)
		default:
			res.Failed = append(res.Failed, c)
			return nil, false, fmt.Errorf("conflict strategy: unknown decision %q for %s", answers[i].Decision, FormatPath(c.Path))
		}
	}
	if len(res.Failed) > 0 {
		return nil, false, &ConflictError{Conflicts: res.Failed}
	}
	if !yield.Empty() {
		var err error
		if intent, err = a.RemoveFields(intent, yield); err != nil {
			return nil, false, err
		}
	}
	return intent, len(res.Forced) > 0, nil
}

// wouldChange runs the apiserver's field manager over a copy of live and
// reports whether the result differs from live in content or in managed
// fields (times aside). A conflict is returned as the apiserver's 409.
func (a *Applier) wouldChange(live, intent *unstructured.Unstructured, manager string, force bool) (bool, *unstructured.Unstructured, error) {
	fm, err := a.Schema.FieldManager(intent.GroupVersionKind())
	if err != nil {
		return true, nil, err
	}
	// Entries of other versions (a CRD served in several, an HPA's
	// autoscaling/v1 and v2) need a conversion the local field manager
	// cannot make; structured-merge-diff then fails the apply (or drops
	// them), and every reconcile would send an apply the apiserver finds
	// unchanged. They are left out of the decision: a conflict with one of
	// them is the apiserver's to report (a 409, resolved as any other).
	base := withEntriesOfVersion(live, intent.GetAPIVersion())
	in := base.DeepCopy()
	if base != live && len(base.GetManagedFields()) == 0 {
		// Every entry was of another version. With no managed fields at
		// all, the field manager takes the object for one never applied
		// and gives all its fields to an invented "before-first-apply"
		// entry (apimachinery's skipNonAppliedManager): the result then
		// always differs, and conflicts name a manager that does not
		// exist (test/invariants seed 3000197 with targets in v2). An
		// entry that owns nothing stands in for the others: it is
		// dropped from the result, as every empty entry is.
		in.SetManagedFields([]metav1.ManagedFieldsEntry{{
			Manager: "fieldops-other-versions", Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: intent.GetAPIVersion(), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte("{}")},
		}})
	}
	out, err := fm.Apply(in, intent.DeepCopy(), manager, force)
	if err != nil {
		return true, nil, err
	}
	merged, ok := out.(*unstructured.Unstructured)
	if !ok {
		return true, nil, fmt.Errorf("field manager returned %T", out)
	}
	return !sameObject(base, merged), merged, nil
}

// withEntriesOfVersion is obj, or a shallow copy of it whose managedFields
// hold only the entries of apiVersion when it has others.
func withEntriesOfVersion(obj *unstructured.Unstructured, apiVersion string) *unstructured.Unstructured {
	md, _ := obj.Object["metadata"].(map[string]interface{})
	entries, _ := md["managedFields"].([]interface{})
	keep := make([]interface{}, 0, len(entries))
	for _, e := range entries {
		if m, ok := e.(map[string]interface{}); ok && m["apiVersion"] != apiVersion {
			continue
		}
		keep = append(keep, e)
	}
	if len(keep) == len(entries) {
		return obj
	}
	out := make(map[string]interface{}, len(obj.Object))
	for k, v := range obj.Object {
		out[k] = v
	}
	m := make(map[string]interface{}, len(md))
	for k, v := range md {
		m[k] = v
	}
	m["managedFields"] = keep
	out["metadata"] = m
	return &unstructured.Unstructured{Object: out}
}

// sameObject compares two objects' content and managed fields, ignoring the
// managed fields' times. Entries compare in order, as decoded JSON: a field
// set's FieldsV1 form is canonical (structured-merge-diff writes it), so two
// entries with the same set have equal FieldsV1 maps. Nothing is copied or
// decoded: this runs on every apply decision (issue 11).
func sameObject(a, b *unstructured.Unstructured) bool {
	ea, _, _ := unstructured.NestedFieldNoCopy(a.Object, "metadata", "managedFields")
	eb, _, _ := unstructured.NestedFieldNoCopy(b.Object, "metadata", "managedFields")
	la, _ := ea.([]interface{})
	lb, _ := eb.([]interface{})
	if len(la) != len(lb) {
		return false
	}
	for i := range la {
		if !sameEntryContent(la[i], lb[i]) {
			return false
		}
	}
	return equality.Semantic.DeepEqual(WithoutManagedFields(a.Object), WithoutManagedFields(b.Object))
}

// sameEntryContent compares two managedFields entries of unstructured objects
// without their times.
func sameEntryContent(a, b interface{}) bool {
	ma, oka := a.(map[string]interface{})
	mb, okb := b.(map[string]interface{})
	if !oka || !okb {
		return equality.Semantic.DeepEqual(a, b)
	}
	n := 0
	for k, va := range ma {
		if k == "time" {
			continue
		}
		vb, ok := mb[k]
		if !ok || !equality.Semantic.DeepEqual(va, vb) {
			return false
		}
		n++
	}
	for k := range mb {
		if k != "time" {
			n--
		}
	}
	return n == 0
}

// WithoutManagedFields is a shallow copy of the unstructured object obj
// whose metadata leaves out managedFields (obj itself when it has none);
// obj is not changed, and the copy shares every other value with it.
func WithoutManagedFields(obj map[string]interface{}) map[string]interface{} {
	md, ok := obj["metadata"].(map[string]interface{})
	if !ok {
		return obj
	}
	if _, has := md["managedFields"]; !has {
		return obj
	}
	out := make(map[string]interface{}, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	m := make(map[string]interface{}, len(md))
	for k, v := range md {
		if k != "managedFields" {
			m[k] = v
		}
	}
	out["metadata"] = m
	return out
}

// live reads the object the intent names, nil when it does not exist.
func (a *Applier) live(ctx context.Context, intent *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return a.get(ctx, a.Reader, intent)
}

// Get reads the live object obj names (apiVersion, kind, namespace, name)
// through Reader; nil, nil when it does not exist.
func (a *Applier) Get(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return a.get(ctx, a.Reader, obj)
}

// GetFresh is Get through APIReader: the apiserver's current object, never
// a cached copy.
func (a *Applier) GetFresh(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return a.get(ctx, a.freshReader(), obj)
}

func (a *Applier) get(ctx context.Context, r client.Reader, intent *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(intent.GroupVersionKind())
	err := r.Get(ctx, client.ObjectKeyFromObject(intent), live)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", describe(intent), err)
	}
	return live, nil
}

// cleanIntent copies desired without the fields a client may not apply
// (managedFields, resourceVersion, uid, creationTimestamp, generation,
// status) and without ignore.
func (a *Applier) cleanIntent(desired *unstructured.Unstructured, ignore *fieldpath.Set) (*unstructured.Unstructured, error) {
	intent := desired.DeepCopy()
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink"} {
		unstructured.RemoveNestedField(intent.Object, "metadata", f)
	}
	delete(intent.Object, "status")
	if ignore != nil && !ignore.Empty() {
		return a.RemoveFields(intent, ignore)
	}
	return intent, nil
}

// FieldSet returns the field set of an intent: every field it sets,
// with list items by their keys, as the apiserver records it.
func (a *Applier) FieldSet(obj *unstructured.Unstructured) (*fieldpath.Set, error) {
	tv, err := a.Schema.ToTyped(obj)
	if err != nil {
		return nil, err
	}
	set, err := tv.ToFieldSet()
	if err != nil {
		return nil, fmt.Errorf("field set of %s: %w", describe(obj), err)
	}
	return set, nil
}

// RemoveFields returns a copy of obj without the fields in set (and
// everything below them), using the schema for list keys.
func (a *Applier) RemoveFields(obj *unstructured.Unstructured, set *fieldpath.Set) (*unstructured.Unstructured, error) {
	tv, err := a.Schema.ToTyped(obj)
	if err != nil {
		return nil, err
	}
	removed := tv.RemoveItems(set)
	// structured-merge-diff leaves a map whose every entry was removed as
	// null: drop it, so that ignoring the only annotation of an object
	// ignores it (and "annotations: null" is not applied).
	emptied := fieldpath.NewSet()
	set.Iterate(func(p fieldpath.Path) {
		if len(p) > 1 {
			emptied.Insert(p[:len(p)-1].Copy())
		}
	})
	m, ok := removed.AsValue().Unstructured().(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("remove fields from %s: not an object", describe(obj))
	}
	emptied.Iterate(func(p fieldpath.Path) {
		var names []string
		for _, pe := range p {
			if pe.FieldName == nil {
				return
			}
			names = append(names, *pe.FieldName)
		}
		v, found, _ := unstructured.NestedFieldNoCopy(m, names...)
		if mv, isMap := v.(map[string]interface{}); found && (v == nil || isMap && len(mv) == 0) {
			unstructured.RemoveNestedField(m, names...)
		}
	})
	out := &unstructured.Unstructured{Object: m}
	// Identity stays even if a path named it.
	out.SetGroupVersionKind(obj.GroupVersionKind())
	out.SetName(obj.GetName())
	out.SetNamespace(obj.GetNamespace())
	return out, nil
}

func describe(obj *unstructured.Unstructured) string {
	ref := obj.GetKind() + " " + obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		ref = obj.GetKind() + " " + ns + "/" + obj.GetName()
	}
	return ref
}
