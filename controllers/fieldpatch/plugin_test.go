package fieldpatch_test

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/test/testkit"
)

// Under the yield-to-autoscalers plugin (a real subprocess), a patch
// contesting spec.replicas with the "hpa" Update manager and the pod
// template with an Apply manager yields the replicas and forces the rest.
func TestConflictPluginYieldsToAutoscaler(t *testing.T) {
	ns := namespace(t, "plugin-yield")
	applyAs(t, "helm", fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: %s}
spec:
  replicas: 3
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: api, image: "api:1.0"}]
`, ns))
	d := &unstructured.Unstructured{}
	d.SetAPIVersion("apps/v1")
	d.SetKind("Deployment")
	d.SetNamespace(ns)
	d.SetName("api")
	if err := k8s.Patch(context.Background(), d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":7}}`)), client.FieldOwner("hpa")); err != nil {
		t.Fatal(err)
	}
	fp := fieldPatch(t, fmt.Sprintf(`
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: %s}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: api}
  conflictPolicy: Plugin
  conflictPlugin: yield-to-autoscalers
  patch:
    spec:
      replicas: 1
      template:
        spec:
          containers: [{name: api, image: "api:2.0"}]
`, ns))
	waitReason(t, fp, "Applied")
	l := live(t, d)
	if r, _, _ := unstructured.NestedInt64(l.Object, "spec", "replicas"); r != 7 {
		t.Fatalf("replicas %d: not yielded to hpa", r)
	}
	testkit.Eventually(t, "image forced", func() (bool, string) {
		cs, _, _ := unstructured.NestedSlice(live(t, d).Object, "spec", "template", "spec", "containers")
		img := cs[0].(map[string]interface{})["image"]
		return img == "api:2.0", fmt.Sprint(img)
	})
	own := owners(t, live(t, d))
	if got := own[".spec.replicas"]; len(got) != 1 || got[0] != "hpa/Update" {
		t.Fatalf(".spec.replicas owned by %v", got)
	}
	if got := own[`.spec.template.spec.containers[name="api"].image`]; len(got) != 1 || got[0] != "fieldops-fieldpatch/"+ns+"/pin/Apply" {
		t.Fatalf("image owned by %v", got)
	}
}
