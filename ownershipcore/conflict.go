/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/fieldops/fieldops/ownershipcore/strategy"
)

// Conflict is one field of the intent that another field manager owns
// with a different value (strategy.Conflict).
type Conflict = strategy.Conflict

// ConflictError is returned by Applier.Apply when a ConflictStrategy failed
// the apply; nothing was written.
type ConflictError struct {
	Conflicts []Conflict
}

func (e *ConflictError) Error() string {
	parts := make([]string, len(e.Conflicts))
	for i, c := range e.Conflicts {
		parts[i] = c.Error()
	}
	return fmt.Sprintf("apply failed with %d conflict(s): %s", len(e.Conflicts), strings.Join(parts, "; "))
}

// Decision is a ConflictStrategy's answer for one conflict
// (strategy.Decision).
type Decision = strategy.Decision

// Decisions (strategy.DecisionForce, DecisionYield, DecisionFail).
const (
	DecisionForce = strategy.DecisionForce
	DecisionYield = strategy.DecisionYield
	DecisionFail  = strategy.DecisionFail
)

// Resolution is a decision and why (strategy.Resolution).
type Resolution = strategy.Resolution

// ConflictStrategy decides, per conflict, whether to force, yield or fail
// (strategy.ConflictStrategy).
type ConflictStrategy = strategy.ConflictStrategy

// Static answers every conflict with the same decision (strategy.Static).
type Static = strategy.Static

// conflictsFrom reads the conflicts of an apiserver (or local field manager)
// 409 answer. Paths there are printed with fieldpath.Path.String, which is
// ambiguous for field names with dots, so each is matched against the
// intent's field set, where every conflicting path must be.
func conflictsFrom(err error, intent *fieldpath.Set) ([]Conflict, bool) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsConflict(err) {
		return nil, false
	}
	details := status.Status().Details
	if details == nil {
		return nil, false
	}
	byString := map[string]fieldpath.Path{}
	if intent != nil {
		// Iterate reuses its path: keep a copy.
		intent.Iterate(func(p fieldpath.Path) { byString[p.String()] = p.Copy() })
	}
	var out []Conflict
	for _, cause := range details.Causes {
		if cause.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		c := Conflict{Operation: metav1.ManagedFieldsOperationApply}
		rest := strings.TrimPrefix(cause.Message, "conflict with ")
		if q, err := strconv.QuotedPrefix(rest); err == nil {
			c.Manager, _ = strconv.Unquote(q)
			if strings.Contains(rest[len(q):], " using ") {
				c.Operation = metav1.ManagedFieldsOperationUpdate
			}
		}
		if p, ok := byString[cause.Field]; ok {
			c.Path = p
		} else if p, err := ParsePath(cause.Field); err == nil {
			c.Path = p
		} else {
			return nil, false
		}
		out = append(out, c)
	}
	// The apiserver lists conflicts in map order: sort them, so that the
	// same conflicts always read the same (no status rewrite, no repeated
	// event, on every reconcile). One manager may own a field twice, by
	// Apply and by Update, so the operation is part of the order.
	sort.Slice(out, func(i, j int) bool {
		pi, pj := out[i].Path.String(), out[j].Path.String()
		if pi != pj {
			return pi < pj
		}
		if out[i].Manager != out[j].Manager {
			return out[i].Manager < out[j].Manager
		}
		return out[i].Operation < out[j].Operation
	})
	return out, len(out) > 0
}
