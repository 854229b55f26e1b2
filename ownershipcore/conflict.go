package ownershipcore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Conflict is one field of the intent that another field manager owns with
// a different value (SSA docs, "Conflicts"). It implements error.
type Conflict struct {
	// Manager is the field manager that owns Path now.
	Manager string
	// Operation is that manager's operation, Apply or Update.
	Operation metav1.ManagedFieldsOperationType
	// Path is the contested field.
	Path fieldpath.Path
}

func (c Conflict) Error() string {
	return fmt.Sprintf("conflict with %q (%s): %s", c.Manager, c.Operation, FormatPath(c.Path))
}

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

// Decision is a ConflictStrategy's answer for one conflict.
type Decision string

const (
	// DecisionForce takes the field: it changes value and owner.
	DecisionForce Decision = "Force"
	// DecisionYield leaves the field to its owner; it is dropped from the intent.
	DecisionYield Decision = "Yield"
	// DecisionFail aborts the apply; nothing is written.
	DecisionFail Decision = "Fail"
)

// Resolution is a decision and a message saying why, for status and events.
type Resolution struct {
	Decision Decision
	Message  string
}

// ConflictStrategy decides, per conflict, whether to force, yield or fail.
// It returns one Resolution per conflict, in order; an error or a slice of
// another length fails the apply. Built-ins: Static; plugins implement it
// too.
type ConflictStrategy interface {
	Resolve(ctx context.Context, obj *unstructured.Unstructured, manager string, conflicts []Conflict) ([]Resolution, error)
}

// Static answers every conflict with the same decision: Static(DecisionForce)
// is `kubectl apply --server-side --force-conflicts`.
type Static Decision

var _ ConflictStrategy = Static(DecisionForce)

// Resolve implements ConflictStrategy.
func (s Static) Resolve(_ context.Context, _ *unstructured.Unstructured, _ string, conflicts []Conflict) ([]Resolution, error) {
	out := make([]Resolution, len(conflicts))
	for i := range out {
		out[i] = Resolution{Decision: Decision(s), Message: "policy " + string(s)}
	}
	return out, nil
}

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
		intent.Iterate(func(p fieldpath.Path) { byString[p.String()] = p })
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
	// event, on every reconcile).
	sort.SliceStable(out, func(i, j int) bool {
		pi, pj := out[i].Path.String(), out[j].Path.String()
		return pi < pj || pi == pj && out[i].Manager < out[j].Manager
	})
	return out, len(out) > 0
}
