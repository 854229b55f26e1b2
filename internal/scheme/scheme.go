/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package scheme is the runtime.Scheme of every fieldops client: the
// built-in kinds, CustomResourceDefinitions and fieldops.dev. It is a
// leaf, so a command that needs only a client (kubectl fieldops) does not
// link the controllers.
package scheme

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

// Scheme returns a new scheme with the built-in kinds,
// CustomResourceDefinitions and fieldops.dev.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}
