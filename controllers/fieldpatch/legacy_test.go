/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/fieldpatch"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/ownershipcore"
)

const legacyDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: %s, labels: {app: web}, annotations: {team: shop}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: "nginx:1.27"}]
`

const legacyPatch = `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: tune, namespace: %s}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  patch:
    metadata: {annotations: {team: shop}}
    spec:
      replicas: 5
      template:
        spec:
          containers: [{name: app, image: "nginx:1.28", env: [{name: HTTP_PROXY, value: "http://proxy"}]}]
`

// legacyRecord is the record of previous owners of legacyPatch as the
// release before status.addedFields wrote it, taken from a run of that
// release (helm applied legacyDeployment, hpa set replicas, then the
// patch was created): helm's image taken, its annotation and container
// name shared, hpa's replicas taken, the env variable added.
const legacyRecord = `
previousOwners:
- apiVersion: apps/v1
  fieldsV1:
    f:metadata: {f:annotations: {f:team: {}}}
    f:spec: {f:template: {f:spec: {f:containers: {'k:{"name":"app"}': {.: {}, f:image: {}, f:name: {}}}}}}
  manager: helm
  operation: Apply
  paths:
  - .metadata.annotations.team
  - .spec.template.spec.containers[name="app"].image
  - .spec.template.spec.containers[name="app"].name
  sharedFieldsV1:
    f:metadata: {f:annotations: {f:team: {}}}
    f:spec: {f:template: {f:spec: {f:containers: {'k:{"name":"app"}': {.: {}, f:name: {}}}}}}
- apiVersion: apps/v1
  fieldsV1: {f:spec: {f:replicas: {}}}
  manager: hpa
  operation: Update
  paths: [.spec.replicas]
recordedFields:
  f:metadata: {f:annotations: {f:team: {}}}
  f:spec:
    f:replicas: {}
    f:template:
      f:spec:
        f:containers:
          'k:{"name":"app"}':
            .: {}
            f:image: {}
            f:name: {}
            f:env: {'k:{"name":"HTTP_PROXY"}': {.: {}, f:name: {}, f:value: {}}}
`

// legacyHandedBack are the target's owners after that release, in the
// same run, repaired the image a kubectl edit changed and then handed
// the fields back at the patch's deletion.
var legacyHandedBack = map[string][]string{
	".metadata.annotations.team":                       {"helm/Apply"},
	".metadata.labels.app":                             {"helm/Apply"},
	".spec.replicas":                                   {"hpa/Update"},
	".spec.selector":                                   {"helm/Apply"},
	".spec.template.metadata.labels.app":               {"helm/Apply"},
	`.spec.template.spec.containers[name="app"].image`: {"helm/Apply"},
	`.spec.template.spec.containers[name="app"].name`:  {"helm/Apply"},
}

// suspend sets fp's spec.suspend and waits for the reconcile that
// follows: Suspended, or the generation reconciled again.
func suspend(t *testing.T, fp *v1alpha1.FieldPatch, on bool) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		get(t, fp)
		fp.Spec.Suspend = on
		return k8s.Update(context.Background(), fp)
	}); err != nil {
		t.Fatal(err)
	}
	if on {
		waitReason(t, fp, fieldpatch.ReasonSuspended)
	}
}

// setStatus replaces fp's status with change applied to it, as another
// release of the manager would have written it.
func setStatus(t *testing.T, fp *v1alpha1.FieldPatch, change func(*v1alpha1.FieldPatchStatus)) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		get(t, fp)
		change(&fp.Status)
		return k8s.Status().Update(context.Background(), fp)
	}); err != nil {
		t.Fatal(err)
	}
}

// Issue 41: a FieldPatch whose status holds the record in the form of
// the release before (fieldsV1, sharedFieldsV1, paths, recordedFields)
// keeps working after the upgrade: the new manager reads it, repairs
// drift that happened while no manager ran, writes the record in the new
// form (each field once, in path form) with the same meaning, and on
// deletion hands each field back exactly as that release did.
func TestLegacyRecordUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "fp-legacy")
	d := applyAs(t, "helm", fmt.Sprintf(legacyDeployment, ns))
	if err := k8s.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`)), client.FieldOwner("hpa")); err != nil {
		t.Fatal(err)
	}
	fp := fieldPatch(t, fmt.Sprintf(legacyPatch, ns))
	waitReason(t, fp, "Applied")

	// The earlier release stops with the record of today's form.
	suspend(t, fp, true)
	var legacy v1alpha1.FieldPatchStatus
	if err := yaml.UnmarshalStrict([]byte(legacyRecord), &legacy); err != nil {
		t.Fatal(err)
	}
	uid := string(live(t, d).GetUID())
	legacy.TargetUID = uid
	setStatus(t, fp, func(st *v1alpha1.FieldPatchStatus) { st.SetRecord(legacy.Record()) })
	get(t, fp)
	if rec := fp.Status.Record(); !rec.Legacy() || fp.Status.AddedFields != nil {
		t.Fatalf("the status does not hold today's form: %+v", rec)
	}
	want, err := patchintent.ReadLedger(&legacy, uid)
	if err != nil {
		t.Fatal(err)
	}

	// While no manager runs, a kubectl edit changes the patched image.
	if err := k8s.Patch(ctx, d, client.RawPatch(types.StrategicMergePatchType, []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.29"}]}}}}`)), client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	image := `.spec.template.spec.containers[name="app"].image`
	manager := "fieldops-fieldpatch/" + ns + "/tune"

	// The new manager takes over: the drift is repaired, and the record
	// is written in the new form, meaning what it meant.
	suspend(t, fp, false)
	eventually(t, "the image repaired and the record in the new form", func() (bool, string) {
		l := live(t, d)
		cs, _, _ := unstructured.NestedSlice(l.Object, "spec", "template", "spec", "containers")
		img := cs[0].(map[string]interface{})["image"]
		get(t, fp)
		rec := fp.Status.Record()
		c := readyCondition(fp)
		return img == "nginx:1.28" && slices.Equal(owners(t, l)[image], []string{manager + "/Apply"}) && !rec.Legacy() &&
				c.Reason == "Applied" && c.ObservedGeneration == fp.Generation,
			fmt.Sprintf("image %v owned by %v; Ready %s (generation %d of %d); record %+v", img, owners(t, l)[image], c.Reason, c.ObservedGeneration, fp.Generation, rec)
	})
	got, err := patchintent.ReadLedger(&fp.Status, uid)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Recorded.Equals(want.Recorded) || len(got.Entries) != len(want.Entries) {
		t.Fatalf("record after the upgrade recorded %v with %d owners, want %v with %d",
			ownershipcore.FormatSet(got.Recorded), len(got.Entries), ownershipcore.FormatSet(want.Recorded), len(want.Entries))
	}
	for i, e := range got.Entries {
		w := want.Entries[i]
		if e.ManagerKey != w.ManagerKey || e.Via != w.Via || !e.Fields.Equals(w.Fields) || !e.Shared.Equals(w.Shared) {
			t.Errorf("previous owner %d after the upgrade: %+v %v shared %v, want %+v %v shared %v", i,
				e.ManagerKey, ownershipcore.FormatSet(e.Fields), ownershipcore.FormatSet(e.Shared), w.ManagerKey, ownershipcore.FormatSet(w.Fields), ownershipcore.FormatSet(w.Shared))
		}
	}
	// Deletion hands every field back as the earlier release did.
	deleteAndWait(t, fp)
	l := live(t, d)
	if o := owners(t, l); fmt.Sprint(o) != fmt.Sprint(legacyHandedBack) {
		t.Errorf("owners after deletion\n%v\nwant\n%v", o, legacyHandedBack)
	}
	replicas, _, _ := unstructured.NestedInt64(l.Object, "spec", "replicas")
	cs, _, _ := unstructured.NestedSlice(l.Object, "spec", "template", "spec", "containers")
	c := cs[0].(map[string]interface{})
	if _, env := c["env"]; replicas != 5 || c["image"] != "nginx:1.28" || env || l.GetAnnotations()["team"] != "shop" {
		t.Errorf("after deletion replicas %d, container %v, annotations %v; want 5, nginx:1.28 without env, team=shop", replicas, c, l.GetAnnotations())
	}
}

// Issue 41: a selector patch whose status.targets.ledgers hold records of
// the release before (fieldsV1 and recordedFields, as it kept them per
// target) keeps working after the upgrade: the new manager reads each,
// repairs a target that drifted, rewrites the records in the new form,
// and on deletion gives helm its field back on every target and removes
// the added one.
func TestLegacySelectorRecordUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "fp-legacy-selector")
	before := map[string]string{}
	for _, n := range []string{"a", "b"} {
		u := applyAs(t, "helm", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: %s, labels: {proxy: \"yes\"}}, data: {owned: helm, proxy: none}}", n, ns))
		before[n] = fmt.Sprint(owners(t, live(t, u)))
	}
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: proxy, namespace: `+ns+`}
spec:
  targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {proxy: "yes"}}}
  patch: {data: {proxy: "http://proxy:3128", added: "1"}}
`)
	waitTargets(t, fp, 2, 2)

	suspend(t, fp, true)
	const legacyLedger = `
recordedFields: {f:data: {f:added: {}, f:proxy: {}}}
previousOwners:
- {apiVersion: v1, manager: helm, operation: Apply, fieldsV1: {f:data: {f:proxy: {}}}}
`
	var ledger v1alpha1.TargetLedger
	if err := yaml.UnmarshalStrict([]byte(legacyLedger), &ledger); err != nil {
		t.Fatal(err)
	}
	setStatus(t, fp, func(st *v1alpha1.FieldPatchStatus) {
		st.Targets.Ledgers = []v1alpha1.TargetLedger{ledger}
		zero := int32(0)
		for i := range st.Targets.Records {
			st.Targets.Records[i].Ledger = &zero
		}
	})

	if err := k8s.Patch(ctx, configMap(t, ns, "a"), client.RawPatch(types.MergePatchType, []byte(`{"data":{"proxy":"direct"}}`)), client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	suspend(t, fp, false)
	eventually(t, "a repaired and the records in the new form", func() (bool, string) {
		data, _, _ := unstructured.NestedStringMap(live(t, configMap(t, ns, "a")).Object, "data")
		get(t, fp)
		ts := fp.Status.Targets
		legacy := ts == nil
		for i := 0; ts != nil && i < len(ts.Ledgers); i++ {
			legacy = legacy || ts.Ledgers[i].Legacy()
		}
		c := readyCondition(fp)
		return data["proxy"] == "http://proxy:3128" && !legacy && c.Reason == "Applied" && c.ObservedGeneration == fp.Generation,
			fmt.Sprintf("a's data %v; Ready %s; targets %+v", data, c.Reason, ts)
	})
	for _, r := range fp.Status.Targets.Records {
		st := fp.Status.Targets.RecordStatus(r.UID)
		if y, _ := yaml.Marshal(st.Record()); string(y) != "addedFields:\n- .data.added\npreviousOwners:\n- apiVersion: v1\n  fields:\n  - .data.proxy\n  manager: helm\n  operation: Apply\n" {
			t.Errorf("%s's record after the upgrade:\n%s", r.Name, y)
		}
	}

	deleteAndWait(t, fp)
	for _, n := range []string{"a", "b"} {
		l := live(t, configMap(t, ns, n))
		o := owners(t, l)
		data, _, _ := unstructured.NestedStringMap(l.Object, "data")
		if fmt.Sprint(o) != before[n] {
			t.Errorf("%s's owners after deletion %v, before the patch %s", n, o, before[n])
		}
		if _, added := data["added"]; added || data["proxy"] != "http://proxy:3128" {
			t.Errorf("%s's data after deletion %v, want proxy handed back with its value, added removed", n, data)
		}
	}
}
