/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command manager runs the fieldops controllers.
//
//	manager [--kubeconfig PATH] [--feature-gates Name=bool,...]
//
// For a local control plane instead of a cluster, see cmd/fieldops-local
// (`make run-local`); this binary does not link it.
package main

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/fieldops/fieldops/cmd/manager/app"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fieldops:", err)
		os.Exit(1)
	}
}

func run() error {
	var f app.Flags
	fs := f.NewFlagSet("manager", true)
	if help, err := app.Parse(fs, os.Args[1:]); help || err != nil {
		return err
	}
	return f.Run(ctrl.SetupSignalHandler(), func() (*rest.Config, error) { return ctrl.GetConfig() })
}
