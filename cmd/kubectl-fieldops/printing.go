/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// Output formats every command prints itself; the others (name,
// jsonpath, go-template, ...) are cli-runtime's printers.
const (
	outputTable = ""
	outputWide  = "wide"
	outputJSON  = "json"
	outputYAML  = "yaml"
	outputName  = "name"
)

// outputFlags is a command's -o: a table by default (and -o wide where
// the command has a wider one), json and yaml as the command's own
// documents, and the formats of kubectl's printers through cli-runtime's
// PrintFlags (name, jsonpath=, jsonpath-file=, go-template=,
// go-template-file=, template=, templatefile=, with --template and
// --allow-missing-template-keys as kubectl get has them).
type outputFlags struct {
	print *genericclioptions.PrintFlags
	// wide says the command has an -o wide table.
	wide bool
}

func newOutputFlags(wide bool) *outputFlags {
	return &outputFlags{print: genericclioptions.NewPrintFlags(""), wide: wide}
}

// formats are the values -o accepts.
func (f *outputFlags) formats() []string {
	out := []string{}
	if f.wide {
		out = append(out, outputWide)
	}
	for _, v := range f.print.AllowedFormats() {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// addFlags adds -o (with completion) and the template flags to cmd.
// what says what json and yaml print.
func (f *outputFlags) addFlags(cmd *cobra.Command, what string) {
	f.print.AddFlags(cmd)
	table := "a table"
	if f.wide {
		table = "a table; wide adds columns"
	}
	cmd.Flags().Lookup("output").Usage = fmt.Sprintf("output format: one of %s. json and yaml print %s; the others print it through kubectl's printers (name: KIND/NAME; jsonpath and go-template see it as a List of items). Default: %s",
		strings.Join(f.formats(), ", "), what, table)
	var values []string
	for _, v := range f.formats() {
		if !strings.HasSuffix(v, "-file") && v != "templatefile" {
			values = append(values, v)
		}
	}
	registerFlagCompletions(cmd, map[string][]string{"output": values})
}

// format is the -o value.
func (f *outputFlags) format() string { return *f.print.OutputFormat }

// table says -o asks for the command's table (default or wide).
func (f *outputFlags) table() bool {
	return f.format() == outputTable || (f.wide && f.format() == outputWide)
}

// validate checks -o (and a template's syntax) before anything is read.
func (f *outputFlags) validate() error {
	switch f.format() {
	case outputTable, outputJSON, outputYAML:
		return nil
	case outputWide:
		if f.wide {
			return nil
		}
	}
	if _, err := f.print.ToPrinter(); err != nil {
		if genericclioptions.IsNoCompatiblePrinterError(err) {
			return fmt.Errorf("--output %q: want one of %s", f.format(), strings.Join(f.formats(), ", "))
		}
		return fmt.Errorf("--output %q: %w", f.format(), err)
	}
	return nil
}

// printDoc prints doc for -o json or yaml (printDocument) or through
// cli-runtime's printer of -o: a slice doc as a List of items, named
// the objects named lists (apiVersion, kind, metadata.name and
// namespace of each item, for -o name).
func (f *outputFlags) printDoc(w io.Writer, doc interface{}, named []*unstructured.Unstructured) error {
	switch f.format() {
	case outputJSON, outputYAML:
		return printDocument(w, f.format(), doc)
	case outputName:
		p, err := f.print.ToPrinter()
		if err != nil {
			return err
		}
		list := &unstructured.UnstructuredList{Object: map[string]interface{}{"apiVersion": "v1", "kind": "List"}}
		for _, u := range named {
			list.Items = append(list.Items, *u)
		}
		return p.PrintObj(list, w)
	}
	p, err := f.print.ToPrinter()
	if err != nil {
		return err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	var v interface{}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	obj, ok := v.(map[string]interface{})
	if !ok {
		items, _ := v.([]interface{})
		if items == nil {
			items = []interface{}{}
		}
		obj = map[string]interface{}{"apiVersion": "v1", "kind": "List", "items": items}
	}
	return p.PrintObj(&unstructured.Unstructured{Object: obj}, w)
}

// namedObject is an object's identity for -o name.
func namedObject(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// noResources prints kubectl get's note for an empty result to w (the
// command's standard error): "No resources found in NS namespace.", or
// "No resources found" across namespaces. The command still succeeds.
func noResources(w io.Writer, namespace string) {
	if namespace == "" {
		fmt.Fprintln(w, "No resources found")
		return
	}
	fmt.Fprintf(w, "No resources found in %s namespace.\n", namespace)
}
