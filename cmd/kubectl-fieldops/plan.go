/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/conflicts"
	"github.com/fieldops/fieldops/internal/names"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/internal/patchtarget"
	"github.com/fieldops/fieldops/internal/tenancy"
	"github.com/fieldops/fieldops/internal/workloadspec"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
	"github.com/fieldops/fieldops/ownershipcore/redact"
	"github.com/fieldops/fieldops/plugins/host"
)

type planOptions struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	files   genericclioptions.FileNameFlags
	output  *outputFlags
	// ownNamespace is the manager's namespace: the controller refuses
	// targets in it (patchtarget.Protected).
	ownNamespace string
	// pluginConfig is the manager's --plugin-config: with it, a
	// conflictPolicy Plugin is decided by the plugin, as the controller
	// decides it.
	pluginConfig string
	// delete plans the deletion of patches on the cluster.
	delete bool
	// names are the TYPE/NAME arguments of --delete.
	names []string
	// tenancy are the manager's --default-service-account and
	// --manager-rights-namespaces: which account a patch acts as.
	tenancy tenancy.Options
}

func newPlanCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	filenames, recursive := []string{}, false
	o := &planOptions{flags: flags, streams: streams, output: newOutputFlags(false),
		files: genericclioptions.FileNameFlags{Usage: "files, directories or URLs holding FieldPatches, ClusterFieldPatches or ManagedWorkloads (- reads standard input); other objects of them are skipped", Filenames: &filenames, Recursive: &recursive}}
	cmd := &cobra.Command{
		Use:   "plan -f FILE | plan --delete (-f FILE | fieldpatch/NAME...)",
		Short: "Show what a FieldPatch, ClusterFieldPatch or ManagedWorkload would do, with a server-side dry run",
		Long: `Show what creating or changing each FieldPatch, ClusterFieldPatch or
ManagedWorkload of the file would do, before it is applied. Nothing is
written: the intent is built by the same code as the controller's and
applied with a server-side dry run (dryRun=All) under the object's own
field manager (fieldops-fieldpatch/<namespace>/<name>,
fieldops-clusterfieldpatch/<name>, fieldops-workload/<namespace>/<name>).

For a patch, one row per field:

  OWNER NOW  the field managers (and operations) that own the field now
  PLAN       take (from its owner, with force), share (same value: both
             own it), add (nobody owned it), keep (the patch owns it
             already), yield or fail (a conflict its policy leaves to the
             owner or fails on), give back (a field the changed patch no
             longer sets goes back first)
  DECISION   what decided a conflict: conflictPolicy, or a yieldTo or
             forceOver rule; for conflictPolicy Plugin the plugin decides
             and the plan shows conflictPluginFallback's answer
  ON DELETE  what deletionPolicy does with the field: hand back to its
             previous owner, remove (a field the patch added), or leave
             it without an owner (Relinquish, Orphan)

With --delete, for each FieldPatch or ClusterFieldPatch on the cluster
(named as fieldpatch/NAME or clusterfieldpatch/NAME, or by -f), what
deleting it now would do under its deletionPolicy, field by field, with
the controller's own decision computed locally (nothing is written):

  ACTION       restored (its value from before the patch and its previous
               owner), handed back, left without an owner, removed (a
               field the patch added), or not restored (written since by
               another manager, who keeps it)
  OWNERS AFTER the field managers that would own the field
  VALUE AFTER  its value after (a Secret's values are masked)

For a workload, one row per object: created, configured or unchanged,
the fields it would take from other managers, and why an object would
fail. The command exits non-zero when a plan would fail (a conflict
under conflictPolicy Fail, an invalid patch, a missing target).

The files may hold other objects (a chart's or a kustomization's whole
output, a Namespace, the targets themselves): plan plans the
FieldPatches, ClusterFieldPatches and ManagedWorkloads among them and
says on standard error which objects it skipped.`,
		Example: `  kubectl fieldops plan -f fieldpatch.yaml
  kubectl fieldops plan -f workload.yaml -o yaml
  helm template ./patches | kubectl fieldops plan -f -
  kubectl kustomize config/samples | kubectl fieldops plan -f -
  kubectl fieldops plan -f patches/ -R -o jsonpath='{range .items[*]}{.name}: {.action}{"\n"}{end}'
  kubectl fieldops plan --delete fieldpatch/incident-pin -n shop`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 && !o.delete {
				return errors.New("TYPE/NAME arguments are for --delete; plan a file with -f")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { o.names = args; return o.run(cmd.Context()) },
	}
	o.files.AddFlags(cmd.Flags())
	o.output.addFlags(cmd, "a list of plans")
	cmd.Flags().BoolVar(&o.delete, "delete", false, "plan the deletion of the patches (on the cluster, named as fieldpatch/NAME or by -f) under their deletionPolicy, instead of their apply")
	cmd.Flags().StringVar(&o.pluginConfig, "plugin-config", "", "the manager's --plugin-config file: conflicts of a patch with conflictPolicy Plugin are then decided by that plugin, run here as the manager runs it (same binary, same SHA-256); without it, by its conflictPluginFallback")
	cmd.Flags().StringVar(&o.tenancy.DefaultServiceAccount, "default-service-account", tenancy.DefaultServiceAccount, "the manager's --default-service-account: the account, in their own namespace, that patches naming no spec.serviceAccountName act as; plan acts as a patch's account when you may impersonate it (admin and edit may, in their namespace)")
	cmd.Flags().StringSliceVar(&o.tenancy.ManagerRightsNamespaces, "manager-rights-namespaces", nil, "the manager's --manager-rights-namespaces: namespaces whose patches naming no account act with the manager's rights ('*': every namespace); plan uses your own rights for them")
	cmd.Flags().StringVar(&o.ownNamespace, "fieldops-namespace", "", "the namespace the fieldops manager runs in (its --namespace): the controller refuses its own objects there, and so does the plan (default: the namespace of the manager's leader election Lease fieldops.dev or of its Deployment, else fieldops-system)")
	return cmd
}

// Plan is what one FieldPatch, ClusterFieldPatch or ManagedWorkload of
// the file would do; -o json and -o yaml print a list of them.
type Plan struct {
	Kind         string `json:"kind"`
	Namespace    string `json:"namespace,omitempty"`
	Name         string `json:"name"`
	FieldManager string `json:"fieldManager"`
	// ActingAs is the account the plan acted as ("ServiceAccount
	// ns/name"), as the controller acts as it; empty when the plan used
	// the caller's own rights (the patch acts with the manager's, or the
	// caller may not impersonate its account: a note then says so).
	ActingAs string `json:"actingAs,omitempty"`
	// Exists says the object exists: the plan is of a change.
	Exists bool `json:"exists"`
	// Action is what the apply would do: Created, Configured, Unchanged,
	// or, when it would fail, Conflicted, Invalid, TargetNotFound, Failed.
	Action  string `json:"action"`
	Message string `json:"message,omitempty"`
	// Reason is the reason the controller would stall with when it
	// refuses the target (ForbiddenTarget, CrossNamespaceTarget,
	// InvalidTarget, UnknownKind); Message then ends with its message.
	Reason string `json:"reason,omitempty"`
	// Patch is the plan of a FieldPatch or ClusterFieldPatch.
	Patch *PatchPlan `json:"patch,omitempty"`
	// Objects is the plan of a ManagedWorkload, in apply order.
	Objects []ObjectPlan `json:"objects,omitempty"`
}

// PatchPlan is the plan of a FieldPatch or ClusterFieldPatch.
type PatchPlan struct {
	Target         ObjectRef   `json:"target"`
	Type           string      `json:"type"`
	ConflictPolicy string      `json:"conflictPolicy"`
	DeletionPolicy string      `json:"deletionPolicy"`
	Fields         []FieldPlan `json:"fields"`
	// PreviousOwners is status.previousOwners as the controller would
	// record it (fields as paths).
	PreviousOwners []PlannedOwner `json:"previousOwners,omitempty"`
	// ManagedFields is status.managedFields after the apply: the fields
	// the patch's field manager would own.
	ManagedFields []string `json:"managedFields,omitempty"`
	// Notes are what the plan cannot know (ignorePlugins, a plugin's
	// decisions).
	Notes []string `json:"notes,omitempty"`
	// Deletion is the plan of the patch's deletion (plan --delete).
	Deletion []DeletionFieldPlan `json:"deletion,omitempty"`
}

// ObjectRef names an object.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// FieldPlan is one field of a patch's plan.
type FieldPlan struct {
	// Path in the ownership core's form (.spec.replicas).
	Path string `json:"path"`
	// Owners are the managers that own the field now, other than the
	// patch ("hpa (Update)").
	Owners []string `json:"owners,omitempty"`
	// Plan: take, share, add, keep, yield, fail or give back.
	Plan string `json:"plan"`
	// Decision says what decided a conflict.
	Decision string `json:"decision,omitempty"`
	// OnDelete: what deletionPolicy would do with the field.
	OnDelete string `json:"onDelete,omitempty"`
}

// PlannedOwner is one entry of status.previousOwners.
type PlannedOwner struct {
	Manager     string                            `json:"manager"`
	Operation   metav1.ManagedFieldsOperationType `json:"operation"`
	APIVersion  string                            `json:"apiVersion,omitempty"`
	Subresource string                            `json:"subresource,omitempty"`
	// Via is the field manager of the patch the owner's fields are taken
	// from, when the owner comes from that patch's record.
	Via   string   `json:"via,omitempty"`
	Paths []string `json:"paths"`
}

// ObjectPlan is one object of a workload's plan.
type ObjectPlan struct {
	ObjectRef `json:",inline"`
	Action    string `json:"action"`
	Message   string `json:"message,omitempty"`
	// Taken are the fields taken from other managers with force
	// ("path from \"hpa\" (Update)").
	Taken []string `json:"taken,omitempty"`
	// Yielded are the conflicts left to their owners.
	Yielded []string `json:"yielded,omitempty"`
	// OwnedFields is how many fields the workload would own on it.
	OwnedFields int `json:"ownedFields"`
}

// Plan actions besides ownershipcore's.
const (
	actionInvalid        = "Invalid"
	actionTargetNotFound = "TargetNotFound"
	actionFailed         = "Failed"
	// actionForbidden: the account the patch acts as may not read or
	// write its target (the controller's reason Forbidden).
	actionForbidden = "Forbidden"
)

func (p *Plan) failed() bool {
	switch p.Action {
	case string(ownershipcore.ActionConflicted), actionInvalid, actionTargetNotFound, actionFailed, actionForbidden:
		return true
	}
	return false
}

// planner holds the clients of one run.
type planner struct {
	c       client.Client
	applier *ownershipcore.Applier
	ns      string
	// ownNamespace is the manager's namespace (--fieldops-namespace).
	ownNamespace string
	// plugins runs the plugins of --plugin-config; nil without it.
	plugins *host.Host
	// delete plans deletions (--delete).
	delete bool
	// cfg is the caller's rest config, which actingAs copies to
	// impersonate a patch's account; tenancy are the manager's settings
	// that say which account that is.
	cfg     *rest.Config
	tenancy tenancy.Options
}

func (o *planOptions) run(ctx context.Context) error {
	if err := o.output.validate(); err != nil {
		return err
	}
	docs, err := o.documents()
	if err != nil {
		return err
	}
	p, err := o.planner(ctx)
	if err != nil {
		return err
	}
	if o.pluginConfig != "" {
		cfg, err := host.LoadConfig(o.pluginConfig)
		if err != nil {
			return err
		}
		if p.plugins, err = host.New(cfg, host.Options{}); err != nil {
			return err
		}
		defer p.plugins.Close()
	}
	plans := make([]Plan, 0, len(docs))
	failed := 0
	for _, d := range docs {
		ps, err := p.plan(ctx, d)
		if err != nil {
			return err
		}
		for _, plan := range ps {
			if plan.failed() {
				failed++
			}
			plans = append(plans, plan)
		}
	}
	if !o.output.table() {
		named := make([]*unstructured.Unstructured, 0, len(plans))
		for _, p := range plans {
			named = append(named, namedObject(v1alpha1.GroupVersion.String(), p.Kind, p.Namespace, p.Name))
		}
		err = o.output.printDoc(o.streams.Out, plans, named)
	} else {
		err = writePlans(o.streams.Out, plans)
	}
	if err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d plan(s) would fail", failed, len(plans))
	}
	return nil
}

// plannable are the kinds plan plans.
var plannable = []string{"FieldPatch", "ClusterFieldPatch", "ManagedWorkload"}

// documents reads the objects of -f without contacting the server
// (cli-runtime's resource builder, local), List kinds flattened, and
// keeps the FieldPatches, ClusterFieldPatches and ManagedWorkloads: the
// other objects are skipped, and named on standard error.
func (o *planOptions) documents() ([]*unstructured.Unstructured, error) {
	files := o.files.ToOptions()
	if len(o.names) > 0 {
		if len(files.Filenames) > 0 {
			return nil, errors.New("plan --delete takes TYPE/NAME arguments or -f, not both")
		}
		return namedPatches(o.names)
	}
	if len(files.Filenames) == 0 {
		return nil, errors.New("plan needs -f FILE (- reads standard input)")
	}
	stdin := slices.Contains(files.Filenames, "-")
	files.Filenames = slices.DeleteFunc(files.Filenames, func(f string) bool { return f == "-" })
	b := resource.NewBuilder(o.flags).Unstructured().Local().FilenameParam(false, &files)
	if stdin {
		b = b.Stream(o.streams.In, "STDIN")
	}
	infos, err := b.Flatten().Do().Infos()
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	var skipped []string
	for _, info := range infos {
		u, ok := info.Object.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("%s: unexpected object type %T", info.Source, info.Object)
		}
		if u.GroupVersionKind().Group != v1alpha1.GroupVersion.Group || !slices.Contains(plannable, u.GetKind()) {
			skipped = append(skipped, skippedName(u))
			continue
		}
		out = append(out, u)
	}
	if len(skipped) > 0 {
		fmt.Fprintf(o.streams.ErrOut, "Skipped %d object(s) that are not FieldPatches, ClusterFieldPatches or ManagedWorkloads: %s\n", len(skipped), strings.Join(skipped, ", "))
	}
	if len(out) == 0 {
		return nil, errors.New("no FieldPatch, ClusterFieldPatch or ManagedWorkload to plan in -f")
	}
	return out, nil
}

// skippedName names an object plan skips: "Namespace demo",
// "PodSet kafka/kafka" (namespace/name when it has a namespace).
func skippedName(u *unstructured.Unstructured) string {
	name := u.GetName()
	if u.GetNamespace() != "" {
		name = u.GetNamespace() + "/" + name
	}
	return u.GetKind() + " " + name
}

func (o *planOptions) planner(ctx context.Context) (*planner, error) {
	c, err := newClient(o.flags)
	if err != nil {
		return nil, err
	}
	cfg, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ns, err := namespace(o.flags)
	if err != nil {
		return nil, err
	}
	// Reads go to the apiserver: no cache, the plan sees the object as it
	// is now.
	applier, err := ownershipcore.NewApplier(c, c, c, ownershipcore.NewSchema(dc))
	if err != nil {
		return nil, err
	}
	own := o.ownNamespace
	if own == "" {
		var note string
		if own, note, err = findOwnNamespace(ctx, c); err != nil {
			return nil, err
		}
		if note != "" {
			fmt.Fprintln(o.streams.ErrOut, "Warning:", note)
		}
	}
	return &planner{c: c, ns: ns, applier: applier, ownNamespace: own, delete: o.delete, cfg: cfg, tenancy: o.tenancy}, nil
}

// A selector patch (spec.targetSelector) gets one plan per matching
// target (planSelector).
func (p *planner) plan(ctx context.Context, u *unstructured.Unstructured) ([]Plan, error) {
	one := func(plan Plan, err error) ([]Plan, error) {
		if err != nil {
			return nil, err
		}
		return []Plan{plan}, nil
	}
	var obj client.Object
	switch u.GetKind() {
	case "FieldPatch":
		obj = &v1alpha1.FieldPatch{}
	case "ClusterFieldPatch":
		obj = &v1alpha1.ClusterFieldPatch{}
	case "ManagedWorkload":
		obj = &v1alpha1.ManagedWorkload{}
	default:
		return nil, fmt.Errorf("%s %s: plan knows FieldPatch, ClusterFieldPatch and ManagedWorkload", u.GetKind(), u.GetName())
	}
	if u.GetKind() != "ClusterFieldPatch" && u.GetNamespace() == "" {
		u.SetNamespace(p.ns)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
		return nil, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
	}
	if pt, ok := obj.(v1alpha1.Patcher); ok && pt.PatchSpec().TargetSelector != nil {
		return p.planSelectorPatch(ctx, pt)
	}
	if p.delete {
		switch o := obj.(type) {
		case *v1alpha1.FieldPatch:
			return p.planDeleteAny(ctx, o, &v1alpha1.FieldPatch{}, false)
		case *v1alpha1.ClusterFieldPatch:
			return p.planDeleteAny(ctx, o, &v1alpha1.ClusterFieldPatch{}, true)
		}
		return nil, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), errDeleteKinds)
	}
	switch o := obj.(type) {
	case *v1alpha1.FieldPatch:
		return one(p.planPatch(ctx, o, &v1alpha1.FieldPatch{}))
	case *v1alpha1.ClusterFieldPatch:
		return one(p.planPatch(ctx, o, &v1alpha1.ClusterFieldPatch{}))
	default:
		return one(p.planWorkload(ctx, obj.(*v1alpha1.ManagedWorkload)))
	}
}

// admit reads the live copy of obj into existing (its status is the
// record the controller continues) or, when there is none, dry-runs its
// creation, so that the plan reports what admission (CRD validation, CEL
// rules) would refuse. It returns whether obj exists.
func (p *planner) admit(ctx context.Context, obj, existing client.Object) (bool, error) {
	err := p.c.Get(ctx, client.ObjectKeyFromObject(obj), existing)
	switch {
	case err == nil:
		return true, nil
	case !apierrors.IsNotFound(err):
		return false, err
	}
	return false, p.c.Create(ctx, obj.DeepCopyObject().(client.Object), client.DryRunAll)
}

// planPatch plans a FieldPatch or ClusterFieldPatch with the controller's
// own decision (patchintent.Decide): target → intent and record of
// previous owners → fields that leave the patch (Decision.GiveBack) →
// apply with the patch's conflict strategy, dryRun=All → the record
// (RecordForced, Decision.Applied).
func (p *planner) planPatch(ctx context.Context, obj, existing v1alpha1.Patcher) (Plan, error) {
	exists, err := p.admit(ctx, obj, existing)
	st := &v1alpha1.FieldPatchStatus{}
	if exists {
		st = existing.PatchStatus()
	}
	return p.planPatchWith(ctx, obj, st, exists, err)
}

// planPatchWith is planPatch with the patch's admission done: whether it
// exists (or the error of its admission) and the status whose record the
// controller continues. The target is read and dry-run as the account
// the patch acts as (actingAs), in the controller's order: strategy →
// target → intent and record → give back → apply → record.
func (p *planner) planPatchWith(ctx context.Context, obj v1alpha1.Patcher, st *v1alpha1.FieldPatchStatus, exists bool, admitErr error) (Plan, error) {
	_, cluster := obj.(*v1alpha1.ClusterFieldPatch)
	spec := obj.PatchSpec()
	manager := names.FieldPatch(cluster, obj.GetNamespace(), obj.GetName())
	plan := Plan{Kind: map[bool]string{false: "FieldPatch", true: "ClusterFieldPatch"}[cluster], Namespace: obj.GetNamespace(), Name: obj.GetName(), FieldManager: manager}
	pp := &PatchPlan{Type: string(patchintent.TypeOrApply(spec.Type)), DeletionPolicy: string(deletionPolicy(spec.DeletionPolicy))}
	plan.Patch = pp
	pp.Target = ObjectRef{APIVersion: spec.Target.APIVersion, Kind: spec.Target.Kind, Namespace: obj.TargetNamespace(), Name: spec.Target.Name}
	if admitErr != nil {
		return plan.invalid(admitErr), nil
	}
	plan.Exists = exists
	strategy, policy, notes, err := p.patchStrategy(spec, func(err error) {
		pp.Notes = append(pp.Notes, fmt.Sprintf("the plugin %q failed (%v): its fallback decided the conflicts, as in the controller, which reports it with the PluginFailure condition and a PluginFailed event", spec.ConflictPlugin, err))
	})
	if err != nil {
		return plan.invalid(err), nil
	}
	pp.ConflictPolicy, pp.Notes = policy, notes
	if len(spec.IgnorePlugins) > 0 {
		pp.Notes = append(pp.Notes, fmt.Sprintf("ignorePlugins %s run in the manager, not here: the fields they name are planned as if they were not ignored", strings.Join(spec.IgnorePlugins, ", ")))
	}
	as, account, note, err := p.actingAs(ctx, obj)
	if err != nil {
		return plan.refused(&patchtarget.Error{Reason: "InvalidTarget", Err: err}), nil
	}
	plan.ActingAs = account
	if note != "" {
		pp.Notes = append(pp.Notes, note)
	}
	return as.planTarget(ctx, plan, obj, st, cluster, strategy)
}

// planTarget plans the apply of obj to its target (read as p's account)
// with strategy, from the record in st.
func (p *planner) planTarget(ctx context.Context, plan Plan, obj v1alpha1.Patcher, st *v1alpha1.FieldPatchStatus, cluster bool, strategy ownershipcore.ConflictStrategy) (Plan, error) {
	spec, pp, manager := obj.PatchSpec(), plan.Patch, plan.FieldManager
	// The controller's own rules (patchtarget): a target it refuses is
	// refused here with the same reason and message.
	ref, err := patchtarget.Resolve(p.c.RESTMapper(), obj, cluster, p.ownNamespace)
	if err != nil {
		return plan.refused(err), nil
	}
	pp.Target.Namespace = ref.GetNamespace()
	live, err := p.applier.Get(ctx, ref)
	switch {
	case apierrors.IsForbidden(err):
		return plan.forbidden(err), nil
	case err != nil:
		return Plan{}, err
	case live == nil:
		plan.Action, plan.Message = actionTargetNotFound, fmt.Sprintf("target %s not found; the controller patches it when it appears", pp.Target)
		return plan, nil
	}
	if err := patchtarget.ManagedByFieldops(live); err != nil {
		return plan.refused(err), nil
	}
	ignore, err := ownershipcore.ParsePathSet(spec.IgnorePaths)
	if err != nil {
		return plan.invalid(fmt.Errorf("ignorePaths: %w", err)), nil
	}
	d, err := patchintent.Decide(p.applier, patchintent.Input{Spec: spec, Status: st, Live: live, Manager: manager, Ignore: ignore})
	if err != nil {
		return plan.invalid(err), nil
	}
	ours := d.Owners.Applied(manager)
	give, dropped := d.GiveBack()
	d.GaveBack(dropped)
	res, err := p.applier.Apply(ctx, d.Intent, ownershipcore.ApplyOptions{FieldManager: manager, Conflicts: strategy, UID: live.GetUID(), DryRun: true})
	plan, done := plan.applied(res, err)
	if done {
		return plan, nil
	}
	after, err := p.planRecord(ctx, &plan, d, live, res)
	if err != nil || plan.Reason != "" {
		return plan, err
	}
	return p.planFields(plan, spec, d, ours, after, give, res), nil
}

// applied sets the plan's action from the dry run's answer (res, err);
// done when that ends the plan (an error other than a conflict).
func (plan Plan) applied(res ownershipcore.Result, err error) (_ Plan, done bool) {
	var conflictErr *ownershipcore.ConflictError
	switch {
	case errors.As(err, &conflictErr):
		plan.Action = string(ownershipcore.ActionConflicted)
		plan.Message = fmt.Sprintf("the patch would stall (reason Conflict): %s", conflictErr.Error())
	case apierrors.IsForbidden(err):
		return plan.forbidden(err), true
	case err != nil:
		return plan.invalid(err), true
	default:
		plan.Action = string(res.Action)
	}
	return plan, false
}

// planRecord computes the record the controller would save: the fields
// the apply forces (refused, as the controller refuses them, when their
// owners' entries are in another version: patchintent.CheckForce, which
// sets the plan's reason), with the records of the fieldops patches they
// are taken from (patchintent.InheritedRecords), then the fields it takes
// without force (Decision.Applied). It returns the target's managed
// fields after the apply.
func (p *planner) planRecord(ctx context.Context, plan *Plan, d *patchintent.Decision, live *unstructured.Unstructured, res ownershipcore.Result) (ownershipcore.ManagedFields, error) {
	after, manager, uid := d.Owners, plan.FieldManager, string(live.GetUID())
	if plan.Action != string(ownershipcore.ActionConflicted) && res.Object != nil {
		var err error
		if after, err = ownershipcore.Owners(res.Object); err != nil {
			return nil, err
		}
		forced := patchintent.ForcedFields(res.Forced)
		gvk := live.GroupVersionKind()
		if err := patchintent.CheckForce(d.Owners, forced, manager, gvk.Kind, func(v ...string) bool { return p.applier.SameFieldPaths(ctx, gvk, v...) }); err != nil {
			plan.Action, plan.Reason = string(ownershipcore.ActionConflicted), "Conflict"
			plan.Message = fmt.Sprintf("the patch would stall (reason Conflict): %s", redact.Message(err))
			return d.Owners, nil
		}
		chains, unread, err := patchintent.InheritedRecords(ctx, p.applier.GetFresh, d.Owners, forced, manager, uid)
		if err != nil {
			return nil, err
		}
		for _, u := range unread {
			plan.Patch.Notes = append(plan.Patch.Notes, fmt.Sprintf("cannot read the previous owners recorded by %s (%s): the owners it took %s from are not shown, and the controller, which cannot read them either, leaves those fields without an owner if %s leaves first", u.Patch, redact.Message(u.Err), strings.Join(patchintent.Leaves(u.Fields), ", "), u.Patch))
		}
		patchintent.RecordForced(d.Ledger, d.Owners, forced, manager, chains...)
		d.Applied(after)
	}
	record := &v1alpha1.FieldPatchStatus{}
	if err := patchintent.WriteLedger(record, d.Ledger, uid); err != nil {
		return nil, err
	}
	for _, e := range record.PreviousOwners {
		plan.Patch.PreviousOwners = append(plan.Patch.PreviousOwners, PlannedOwner{Manager: e.Manager, Operation: e.Operation, APIVersion: e.APIVersion, Subresource: e.Subresource, Via: e.Via, Paths: e.Paths})
	}
	return after, nil
}

// planFields fills the plan's managed fields and its rows, one per field.
func (p *planner) planFields(plan Plan, spec *v1alpha1.FieldPatchSpec, d *patchintent.Decision, ours *ownershipcore.Entry, after ownershipcore.ManagedFields, give ownershipcore.LetGo, res ownershipcore.Result) Plan {
	pp, manager := plan.Patch, plan.FieldManager
	oursAfter := fieldset.NewSet()
	if e := after.Applied(manager); e != nil && plan.Action != string(ownershipcore.ActionConflicted) {
		oursAfter = e.Fields
		pp.ManagedFields = patchintent.Leaves(oursAfter)
	}
	pp.Fields = patchFields(fieldRows{
		manager: manager, policy: deletionPolicy(spec.DeletionPolicy), rules: spec.ConflictRules, conflictPolicy: pp.ConflictPolicy,
		intent: d.IntentSet, before: d.Owners, after: after, oursBefore: ours, oursAfter: oursAfter,
		ledger: d.Ledger, dropped: give, res: res,
	})
	return plan
}

// invalid is the plan of a patch the controller would refuse: err says
// why.
func (plan Plan) invalid(err error) Plan {
	plan.Action, plan.Message = actionInvalid, redact.Message(err)
	return plan
}

// refused is the plan of a patch whose target the controller refuses
// (a *patchtarget.Error: its reason), or invalid.
func (plan Plan) refused(err error) Plan {
	var te *patchtarget.Error
	if !errors.As(err, &te) {
		return plan.invalid(err)
	}
	plan.Action, plan.Reason = actionInvalid, te.Reason
	plan.Message = fmt.Sprintf("the patch would stall (reason %s): %s", te.Reason, redact.Message(err))
	return plan
}

// forbidden is the plan of a patch whose account may not read or write
// its target: the controller waits with reason Forbidden (retried, RBAC
// may change).
func (plan Plan) forbidden(err error) Plan {
	plan.Action, plan.Reason = actionForbidden, actionForbidden
	if plan.ActingAs != "" {
		err = fmt.Errorf("acting as %s: %w", plan.ActingAs, err)
	}
	plan.Message = fmt.Sprintf("the patch would wait (reason Forbidden): %s", redact.Message(err))
	return plan
}

// patchStrategy is the conflict strategy of spec as the controller builds
// it (conflicts.Policy under the yieldTo and forceOver rules). A plugin is
// asked when --plugin-config names it (host.Strategy, with its fallback,
// as the controller asks it, failed told of each failure); otherwise its
// fallback stands in, and a note says so.
func (p *planner) patchStrategy(spec *v1alpha1.FieldPatchSpec, failed func(error)) (ownershipcore.ConflictStrategy, string, []string, error) {
	if spec.ConflictPolicy != v1alpha1.ConflictPolicyPlugin {
		s, ok := conflicts.Policy(spec.ConflictPolicy)
		if !ok {
			return nil, "", nil, fmt.Errorf("conflictPolicy %q is not one of Force, Fail, Yield or Plugin", spec.ConflictPolicy)
		}
		policy := string(spec.ConflictPolicy)
		if policy == "" {
			policy = string(v1alpha1.ConflictPolicyForce)
		}
		return conflicts.Rules(spec.ConflictRules, s), policy, nil, nil
	}
	s, ok := conflicts.Fallback(spec.ConflictPluginFallback)
	if !ok {
		return nil, "", nil, fmt.Errorf("conflictPluginFallback %q is not one of Force, Fail or Yield", spec.ConflictPluginFallback)
	}
	fallback := string(spec.ConflictPluginFallback)
	if fallback == "" {
		fallback = string(v1alpha1.ConflictFallbackFail)
	}
	policy := fmt.Sprintf("Plugin %s (fallback %s)", spec.ConflictPlugin, fallback)
	if p.plugins != nil {
		// A plugin that fails leaves its conflicts to the fallback, as in
		// the controller (which also reports it as PluginFailed).
		plugin, err := p.plugins.Strategy(spec.ConflictPlugin, s, failed)
		if err != nil {
			return nil, "", nil, fmt.Errorf("conflictPlugin: %w", err)
		}
		note := fmt.Sprintf("conflictPolicy Plugin: the plugin %q of --plugin-config decided each conflict, as the controller would", spec.ConflictPlugin)
		return conflicts.Rules(spec.ConflictRules, plugin), policy, []string{note}, nil
	}
	note := fmt.Sprintf("conflictPolicy Plugin: the plugin %q decides each conflict when the controller applies; shown is its fallback, %s (--plugin-config runs the plugin here)", spec.ConflictPlugin, fallback)
	return conflicts.Rules(spec.ConflictRules, s), policy, []string{note}, nil
}

func deletionPolicy(p v1alpha1.DeletionPolicy) v1alpha1.DeletionPolicy {
	if p == "" {
		return v1alpha1.DeletionPolicyHandBack
	}
	return p
}

// fieldRows are the inputs of a patch's per-field plan.
type fieldRows struct {
	manager        string
	policy         v1alpha1.DeletionPolicy
	rules          v1alpha1.ConflictRules
	conflictPolicy string
	intent         *fieldset.Set
	before, after  ownershipcore.ManagedFields
	oursBefore     *ownershipcore.Entry
	oursAfter      *fieldset.Set
	ledger         *ownershipcore.Ledger
	dropped        ownershipcore.LetGo
	res            ownershipcore.Result
}

// patchFields is one row per leaf field the patch sets, owns after the
// apply, conflicts on, or gives back.
//
//nolint:gocyclo // one case per kind of field change the plan prints (added, taken, handed back, removed, contested).
func patchFields(in fieldRows) []FieldPlan {
	conflictsAt := map[string]struct {
		plan string
		c    ownershipcore.Conflict
	}{}
	for plan, cs := range map[string][]ownershipcore.Conflict{"take": in.res.Forced, "yield": in.res.Yielded, "fail": in.res.Failed} {
		for _, c := range cs {
			conflictsAt[ownershipcore.FormatPath(c.Path)] = struct {
				plan string
				c    ownershipcore.Conflict
			}{plan, c}
		}
	}
	rules := conflicts.Of(in.rules)
	paths := patchintent.Leaves(in.intent.Union(in.oursAfter))
	for p := range conflictsAt {
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	// Fields that left the patch: handed back to an owner, or released.
	givenBack := map[string]string{}
	for _, e := range in.dropped.Previous {
		for _, p := range patchintent.Leaves(e.Fields) {
			givenBack[p] = "give back to " + describeEntry(e.ManagerKey)
		}
	}
	for _, p := range patchintent.Leaves(in.dropped.Release) {
		givenBack[p] = "give back (leave without an owner)"
	}
	for p := range givenBack {
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	has := func(s *fieldset.Set, p string) bool {
		return s != nil && slices.Contains(ownershipcore.FormatSet(s), p)
	}
	ownersOf := func(mf ownershipcore.ManagedFields, p string) []string {
		var out []string
		for _, e := range mf {
			if e.Manager != in.manager && has(e.Fields, p) {
				out = append(out, describeEntry(e.ManagerKey))
			}
		}
		return out
	}
	deletion := patchintent.DeletionLetGo(in.policy, in.ledger, in.after, in.oursAfter, in.manager)
	var rows []FieldPlan
	for _, p := range paths {
		row := FieldPlan{Path: p, Owners: ownersOf(in.before, p)}
		c, conflicted := conflictsAt[p]
		switch {
		case givenBack[p] != "":
			row.Plan = givenBack[p]
		case (in.policy == v1alpha1.DeletionPolicyOrphan && in.oursBefore != nil && has(in.oursBefore.Fields, p) && !has(in.intent, p)):
			row.Plan = "give back (leave without an owner)"
		case conflicted:
			row.Plan = c.plan
			row.Decision = "conflictPolicy " + in.conflictPolicy
			if d, ok := rules.Decides(c.c.Manager, c.c.Operation); ok {
				row.Decision = map[ownershipcore.Decision]string{ownershipcore.DecisionYield: "yieldTo", ownershipcore.DecisionForce: "forceOver"}[d] + " " + c.c.Manager
			}
		case in.oursBefore != nil && has(in.oursBefore.Fields, p):
			row.Plan = "keep"
		case len(row.Owners) > 0 && len(ownersOf(in.after, p)) > 0:
			row.Plan = "share"
		case len(row.Owners) > 0:
			row.Plan = "take"
		default:
			row.Plan = "add"
		}
		if has(in.oursAfter, p) {
			row.OnDelete = onDelete(in, deletion, p, has)
			// A field another manager co-owns stays with it, whatever the
			// patch lets go (SSA shared ownership).
			if others := ownersOf(in.after, p); len(others) > 0 && !strings.HasPrefix(row.OnDelete, "hand back") {
				row.OnDelete = "leave to " + strings.Join(others, ", ")
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// onDelete says what deletionPolicy does with a field the patch would
// own, given the controller's own deletion (g: patchintent.DeletionLetGo
// on the managed fields after the apply).
func onDelete(in fieldRows, g ownershipcore.LetGo, p string, has func(*fieldset.Set, string) bool) string {
	for _, e := range g.Previous {
		if has(e.Fields, p) {
			if in.policy == v1alpha1.DeletionPolicyRestore {
				return "restore the previous value (unless written since) and hand back to " + describeEntry(e.ManagerKey)
			}
			return "hand back to " + describeEntry(e.ManagerKey)
		}
	}
	if has(g.Release, p) {
		return "leave without an owner"
	}
	return "remove"
}

// describeEntry prints a manager key as `hpa (Update)`.
func describeEntry(k ownershipcore.ManagerKey) string {
	s := k.Manager + " (" + string(k.Operation)
	if k.Subresource != "" {
		s += " /" + k.Subresource
	}
	return s + ")"
}

// planWorkload plans a ManagedWorkload as its controller applies it with
// Server-Side Apply: spec.resources in apply order (workload.Resources),
// each applied under the workload's field manager with its conflict
// strategy and ignorePaths, dryRun=All.
//
//nolint:gocyclo // one case per object state of a ManagedWorkload's inventory.
func (p *planner) planWorkload(ctx context.Context, mw *v1alpha1.ManagedWorkload) (Plan, error) {
	manager := names.Workload(mw.Namespace, mw.Name)
	plan := Plan{Kind: "ManagedWorkload", Namespace: mw.Namespace, Name: mw.Name, FieldManager: manager}
	exists, err := p.admit(ctx, mw, &v1alpha1.ManagedWorkload{})
	if err != nil {
		plan.Action, plan.Message = actionInvalid, redact.Message(err)
		return plan, nil
	}
	plan.Exists = exists
	ignore, err := ownershipcore.ParsePathSet(mw.Spec.IgnorePaths)
	if err != nil {
		plan.Action, plan.Message = actionInvalid, fmt.Sprintf("ignorePaths: %v", err)
		return plan, nil
	}
	strategy := conflicts.Workload(mw.Spec.ConflictPolicy, mw.Spec.ConflictRules)
	counts := map[string]int{}
	for _, r := range workloadspec.Resources(mw, p.c.RESTMapper()) {
		op := ObjectPlan{}
		if r.Intent != nil {
			op.ObjectRef = ObjectRef{APIVersion: r.Intent.GetAPIVersion(), Kind: r.Intent.GetKind(), Namespace: r.Intent.GetNamespace(), Name: r.Intent.GetName()}
		}
		if r.Err != nil {
			op.Action, op.Message = actionFailed, r.Err.Error()
			plan.Objects = append(plan.Objects, op)
			counts[op.Action]++
			continue
		}
		res, err := p.applier.Apply(ctx, r.Intent, ownershipcore.ApplyOptions{FieldManager: manager, Conflicts: strategy, Ignore: ignore, DryRun: true})
		var conflictErr *ownershipcore.ConflictError
		switch {
		case errors.As(err, &conflictErr):
			op.Action, op.Message = string(ownershipcore.ActionConflicted), fmt.Sprintf("%v (conflictPolicy Fail)", conflictErr)
		case err != nil:
			op.Action, op.Message = actionFailed, redact.Message(err)
		default:
			op.Action = string(res.Action)
		}
		for _, c := range res.Forced {
			op.Taken = append(op.Taken, fmt.Sprintf("%s from %s", ownershipcore.FormatPath(c.Path), describeEntry(ownershipcore.ManagerKey{Manager: c.Manager, Operation: c.Operation})))
		}
		for _, c := range res.Yielded {
			op.Yielded = append(op.Yielded, fmt.Sprintf("%s to %s", ownershipcore.FormatPath(c.Path), describeEntry(ownershipcore.ManagerKey{Manager: c.Manager, Operation: c.Operation})))
		}
		if err == nil && res.Object != nil {
			if after, err := ownershipcore.Owners(res.Object); err == nil {
				if ours := after.Applied(manager); ours != nil {
					op.OwnedFields = len(ownershipcore.FormatSet(ours.Fields))
				}
			}
		}
		counts[op.Action]++
		plan.Objects = append(plan.Objects, op)
	}
	switch {
	case counts[string(ownershipcore.ActionConflicted)] > 0:
		plan.Action = string(ownershipcore.ActionConflicted)
	case counts[actionFailed] > 0:
		plan.Action = actionFailed
	case counts[string(ownershipcore.ActionCreated)]+counts[string(ownershipcore.ActionConfigured)] > 0:
		plan.Action = string(ownershipcore.ActionConfigured)
	default:
		plan.Action = string(ownershipcore.ActionUnchanged)
	}
	var parts []string
	for _, a := range []string{string(ownershipcore.ActionCreated), string(ownershipcore.ActionConfigured), string(ownershipcore.ActionUnchanged), string(ownershipcore.ActionConflicted), actionFailed} {
		if counts[a] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[a], strings.ToLower(a)))
		}
	}
	plan.Message = strings.Join(parts, ", ")
	return plan, nil
}

// writePlans prints each plan: a header, then a table of fields (a patch)
// or objects (a workload).
//
//nolint:gocyclo // one case per output format and section.
func writePlans(w io.Writer, plans []Plan) error {
	for i, p := range plans {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		name := p.Name
		if p.Namespace != "" {
			name = p.Namespace + "/" + p.Name
		}
		verb := "create"
		switch {
		case p.Action == actionDelete || p.Patch != nil && p.Patch.Deletion != nil:
			verb = "delete"
		case p.Exists:
			verb = "change"
		}
		head := fmt.Sprintf("%s %s (%s; field manager %s)\n", p.Kind, name, verb, p.FieldManager)
		if p.Patch != nil {
			head += fmt.Sprintf("target %s, type %s, conflictPolicy %s, deletionPolicy %s\n", p.Patch.Target, p.Patch.Type, p.Patch.ConflictPolicy, p.Patch.DeletionPolicy)
		}
		head += "action: " + p.Action
		if p.Message != "" {
			head += ": " + p.Message
		}
		if _, err := fmt.Fprintln(w, head); err != nil {
			return err
		}
		var table [][]cell
		switch {
		case p.Patch != nil && len(p.Patch.Deletion) > 0:
			table = append(table, []cell{{text: "FIELD"}, {text: "ACTION"}, {text: "OWNERS AFTER"}, {text: "VALUE AFTER"}})
			for _, f := range p.Patch.Deletion {
				action := f.Action
				if f.Why != "" {
					action += " (" + f.Why + ")"
				}
				table = append(table, []cell{{text: f.Path}, {text: action}, {text: dash(strings.Join(f.OwnersAfter, ", "))}, {text: f.ValueAfter}})
			}
		case p.Patch != nil && len(p.Patch.Fields) > 0:
			table = append(table, []cell{{text: "FIELD"}, {text: "OWNER NOW"}, {text: "PLAN"}, {text: "DECISION"}, {text: "ON DELETE"}})
			for _, f := range p.Patch.Fields {
				table = append(table, []cell{{text: f.Path}, {text: dash(strings.Join(f.Owners, ", "))}, {text: f.Plan}, {text: dash(f.Decision)}, {text: dash(f.OnDelete)}})
			}
		case len(p.Objects) > 0:
			table = append(table, []cell{{text: "OBJECT"}, {text: "ACTION"}, {text: "FIELDS"}, {text: "TAKEN FROM OTHERS"}})
			for _, o := range p.Objects {
				taken := strings.Join(o.Taken, ", ")
				if len(o.Yielded) > 0 {
					taken = strings.TrimPrefix(taken+"; yielded "+strings.Join(o.Yielded, ", "), "; ")
				}
				if o.Message != "" {
					taken = strings.TrimPrefix(taken+"; "+o.Message, "; ")
				}
				table = append(table, []cell{{text: o.ObjectRef.String()}, {text: o.Action}, {text: fmt.Sprint(o.OwnedFields)}, {text: dash(taken)}})
			}
		}
		if table != nil {
			if err := writeTable(w, table); err != nil {
				return err
			}
		}
		if p.Patch != nil {
			for _, n := range p.Patch.Notes {
				if _, err := fmt.Fprintln(w, "note: "+n); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
