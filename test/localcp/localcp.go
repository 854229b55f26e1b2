// Package localcp forwards to internal/localcp, where the local control
// plane lives since it became part of the product (`make run-local`, `make
// demo`). It remains for the suites of controllers/ and ownershipcore/ until
// they import internal/localcp themselves; new code imports that package.
//
// Deprecated: use github.com/fieldops/fieldops/internal/localcp.
package localcp

import "github.com/fieldops/fieldops/internal/localcp"

type (
	// Options tune Start.
	Options = localcp.Options
	// ControlPlane is a running local control plane.
	ControlPlane = localcp.ControlPlane
)

// Start starts the local control plane (see internal/localcp.Start).
func Start(opts Options) (*ControlPlane, error) { return localcp.Start(opts) }

// ModuleRoot returns the directory of the fieldops go.mod.
func ModuleRoot() (string, error) { return localcp.ModuleRoot() }
