/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command yield-to-autoscalers is a fieldops conflict-strategy plugin, and
// the template for writing one: it yields spec.replicas to autoscalers
// (the HorizontalPodAutoscaler, the VerticalPodAutoscaler, KEDA) and forces
// every other conflict.
//
// Build it with `make plugins`, pin its SHA-256 in the --plugin-config
// file, and refer to it from a FieldPatch with `conflictPolicy: Plugin`
// and `conflictPlugin: yield-to-autoscalers`.
package main

import (
	"context"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/ownershipcore/fieldset"
	"github.com/fieldops/fieldops/ownershipcore/strategy"
	"github.com/fieldops/fieldops/plugins/sdk"
)

// autoscalerManagers are field manager names, or prefixes ending in "*",
// of the controllers that scale workloads. FIELDOPS_AUTOSCALER_MANAGERS
// (comma-separated) adds more.
var autoscalerManagers = []string{
	"hpa",
	"horizontal-pod-autoscaler",
	"kube-controller-manager", // the in-tree HPA writes replicas through the scale subresource
	"vpa-*",
	"keda-*",
}

// Strategy is the plugin's strategy.ConflictStrategy.
type Strategy struct {
	Managers []string
}

// Resolve yields .spec.replicas to an autoscaler and forces the rest.
func (s Strategy) Resolve(_ context.Context, _ *unstructured.Unstructured, _ string, conflicts []strategy.Conflict) ([]strategy.Resolution, error) {
	out := make([]strategy.Resolution, len(conflicts))
	for i, c := range conflicts {
		if fieldset.FormatPath(c.Path) == ".spec.replicas" && s.isAutoscaler(c.Manager) {
			out[i] = strategy.Resolution{Decision: strategy.DecisionYield, Message: "replicas belong to autoscaler " + c.Manager}
			continue
		}
		out[i] = strategy.Resolution{Decision: strategy.DecisionForce, Message: "not an autoscaled field"}
	}
	return out, nil
}

func (s Strategy) isAutoscaler(manager string) bool {
	for _, m := range s.Managers {
		if prefix, ok := strings.CutSuffix(m, "*"); ok && strings.HasPrefix(manager, prefix) || m == manager {
			return true
		}
	}
	return false
}

func main() {
	managers := autoscalerManagers
	if extra := os.Getenv("FIELDOPS_AUTOSCALER_MANAGERS"); extra != "" {
		managers = append(managers, strings.Split(extra, ",")...)
	}
	sdk.Serve(sdk.Plugins{ConflictStrategy: Strategy{Managers: managers}})
}
