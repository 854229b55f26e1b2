/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchplan

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// answers is a conflict strategy that asks next once per conflict (field
// manager, operation, field and the field's value in the object asked
// about) and keeps its answer: a plan decided again before it is sent (a
// staged plan, Applier.Decide; a second Make with the records it lacked)
// gets the answers the plan was made with, and asks next only about
// conflicts it has not seen (a field whose value changed since is asked
// about again: a plugin may decide by value). A plugin is so
// asked once per conflict in a reconcile, and the record saved before the
// apply holds the owners of exactly the fields the apply forces.
type answers struct {
	next ownershipcore.ConflictStrategy
	mu   sync.Mutex
	seen map[string]ownershipcore.Resolution
}

// remember wraps s (nil stays nil: the core's default, Fail).
func remember(s ownershipcore.ConflictStrategy) ownershipcore.ConflictStrategy {
	if s == nil {
		return nil
	}
	if a, ok := s.(*answers); ok {
		return a
	}
	return &answers{next: s, seen: map[string]ownershipcore.Resolution{}}
}

// Resolve implements ownershipcore.ConflictStrategy.
func (a *answers) Resolve(ctx context.Context, obj *unstructured.Unstructured, manager string, conflicts []ownershipcore.Conflict) ([]ownershipcore.Resolution, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	keys := make([]string, len(conflicts))
	var ask []ownershipcore.Conflict
	var askKeys []string
	for i, c := range conflicts {
		keys[i] = conflictKey(obj, c)
		if _, ok := a.seen[keys[i]]; !ok && !slices.Contains(askKeys, keys[i]) {
			ask, askKeys = append(ask, c), append(askKeys, keys[i])
		}
	}
	if len(ask) > 0 {
		got, err := a.next.Resolve(ctx, obj, manager, ask)
		if err != nil || len(got) != len(ask) {
			return got, err // the core refuses an answer of another length
		}
		for i, k := range askKeys {
			a.seen[k] = got[i]
		}
	}
	out := make([]ownershipcore.Resolution, len(conflicts))
	for i, k := range keys {
		out[i] = a.seen[k]
	}
	return out, nil
}

// conflictKey names a conflict in obj: its field manager, operation,
// field and the field's value there (JSON; none when obj lacks it).
func conflictKey(obj *unstructured.Unstructured, c ownershipcore.Conflict) string {
	value := ""
	if v, ok := ownershipcore.ValueAt(obj, c.Path); ok {
		b, _ := json.Marshal(v)
		value = string(b)
	}
	return c.Manager + "\x00" + string(c.Operation) + "\x00" + fieldset.FormatPath(c.Path) + "\x00" + value
}
