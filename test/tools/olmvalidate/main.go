// Command olmvalidate checks an OLM bundle directory with the validators
// of github.com/operator-framework/api (what `operator-sdk bundle
// validate --select-optional suite=operatorframework` runs): the default
// bundle validators, good practices (channel naming among them),
// OperatorHub, standard capabilities and categories, and multiple
// architectures (the operatorframework.io/arch.* and os.* labels).
//
//	olmvalidate bundle/
//
// It prints every error and warning and exits 1 on an error, or on a
// warning that is not tolerated (tolerated: what needs a container
// engine to pull and inspect the image, which the build machines do not
// have, and the validator's reading of an RBAC rule for events.k8s.io
// events, which names no version, as the removed v1beta1). It is a module of its own, so that
// the project's go.mod does not inherit operator-framework/api.
package main

import (
	"fmt"
	"os"
	"strings"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	apivalidation "github.com/operator-framework/api/pkg/validation"
)

// tolerated are substrings of warnings that do not fail the check, with
// why.
var tolerated = []struct{ substring, why string }{
	{"unable to inspect the image", "no container engine to pull the image with"},
	{"node affinity configuration for the image", "derived from the image inspection, which needs a container engine"},
	{"Migrate the API(s) for events", "an RBAC rule names no version: the validator takes events.k8s.io events for the removed v1beta1; the manager uses events.k8s.io/v1"},
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: olmvalidate BUNDLE-DIR")
		os.Exit(2)
	}
	b, err := apimanifests.GetBundleFromDir(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "olmvalidate:", err)
		os.Exit(1)
	}
	validators := apivalidation.DefaultBundleValidators.WithValidators(
		apivalidation.GoodPracticesValidator,
		apivalidation.OperatorHubV2Validator,
		apivalidation.StandardCapabilitiesValidator,
		apivalidation.StandardCategoriesValidator,
		apivalidation.MultipleArchitecturesValidator,
	)
	// No container engine: the multiple-architectures validator then
	// checks the labels without the image's manifest list.
	objs := append(b.ObjectsToValidate(), map[string]string{"container-tools": "none"})
	failed := false
	for _, r := range validators.Validate(objs...) {
		for _, e := range r.Errors {
			fmt.Printf("ERROR %s\n", oneLine(e.Error()))
			failed = true
		}
		for _, w := range r.Warnings {
			why := ""
			for _, t := range tolerated {
				if strings.Contains(w.Error(), t.substring) {
					why = t.why
				}
			}
			if why == "" {
				fmt.Printf("WARN %s\n", oneLine(w.Error()))
				failed = true
				continue
			}
			fmt.Printf("WARN (tolerated: %s) %s\n", why, oneLine(w.Error()))
		}
	}
	if failed {
		os.Exit(1)
	}
	fmt.Printf("%s: channels %v, default %s: valid\n", os.Args[1], b.Channels, b.DefaultChannel)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
