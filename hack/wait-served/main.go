/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command wait-served returns once the cluster of the current kubeconfig
// serves every fieldops kind (internal/served.Wait): `make install` and
// `make deploy` run it after applying the CRDs, so that what comes next
// can create fieldops objects at once.
//
//	go run ./hack/wait-served [--timeout 2m] [--kubeconfig FILE]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/fieldops/fieldops/internal/served"
)

func main() {
	timeout := flag.Duration("timeout", 2*time.Minute, "how long to wait")
	crds := flag.Int("crds", 0, "how many CRDs of the fieldops.dev group must exist (0: at least one; kubectl apply creates them all before it returns)")
	ctrl.RegisterFlags(flag.CommandLine)
	flag.Parse()
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "wait-served:", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	start := time.Now()
	if err := served.Wait(ctx, cfg, served.Group, *crds); err != nil {
		fmt.Fprintln(os.Stderr, "wait-served:", err)
		os.Exit(1)
	}
	fmt.Printf("every %s kind is served (%.1fs)\n", served.Group, time.Since(start).Seconds())
}
