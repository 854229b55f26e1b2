/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package invariants

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

// Field is one field of an intent or of a change: a path in the ownership
// core's form and its value. A nil Value removes the field (Update steps
// only); a set element's value is true.
type Field struct {
	Path  string
	Value interface{}
}

// String prints the field as `path=value` (JSON), `path removed`, or the
// path of a set element.
func (f Field) String() string {
	switch {
	case f.Value == nil:
		return f.Path + " removed"
	case isSetValue(mustPath(f.Path)):
		return f.Path
	}
	b, _ := json.Marshal(f.Value)
	return f.Path + "=" + string(b)
}

// Op is what a step does.
type Op int

// The operations of a step.
const (
	// OpCreate: the manager "base" creates the target.
	OpCreate Op = iota
	// OpApply: a manager applies its whole intent with Server-Side Apply;
	// fields it applied before and leaves out are relinquished.
	OpApply
	// OpUpdate: a manager changes or removes fields with a JSON merge
	// patch or an RFC 6902 JSON patch (an Update operation).
	OpUpdate
	// OpPatchCreate creates a FieldPatch.
	OpPatchCreate
	// OpPatchEdit replaces a FieldPatch's patch.
	OpPatchEdit
	// OpPatchDelete deletes a FieldPatch and waits until it is gone; with
	// Expire, the patch expires instead (spec.expiresAt set to now) and
	// deletes itself.
	OpPatchDelete
	// OpWorkloadApply creates or changes a ManagedWorkload whose one
	// resource is the target.
	OpWorkloadApply
	// OpWorkloadDelete deletes a ManagedWorkload and waits until it is gone.
	OpWorkloadDelete
	// OpRestart stops the fieldops manager and starts a new one.
	OpRestart
)

// Step is one step of a sequence. Which fields matter depends on Op.
type Step struct {
	Op Op
	// Who is the field manager (OpCreate, OpApply, OpUpdate), the
	// FieldPatch or the ManagedWorkload.
	Who string
	// Fields are the intent (apply, FieldPatch, workload) or the change
	// (update).
	Fields []Field
	// Force applies with force (OpApply).
	Force bool
	// JSONPatch sends an update as an RFC 6902 JSON patch instead of a
	// JSON merge patch (OpUpdate).
	JSONPatch bool
	// Type, Conflict and Deletion are the FieldPatch's (OpPatch*).
	Type     v1alpha1.PatchType
	Conflict v1alpha1.ConflictPolicy
	Deletion v1alpha1.DeletionPolicy
	// Append, for a JSON FieldPatch, is a value its patch also appends to
	// .spec.setList ("add" at "/spec/setList/-", not idempotent).
	Append string
	// Selector makes the FieldPatch select its target (spec.targetSelector:
	// every object of the kind in the namespace, by the target's name)
	// instead of naming it (spec.target) (OpPatchCreate, OpPatchEdit).
	Selector bool
	// Expire ends the FieldPatch by expiry instead of a delete request
	// (OpPatchDelete): its deletion policy runs all the same.
	Expire bool
	// APIVersion is the version the request is sent in (OpApply,
	// OpUpdate) or the FieldPatch targets (OpPatchCreate); empty: the
	// kind's.
	APIVersion string
}

func fieldList(fs []Field) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// String reads like a line of a log.
func (s Step) String() string {
	if s.APIVersion != "" && (s.Op == OpApply || s.Op == OpUpdate || s.Op == OpPatchCreate) {
		v := s
		v.APIVersion = ""
		return v.String() + " [" + s.APIVersion + "]"
	}
	switch s.Op {
	case OpCreate:
		return fmt.Sprintf("%s creates the target %s", s.Who, fieldList(s.Fields))
	case OpApply:
		return s.applyString()
	case OpUpdate:
		how := "JSON merge patch"
		if s.JSONPatch {
			how = "JSON patch"
		}
		return fmt.Sprintf("%s updates %s (%s)", s.Who, fieldList(s.Fields), how)
	case OpPatchCreate, OpPatchEdit:
		return s.patchString()
	case OpPatchDelete:
		if s.Expire {
			return fmt.Sprintf("FieldPatch %s expires (deletionPolicy %s)", s.Who, s.Deletion)
		}
		return fmt.Sprintf("delete FieldPatch %s (deletionPolicy %s)", s.Who, s.Deletion)
	case OpWorkloadApply:
		return fmt.Sprintf("ManagedWorkload %s applies %s", s.Who, fieldList(s.Fields))
	case OpWorkloadDelete:
		return fmt.Sprintf("delete ManagedWorkload %s", s.Who)
	case OpRestart:
		return "restart the fieldops manager"
	}
	return fmt.Sprintf("op %d", s.Op)
}

// applyString is String of an OpApply.
func (s Step) applyString() string {
	force := ""
	if s.Force {
		force = " with force"
	}
	if len(s.Fields) == 0 {
		return fmt.Sprintf("%s applies an empty intent%s (relinquishes all its fields)", s.Who, force)
	}
	return fmt.Sprintf("%s applies %s%s", s.Who, fieldList(s.Fields), force)
}

// patchString is String of an OpPatchCreate or OpPatchEdit.
func (s Step) patchString() string {
	extra := ""
	if s.Append != "" {
		extra = fmt.Sprintf(" + append %q to /spec/setList/-", s.Append)
	}
	if s.Op == OpPatchEdit {
		return fmt.Sprintf("edit FieldPatch %s: %s %s%s", s.Who, s.Type, fieldList(s.Fields), extra)
	}
	if s.Selector {
		extra += ", by targetSelector"
	}
	return fmt.Sprintf("create FieldPatch %s: %s %s%s, conflictPolicy %s, deletionPolicy %s", s.Who, s.Type, fieldList(s.Fields), extra, s.Conflict, s.Deletion)
}

// Sequence is a target kind and the steps done to it; steps[0] creates it.
type Sequence struct {
	// Seed generated the sequence (Generate(Seed, ...)).
	Seed  int64
	Kind  *Kind
	Steps []Step
	// Faults is the probability that a write of fieldops fails while a
	// step is under way (see faults); 0: none.
	Faults float64
}

// String lists the steps, numbered from 1.
func (s Sequence) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sequence seed %d, target %s %q:\n", s.Seed, s.Kind.Name, targetName)
	for i, st := range s.Steps {
		fmt.Fprintf(&b, "  %d. %s\n", i+1, st)
	}
	return b.String()
}
