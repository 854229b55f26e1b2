/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/fieldops/fieldops/internal/fieldplan"
)

// planHeader is the plan's header: kind, name, verb and field manager,
// the patch's target and policies, and the action.
func planHeader(p Plan) string {
	name := p.Name
	if p.Namespace != "" {
		name = p.Namespace + "/" + p.Name
	}
	verb := "create"
	switch {
	case p.Action == fieldplan.ActionDelete || p.Patch != nil && p.Patch.Deletion != nil:
		verb = "delete"
	case p.Exists:
		verb = "change"
	}
	head := fmt.Sprintf("%s %s (%s; field manager %s)\n", p.Kind, name, verb, p.FieldManager)
	if p.Patch != nil {
		head += fmt.Sprintf("target %s, type %s, conflictPolicy %s, deletionPolicy %s\n", p.Patch.Target, p.Patch.Type, p.Patch.ConflictPolicy, p.Patch.DeletionPolicy)
	}
	head += "action: " + p.Action
	if p.Message != "" {
		head += ": " + p.Message
	}
	return head
}

// planTable is the plan's table: the fields of a patch's deletion, the
// fields of a patch, or the objects of a workload; nil when it has none.
func planTable(p Plan) [][]cell {
	switch {
	case p.Patch != nil && len(p.Patch.Deletion) > 0:
		return deletionTable(p.Patch.Deletion)
	case p.Patch != nil && len(p.Patch.Fields) > 0:
		return fieldTable(p.Patch.Fields)
	case len(p.Objects) > 0:
		return objectTable(p.Objects)
	}
	return nil
}

func deletionTable(fields []DeletionFieldPlan) [][]cell {
	table := [][]cell{{{text: "FIELD"}, {text: "ACTION"}, {text: "OWNERS AFTER"}, {text: "VALUE AFTER"}}}
	for _, f := range fields {
		action := f.Action
		if f.Why != "" {
			action += " (" + f.Why + ")"
		}
		table = append(table, []cell{{text: f.Path}, {text: action}, {text: dash(strings.Join(f.OwnersAfter, ", "))}, {text: f.ValueAfter}})
	}
	return table
}

func fieldTable(fields []FieldPlan) [][]cell {
	table := [][]cell{{{text: "FIELD"}, {text: "OWNER NOW"}, {text: "PLAN"}, {text: "DECISION"}, {text: "ON DELETE"}}}
	for _, f := range fields {
		table = append(table, []cell{{text: f.Path}, {text: dash(strings.Join(f.Owners, ", "))}, {text: f.Plan}, {text: dash(f.Decision)}, {text: dash(f.OnDelete)}})
	}
	return table
}

func objectTable(objects []ObjectPlan) [][]cell {
	table := [][]cell{{{text: "OBJECT"}, {text: "ACTION"}, {text: "FIELDS"}, {text: "TAKEN FROM OTHERS"}}}
	for _, o := range objects {
		taken := strings.Join(o.Taken, ", ")
		if len(o.Yielded) > 0 {
			taken = strings.TrimPrefix(taken+"; yielded "+strings.Join(o.Yielded, ", "), "; ")
		}
		if o.Message != "" {
			taken = strings.TrimPrefix(taken+"; "+o.Message, "; ")
		}
		table = append(table, []cell{{text: o.ObjectRef.String()}, {text: o.Action}, {text: fmt.Sprint(o.OwnedFields)}, {text: dash(taken)}})
	}
	return table
}

// writePlanNotes writes a patch plan's notes, one line each.
func writePlanNotes(w io.Writer, p Plan) error {
	if p.Patch == nil {
		return nil
	}
	for _, n := range p.Patch.Notes {
		if _, err := fmt.Fprintln(w, "note: "+n); err != nil {
			return err
		}
	}
	return nil
}
