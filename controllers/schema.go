package controllers

import (
	"context"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/fieldops/fieldops/ownershipcore"
)

// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch

// schemaInvalidator drops the ownership core's cached schema of a group
// whenever one of its CustomResourceDefinitions is created, changes its
// schema, or is deleted, so list and map semantics follow the CRD.
type schemaInvalidator struct {
	schema *ownershipcore.Schema
}

func (s *schemaInvalidator) Reconcile(_ context.Context, req ctrl.Request) (ctrl.Result, error) {
	// A CRD is named <plural>.<group>.
	if _, group, ok := strings.Cut(req.Name, "."); ok {
		s.schema.InvalidateGroup(group)
	}
	return ctrl.Result{}, nil
}

func setupSchemaInvalidator(mgr ctrl.Manager, schema *ownershipcore.Schema) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&apiextensionsv1.CustomResourceDefinition{}, builder.WithPredicates(predicate.GenerationChangedPredicate{}), builder.OnlyMetadata).
		Named("schema").
		Complete(&schemaInvalidator{schema: schema})
}
