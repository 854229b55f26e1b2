/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// version is the plugin's release, set at link time
// (-ldflags "-X main.version=v1.2.3": make kubectl-fieldops-dist does);
// empty, the module version of the build (go install ...@v1.2.3), else
// "(devel)".
var version string

// VersionInfo is what `kubectl fieldops version` prints; -o json and -o
// yaml print it as is.
type VersionInfo struct {
	// Version is the release (v1.2.3), or (devel) for a build from a
	// working tree.
	Version string `json:"version"`
	// Revision and RevisionTime are the VCS commit the binary was built
	// from, when the build recorded it.
	Revision     string `json:"revision,omitempty"`
	RevisionTime string `json:"revisionTime,omitempty"`
	Modified     bool   `json:"modified,omitempty"`
	GoVersion    string `json:"goVersion"`
	Platform     string `json:"platform"`
}

// buildVersion reads the version from the link-time variable and the
// build information the Go toolchain embeds (runtime/debug).
func buildVersion() VersionInfo {
	v := VersionInfo{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if v.Version == "" && bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.time":
				v.RevisionTime = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	return v
}

func newVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	output := newOutputFlags(false)
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of kubectl fieldops",
		Long: `Print the release of this kubectl-fieldops binary, the commit it was
built from (when the build recorded it), its Go version and platform.
It contacts no server.`,
		Example: `  kubectl fieldops version
  kubectl fieldops version -o json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := output.validate(); err != nil {
				return err
			}
			v := buildVersion()
			if !output.table() {
				return output.printDoc(streams.Out, v, nil)
			}
			line := "kubectl-fieldops " + v.Version
			if v.Revision != "" {
				rev := v.Revision
				if len(rev) > 12 {
					rev = rev[:12]
				}
				if v.Modified {
					rev += "-dirty"
				}
				line += " (" + rev + ")"
			}
			_, err := fmt.Fprintf(streams.Out, "%s %s %s\n", line, v.GoVersion, v.Platform)
			return err
		},
	}
	output.addFlags(cmd, "the version information")
	cmd.Flags().Lookup("output").Usage = "output format: json, yaml, jsonpath=..., go-template=...; default one line"
	return cmd
}
