/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/resource"

	"github.com/fieldops/fieldops/ownershipcore"
)

// completerName is the name kubectl (1.26 and later) runs to complete
// the arguments of `kubectl fieldops`: an executable
// kubectl_complete-fieldops on PATH, called with the words to complete
// (kubectl docs, "Extend kubectl with plugins": "Shell completion").
const completerName = "kubectl_complete-fieldops"

// completionArgs turns the command line of the binary into the root
// command's arguments: run as kubectl_complete-fieldops (a link to
// kubectl-fieldops), it answers cobra's hidden __complete request for
// args; run under any other name, args are left as they are.
func completionArgs(argv0 string, args []string) []string {
	name := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	if name != completerName {
		return args
	}
	return append([]string{cobra.ShellCompRequestCmd}, args...)
}

// registerRootCompletions completes kubectl's connection flags: -n with
// the server's namespaces, --context, --cluster and --user with the
// kubeconfig's.
func registerRootCompletions(root *cobra.Command, flags *genericclioptions.ConfigFlags) {
	_ = root.RegisterFlagCompletionFunc("namespace", func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return resourceNames(flags, "namespaces", "", toComplete), cobra.ShellCompDirectiveNoFileComp
	})
	fromKubeconfig := func(names func(clusters, contexts, users []string) []string) cobra.CompletionFunc {
		return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			cfg, err := flags.ToRawKubeConfigLoader().RawConfig()
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var clusters, contexts, users []string
			for n := range cfg.Clusters {
				clusters = append(clusters, n)
			}
			for n := range cfg.Contexts {
				contexts = append(contexts, n)
			}
			for n := range cfg.AuthInfos {
				users = append(users, n)
			}
			return withPrefix(names(clusters, contexts, users), toComplete), cobra.ShellCompDirectiveNoFileComp
		}
	}
	_ = root.RegisterFlagCompletionFunc("context", fromKubeconfig(func(_, c, _ []string) []string { return c }))
	_ = root.RegisterFlagCompletionFunc("cluster", fromKubeconfig(func(c, _, _ []string) []string { return c }))
	_ = root.RegisterFlagCompletionFunc("user", fromKubeconfig(func(_, _, u []string) []string { return u }))
}

// registerFlagCompletions completes each named flag of cmd with a fixed
// list of values.
func registerFlagCompletions(cmd *cobra.Command, values map[string][]string) {
	for flag, vals := range values {
		_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(vals, cobra.ShellCompDirectiveNoFileComp))
	}
}

// completeObjects completes kubectl get's object arguments: a resource
// type (from the server's discovery), TYPE/NAME, or the NAMEs after a
// TYPE, names listed through cli-runtime's resource builder in the
// namespace of -n (or the context's).
func completeObjects(flags *genericclioptions.ConfigFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		ns, _, _ := flags.ToRawKubeConfigLoader().Namespace()
		if len(args) > 0 && !strings.Contains(args[0], "/") {
			names := resourceNames(flags, args[0], ns, toComplete)
			return slices.DeleteFunc(names, func(n string) bool { return slices.Contains(args[1:], n) }), cobra.ShellCompDirectiveNoFileComp
		}
		if typ, name, ok := strings.Cut(toComplete, "/"); ok {
			var out []string
			for _, n := range resourceNames(flags, typ, ns, name) {
				if !slices.Contains(args, typ+"/"+n) {
					out = append(out, typ+"/"+n)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		}
		return resourceTypes(flags, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeManagers completes --manager with the field managers of the
// objects already named by the arguments.
func completeManagers(flags *genericclioptions.ConfigFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ns, _, _ := flags.ToRawKubeConfigLoader().Namespace()
		infos, _ := resource.NewBuilder(flags).Unstructured().ContinueOnError().
			NamespaceParam(ns).DefaultNamespace().
			ResourceTypeOrNameArgs(false, args...).Flatten().Do().Infos()
		var out []string
		for _, info := range infos {
			obj, ok := info.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			entries, err := ownershipcore.Owners(obj)
			if err != nil {
				continue
			}
			for _, m := range entries.Managers() {
				if !slices.Contains(out, m) {
					out = append(out, m)
				}
			}
		}
		sort.Strings(out)
		return withPrefix(out, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// resourceNames lists the names of the objects of resource type typ in
// namespace ns that start with prefix, sorted; nothing on any error
// (completion stays silent).
func resourceNames(flags *genericclioptions.ConfigFlags, typ, ns, prefix string) []string {
	infos, _ := resource.NewBuilder(flags).Unstructured().ContinueOnError().
		NamespaceParam(ns).DefaultNamespace().
		ResourceTypeOrNameArgs(true, typ).SingleResourceType().
		Flatten().Do().Infos()
	var names []string
	for _, info := range infos {
		names = append(names, info.Name)
	}
	sort.Strings(names)
	return withPrefix(names, prefix)
}

// resourceTypes lists the resource types the server serves that can be
// read (get and list), by their plural names, starting with prefix.
func resourceTypes(flags *genericclioptions.ConfigFlags, prefix string) []string {
	dc, err := flags.ToDiscoveryClient()
	if err != nil {
		return nil
	}
	lists, _ := dc.ServerPreferredResources()
	var types []string
	for _, l := range lists {
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "get") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			if !slices.Contains(types, r.Name) {
				types = append(types, r.Name)
			}
		}
	}
	sort.Strings(types)
	return withPrefix(types, prefix)
}

func withPrefix(values []string, prefix string) []string {
	var out []string
	for _, v := range values {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	return out
}
