/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

type statusOptions struct {
	flags         *genericclioptions.ConfigFlags
	streams       genericiooptions.IOStreams
	allNamespaces bool
	selector      string
	output        string
	color         string
}

func newStatusCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &statusOptions{flags: flags, streams: streams}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List FieldPatches, ClusterFieldPatches, ManagedWorkloads and PodSets with readiness and contested fields",
		Long: `List fieldops's objects in the namespace (-n, or the context's) or in
every namespace (-A), with ClusterFieldPatches, one row each:

  READY      the Ready condition's status (True, False, Unknown), or - before
             the first reconcile
  REASON     the Ready condition's reason (docs/troubleshooting.md)
  CONTESTED  the field manager that keeps taking a FieldPatch's fields back
             (status.contestedBy) or that owns the fields it conflicts with
             (reason Conflict); for a ManagedWorkload, the objects that
             conflict and the managers owning their fields
  DETAIL     the target and owned fields of a patch, the objects of a
             workload, the ready pods of a PodSet`,
		Example: `  kubectl fieldops status -A
  kubectl fieldops status -n payments -o yaml
  kubectl fieldops status -l team=payments --color always | less -R`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list objects in every namespace")
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "label selector of the objects to list, as kubectl get -l")
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: json or yaml (default: a table)")
	cmd.Flags().StringVar(&o.color, "color", "auto", "colour READY and CONTESTED: auto (when printing to a terminal and NO_COLOR is unset), always or never")
	registerFlagCompletions(cmd, map[string][]string{"output": {"json", "yaml"}, "color": colorModes})
	return cmd
}

// StatusRow is one object of `status`; -o json and -o yaml print a list
// of them.
type StatusRow struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Ready     string `json:"ready"`
	Reason    string `json:"reason,omitempty"`
	Message   string `json:"message,omitempty"`
	Contested string `json:"contested,omitempty"`
	Detail    string `json:"detail,omitempty"`
}

//nolint:gocyclo // one branch per fieldops kind and output format.
func (o *statusOptions) run(ctx context.Context) error {
	switch o.output {
	case "", "json", "yaml":
	default:
		return fmt.Errorf("--output %q: want json or yaml", o.output)
	}
	paint, err := newPainter(o.color, o.streams.Out)
	if err != nil {
		return err
	}
	var opts []client.ListOption
	if o.selector != "" {
		sel, err := labels.Parse(o.selector)
		if err != nil {
			return fmt.Errorf("--selector: %w", err)
		}
		opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
	}
	c, err := newClient(o.flags)
	if err != nil {
		return err
	}
	clusterOpts := slices.Clone(opts)
	if !o.allNamespaces {
		ns, err := namespace(o.flags)
		if err != nil {
			return err
		}
		opts = append(opts, client.InNamespace(ns))
	}
	var rows []StatusRow
	fps := &v1alpha1.FieldPatchList{}
	if err := c.List(ctx, fps, opts...); err != nil {
		return err
	}
	for i := range fps.Items {
		rows = append(rows, patchRow("FieldPatch", &fps.Items[i].ObjectMeta, &fps.Items[i].Spec, &fps.Items[i].Status))
	}
	cfps := &v1alpha1.ClusterFieldPatchList{}
	if err := c.List(ctx, cfps, clusterOpts...); err != nil {
		return err
	}
	for i := range cfps.Items {
		rows = append(rows, patchRow("ClusterFieldPatch", &cfps.Items[i].ObjectMeta, &cfps.Items[i].Spec, &cfps.Items[i].Status))
	}
	mws := &v1alpha1.ManagedWorkloadList{}
	if err := c.List(ctx, mws, opts...); err != nil {
		return err
	}
	for i := range mws.Items {
		rows = append(rows, workloadRow(&mws.Items[i]))
	}
	pss := &v1alpha1.PodSetList{}
	if err := c.List(ctx, pss, opts...); err != nil {
		return err
	}
	for i := range pss.Items {
		rows = append(rows, podSetRow(&pss.Items[i]))
	}
	if o.output != "" {
		if rows == nil {
			rows = []StatusRow{}
		}
		return printDocument(o.streams.Out, o.output, rows)
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(o.streams.ErrOut, "No fieldops objects found.")
		return err
	}
	table := [][]cell{{{text: "KIND"}, {text: "NAMESPACE"}, {text: "NAME"}, {text: "READY"}, {text: "REASON"}, {text: "CONTESTED"}, {text: "DETAIL"}}}
	contested := func(s string) string {
		if s == "-" {
			return s
		}
		return paint.paint(sgrYellow, s)
	}
	for _, r := range rows {
		table = append(table, []cell{{text: r.Kind}, {text: dash(r.Namespace)}, {text: r.Name},
			{text: r.Ready, paint: paint.condition}, {text: dash(r.Reason)}, {text: dash(r.Contested), paint: contested}, {text: r.Detail}})
	}
	return writeTable(o.streams.Out, table)
}

func ready(conds []metav1.Condition) (status, reason, message string) {
	c := meta.FindStatusCondition(conds, "Ready")
	if c == nil {
		return "-", "", ""
	}
	return string(c.Status), c.Reason, c.Message
}

// ownedBy finds the field managers a Conflict message names: FieldPatch
// writes each conflict as `PATH owned by "MANAGER" (OPERATION)`,
// ManagedWorkload as ownershipcore.Conflict does, `conflict with "MANAGER"
// (OPERATION): PATH`.
var ownedBy = regexp.MustCompile(`(?:owned by|conflict with) "([^"]+)"`)

func conflictManagers(message string) string {
	var out []string
	for _, m := range ownedBy.FindAllStringSubmatch(message, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return strings.Join(out, ",")
}

func patchRow(kind string, m *metav1.ObjectMeta, spec *v1alpha1.FieldPatchSpec, st *v1alpha1.FieldPatchStatus) StatusRow {
	r := StatusRow{Kind: kind, Namespace: m.Namespace, Name: m.Name, Contested: st.ContestedBy}
	r.Ready, r.Reason, r.Message = ready(st.Conditions)
	if r.Contested == "" && r.Reason == "Conflict" {
		r.Contested = conflictManagers(r.Message)
	}
	target := spec.Target.Kind + "/" + spec.Target.Name
	if spec.Target.Namespace != "" {
		target = spec.Target.Kind + "/" + spec.Target.Namespace + "/" + spec.Target.Name
	}
	r.Detail = fmt.Sprintf("%s, %d fields", target, st.FieldCount)
	return r
}

func workloadRow(mw *v1alpha1.ManagedWorkload) StatusRow {
	r := StatusRow{Kind: "ManagedWorkload", Namespace: mw.Namespace, Name: mw.Name}
	r.Ready, r.Reason, r.Message = ready(mw.Status.Conditions)
	var contested []string
	for _, e := range mw.Status.Inventory {
		if e.Reason == "Conflict" {
			contested = append(contested, fmt.Sprintf("%s/%s (%s)", e.Kind, e.Name, conflictManagers(e.Message)))
		}
	}
	r.Contested = strings.Join(contested, ",")
	r.Detail = fmt.Sprintf("%d objects, %d failed", mw.Status.Applied, mw.Status.Failed)
	if mw.Status.Mode != "" {
		r.Detail += ", " + mw.Status.Mode
	}
	return r
}

func podSetRow(ps *v1alpha1.PodSet) StatusRow {
	r := StatusRow{Kind: "PodSet", Namespace: ps.Namespace, Name: ps.Name}
	r.Ready, r.Reason, r.Message = ready(ps.Status.Conditions)
	want := int32(1)
	if ps.Spec.Replicas != nil {
		want = *ps.Spec.Replicas
	}
	r.Detail = fmt.Sprintf("%d/%d pods ready, %d updated", ps.Status.ReadyReplicas, want, ps.Status.UpdatedReplicas)
	return r
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
