// Command kubectl-fieldops is the kubectl plugin of fieldops: put it on
// PATH and run `kubectl fieldops`.
//
//	kubectl fieldops owners deployment/web [-n NS] [--manager NAME] [-o json|yaml]
//	kubectl fieldops status [-n NS | -A] [-o json]
//
// owners prints an object's YAML with the field manager, operation and age
// of the managed fields entry owning each line (the view kubectl-blame
// gives, from ownershipcore.Blame); status lists FieldPatches,
// ClusterFieldPatches, ManagedWorkloads and PodSets with their readiness
// and contested fields. Kubeconfig flags are kubectl's (k8s.io/cli-runtime).
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func main() {
	cmd := NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
