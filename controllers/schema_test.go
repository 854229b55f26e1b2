/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/fieldops/fieldops/ownershipcore"
)

// Each CRD change is invalidated at once and once more after
// republishDelay; the follow-up does not requeue again. (Invalidation
// itself makes no request: the discovery client points nowhere.)
func TestSchemaInvalidatorRequeuesOnce(t *testing.T) {
	clock := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	s := &schemaInvalidator{schema: ownershipcore.NewSchema(discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: "http://127.0.0.1:1"})), now: func() time.Time { return clock }, first: map[string]time.Time{}}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Name: "widgets.example.com"}}
	for _, step := range []struct {
		after time.Duration
		want  time.Duration
	}{
		{0, republishDelay},               // a change
		{republishDelay, 0},               // its follow-up
		{time.Minute, republishDelay},     // a later change
		{time.Second, 0},                  // an event during the delay
		{republishDelay - time.Second, 0}, // the follow-up
	} {
		clock = clock.Add(step.after)
		res, err := s.Reconcile(context.Background(), req)
		if err != nil || res.RequeueAfter != step.want {
			t.Errorf("after %v: %+v %v, want RequeueAfter %v", step.after, res, err, step.want)
		}
	}
}
