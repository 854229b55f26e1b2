/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

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
	// file is -f: the file of the new CRDs, - for standard input.
	file string
}

func newCheckCRDCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &checkCRDOptions{flags: flags, streams: streams, output: newOutputFlags(false)}
	cmd := &cobra.Command{
		Use:   "check-crd -f NEW-CRD.yaml",
		Short: "Report what a change of a CRD's list and map types would break in the objects already stored",
		Long: `Compare each CustomResourceDefinition of the file (- reads standard input)
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

The file is named with -f, as for plan; the positional form
(check-crd FILE) still works but is deprecated.`,
		Example: `  kubectl fieldops check-crd -f config/crd/bases/example.com_widgets.yaml
  controller-gen crd paths=./api/... output:stdout | kubectl fieldops check-crd -f - -o yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file, err := o.fileArg(args)
			if err != nil {
				return err
			}
			return o.run(cmd.Context(), file)
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return []string{"yaml", "yml", "json"}, cobra.ShellCompDirectiveFilterFileExt
		},
	}
	cmd.Flags().StringVarP(&o.file, "filename", "f", "", "the file of the new CustomResourceDefinitions (- reads standard input)")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	o.output.addFlags(cmd, "the findings")
	cmd.Flags().StringVar(&o.color, "color", "auto", "colour the severity: auto (when printing to a terminal and NO_COLOR is unset), always or never")
	registerFlagCompletions(cmd, map[string][]string{"color": colorModes})
	return cmd
}

// fileArg is the file of -f, or of the deprecated positional argument
// (with a warning on standard error).
func (o *checkCRDOptions) fileArg(args []string) (string, error) {
	switch {
	case o.file != "" && len(args) > 0:
		return "", fmt.Errorf("name the file once: -f %s, not also %s", o.file, args[0])
	case o.file != "":
		return o.file, nil
	case len(args) == 1:
		fmt.Fprintf(o.streams.ErrOut, "Warning: check-crd FILE is deprecated: use check-crd -f %s\n", args[0])
		return args[0], nil
	}
	return "", errors.New("check-crd needs -f FILE (- reads standard input)")
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

// readCRDs decodes every CustomResourceDefinition of a YAML or JSON
// stream (several documents allowed); other kinds are an error.
func readCRDs(r io.Reader) ([]*apiextv1.CustomResourceDefinition, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*apiextv1.CustomResourceDefinition
	for {
		var raw map[string]interface{}
		if err := dec.Decode(&raw); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		if raw == nil {
			continue
		}
		u := unstructured.Unstructured{Object: raw}
		if u.GetAPIVersion() != "apiextensions.k8s.io/v1" || u.GetKind() != "CustomResourceDefinition" {
			return nil, fmt.Errorf("%s %s is not an apiextensions.k8s.io/v1 CustomResourceDefinition", u.GetAPIVersion(), u.GetKind())
		}
		b, err := yaml.Marshal(raw)
		if err != nil {
			return nil, err
		}
		crd := &apiextv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			return nil, fmt.Errorf("CustomResourceDefinition %s: %w", u.GetName(), err)
		}
		out = append(out, crd)
	}
	if len(out) == 0 {
		return nil, errors.New("no CustomResourceDefinition in the input")
	}
	return out, nil
}

func (o *checkCRDOptions) run(ctx context.Context, file string) error {
	if err := o.output.validate(); err != nil {
		return err
	}
	paint, err := newPainter(o.color, o.streams.Out)
	if err != nil {
		return err
	}
	in, err := o.readFile(file)
	if err != nil {
		return err
	}
	crds, err := readCRDs(bytes.NewReader(in))
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
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

// readFile reads file, or the command's input stream for -.
func (o *checkCRDOptions) readFile(file string) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(o.streams.In)
	}
	return os.ReadFile(file)
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
