/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/internal/crdcheck"
)

// ErrWouldBreak is returned by check-crd when a stored object would
// break under the new CRD.
var ErrWouldBreak = errors.New("the new CRD would break stored objects")

type checkCRDOptions struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	output  *outputFlags
	color   string
	// files is -f (and -R): the files, directories or URLs of the new
	// CRDs, - for standard input.
	files genericclioptions.FileNameFlags
}

// checkCRDLong is check-crd's help.
const checkCRDLong = `Compare each CustomResourceDefinition of the file (- reads standard input)
with the one the server serves and find every list and map whose
x-kubernetes-list-type, x-kubernetes-list-map-keys or x-kubernetes-map-type
changes in a served version. Then read every object of each such version
and report, per object and path:

  Break    a write that worked before the change fails after it. The
           object no longer converts under the new schema, so every
           server-side apply of it, by any manager and of any field, fails
           with the message given: the apiserver's field manager
           (structured-merge-diff) rejects "associative list with keys may
           not have non-map elements" (a set or atomic list made a map),
           an element without any of the new keys, a map element in a set
           (updates then clear the object's managedFields). Or every write
           fails validation: an element lacks a new, required map key. Or
           a manager's routine apply fails: it applied duplicates the new
           keys forbid, or it shared a list entry by entry with other
           managers and the list became atomic (its next apply conflicts
           with them; forced, it drops their entries).
  Warning  ownership changes: an atomic list that becomes a set or map
           leaves its owner owning only the list field; duplicates nobody
           applied together are kept, and an apply naming the key once
           replaces them; new list-map keys rename the entries recorded in
           managedFields; objects without managedFields are owned by
           before-first-apply on their first server-side apply.

It exits non-zero when anything would break. Nothing is written.

-f takes what plan's -f takes: files, directories (-R for their
subdirectories), URLs, standard input (-), and manifests that hold other
objects too (a chart's or a kustomization's whole output): the
CustomResourceDefinitions among them are checked, and the others named
on standard error. The positional form (check-crd FILE) still works but
is deprecated.`

func newCheckCRDCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	filenames, recursive := []string{}, false
	o := &checkCRDOptions{flags: flags, streams: streams, output: newOutputFlags(false),
		files: genericclioptions.FileNameFlags{Usage: "files, directories or URLs holding the new CustomResourceDefinitions (- reads standard input); other objects of them are skipped", Filenames: &filenames, Recursive: &recursive}}
	cmd := &cobra.Command{
		Use:   "check-crd -f NEW-CRDS",
		Short: "Report what a change of a CRD's list and map types would break in the objects already stored",
		Long:  checkCRDLong,
		Example: `  kubectl fieldops check-crd -f config/crd/bases/example.com_widgets.yaml
  controller-gen crd paths=./api/... output:stdout | kubectl fieldops check-crd -f - -o yaml
  kubectl fieldops check-crd -f config/crd/bases/
  helm template ./chart --include-crds | kubectl fieldops check-crd -f -`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.fileArg(args); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return []string{"yaml", "yml", "json"}, cobra.ShellCompDirectiveFilterFileExt
		},
	}
	o.files.AddFlags(cmd.Flags())
	o.output.addFlags(cmd, "the findings")
	cmd.Flags().StringVar(&o.color, "color", "auto", "colour the severity: auto (when printing to a terminal and NO_COLOR is unset), always or never")
	registerFlagCompletions(cmd, map[string][]string{"color": colorModes})
	return cmd
}

// fileArg takes the deprecated positional FILE into -f (with a warning
// on standard error); -f and FILE together are refused.
func (o *checkCRDOptions) fileArg(args []string) error {
	names := o.files.Filenames
	switch {
	case len(*names) > 0 && len(args) > 0:
		return fmt.Errorf("name the file once: -f %s, not also %s", strings.Join(*names, ","), args[0])
	case len(args) == 1:
		fmt.Fprintf(o.streams.ErrOut, "Warning: check-crd FILE is deprecated: use check-crd -f %s\n", args[0])
		*names = append(*names, args[0])
	case len(*names) == 0:
		return errors.New("check-crd needs -f FILE (- reads standard input)")
	}
	return nil
}

// CRDFinding is one finding of check-crd; -o json prints a list of them.
type CRDFinding struct {
	// Kind is the custom resource's kind.
	Kind      string            `json:"kind"`
	Version   string            `json:"version"`
	Namespace string            `json:"namespace,omitempty"`
	Name      string            `json:"name"`
	Path      string            `json:"path"`
	Change    string            `json:"change"`
	Severity  crdcheck.Severity `json:"severity"`
	Reason    string            `json:"reason"`
}

// crdsOf are the CustomResourceDefinitions among objs, decoded strictly;
// the names of the other objects are returned apart.
func crdsOf(objs []*unstructured.Unstructured) ([]*apiextv1.CustomResourceDefinition, []string, error) {
	var out []*apiextv1.CustomResourceDefinition
	var skipped []string
	for _, u := range objs {
		if u.GetAPIVersion() != "apiextensions.k8s.io/v1" || u.GetKind() != "CustomResourceDefinition" {
			skipped = append(skipped, skippedName(u))
			continue
		}
		crd := &apiextv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, crd, true); err != nil {
			return nil, nil, fmt.Errorf("CustomResourceDefinition %s: %w", u.GetName(), err)
		}
		out = append(out, crd)
	}
	return out, skipped, nil
}

// readCRDs reads the CustomResourceDefinitions of -f, naming the other
// objects it skips on standard error.
func (o *checkCRDOptions) readCRDs() ([]*apiextv1.CustomResourceDefinition, error) {
	objs, err := readManifests(o.flags, o.streams.In, o.files.ToOptions())
	if err != nil {
		return nil, err
	}
	crds, skipped, err := crdsOf(objs)
	if err != nil {
		return nil, err
	}
	if len(skipped) > 0 {
		fmt.Fprintf(o.streams.ErrOut, "Skipped %d object(s) that are not CustomResourceDefinitions: %s\n", len(skipped), strings.Join(skipped, ", "))
	}
	if len(crds) == 0 {
		return nil, errors.New("no apiextensions.k8s.io/v1 CustomResourceDefinition in -f")
	}
	return crds, nil
}

func (o *checkCRDOptions) run(ctx context.Context) error {
	if err := o.output.validate(); err != nil {
		return err
	}
	paint, err := newPainter(o.color, o.streams.Out)
	if err != nil {
		return err
	}
	crds, err := o.readCRDs()
	if err != nil {
		return err
	}
	c, err := newClient(o.flags)
	if err != nil {
		return err
	}
	findings := []CRDFinding{}
	for _, next := range crds {
		fs, err := o.check(ctx, c, next)
		if err != nil {
			return err
		}
		findings = append(findings, fs...)
	}
	if err := o.printFindings(findings, paint); err != nil {
		return err
	}
	return breaksError(findings)
}

// printFindings prints findings as a document (-o json, yaml, name,
// jsonpath) or, when there are any, as a table with SEVERITY painted.
func (o *checkCRDOptions) printFindings(findings []CRDFinding, paint *painter) error {
	if !o.output.table() {
		named := make([]*unstructured.Unstructured, 0, len(findings))
		for _, f := range findings {
			named = append(named, namedObject(f.Version, f.Kind, f.Namespace, f.Name))
		}
		return o.output.printDoc(o.streams.Out, findings, named)
	}
	if len(findings) == 0 {
		return nil
	}
	table := [][]cell{{{text: "SEVERITY"}, {text: "OBJECT"}, {text: "VERSION"}, {text: "PATH"}, {text: "CHANGE"}, {text: "REASON"}}}
	sev := func(s string) string {
		if s == string(crdcheck.Break) {
			return paint.paint(sgrRed, s)
		}
		return paint.paint(sgrYellow, s)
	}
	for _, f := range findings {
		obj := f.Name
		if f.Namespace != "" {
			obj = f.Namespace + "/" + f.Name
		}
		table = append(table, []cell{{text: string(f.Severity), paint: sev}, {text: f.Kind + " " + obj}, {text: f.Version}, {text: f.Path}, {text: f.Change}, {text: f.Reason}})
	}
	return writeTable(o.streams.Out, table)
}

// breaksError is ErrWouldBreak when a finding is a break, nil otherwise.
func breaksError(findings []CRDFinding) error {
	breaks := 0
	for _, f := range findings {
		if f.Severity == crdcheck.Break {
			breaks++
		}
	}
	if breaks > 0 {
		return fmt.Errorf("%w: %d finding(s) of %d are breaks", ErrWouldBreak, breaks, len(findings))
	}
	return nil
}

// check compares next with the served CRD of its name and checks every
// object of each served version that changes. A CRD the server does not
// serve yet has no objects to break.
func (o *checkCRDOptions) check(ctx context.Context, c client.Client, next *apiextv1.CustomResourceDefinition) ([]CRDFinding, error) {
	served := &apiextv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: next.Name}, served); apierrors.IsNotFound(err) {
		fmt.Fprintf(o.streams.ErrOut, "%s: not served yet, no objects to check\n", next.Name)
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("get CustomResourceDefinition %s: %w", next.Name, err)
	}
	changes := crdcheck.Changes(served, next)
	versions := map[string]bool{}
	for _, ch := range changes {
		versions[ch.Version] = true
	}
	var changed []string
	for _, v := range served.Spec.Versions {
		if versions[v.Name] {
			changed = append(changed, v.Name)
		}
	}
	if len(changed) == 0 {
		fmt.Fprintf(o.streams.ErrOut, "%s: no list or map type changes in a served version\n", next.Name)
		return nil, nil
	}
	var out []CRDFinding
	objects := 0
	for _, v := range changed {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(served.Spec.Group + "/" + v)
		list.SetKind(served.Spec.Names.ListKind)
		opts := &client.ListOptions{Limit: 500}
		for {
			if err := c.List(ctx, list, opts); err != nil {
				return nil, fmt.Errorf("list %s %s: %w", served.Spec.Names.Plural, v, err)
			}
			for i := range list.Items {
				objects++
				fs, err := crdcheck.Check(&list.Items[i], changes)
				if err != nil {
					return nil, fmt.Errorf("%s %s/%s: %w", served.Spec.Names.Kind, list.Items[i].GetNamespace(), list.Items[i].GetName(), err)
				}
				for _, f := range fs {
					out = append(out, CRDFinding{Kind: served.Spec.Names.Kind, Version: v, Namespace: list.Items[i].GetNamespace(), Name: list.Items[i].GetName(),
						Path: f.Path, Change: f.Change.Old.String() + " → " + f.Change.New.String(), Severity: f.Severity, Reason: f.Reason})
				}
			}
			if list.GetContinue() == "" {
				break
			}
			opts.Continue = list.GetContinue()
		}
	}
	var names []string
	for _, ch := range changes {
		names = append(names, ch.String())
	}
	fmt.Fprintf(o.streams.ErrOut, "%s: %d object(s) checked against %s\n", next.Name, objects, strings.Join(names, "; "))
	return out, nil
}
