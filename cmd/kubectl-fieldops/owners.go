/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"encoding/json"
	"errors"
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
	"github.com/fieldops/fieldops/ownershipcore/blame"
)

type ownersOptions struct {
	flags         *genericclioptions.ConfigFlags
	streams       genericiooptions.IOStreams
	now           func() time.Time
	files         genericclioptions.FileNameFlags
	selector      string
	allNamespaces bool
	local         bool
	manager       string
	output        *outputFlags
	color         string
	timeFormat    string
}

// timeFormats are the values of --time: the age of the newest owning
// entry (kubectl's AGE), its time in RFC 3339 (UTC), or no time column.
var timeFormats = []string{"age", "rfc3339", "none"}

func newOwnersCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, now func() time.Time) *cobra.Command {
	filenames, recursive := []string{}, false
	o := &ownersOptions{flags: flags, streams: streams, now: now, output: newOutputFlags(false),
		files: genericclioptions.FileNameFlags{Usage: "files, directories or URLs of the objects (- reads standard input); the live objects are shown unless --local", Filenames: &filenames, Recursive: &recursive}}
	cmd := &cobra.Command{
		Use:   "owners (TYPE/NAME ... | TYPE NAME ... | TYPE -l SELECTOR | -f FILE)",
		Short: "Print objects' YAML with the field manager owning each line",
		Long: `Print an object's YAML, each line annotated with the field manager, the
operation (Apply or Update, and the subresource) and the age of the
managed fields entries that own it. Lines nobody owns (server-set
metadata, defaults) have no annotation. metadata.managedFields itself
is left out. Several objects are separated by ---.

Objects are named as kubectl get names them: TYPE/NAME (several), TYPE
NAME..., TYPE -l SELECTOR, or -f FILE (the live objects the file names).
With --local, the objects of -f are shown as the file has them, without
contacting a server: save them with
kubectl get -o yaml --show-managed-fields.

Field ownership is described in the Server-Side Apply documentation:
https://kubernetes.io/docs/reference/using-api/server-side-apply/#field-management`,
		Example: `  # Who owns what on the CoreDNS Deployment
  kubectl fieldops owners deployment/coredns -n kube-system

  # Only the fields a FieldPatch took
  kubectl fieldops owners daemonset/aws-node -n kube-system --manager fieldops-fieldpatch/kube-system/aws-node-proxy

  # Several objects: by name, by label, from a manifest
  kubectl fieldops owners deploy/web svc/web
  kubectl fieldops owners deploy -l app=web
  kubectl fieldops owners -f web.yaml

  # Offline, from a saved copy
  kubectl get deploy/web -o yaml --show-managed-fields > web.yaml
  kubectl fieldops owners -f web.yaml --local --time rfc3339

  # Every owned field with its owners, for scripts
  kubectl fieldops owners svc/web -o json`,
		RunE:              func(cmd *cobra.Command, args []string) error { return o.run(args) },
		ValidArgsFunction: completeObjects(flags),
	}
	o.files.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "label selector of the objects (of the TYPE given), as kubectl get -l")
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "with -l, look in every namespace")
	cmd.Flags().BoolVar(&o.local, "local", false, "show the objects of -f as they are in the file (with their metadata.managedFields); contact no server")
	cmd.Flags().StringVar(&o.manager, "manager", "", "show only the lines this field manager owns (and the lines that enclose them)")
	o.output.addFlags(cmd, "the owned fields and their owners")
	cmd.Flags().Lookup("output").Usage = strings.Replace(cmd.Flags().Lookup("output").Usage, "Default: a table", "Default: the annotated YAML", 1)
	cmd.Flags().StringVar(&o.color, "color", "auto", "colour field managers: auto (when printing to a terminal and NO_COLOR is unset), always or never")
	cmd.Flags().StringVar(&o.timeFormat, "time", "age", "time column of the annotated YAML: age (of the newest owning entry), rfc3339 (its time, UTC) or none")
	registerFlagCompletions(cmd, map[string][]string{"color": colorModes, "time": timeFormats})
	_ = cmd.RegisterFlagCompletionFunc("manager", completeManagers(flags))
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

// ObjectOwners is the document -o json prints for one object.
type ObjectOwners struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Namespace  string        `json:"namespace,omitempty"`
	Name       string        `json:"name"`
	Fields     []FieldOwners `json:"fields"`
}

// OwnersList is the document -o json prints when the arguments name
// several objects (or may: a selector, a directory, several files), as
// kubectl get prints a List: {"kind": "List", "items": [ObjectOwners...]}.
type OwnersList struct {
	Kind  string         `json:"kind"`
	Items []ObjectOwners `json:"items"`
}

// ownedObject is one object to print with its decoded owners.
type ownedObject struct {
	obj     *unstructured.Unstructured
	entries ownershipcore.ManagedFields
}

func (o *ownersOptions) validate(args []string) error {
	if err := o.output.validate(); err != nil {
		return err
	}
	if !slices.Contains(timeFormats, o.timeFormat) {
		return fmt.Errorf("--time %q: want %s", o.timeFormat, strings.Join(timeFormats, ", "))
	}
	return o.validateObjects(args)
}

// validateObjects refuses the combinations of arguments, -l, -f and
// --local that kubectl's own commands refuse.
func (o *ownersOptions) validateObjects(args []string) error {
	files := o.files.ToOptions()
	switch {
	case o.local && (len(args) > 0 || o.selector != ""):
		return fmt.Errorf("--local reads the objects of -f only; got arguments or -l")
	case o.local && len(files.Filenames) == 0:
		return fmt.Errorf("--local needs -f FILE")
	case len(files.Filenames) > 0 && (len(args) > 0 || o.selector != ""):
		return fmt.Errorf("name objects either by TYPE/NAME, TYPE -l SELECTOR or -f FILE, not both")
	case len(files.Filenames) == 0 && len(args) == 0:
		return fmt.Errorf("owners needs objects: TYPE/NAME, TYPE NAME, TYPE -l SELECTOR or -f FILE")
	case len(args) == 1 && !strings.Contains(args[0], "/") && o.selector == "":
		return fmt.Errorf("owners needs a name or a selector: TYPE/NAME, TYPE NAME or TYPE -l SELECTOR, got %q", args[0])
	}
	return nil
}

// objects resolves the arguments with cli-runtime's resource builder, as
// kubectl get does; on errors it returns the objects it could read and
// every error (kubectl's ContinueOnError). single is true when the
// arguments imply one object (one TYPE/NAME, one file).
func (o *ownersOptions) objects(args []string) (objs []ownedObject, single bool, err error) {
	ns, explicit, err := o.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, false, err
	}
	files := o.files.ToOptions()
	stdin := slices.Contains(files.Filenames, "-")
	// - is read from the command's input stream, not os.Stdin, as the
	// builder would: the same for a pipe and for a test.
	files.Filenames = slices.DeleteFunc(files.Filenames, func(f string) bool { return f == "-" })
	b := resource.NewBuilder(o.flags).Unstructured().ContinueOnError().
		NamespaceParam(ns).DefaultNamespace().AllNamespaces(o.allNamespaces).
		LocalParam(o.local).FilenameParam(explicit, &files)
	if stdin {
		b = b.Stream(o.streams.In, "STDIN")
	}
	if !o.local {
		b = b.LabelSelectorParam(o.selector).ResourceTypeOrNameArgs(false, args...).Latest()
	}
	r := b.Flatten().Do().IntoSingleItemImplied(&single)
	infos, err := r.Infos()
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, info := range infos {
		obj, ok := info.Object.(*unstructured.Unstructured)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: unexpected object type %T", info.Source, info.Object))
			continue
		}
		if o.local && len(ownershipcore.ManagerNames(obj)) == 0 {
			errs = append(errs, fmt.Errorf("%s: %s %s has no metadata.managedFields (save it with kubectl get -o yaml --show-managed-fields)", info.Source, obj.GetKind(), obj.GetName()))
			continue
		}
		entries, err := ownershipcore.Owners(obj)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err))
			continue
		}
		objs = append(objs, ownedObject{obj: obj, entries: entries})
	}
	return objs, single && len(infos) <= 1, errors.Join(errs...)
}

func (o *ownersOptions) run(args []string) error {
	if err := o.validate(args); err != nil {
		return err
	}
	paint, err := newPainter(o.color, o.streams.Out)
	if err != nil {
		return err
	}
	objs, single, errs := o.objects(args)
	if o.manager != "" {
		if objs, err = o.ownedByManager(objs); err != nil {
			return errors.Join(errs, err)
		}
	}
	if len(objs) == 0 && errs == nil && o.output.format() != outputJSON && o.output.format() != outputYAML {
		// As kubectl get: nothing matched is no error.
		ns := ""
		if !o.allNamespaces && !o.local {
			ns, _, _ = o.flags.ToRawKubeConfigLoader().Namespace()
		}
		noResources(o.streams.ErrOut, ns)
		return nil
	}
	var err2 error
	if !o.output.table() {
		err2 = o.printFields(objs, single)
	} else {
		err2 = o.printLines(o.streams.Out, objs, paint)
	}
	return errors.Join(errs, err2)
}

// ownedByManager keeps the objects --manager owns a field of; when it
// owns none of several, that is an error naming the managers that do.
func (o *ownersOptions) ownedByManager(objs []ownedObject) ([]ownedObject, error) {
	var managers []string
	kept := objs[:0]
	for _, ob := range objs {
		if slices.Contains(ob.entries.Managers(), o.manager) {
			kept = append(kept, ob)
		}
		for _, m := range ob.entries.Managers() {
			if !slices.Contains(managers, m) {
				managers = append(managers, m)
			}
		}
	}
	if len(kept) == 0 && len(objs) > 0 {
		what := fmt.Sprintf("%s %s", objs[0].obj.GetKind(), objs[0].obj.GetName())
		if len(objs) > 1 {
			what = fmt.Sprintf("the %d objects", len(objs))
		}
		return nil, fmt.Errorf("field manager %q owns no field of %s (managers: %s)", o.manager, what, strings.Join(managers, ", "))
	}
	return kept, nil
}

// keep marks the lines to print: with --manager, the lines it owns, the
// continuation lines of those and every enclosing line.
func (o *ownersOptions) keep(lines []blame.Line) []bool {
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

// ownerRow is one line of the annotated YAML: its owners' managers,
// operations (with subresource) and newest time, and the YAML text.
type ownerRow struct {
	managers []string
	op, when string
	text     string
}

// printLines prints the annotated YAML of objs, one gutter width for
// all, --- between objects.
func (o *ownersOptions) printLines(w io.Writer, objs []ownedObject, paint *painter) error {
	var rows []ownerRow
	var mw, ow, tw int
	for n, ob := range objs {
		if n > 0 {
			rows = append(rows, ownerRow{text: "---"})
		}
		lines := blame.Blame(ob.obj.Object, ob.entries)
		keep := o.keep(lines)
		for i, l := range lines {
			if !keep[i] {
				continue
			}
			r := o.ownerRow(l)
			mw, ow, tw = max(mw, len(strings.Join(r.managers, ","))), max(ow, len(r.op)), max(tw, len(r.when))
			rows = append(rows, r)
		}
	}
	var b strings.Builder
	for _, r := range rows {
		o.writeOwnerRow(&b, r, paint, mw, ow, tw)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ownerRow is the row of one blamed line, its time as --time says.
func (o *ownersOptions) ownerRow(l blame.Line) ownerRow {
	r := ownerRow{text: l.Text}
	var ops []string
	var newest *metav1.Time
	for _, e := range l.Owners {
		r.managers = append(r.managers, e.Manager)
		op := string(e.Operation)
		if e.Subresource != "" {
			op += "/" + e.Subresource
		}
		ops = append(ops, op)
		if e.Time != nil && (newest == nil || e.Time.After(newest.Time)) {
			newest = e.Time
		}
	}
	r.op = strings.Join(ops, ",")
	if newest != nil {
		switch o.timeFormat {
		case "age":
			r.when = duration.HumanDuration(o.now().Sub(newest.Time))
		case "rfc3339":
			r.when = newest.UTC().Format(time.RFC3339)
		}
	}
	return r
}

// writeOwnerRow writes r with the gutter widths mw (managers), ow
// (operations) and tw (times); managers are painted, padded by their
// unpainted width.
func (o *ownersOptions) writeOwnerRow(b *strings.Builder, r ownerRow, paint *painter, mw, ow, tw int) {
	names := make([]string, len(r.managers))
	for i, m := range r.managers {
		names[i] = paint.manager(m)
	}
	plain := len(strings.Join(r.managers, ","))
	b.WriteString(strings.Join(names, ","))
	b.WriteString(strings.Repeat(" ", mw-plain))
	fmt.Fprintf(b, "  %-*s  ", ow, r.op)
	if o.timeFormat != "none" {
		fmt.Fprintf(b, "%*s  ", tw, r.when)
	}
	fmt.Fprintf(b, "| %s\n", r.text)
}

func (o *ownersOptions) fields(ob ownedObject) ObjectOwners {
	obj := ob.obj
	out := ObjectOwners{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Fields: []FieldOwners{}}
	for _, l := range blame.Blame(obj.Object, ob.entries) {
		if len(l.Owners) == 0 || (o.manager != "" && !owns(l.Owners, o.manager)) {
			continue
		}
		f := FieldOwners{Path: ownershipcore.FormatPath(l.Path)}
		for _, e := range l.Owners {
			f.Owners = append(f.Owners, Owner{Manager: e.Manager, Operation: e.Operation, APIVersion: e.APIVersion, Subresource: e.Subresource, Time: e.Time})
		}
		out.Fields = append(out.Fields, f)
	}
	return out
}

// printFields prints -o json or yaml: one ObjectOwners when the
// arguments imply one object, an OwnersList otherwise.
func (o *ownersOptions) printFields(objs []ownedObject, single bool) error {
	var doc interface{}
	if single && len(objs) == 1 {
		doc = o.fields(objs[0])
	} else {
		list := OwnersList{Kind: "List", Items: []ObjectOwners{}}
		for _, ob := range objs {
			list.Items = append(list.Items, o.fields(ob))
		}
		doc = list
	}
	named := make([]*unstructured.Unstructured, 0, len(objs))
	for _, ob := range objs {
		named = append(named, namedObject(ob.obj.GetAPIVersion(), ob.obj.GetKind(), ob.obj.GetNamespace(), ob.obj.GetName()))
	}
	return o.output.printDoc(o.streams.Out, doc, named)
}

// printDocument prints doc as indented JSON, or as YAML when output is
// "yaml".
func printDocument(w io.Writer, output string, doc interface{}) error {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if output == "yaml" {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
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
