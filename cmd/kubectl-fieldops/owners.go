package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/resource"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/ownershipcore"
)

type ownersOptions struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	now     func() time.Time
	manager string
	output  string
}

func newOwnersCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, now func() time.Time) *cobra.Command {
	o := &ownersOptions{flags: flags, streams: streams, now: now}
	cmd := &cobra.Command{
		Use:   "owners TYPE/NAME | TYPE NAME",
		Short: "Print an object's YAML with the field manager owning each line",
		Long: `Print an object's YAML, each line annotated with the field manager, the
operation (Apply or Update, and the subresource) and the age of the
managed fields entries that own it. Lines nobody owns (server-set
metadata, defaults) have no annotation. metadata.managedFields itself
is left out.

Field ownership is described in the Server-Side Apply documentation:
https://kubernetes.io/docs/reference/using-api/server-side-apply/#field-management`,
		Example: `  # Who owns what on the CoreDNS Deployment
  kubectl fieldops owners deployment/coredns -n kube-system

  # Only the fields a FieldPatch took
  kubectl fieldops owners daemonset/aws-node -n kube-system --manager fieldops-fieldpatch/kube-system/aws-node-proxy

  # Every owned field with its owners, for scripts
  kubectl fieldops owners svc/web -o json`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(args) },
	}
	cmd.Flags().StringVar(&o.manager, "manager", "", "show only the lines this field manager owns (and the lines that enclose them)")
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: json or yaml (the owned fields and their owners); default annotated YAML")
	return cmd
}

// FieldOwners is one owned field of -o json.
type FieldOwners struct {
	// Path in the ownership core's form (.spec.containers[name="app"].image).
	Path   string  `json:"path"`
	Owners []Owner `json:"owners"`
}

// Owner is a managed fields entry.
type Owner struct {
	Manager     string                            `json:"manager"`
	Operation   metav1.ManagedFieldsOperationType `json:"operation"`
	APIVersion  string                            `json:"apiVersion,omitempty"`
	Subresource string                            `json:"subresource,omitempty"`
	Time        *metav1.Time                      `json:"time,omitempty"`
}

// ObjectOwners is the document -o json prints.
type ObjectOwners struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Namespace  string        `json:"namespace,omitempty"`
	Name       string        `json:"name"`
	Fields     []FieldOwners `json:"fields"`
}

func (o *ownersOptions) run(args []string) error {
	switch o.output {
	case "", "json", "yaml":
	default:
		return fmt.Errorf("--output %q: want json or yaml", o.output)
	}
	if len(args) == 1 && !strings.Contains(args[0], "/") {
		return fmt.Errorf("owners needs one object: TYPE/NAME or TYPE NAME, got %q", args[0])
	}
	ns, err := namespace(o.flags)
	if err != nil {
		return err
	}
	infos, err := resource.NewBuilder(o.flags).Unstructured().
		NamespaceParam(ns).DefaultNamespace().
		ResourceTypeOrNameArgs(true, args...).SingleResourceType().
		Flatten().Do().Infos()
	if err != nil {
		return err
	}
	if len(infos) != 1 {
		return fmt.Errorf("owners needs exactly one object, got %d", len(infos))
	}
	obj, ok := infos[0].Object.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("unexpected object type %T", infos[0].Object)
	}
	entries, err := ownershipcore.Owners(obj)
	if err != nil {
		return err
	}
	if o.manager != "" && !slices.Contains(entries.Managers(), o.manager) {
		return fmt.Errorf("field manager %q owns no field of %s %s (managers: %s)", o.manager, obj.GetKind(), obj.GetName(), strings.Join(entries.Managers(), ", "))
	}
	lines := ownershipcore.Blame(obj.Object, entries)
	if o.output != "" {
		return o.printFields(obj, lines)
	}
	return o.printLines(o.streams.Out, lines)
}

// keep marks the lines to print: with --manager, the lines it owns, the
// continuation lines of those and every enclosing line.
func (o *ownersOptions) keep(lines []ownershipcore.BlameLine) []bool {
	keep := make([]bool, len(lines))
	for i, l := range lines {
		if o.manager == "" || owns(l.Owners, o.manager) || (l.Path == nil && l.Parent >= 0 && keep[l.Parent]) {
			for j := i; j >= 0 && !keep[j]; j = lines[j].Parent {
				keep[j] = true
			}
		}
	}
	return keep
}

func (o *ownersOptions) printLines(w io.Writer, lines []ownershipcore.BlameLine) error {
	keep := o.keep(lines)
	type row struct{ manager, op, age, text string }
	rows := make([]row, 0, len(lines))
	var mw, ow, aw int
	for i, l := range lines {
		if !keep[i] {
			continue
		}
		r := row{text: l.Text}
		var managers, ops []string
		var newest *metav1.Time
		for _, e := range l.Owners {
			managers = append(managers, e.Manager)
			op := string(e.Operation)
			if e.Subresource != "" {
				op += "/" + e.Subresource
			}
			ops = append(ops, op)
			if e.Time != nil && (newest == nil || e.Time.After(newest.Time)) {
				newest = e.Time
			}
		}
		r.manager, r.op = strings.Join(managers, ","), strings.Join(ops, ",")
		if newest != nil {
			r.age = duration.HumanDuration(o.now().Sub(newest.Time))
		}
		mw, ow, aw = max(mw, len(r.manager)), max(ow, len(r.op)), max(aw, len(r.age))
		rows = append(rows, r)
	}
	for _, r := range rows {
		if _, err := fmt.Fprintf(w, "%-*s  %-*s  %*s  | %s\n", mw, r.manager, ow, r.op, aw, r.age, r.text); err != nil {
			return err
		}
	}
	return nil
}

func (o *ownersOptions) printFields(obj *unstructured.Unstructured, lines []ownershipcore.BlameLine) error {
	out := ObjectOwners{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Fields: []FieldOwners{}}
	for _, l := range lines {
		if len(l.Owners) == 0 || (o.manager != "" && !owns(l.Owners, o.manager)) {
			continue
		}
		f := FieldOwners{Path: ownershipcore.FormatPath(l.Path)}
		for _, e := range l.Owners {
			f.Owners = append(f.Owners, Owner{Manager: e.Manager, Operation: e.Operation, APIVersion: e.APIVersion, Subresource: e.Subresource, Time: e.Time})
		}
		out.Fields = append(out.Fields, f)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	if o.output == "yaml" {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return err
		}
		_, err = o.streams.Out.Write(b)
		return err
	}
	_, err = fmt.Fprintf(o.streams.Out, "%s\n", b)
	return err
}

func owns(entries ownershipcore.ManagedFields, manager string) bool {
	for _, e := range entries {
		if e.Manager == manager {
			return true
		}
	}
	return false
}
