/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package invariants

import (
	"fmt"
	"math/rand"
	"sort"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

// managers are the field managers other than fieldops that the steps act
// as (besides "base", which creates the target).
var managers = []string{"helm", "ops", "hpa"}

// workloadNames are the ManagedWorkloads a sequence may create.
var workloadNames = []string{"mw-a", "mw-b"}

// MinSteps is the fewest random steps of a sequence (besides the create
// and the final deletions).
const MinSteps = 4

// Generate makes the sequence of seed: the target's creation, between
// MinSteps and maxSteps random steps, then the deletion of every
// FieldPatch and ManagedWorkload still there. The same seed always makes
// the same sequence.
func Generate(seed int64, maxSteps int) Sequence {
	return GenerateWith(seed, maxSteps, Options{})
}

// Options are what a sequence may draw besides Generate's steps.
type Options struct {
	// Restore turns half of the HandBack patches into Restore ones, drawn
	// from a stream of their own: a seed's steps stay those of Generate
	// (the regression corpus replays Generate's).
	Restore bool
	// Expire ends half of the FieldPatches by expiry instead of a delete
	// request, drawn from a stream of their own as Restore is.
	Expire bool
	// Selector makes half of the FieldPatches select their target
	// (spec.targetSelector) instead of naming it, drawn from a stream of
	// their own as Restore is.
	Selector bool
}

// GenerateWith is Generate with opts.
func GenerateWith(seed int64, maxSteps int, opts Options) Sequence {
	r := rand.New(rand.NewSource(seed))
	g := &gen{r: r, kind: kinds[r.Intn(len(kinds))], applied: map[string][]Field{}, workloads: map[string][]Field{}, setBy: map[string]string{}, present: map[string]bool{},
		// Versions come from a stream of their own, so that a seed's
		// steps are the same as before the kind had other versions.
		vr: rand.New(rand.NewSource(seed ^ 0x7e75))}
	if opts.Restore {
		g.pr = rand.New(rand.NewSource(seed ^ 0x4e57))
	}
	if opts.Expire {
		g.er = rand.New(rand.NewSource(seed ^ 0x3e1f))
	}
	if opts.Selector {
		g.sr = rand.New(rand.NewSource(seed ^ 0x5e1e))
	}
	n := MinSteps
	if maxSteps > MinSteps {
		n += r.Intn(maxSteps - MinSteps + 1)
	}
	steps := []Step{{Op: OpCreate, Who: "base", Fields: g.kind.Base}}
	for len(steps) <= n {
		steps = append(steps, g.next())
	}
	steps = append(steps, g.finish()...)
	return Sequence{Seed: seed, Kind: g.kind, Steps: steps}
}

// gen is the generator's view of a sequence so far: what each actor
// wants, so that later steps change it (add, drop, change a field) and aim
// at fields others hold.
type gen struct {
	r, vr *rand.Rand
	// pr draws Restore (Options.Restore), er expiry (Options.Expire), sr
	// selector patches (Options.Selector); nil: never.
	pr, er, sr *rand.Rand
	kind       *Kind
	// applied is each manager's last applied intent.
	applied map[string][]Field
	// patch is the live FieldPatch's last create or edit step, or nil.
	patch   *Step
	patches int
	// workloads are the live ManagedWorkloads' intents.
	workloads map[string][]Field
	// setBy is the manager that last set (or removed) each path; present
	// says whether that was a set.
	setBy   map[string]string
	present map[string]bool
}

// next picks a step, by weight, among those possible now.
func (g *gen) next() Step {
	type choice struct {
		weight int
		make   func() Step
	}
	choices := []choice{{24, g.apply}, {18, g.update}, {3, func() Step { return Step{Op: OpRestart} }}}
	if g.patch == nil {
		choices = append(choices, choice{24, g.createPatch})
	} else {
		choices = append(choices, choice{16, g.editPatch}, choice{9, g.deletePatch})
	}
	choices = append(choices, choice{9, g.applyWorkload})
	if len(g.workloads) > 0 {
		choices = append(choices, choice{3, g.deleteWorkload})
	}
	total := 0
	for _, c := range choices {
		total += c.weight
	}
	x := g.r.Intn(total)
	for _, c := range choices {
		if x < c.weight {
			return c.make()
		}
		x -= c.weight
	}
	panic("unreachable")
}

// finish deletes what fieldops still holds, so every sequence ends with
// the deletion invariants checked.
func (g *gen) finish() []Step {
	var out []Step
	if g.patch != nil {
		out = append(out, g.deletePatch())
	}
	names := make([]string, 0, len(g.workloads))
	for n := range g.workloads {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, Step{Op: OpWorkloadDelete, Who: n})
		delete(g.workloads, n)
	}
	return out
}

func (g *gen) apply() Step {
	m := managers[g.r.Intn(len(managers))]
	last := g.applied[m]
	var next []Field
	switch x := g.r.Intn(10); {
	case len(last) > 0 && x == 0: // relinquish everything
	case len(last) > 1 && x < 4:
		next = without(last, g.r.Intn(len(last)))
	default:
		next = with(last, g.value(g.slot(func(Slot) bool { return true })))
	}
	g.applied[m] = next
	g.set(m, next)
	return Step{Op: OpApply, Who: m, Fields: next, Force: g.r.Intn(10) < 7, APIVersion: g.version()}
}

// version picks, now and then, another version the kind is served in.
func (g *gen) version() string {
	if len(g.kind.OtherVersions) == 0 || g.vr.Intn(3) > 0 {
		return ""
	}
	return g.kind.OtherVersions[g.vr.Intn(len(g.kind.OtherVersions))]
}

func (g *gen) update() Step {
	m := managers[g.r.Intn(len(managers))]
	var change []Field
	if g.patch != nil && g.r.Intn(3) == 0 {
		// The manager that set a field the patch holds changes or removes
		// it.
		f := g.patch.Fields[g.r.Intn(len(g.patch.Fields))]
		if by, ok := g.setBy[f.Path]; ok {
			m = by
		}
		change = []Field{g.value(g.slotOf(f.Path))}
		if !g.slotOf(f.Path).Keep && g.r.Intn(10) < 6 {
			change[0].Value = nil
		}
	}
	for i := 1 + g.r.Intn(2) - len(change); i > 0; i-- {
		s := g.slot(func(Slot) bool { return true })
		f := g.value(s)
		if !s.Keep && g.r.Intn(100) < 40 {
			f.Value = nil
		}
		change = with(change, f)
	}
	g.set(m, change)
	return Step{Op: OpUpdate, Who: m, Fields: change, JSONPatch: g.r.Intn(2) == 0, APIVersion: g.version()}
}

// set notes that manager m set (or removed) fields.
func (g *gen) set(m string, fields []Field) {
	for _, f := range fields {
		g.setBy[f.Path], g.present[f.Path] = m, f.Value != nil
	}
}

// slotOf is the slot of path.
func (g *gen) slotOf(path string) Slot {
	for _, s := range g.kind.Slots {
		if s.Path == path {
			return s
		}
	}
	panic("no slot " + path)
}

func (g *gen) createPatch() Step {
	g.patches++
	types := []v1alpha1.PatchType{v1alpha1.PatchTypeApply, v1alpha1.PatchTypeApply, v1alpha1.PatchTypeMerge, v1alpha1.PatchTypeJSON}
	if g.kind.Builtin {
		types = append(types, v1alpha1.PatchTypeStrategicMerge)
	}
	// A FieldPatch targets another version of the kind a third of the
	// time, as the other managers write (seed 3000197: all the entries of
	// another version left the local decision with none).
	s := Step{Op: OpPatchCreate, Who: fmt.Sprintf("fp-%d", g.patches), Type: types[g.r.Intn(len(types))], APIVersion: g.version()}
	switch x := g.r.Intn(20); {
	case x < 14:
		s.Conflict = v1alpha1.ConflictPolicyForce
	case x < 17:
		s.Conflict = v1alpha1.ConflictPolicyYield
	default:
		s.Conflict = v1alpha1.ConflictPolicyFail
	}
	s.Deletion = v1alpha1.DeletionPolicyHandBack
	if g.r.Intn(2) == 0 {
		s.Deletion = v1alpha1.DeletionPolicyRelinquish
	}
	if s.Deletion == v1alpha1.DeletionPolicyHandBack && g.pr != nil && g.pr.Intn(2) == 0 {
		s.Deletion = v1alpha1.DeletionPolicyRestore
	}
	s.Selector = g.sr != nil && g.sr.Intn(2) == 0
	for i := 1 + g.r.Intn(3); i > 0; i-- {
		s.Fields = with(s.Fields, g.value(g.slot(g.fits(s.Type))))
	}
	if s.Type == v1alpha1.PatchTypeJSON && g.kind == widget && g.r.Intn(4) == 0 {
		s.Append = "z"
	}
	g.patch = &s
	return s
}

func (g *gen) editPatch() Step {
	s := *g.patch
	s.Op = OpPatchEdit
	switch x := g.r.Intn(10); {
	case len(s.Fields) > 1 && x < 5:
		// Drop a field, more often one another manager set (one the patch
		// took).
		i := g.r.Intn(len(s.Fields))
		for j, f := range s.Fields {
			if _, ok := g.setBy[f.Path]; ok && g.r.Intn(3) > 0 {
				i = j
				break
			}
		}
		s.Fields = without(s.Fields, i)
	default:
		s.Fields = with(s.Fields, g.value(g.slot(g.fits(s.Type))))
	}
	g.patch = &s
	return s
}

func (g *gen) deletePatch() Step {
	s := Step{Op: OpPatchDelete, Who: g.patch.Who, Deletion: g.patch.Deletion}
	s.Expire = g.er != nil && g.er.Intn(2) == 0
	g.patch = nil
	return s
}

func (g *gen) applyWorkload() Step {
	name := workloadNames[g.r.Intn(len(workloadNames))]
	fields := g.workloads[name]
	if len(fields) > 1 && g.r.Intn(3) == 0 {
		fields = without(fields, g.r.Intn(len(fields)))
	} else {
		fields = with(fields, g.value(g.slot(func(Slot) bool { return true })))
	}
	g.workloads[name] = fields
	return Step{Op: OpWorkloadApply, Who: name, Fields: fields}
}

func (g *gen) deleteWorkload() Step {
	var names []string
	for n := range g.workloads {
		names = append(names, n)
	}
	sort.Strings(names)
	name := names[g.r.Intn(len(names))]
	delete(g.workloads, name)
	return Step{Op: OpWorkloadDelete, Who: name}
}

// fits is the slots a patch of type t can express: a merge patch only
// reaches fields through maps, a JSON patch only what its pointers reach.
func (g *gen) fits(t v1alpha1.PatchType) func(Slot) bool {
	return func(s Slot) bool {
		switch t {
		case v1alpha1.PatchTypeMerge:
			return onlyFields(mustPath(s.Path))
		case v1alpha1.PatchTypeJSON:
			return s.JSON
		}
		return true
	}
}

// slot picks a slot that ok accepts; more often than not one that another
// actor's intent holds, to make conflicts.
func (g *gen) slot(ok func(Slot) bool) Slot {
	var all, hot []Slot
	held := g.held()
	for _, s := range g.kind.Slots {
		if !ok(s) {
			continue
		}
		all = append(all, s)
		if held[s.Path] {
			hot = append(hot, s)
		}
	}
	if len(hot) > 0 && g.r.Intn(10) < 6 {
		return hot[g.r.Intn(len(hot))]
	}
	return all[g.r.Intn(len(all))]
}

// held is the set of paths in some actor's intent, or last set by an
// update.
func (g *gen) held() map[string]bool {
	out := map[string]bool{}
	for p, ok := range g.present {
		if ok {
			out[p] = true
		}
	}
	add := func(fs []Field) {
		for _, f := range fs {
			out[f.Path] = true
		}
	}
	for _, fs := range g.applied {
		add(fs)
	}
	for _, fs := range g.workloads {
		add(fs)
	}
	if g.patch != nil {
		add(g.patch.Fields)
	}
	return out
}

func (g *gen) value(s Slot) Field {
	return Field{Path: s.Path, Value: s.Values[g.r.Intn(len(s.Values))]}
}

// with returns fs with f, replacing the field of the same path.
func with(fs []Field, f Field) []Field {
	out := make([]Field, 0, len(fs)+1)
	for _, x := range fs {
		if x.Path != f.Path {
			out = append(out, x)
		}
	}
	return append(out, f)
}

// without returns fs without its i-th field.
func without(fs []Field, i int) []Field {
	out := make([]Field, 0, len(fs))
	out = append(out, fs[:i]...)
	return append(out, fs[i+1:]...)
}

// Normalize drops the steps that no longer make sense after others were
// dropped (shrinking): an edit or delete of a FieldPatch that does not
// exist, a second live FieldPatch, a delete of a workload that does not
// exist.
func Normalize(steps []Step) []Step {
	var out []Step
	patch := ""
	workloads := map[string]bool{}
	for _, s := range steps {
		switch s.Op {
		case OpPatchCreate:
			if patch != "" {
				continue
			}
			patch = s.Who
		case OpPatchEdit:
			if patch != s.Who {
				continue
			}
		case OpPatchDelete:
			if patch != s.Who {
				continue
			}
			patch = ""
		case OpWorkloadApply:
			workloads[s.Who] = true
		case OpWorkloadDelete:
			if !workloads[s.Who] {
				continue
			}
			delete(workloads, s.Who)
		}
		out = append(out, s)
	}
	return out
}
