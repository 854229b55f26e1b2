/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"strings"
	"sync"
	"time"

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
//
// The apiserver republishes a group's OpenAPI a moment after the CRD
// changes, so a schema read between the watch event and the republish is
// stale: each change is invalidated twice, again after republishDelay.
// (A stale schema that lacks a field heals by itself, see
// ownershipcore.Schema.ToTyped; a changed list or map type does not.)
type schemaInvalidator struct {
	schema *ownershipcore.Schema
	now    func() time.Time

	mu sync.Mutex
	// first is when the latest change of each CRD was first invalidated.
	first map[string]time.Time
}

const republishDelay = 5 * time.Second

func (s *schemaInvalidator) Reconcile(_ context.Context, req ctrl.Request) (ctrl.Result, error) {
	// A CRD is named <plural>.<group>.
	if _, group, ok := strings.Cut(req.Name, "."); ok {
		s.schema.InvalidateGroup(group)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if t, ok := s.first[req.Name]; ok && now.Sub(t) < 2*republishDelay {
		return ctrl.Result{}, nil // the follow-up of a change
	}
	s.first[req.Name] = now
	return ctrl.Result{RequeueAfter: republishDelay}, nil
}

func setupSchemaInvalidator(mgr ctrl.Manager, schema *ownershipcore.Schema) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&apiextensionsv1.CustomResourceDefinition{}, builder.WithPredicates(predicate.GenerationChangedPredicate{}), builder.OnlyMetadata).
		Named("schema").
		Complete(&schemaInvalidator{schema: schema, now: time.Now, first: map[string]time.Time{}})
}
