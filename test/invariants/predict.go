/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package invariants

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/fieldops/fieldops/ownershipcore"
)

// predictor predicts other managers' requests with the ownership core's
// model (ownershipcore.Model, the apiserver's own field manager run in
// process) and compares the apiserver's answers with the predictions
// (Model.Compare, as the Applier compares its own writes): invariant (8).
type predictor struct {
	model   ownershipcore.Model
	applier *ownershipcore.Applier
}

// predictor returns the Env's predictor, made on first use.
func (e *Env) predictor() (*predictor, error) {
	e.predictOnce.Do(func() {
		dc, err := discovery.NewDiscoveryClientForConfig(e.Config)
		if err != nil {
			e.predictErr = err
			return
		}
		schema := ownershipcore.NewSchema(dc)
		if e.predictErr = waitPublished(schema, widget); e.predictErr != nil {
			return
		}
		a, err := ownershipcore.NewApplier(e.Client, e.Client, e.Client, schema)
		if err != nil {
			e.predictErr = err
			return
		}
		e.predict = &predictor{model: a.Model(), applier: a}
	})
	return e.predict, e.predictErr
}

// waitPublished waits until the apiserver's OpenAPI v3 has the schema of
// every version of k, for at most a minute: it serves a new CRD's kind
// (and accepts its objects) a moment before it publishes the kind's
// OpenAPI, which the model reads, and a prediction in between would be
// refused as a kind not served.
func waitPublished(schema *ownershipcore.Schema, k *Kind) error {
	versions := append([]string{k.APIVersion}, k.OtherVersions...)
	return wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		for _, v := range versions {
			gv, err := runtimeschema.ParseGroupVersion(v)
			if err != nil {
				return false, err
			}
			schema.Invalidate(gv)
			if _, err := schema.TypeConverter(gv); errors.Is(err, ownershipcore.ErrUnknownKind) {
				return false, nil
			} else if err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// state is live (nil: no object; then the object intent names, empty) as
// a model State.
func (p *predictor) state(ctx context.Context, live, intent *unstructured.Unstructured) (ownershipcore.State, error) {
	if live == nil {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(intent.GroupVersionKind())
		u.SetNamespace(intent.GetNamespace())
		u.SetName(intent.GetName())
		return ownershipcore.State{Object: u, SamePaths: true}, nil
	}
	var versions []string
	for _, e := range live.GetManagedFields() {
		versions = append(versions, e.APIVersion)
	}
	return ownershipcore.NewState(live, p.applier.SameFieldPaths(ctx, live.GroupVersionKind(), versions...))
}

// checkApply compares answer, the apiserver's answer to manager's apply of
// intent (with force or not) on live (nil: a create), with the model's
// prediction. It returns "" when they agree, or what differs; a request
// the model cannot predict (entries of another version whose paths may
// differ) is said so, prefixed "unpredictable: ".
func (p *predictor) checkApply(ctx context.Context, live, intent, answer *unstructured.Unstructured, manager string, force bool) string {
	before, err := p.state(ctx, live, intent)
	if err != nil {
		return "harness: " + err.Error()
	}
	predicted, err := p.model.Apply(before, intent, manager, force)
	if err != nil {
		return p.refusal(err)
	}
	return p.compare(before, predicted, answer, manager)
}

// checkUpdate compares answer, the apiserver's answer to manager's update
// (a JSON merge patch or a JSON patch) of live into changed (the object as
// the patch makes it, computed locally), with the model's prediction
// (Model.Update).
func (p *predictor) checkUpdate(ctx context.Context, live, changed, answer *unstructured.Unstructured, manager string) string {
	before, err := p.state(ctx, live, live)
	if err != nil {
		return "harness: " + err.Error()
	}
	next := decoded(changed)
	// The patch does not touch the managed fields: the apiserver keeps
	// them, and so must the model (Model.Update replaces them otherwise).
	unstructured.RemoveNestedField(next.Object, "metadata", "managedFields")
	predicted, err := p.model.Update(before, next, manager)
	if err != nil {
		return p.refusal(err)
	}
	return p.compare(before, predicted, answer, manager)
}

// compare is how answer, manager's write on before, differs from
// predicted ("": not at all), prefixed with redefaulted when the
// apiserver's defaulting explains it.
// decoded is u as the apiserver reads a patched object before its field
// manager records the update: a built-in kind decoded into its Go type and
// encoded again (client-go's scheme), so a map the patch emptied, which
// the Go type omits when empty (a pod template's nodeSelector), is gone,
// and the update records no field for it. Other kinds are as they are.
func decoded(u *unstructured.Unstructured) *unstructured.Unstructured {
	typed, err := clientgoscheme.Scheme.New(u.GroupVersionKind())
	if err != nil {
		return u.DeepCopy()
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
		return u.DeepCopy()
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return u.DeepCopy()
	}
	return &unstructured.Unstructured{Object: content}
}

func (p *predictor) compare(before, predicted ownershipcore.State, answer *unstructured.Unstructured, manager string) string {
	got, err := ownershipcore.NewState(answer, before.SamePaths)
	if err != nil {
		return "harness: " + err.Error()
	}
	diff := p.model.Compare(before, predicted, got)
	if diff != "" && p.model.Redefaulted(before, predicted, got, manager) {
		diff = redefaulted + diff
	}
	return diff
}

// refusal is what a prediction that failed says: the model cannot predict
// the request, or it refuses what the apiserver accepted.
func (p *predictor) refusal(err error) string {
	if errors.Is(err, ownershipcore.ErrUnpredictable) {
		return "unpredictable: " + err.Error()
	}
	if apierrors.IsConflict(err) {
		return "the model finds a conflict the apiserver did not: " + err.Error()
	}
	return "the model refuses what the apiserver accepted: " + err.Error()
}

// isStaleApply reports an apply refused by its resourceVersion
// precondition: a 409 without a field manager conflict among its causes.
func isStaleApply(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &status) {
		return false
	}
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			if c.Type == metav1.CauseTypeFieldManagerConflict {
				return false
			}
		}
	}
	return true
}

// divergence is the text of invariant (8) for another manager's request
// (kept prefixed with redefaulted).
func divergence(s Step, diff string) string {
	prefix := ""
	if strings.HasPrefix(diff, redefaulted) {
		prefix, diff = redefaulted, strings.TrimPrefix(diff, redefaulted)
	}
	return fmt.Sprintf("%sthe apiserver's answer to %q differs from the model's prediction: %s", prefix, s.String(), diff)
}
