/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"slices"
	"strings"
	"testing"
)

func TestCompletionArgs(t *testing.T) {
	for _, c := range []struct {
		argv0 string
		args  []string
		want  []string
	}{
		{"/usr/local/bin/kubectl_complete-fieldops", []string{"owners", "deploy/"}, []string{"__complete", "owners", "deploy/"}},
		{"kubectl_complete-fieldops.exe", []string{""}, []string{"__complete", ""}},
		{"/usr/local/bin/kubectl-fieldops", []string{"owners", "deploy/web"}, []string{"owners", "deploy/web"}},
	} {
		if got := completionArgs(c.argv0, c.args); !slices.Equal(got, c.want) {
			t.Errorf("completionArgs(%q, %q) = %q, want %q", c.argv0, c.args, got, c.want)
		}
	}
}

// complete asks the plugin, as kubectl_complete-fieldops is asked, for
// the completions of the last word of args.
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	// The kubeconfig goes before the word to complete, which must stay last.
	words := append([]string{"__complete", args[0], "--kubeconfig", kubeconfig}, args[1:]...)
	out, stderr, err := pluginIn(t, "", words...)
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// The last line is cobra's directive (:4 is NoFileComp).
	if last := lines[len(lines)-1]; last != ":4" {
		t.Errorf("%v: directive %s, want :4", args, last)
	}
	return lines[:len(lines)-1]
}

func TestCompletion(t *testing.T) {
	createNamespace(t, "complete")
	applyAs(t, "helm", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "complete"}, "data": {"a": "1"}}`)
	applyAs(t, "flux", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "complete"}, "data": {"b": "1"}}`)
	applyAs(t, "helm", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "second", "namespace": "complete"}, "data": {"a": "1"}}`)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"owners", "-n", "complete", "configm"}, []string{"configmaps"}},
		{[]string{"owners", "-n", "complete", "cm/se"}, []string{"cm/second", "cm/settings"}},
		{[]string{"owners", "-n", "complete", "cm/second", "cm/se"}, []string{"cm/settings"}},
		{[]string{"owners", "-n", "complete", "configmap", "settings", ""}, []string{"second"}},
		{[]string{"owners", "-n", "complete", "cm/settings", "--manager", ""}, []string{"flux", "helm"}},
		{[]string{"owners", "-n", "compl"}, []string{"complete"}},
		{[]string{"owners", "--color", ""}, []string{"auto", "always", "never"}},
		{[]string{"status", "-o", ""}, []string{"wide", "json", "yaml", "kyaml", "name", "go-template", "template", "jsonpath", "jsonpath-as-json"}},
		{[]string{"plan", "-o", ""}, []string{"json", "yaml", "kyaml", "name", "go-template", "template", "jsonpath", "jsonpath-as-json"}},
	} {
		if got := complete(t, c.args...); !slices.Equal(got, c.want) {
			t.Errorf("%q: %q, want %q", c.args, got, c.want)
		}
	}
}
