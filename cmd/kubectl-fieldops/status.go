package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

type statusOptions struct {
	flags         *genericclioptions.ConfigFlags
	streams       genericiooptions.IOStreams
	allNamespaces bool
	output        string
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
  kubectl fieldops status -n payments -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list objects in every namespace")
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: json (default: a table)")
	return cmd
}

// StatusRow is one object of `status`; -o json prints a list of them.
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

func (o *statusOptions) run(ctx context.Context) error {
	if o.output != "" && o.output != "json" {
		return fmt.Errorf("--output %q: want json", o.output)
	}
	c, err := newClient(o.flags)
	if err != nil {
		return err
	}
	var opts []client.ListOption
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
	if err := c.List(ctx, cfps); err != nil {
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
	if o.output == "json" {
		if rows == nil {
			rows = []StatusRow{}
		}
		b, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(o.streams.Out, "%s\n", b)
		return err
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(o.streams.ErrOut, "No fieldops objects found.")
		return err
	}
	tw := tabwriter.NewWriter(o.streams.Out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAMESPACE\tNAME\tREADY\tREASON\tCONTESTED\tDETAIL")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Kind, dash(r.Namespace), r.Name, r.Ready, dash(r.Reason), dash(r.Contested), r.Detail)
	}
	return tw.Flush()
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
