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
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
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
	output        *outputFlags
	color         string
}

func newStatusCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &statusOptions{flags: flags, streams: streams, output: newOutputFlags(true)}
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
             workload, the ready pods of a PodSet
  MESSAGE    (-o wide) the Ready condition's message

A kind whose CustomResourceDefinition is not installed is left out with
a warning; the others are listed. With no object, "No resources found"
goes to standard error, as with kubectl get.`,
		Example: `  kubectl fieldops status -A
  kubectl fieldops status -n payments -o yaml
  kubectl fieldops status -l team=payments --color always | less -R
  kubectl fieldops status -A -o wide
  kubectl fieldops status -A -o jsonpath='{range .items[?(@.ready!="True")]}{.kind}/{.name}: {.reason}{"\n"}{end}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list objects in every namespace")
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "label selector of the objects to list, as kubectl get -l")
	o.output.addFlags(cmd, "a list of rows (kind, namespace, name, ready, reason, message, contested, detail)")
	cmd.Flags().StringVar(&o.color, "color", "auto", "colour READY and CONTESTED: auto (when printing to a terminal and NO_COLOR is unset), always or never")
	registerFlagCompletions(cmd, map[string][]string{"color": colorModes})
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
	// Targets are the targets of a selector patch (spec.targetSelector):
	// those it wrote to (status.targets.records) and those not applied
	// (status.targets.notApplied, the first 20).
	Targets []TargetRow `json:"targets,omitempty"`
}

// TargetRow is one target of a selector patch.
type TargetRow struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// State is Applied, or the reason the target is not applied.
	State string `json:"state"`
	// Fields is how many fields the patch owns on it.
	Fields    int32  `json:"fields,omitempty"`
	Contested string `json:"contested,omitempty"`
	Message   string `json:"message,omitempty"`
}

func (o *statusOptions) run(ctx context.Context) error {
	if err := o.output.validate(); err != nil {
		return err
	}
	paint, err := newPainter(o.color, o.streams.Out)
	if err != nil {
		return err
	}
	opts, err := selectorListOptions(o.selector)
	if err != nil {
		return err
	}
	c, err := newClient(o.flags)
	if err != nil {
		return err
	}
	clusterOpts := slices.Clone(opts)
	ns := ""
	if !o.allNamespaces {
		if ns, err = namespace(o.flags); err != nil {
			return err
		}
		opts = append(opts, client.InNamespace(ns))
	}
	rows, err := o.listRows(ctx, c, opts, clusterOpts)
	if err != nil {
		return err
	}
	if len(rows) == 0 && o.output.format() != outputJSON && o.output.format() != outputYAML {
		noResources(o.streams.ErrOut, ns)
		return nil
	}
	if !o.output.table() {
		return o.printRows(rows)
	}
	return writeTable(o.streams.Out, statusTable(rows, paint, o.output.format() == outputWide))
}

// selectorListOptions are the list options of -l: none when it is empty.
func selectorListOptions(selector string) ([]client.ListOption, error) {
	if selector == "" {
		return nil, nil
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("--selector: %w", err)
	}
	return []client.ListOption{client.MatchingLabelsSelector{Selector: sel}}, nil
}

// statusKind is one kind status lists: its list type, whether it is
// cluster-scoped, and its rows.
type statusKind struct {
	kind    string
	list    client.ObjectList
	cluster bool
	rows    func(client.ObjectList) []StatusRow
}

// statusKinds are the kinds status lists, in the order it prints them.
func statusKinds() []statusKind {
	return []statusKind{
		{kind: "FieldPatch", list: &v1alpha1.FieldPatchList{}, rows: func(l client.ObjectList) (rows []StatusRow) {
			items := l.(*v1alpha1.FieldPatchList).Items
			for i := range items {
				rows = append(rows, patchRow("FieldPatch", &items[i].ObjectMeta, &items[i].Spec, &items[i].Status))
			}
			return rows
		}},
		{kind: "ClusterFieldPatch", list: &v1alpha1.ClusterFieldPatchList{}, cluster: true, rows: func(l client.ObjectList) (rows []StatusRow) {
			items := l.(*v1alpha1.ClusterFieldPatchList).Items
			for i := range items {
				rows = append(rows, patchRow("ClusterFieldPatch", &items[i].ObjectMeta, &items[i].Spec, &items[i].Status))
			}
			return rows
		}},
		{kind: "ManagedWorkload", list: &v1alpha1.ManagedWorkloadList{}, rows: func(l client.ObjectList) (rows []StatusRow) {
			items := l.(*v1alpha1.ManagedWorkloadList).Items
			for i := range items {
				rows = append(rows, workloadRow(&items[i]))
			}
			return rows
		}},
		{kind: "PodSet", list: &v1alpha1.PodSetList{}, rows: func(l client.ObjectList) (rows []StatusRow) {
			items := l.(*v1alpha1.PodSetList).Items
			for i := range items {
				rows = append(rows, podSetRow(&items[i]))
			}
			return rows
		}},
	}
}

// listRows lists every kind of statusKinds, the namespaced ones with
// opts and the cluster-scoped ones with clusterOpts; a kind the apiserver
// does not serve (its CRD is not installed) is left out with a warning.
func (o *statusOptions) listRows(ctx context.Context, c client.Client, opts, clusterOpts []client.ListOption) ([]StatusRow, error) {
	var rows []StatusRow
	for _, k := range statusKinds() {
		kindOpts := opts
		if k.cluster {
			kindOpts = clusterOpts
		}
		err := c.List(ctx, k.list, kindOpts...)
		if err != nil && (meta.IsNoMatchError(err) || apierrors.IsNotFound(err)) {
			fmt.Fprintf(o.streams.ErrOut, "Warning: %s is not served by the apiserver (is the CustomResourceDefinition installed?); listing the other kinds\n", k.kind)
			continue
		}
		if err != nil {
			return nil, err
		}
		rows = append(rows, k.rows(k.list)...)
	}
	return rows, nil
}

// printRows prints rows as a document (-o json, yaml, name, jsonpath):
// an empty list rather than null when there are none.
func (o *statusOptions) printRows(rows []StatusRow) error {
	if rows == nil {
		rows = []StatusRow{}
	}
	named := make([]*unstructured.Unstructured, 0, len(rows))
	for _, r := range rows {
		named = append(named, namedObject(v1alpha1.GroupVersion.String(), r.Kind, r.Namespace, r.Name))
	}
	return o.output.printDoc(o.streams.Out, rows, named)
}

// statusTable is the table of rows, with a MESSAGE column when wide;
// READY and CONTESTED are painted.
func statusTable(rows []StatusRow, paint *painter, wide bool) [][]cell {
	header := []cell{{text: "KIND"}, {text: "NAMESPACE"}, {text: "NAME"}, {text: "READY"}, {text: "REASON"}, {text: "CONTESTED"}, {text: "DETAIL"}}
	if wide {
		header = append(header, cell{text: "MESSAGE"})
	}
	table := [][]cell{header}
	contested := func(s string) string {
		if s == "-" {
			return s
		}
		return paint.paint(sgrYellow, s)
	}
	for _, r := range rows {
		line := []cell{{text: r.Kind}, {text: dash(r.Namespace)}, {text: r.Name},
			{text: r.Ready, paint: paint.condition}, {text: dash(r.Reason)}, {text: dash(r.Contested), paint: contested}, {text: r.Detail}}
		if wide {
			line = append(line, cell{text: dash(oneLine(r.Message))})
		}
		table = append(table, line)
	}
	return table
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
	if spec.TargetSelector != nil {
		selectorDetail(&r, spec.TargetSelector, st)
		return r
	}
	target := spec.Target.Kind + "/" + spec.Target.Name
	if spec.Target.Namespace != "" {
		target = spec.Target.Kind + "/" + spec.Target.Namespace + "/" + spec.Target.Name
	}
	r.Detail = fmt.Sprintf("%s, %d fields", target, st.FieldCount)
	if st.ExpiresAt != nil {
		r.Detail += ", " + expiresIn(st.ExpiresAt.Time, time.Now())
	}
	return r
}

// selectorDetail fills r for a selector patch: the kind and selector, the
// counts, the first targets not applied (DETAIL), the managers contesting
// its fields (CONTESTED) and every target it wrote to or could not apply
// (Targets, for -o json and yaml).
func selectorDetail(r *StatusRow, sel *v1alpha1.TargetSelector, st *v1alpha1.FieldPatchStatus) {
	what := sel.Kind
	if s, err := metav1.LabelSelectorAsSelector(sel.LabelSelector); err == nil {
		if s.Empty() {
			what += " (every one)"
		} else {
			what += " " + s.String()
		}
	}
	ts := st.Targets
	if ts == nil {
		r.Detail = what + ", not listed yet"
		return
	}
	r.Detail = what + ": " + targetCounts(ts, st.FieldCount)
	notApplied := map[string]v1alpha1.TargetProblem{}
	var first []string
	for _, p := range ts.NotApplied {
		notApplied[p.Namespace+"/"+p.Name] = p
		if len(first) < 3 {
			first = append(first, fmt.Sprintf("%s (%s)", objectPath(p.Namespace, p.Name), p.Reason))
		}
	}
	if len(first) > 0 {
		r.Detail += "; not applied: " + strings.Join(first, ", ")
	}
	var contested []string
	for _, rec := range ts.Records {
		row := TargetRow{Namespace: rec.Namespace, Name: rec.Name, State: "Applied", Fields: rec.Fields, Contested: rec.ContestedBy}
		if p, ok := notApplied[rec.Namespace+"/"+rec.Name]; ok {
			row.State, row.Message = p.Reason, p.Message
			delete(notApplied, rec.Namespace+"/"+rec.Name)
		}
		if rec.ContestedBy != "" && !slices.Contains(contested, rec.ContestedBy) {
			contested = append(contested, rec.ContestedBy)
		}
		r.Targets = append(r.Targets, row)
	}
	for _, p := range ts.NotApplied {
		if _, ok := notApplied[p.Namespace+"/"+p.Name]; ok {
			r.Targets = append(r.Targets, TargetRow{Namespace: p.Namespace, Name: p.Name, State: p.Reason, Message: p.Message})
		}
	}
	if r.Contested == "" {
		r.Contested = strings.Join(contested, ",")
	}
}

// targetCounts prints a selector patch's counts, those that are 0 aside
// (matched and applied always).
func targetCounts(ts *v1alpha1.TargetsStatus, fields int) string {
	out := fmt.Sprintf("%d matched, %d applied, %d fields", ts.Matched, ts.Applied, fields)
	for _, n := range []struct {
		count int32
		what  string
	}{{ts.Contested, "contested"}, {ts.Failed, "failed"}, {ts.Forbidden, "forbidden"}, {ts.Skipped, "skipped"}} {
		if n.count > 0 {
			out += fmt.Sprintf(", %d %s", n.count, n.what)
		}
	}
	return out
}

// objectPath is namespace/name, or name for a cluster-scoped object.
func objectPath(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// expiresIn says when a patch expires, as the time left.
func expiresIn(at, now time.Time) string {
	if left := at.Sub(now); left > 0 {
		return "expires in " + duration.HumanDuration(left)
	}
	return "expired"
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

// oneLine keeps a message on one table line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
