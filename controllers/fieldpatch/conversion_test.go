/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/test/testkit"
)

// A FieldPatch in v1 of a custom resource whose versions a conversion
// webhook renames (spec.params in v1 is spec.settings in v2) would force
// params.k from helm, which applied it in v2. The apiserver names the
// conflict in helm's version (spec.settings.k): recorded so, the previous
// owner never matches the patch's v1 paths, and deletion removed helm's
// field as one the patch added (and the record forgot helm at the next
// reconcile). The take is refused instead: Stalled with reason Conflict,
// naming the owner's version; helm's fields stay untouched, and deleting
// the patch leaves them as they are (docs/fieldpatch.md, Limitations).
// A field the patch adds (note) is not written either: the apply is one
// request or none.
func TestNoForceAcrossAConversionWebhook(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const group = "convert.fieldpatch.fieldops.dev"
	crd := testkit.RenamingCRD(t, group, "Dial", map[string]apiextensionsv1.JSONSchemaProps{"note": {Type: "string"}})
	if err := k8s.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), crd) })
	ns := namespace(t, "fp-convert")
	dial := func(version, name, spec string) string {
		return `{"apiVersion": "` + group + `/` + version + `", "kind": "Dial", "metadata": {"name": "` + name + `", "namespace": "` + ns + `"}, "spec": ` + spec + `}`
	}
	for _, v := range []string{"v1", "v2"} {
		eventually(t, "Dial served in "+v, func() (bool, string) {
			u := obj(t, dial(v, "probe", `{}`))
			err := k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("probe"), client.ForceOwnership)
			return err == nil, errString(err)
		})
	}
	target := applyAs(t, "helm", dial("v2", "d", `{"settings": {"k": "2", "j": "1"}}`))
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: d, namespace: `+ns+`}
spec:
  target: {apiVersion: `+group+`/v1, kind: Dial, name: d}
  conflictPolicy: Force
  patch: {spec: {params: {k: "3"}, note: "n"}}
`)
	// A FieldPatch created right after its target's CRD may find the kind
	// not yet in the apiserver's OpenAPI (UnknownKind, retried after 30 s).
	testkit.Within(t, 90*time.Second, "reason Conflict", func() (bool, string) {
		get(t, fp)
		return readyCondition(fp).Reason == "Conflict", readyCondition(fp).Reason + ": " + readyCondition(fp).Message
	})
	get(t, fp)
	if c := readyCondition(fp); !strings.Contains(c.Message, "will not force .spec.settings.k") || !strings.Contains(c.Message, group+"/v2") {
		t.Errorf("Ready message = %q, want the refused take and the owner's version", c.Message)
	}
	check := func(when string) {
		t.Helper()
		l := &unstructured.Unstructured{}
		l.SetAPIVersion(group + "/v1")
		l.SetKind("Dial")
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(target), l); err != nil {
			t.Fatal(err)
		}
		spec, _, _ := unstructured.NestedMap(l.Object, "spec")
		if want := map[string]interface{}{"params": map[string]interface{}{"k": "2", "j": "1"}}; !reflect.DeepEqual(spec, want) {
			t.Errorf("%s: spec = %v, want helm's %v", when, spec, want)
		}
		noFieldopsEntry(t, l)
	}
	check("refused")
	deleteAndWait(t, fp)
	check("after deletion")
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
