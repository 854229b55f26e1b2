/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package invariants

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/fieldpatch"
	"github.com/fieldops/fieldops/internal/fieldplan"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/internal/patchplan"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/test/testkit"
)

// The order of writes (invariant 10): a plan lists the writes the
// controller sends for its patch, in order (fieldplan.PatchPlan.Writes:
// patchplan.Write). The harness logs every write request of the fieldops
// manager (testkit.WriteLog), each tagged with the ID of the reconcile
// that sent it, and compares the writes of a planned step that concern
// the step's patch with the plan's:
//
//   - the writes are those from the plan (made just before the step's own
//     request) to the end of settling: the step's reconciles, the
//     finalizer's among them, and settle's, which must write nothing more
//     to the target when the plan holds;
//   - writes the apiserver refused (or never answered) and dry runs wrote
//     nothing: they are left out, the controller's retry is what counts
//     (a refused apply of ConflictPolicy Fail is no Apply of the plan
//     either, which lists one only when the apply wrote);
//   - a write to the target concerns the patch when it carries the
//     patch's field manager (fieldManager=, which Server-Side Apply and
//     the ownership core's JSON patches both send): the writes of other
//     FieldPatches and workloads to the same target are theirs. Its
//     content type says which: application/apply-patch+yaml is Apply,
//     application/json-patch+json (a let-go of managed fields) GiveBack;
//   - a write to the patch's status subresource guarded by its
//     resourceVersion (metadata.resourceVersion in the merge patch: the
//     controller's records, saveRecord and saveTargetRecords, a selector
//     patch's per-target records included, are the only writes so
//     guarded) is Record, as patchplan.WriteRecord defines it. An
//     unguarded one is the status write that ends a reconcile, which no
//     plan lists, and is dropped; were one followed by a target write in
//     the same reconcile, it would be kept (as Status), a write no plan
//     lists;
//   - a write (not a deletion) of the patch's Secret of previous values
//     (patchintent.PreviousValuesName, or PreviousValuesTargetName for a
//     selector patch) is PreviousValues;
//   - the patch's own metadata (the finalizer, the harness's barrier
//     annotation is not fieldops') and the Secret's deletion are dropped.
//
// Not compared: steps with faults (not planned), plans whose outcome the
// step cannot check (comparePlan's notes: another fieldops object wrote
// the target, a contest decided), and a selector patch's plan with more
// than one target, whose records one status write may hold together.

// writeScope says which of fieldops' writes concern a planned patch.
type writeScope struct {
	// target is the URL path suffix of the target
	// ("/namespaces/<ns>/<resource>/<name>"), manager the patch's field
	// manager.
	target, manager string
	// status is the URL path suffix of the patch's status subresource,
	// secret the name of its Secret of previous values (a selector
	// patch's per-target Secrets start with it).
	status, secret string
}

// sentWrite is a write of the patch as the harness classified it, with
// the reconcile that sent it.
type sentWrite struct {
	kind      string
	reconcile string
}

// classifyWrites returns the writes of log that concern the patch of
// scope, classified as the plan's writes (see above), in order.
func classifyWrites(log []testkit.LoggedWrite, scope writeScope) []sentWrite {
	var out []sentWrite
	for i, w := range log {
		if !w.Succeeded() || w.DryRun {
			continue
		}
		kind := scope.classify(w)
		if kind == "Status" && !targetWriteFollows(log[i+1:], w.Tag, scope) {
			continue // the status write that ends a reconcile
		}
		if kind != "" {
			out = append(out, sentWrite{kind: kind, reconcile: w.Tag})
		}
	}
	return out
}

// classify is the kind of a successful write w for the patch of scope:
// Record, Apply, GiveBack, PreviousValues, Status (an unguarded status
// write), another kind for any other write to the target by the patch, or
// "" when w does not concern the patch or is dropped.
func (scope writeScope) classify(w testkit.LoggedWrite) string {
	switch {
	case strings.HasSuffix(w.Path, scope.target) && w.FieldManager == scope.manager:
		switch w.ContentType {
		case "application/apply-patch+yaml":
			return "Apply"
		case "application/json-patch+json":
			return "GiveBack"
		}
		return fmt.Sprintf("%s(%s)", w.Method, w.ContentType)
	case strings.HasSuffix(w.Path, scope.status):
		if guarded(w.Body) {
			return "Record"
		}
		return "Status"
	case scope.secret != "" && w.Method != "DELETE" && isSecretOf(w.Path, scope.secret):
		return "PreviousValues"
	}
	return ""
}

// isSecretOf reports whether path is that of the Secret name, or of a
// per-target Secret of it (name-<target UID>).
func isSecretOf(path, name string) bool {
	i := strings.LastIndex(path, "/secrets/")
	if i < 0 {
		return false
	}
	s := path[i+len("/secrets/"):]
	return s == name || strings.HasPrefix(s, name+"-")
}

// targetWriteFollows reports whether log holds a write of the patch of
// scope to its target sent by the reconcile tag.
func targetWriteFollows(log []testkit.LoggedWrite, tag string, scope writeScope) bool {
	for _, w := range log {
		if w.Tag == tag && tag != "" && w.Succeeded() && !w.DryRun &&
			strings.HasSuffix(w.Path, scope.target) && w.FieldManager == scope.manager {
			return true
		}
	}
	return false
}

// guarded reports whether a merge patch body carries
// metadata.resourceVersion (an optimistic lock).
func guarded(body []byte) bool {
	var p struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	return json.Unmarshal(body, &p) == nil && p.Metadata.ResourceVersion != ""
}

// reconcileID tags a write with the ID of the reconcile that sent it.
func reconcileID(ctx context.Context) string {
	return string(controller.ReconcileIDFromContext(ctx))
}

// checkWrites compares, for each plan of pl with a patch, the writes the
// plan lists with those fieldops sent for the patch since the plan was
// made, and counts the write orders checked or left unchecked. A
// difference is a violation of (10), or with Env.OrderNotes a note.
func (r *run) checkWrites(ctx context.Context, pl *planned) ([]Violation, string) {
	var plans []fieldplan.Plan
	for _, p := range pl.plans {
		if p.Patch != nil {
			plans = append(plans, p)
		}
	}
	if len(plans) == 0 {
		return nil, ""
	}
	if len(plans) > 1 {
		r.env.plans.ordersUnchecked.Add(1) // one status write may hold several targets' records
		return nil, ""
	}
	uid, err := r.patchUID(ctx, pl)
	if err != nil {
		return []Violation{{0, "harness: " + err.Error()}}, ""
	}
	p := plans[0]
	ns := p.Patch.Target.Namespace
	if ns == "" {
		ns = r.ns
	}
	scope := writeScope{
		target:  "/namespaces/" + ns + "/" + r.kind.Resource + "/" + p.Patch.Target.Name,
		manager: ownershipcore.ManagerName(fieldpatch.ManagerPrefix, r.ns, pl.name),
		status:  "/namespaces/" + r.ns + "/fieldpatches/" + pl.name + "/status",
	}
	if uid != "" {
		scope.secret = patchintent.PreviousValuesName(uid)
	}
	sent := classifyWrites(r.mgr.log.From(pl.from), scope)
	d := writesDiff(pl.name, p.Patch.Writes, sent)
	switch {
	case d == "":
		r.env.plans.orders.Add(1)
	case r.env.OrderNotes:
		r.env.plans.ordersDiffer.Add(1)
		return nil, d
	default:
		return []Violation{{10, d}}, ""
	}
	return nil, ""
}

// patchUID is the UID of pl's patch: known at the plan of an edit or a
// deletion, read after a create.
func (r *run) patchUID(ctx context.Context, pl *planned) (types.UID, error) {
	if pl.uid != "" || pl.deletion {
		return pl.uid, nil
	}
	fp := &v1alpha1.FieldPatch{}
	if err := r.env.Client.Get(ctx, types.NamespacedName{Namespace: r.ns, Name: pl.name}, fp); err != nil {
		return "", err
	}
	return fp.UID, nil
}

// writesDiff compares the writes planned for the patch name with those
// sent ("" when they are the same), naming the first write where they
// differ (from 1) and, when several reconciles sent them, which sent
// what.
func writesDiff(name string, planned []patchplan.Write, sent []sentWrite) string {
	want := make([]string, len(planned))
	for i, w := range planned {
		want[i] = wireKind(w)
	}
	got := make([]string, len(sent))
	for i, w := range sent {
		got[i] = w.kind
	}
	if slices.Equal(want, got) {
		return ""
	}
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	return fmt.Sprintf("writes of %s: planned [%s], controller sent [%s]: first difference at write %d%s",
		name, strings.Join(want, " "), strings.Join(got, " "), i+1, byReconcile(sent))
}

// wireKind is the kind classify gives the request of the planned write
// w: a Restore's previous values go out as a Server-Side Apply, the
// core's drop before an apply as a JSON patch of managed fields.
func wireKind(w patchplan.Write) string {
	switch w {
	case patchplan.WriteRestore:
		return "Apply"
	case patchplan.WriteDrop:
		return "GiveBack"
	}
	return string(w)
}

// byReconcile groups sent by the reconcile that sent them, when there
// are several: " (by reconcile: [Record Apply] [Apply])".
func byReconcile(sent []sentWrite) string {
	var groups [][]string
	for i, w := range sent {
		if i == 0 || w.reconcile != sent[i-1].reconcile {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], w.kind)
	}
	if len(groups) < 2 {
		return ""
	}
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = "[" + strings.Join(g, " ") + "]"
	}
	return " (by reconcile: " + strings.Join(parts, " ") + ")"
}
