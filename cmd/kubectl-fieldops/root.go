/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/internal/scheme"
	"github.com/fieldops/fieldops/ownershipcore"
)

// now is the clock owners measures ages with (tests fix it).
var now = time.Now

// NewCommand is the root command with kubectl's kubeconfig flags
// (--kubeconfig, --context, -n, --as, ...).
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:          "kubectl-fieldops",
		Annotations:  map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl fieldops"},
		Short:        "Field ownership of Kubernetes objects, and the state of fieldops's objects",
		SilenceUsage: true,
		// kubectl completes a plugin through kubectl_complete-fieldops
		// (see completionArgs); the shell scripts of `completion` are for
		// running kubectl-fieldops by itself.
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: true},
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	flags.AddFlags(root.PersistentFlags())
	registerRootCompletions(root, flags)
	root.AddCommand(newOwnersCommand(flags, streams, now), newStatusCommand(flags, streams), newCheckCRDCommand(flags, streams), newPlanCommand(flags, streams), newHelmPostrenderCommand(flags, streams), newVersionCommand(streams))
	return root
}

// newClient is a controller-runtime client on the kubeconfig the flags
// select, knowing fieldops's kinds.
func newClient(flags *genericclioptions.ConfigFlags) (client.Client, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	mapper, err := flags.ToRESTMapper()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme(), Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return c, nil
}

// connection is what plan and helm-postrender read the cluster with: a
// client, its rest config, the namespace of -n (or the kubeconfig
// context's), and an ownershipcore.Applier whose reads go to the
// apiserver (no cache: objects as they are now), with the apiserver's
// OpenAPI as its schema.
type connection struct {
	client    client.Client
	config    *rest.Config
	namespace string
	applier   *ownershipcore.Applier
}

// connect opens the connection the flags select.
func connect(flags *genericclioptions.ConfigFlags) (*connection, error) {
	c, err := newClient(flags)
	if err != nil {
		return nil, err
	}
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ns, err := namespace(flags)
	if err != nil {
		return nil, err
	}
	applier, err := ownershipcore.NewApplier(c, c, c, ownershipcore.NewSchema(dc))
	if err != nil {
		return nil, err
	}
	return &connection{client: c, config: cfg, namespace: ns, applier: applier}, nil
}

// namespace is -n, or the kubeconfig context's namespace.
func namespace(flags *genericclioptions.ConfigFlags) (string, error) {
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	return ns, err
}
