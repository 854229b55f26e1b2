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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/fieldplan"
	"github.com/fieldops/fieldops/internal/tenancy"
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

// planLong is plan's help.
const planLong = `Show what creating or changing each FieldPatch, ClusterFieldPatch or
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
says on standard error which objects it skipped.`

// planExample are plan's examples.
const planExample = `  kubectl fieldops plan -f fieldpatch.yaml
  kubectl fieldops plan -f workload.yaml -o yaml
  helm template ./patches | kubectl fieldops plan -f -
  kubectl kustomize config/samples | kubectl fieldops plan -f -
  kubectl fieldops plan -f patches/ -R -o jsonpath='{range .items[*]}{.name}: {.action}{"\n"}{end}'
  kubectl fieldops plan --delete fieldpatch/incident-pin -n shop`

func newPlanCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	filenames, recursive := []string{}, false
	o := &planOptions{flags: flags, streams: streams, output: newOutputFlags(false),
		files: genericclioptions.FileNameFlags{Usage: "files, directories or URLs holding FieldPatches, ClusterFieldPatches or ManagedWorkloads (- reads standard input); other objects of them are skipped", Filenames: &filenames, Recursive: &recursive}}
	cmd := &cobra.Command{
		Use:     "plan -f FILE | plan --delete (-f FILE | fieldpatch/NAME...)",
		Short:   "Show what a FieldPatch, ClusterFieldPatch or ManagedWorkload would do, with a server-side dry run",
		Long:    planLong,
		Example: planExample,
		Args:    o.args,
		RunE:    func(cmd *cobra.Command, args []string) error { o.names = args; return o.run(cmd.Context()) },
	}
	o.addFlags(cmd)
	return cmd
}

// args refuses TYPE/NAME arguments without --delete.
func (o *planOptions) args(_ *cobra.Command, args []string) error {
	if len(args) > 0 && !o.delete {
		return errors.New("TYPE/NAME arguments are for --delete; plan a file with -f")
	}
	return nil
}

// addFlags adds plan's flags to cmd: -f and -R, -o, and the manager's
// settings the plan decides with.
func (o *planOptions) addFlags(cmd *cobra.Command) {
	o.files.AddFlags(cmd.Flags())
	o.output.addFlags(cmd, "a list of plans")
	cmd.Flags().BoolVar(&o.delete, "delete", false, "plan the deletion of the patches (on the cluster, named as fieldpatch/NAME or by -f) under their deletionPolicy, instead of their apply")
	cmd.Flags().StringVar(&o.pluginConfig, "plugin-config", "", "the manager's --plugin-config file: conflicts of a patch with conflictPolicy Plugin are then decided by that plugin, run here as the manager runs it (same binary, same SHA-256); without it, by its conflictPluginFallback")
	cmd.Flags().StringVar(&o.tenancy.DefaultServiceAccount, "default-service-account", tenancy.DefaultServiceAccount, "the manager's --default-service-account: the account, in their own namespace, that patches naming no spec.serviceAccountName act as; plan acts as a patch's account when you may impersonate it (admin and edit may, in their namespace)")
	cmd.Flags().StringSliceVar(&o.tenancy.ManagerRightsNamespaces, "manager-rights-namespaces", nil, "the manager's --manager-rights-namespaces: namespaces whose patches naming no account act with the manager's rights ('*': every namespace); plan uses your own rights for them")
	cmd.Flags().StringVar(&o.ownNamespace, "fieldops-namespace", "", "the namespace the fieldops manager runs in (its --namespace): the controller refuses its own objects there, and so does the plan (default: the namespace of the manager's leader election Lease fieldops.dev or of its Deployment, else fieldops-system)")
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
		if p.Plugins, err = host.New(cfg, host.Options{}); err != nil {
			return err
		}
		defer p.Plugins.Close()
	}
	plans := make([]Plan, 0, len(docs))
	failed := 0
	for _, d := range docs {
		ps, err := p.Plan(ctx, d)
		if err != nil {
			return err
		}
		for _, plan := range ps {
			if plan.Failed() {
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

// The plan's values (fieldplan): -o json and -o yaml print a list of
// Plan.
type (
	Plan              = fieldplan.Plan
	PatchPlan         = fieldplan.PatchPlan
	FieldPlan         = fieldplan.FieldPlan
	PlannedOwner      = fieldplan.PlannedOwner
	ObjectPlan        = fieldplan.ObjectPlan
	DeletionFieldPlan = fieldplan.DeletionFieldPlan
)

const actionForbidden = fieldplan.ActionForbidden

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
	objs, err := readManifests(o.flags, o.streams.In, files)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	var skipped []string
	for _, u := range objs {
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

func (o *planOptions) planner(ctx context.Context) (*fieldplan.Planner, error) {
	conn, err := connect(o.flags)
	if err != nil {
		return nil, err
	}
	c := conn.client
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
	return &fieldplan.Planner{Client: c, Config: conn.config, Namespace: conn.namespace, Applier: conn.applier, OwnNamespace: own, Delete: o.delete, Tenancy: o.tenancy}, nil
}

// writePlans prints each plan: a header, then a table of fields (a patch)
// or objects (a workload).
func writePlans(w io.Writer, plans []Plan) error {
	for i, p := range plans {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		if _, err := fmt.Fprintln(w, planHeader(p)); err != nil {
			return err
		}
		if table := planTable(p); table != nil {
			if err := writeTable(w, table); err != nil {
				return err
			}
		}
		if err := writePlanNotes(w, p); err != nil {
			return err
		}
	}
	return nil
}
