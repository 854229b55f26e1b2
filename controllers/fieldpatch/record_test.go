package fieldpatch_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/ownershipcore"
)

// Previous owners are recorded when the patch takes a field, not when it
// first wants it: a patch that yielded data.a to base, and took it only
// once nobody owned it any more (base lost it to ops, whose ownership
// then went), added it. Deleted with Relinquish, it removes data.a; before,
// it kept base as the previous owner from its first look and left its
// value behind, owned by nobody (test/invariants seed 3000070).
func TestRecordOwnersAtTheTake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "record-take")
	cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"%s"},"data":%%s}`, ns)
	applyAs(t, "base", fmt.Sprintf(cm, `{"a":"1","b":"2"}`))
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: polite, namespace: `+ns+`}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: cfg}
  patch: {data: {a: "2", x: "1"}}
  conflictPolicy: Yield
  deletionPolicy: Relinquish
`)
	waitReason(t, fp, "Applied")
	target := obj(t, fmt.Sprintf(cm, `{}`))
	if got := live(t, target).Object["data"].(map[string]interface{})["a"]; got != "1" {
		t.Fatalf("data.a = %v, want base's 1 (yielded)", got)
	}
	// ops takes data.a from base; then its ownership goes (a managed
	// fields edit), the value stays: data.a is nobody's.
	applyAs(t, "ops", fmt.Sprintf(cm, `{"a":"3"}`))
	cur := live(t, target)
	mf, err := ownershipcore.Owners(cur)
	if err != nil {
		t.Fatal(err)
	}
	var keep ownershipcore.ManagedFields
	for _, e := range mf {
		if e.Manager != "ops" {
			keep = append(keep, e)
		}
	}
	entries, err := keep.Encode()
	if err != nil {
		t.Fatal(err)
	}
	cur.SetManagedFields(entries)
	if err := k8s.Update(ctx, cur, client.FieldOwner("ops")); err != nil {
		t.Fatal(err)
	}
	// The patch now takes data.a, unowned: an added field.
	eventually(t, "the patch takes data.a", func() (bool, string) {
		o := owners(t, live(t, target))
		return fmt.Sprint(o[".data.a"]) == "[fieldops-fieldpatch/"+ns+"/polite/Apply]", fmt.Sprint(o)
	})
	deleteAndWait(t, fp)
	after := live(t, target)
	data := after.Object["data"].(map[string]interface{})
	if want := map[string]interface{}{"b": "2"}; !reflect.DeepEqual(data, want) {
		t.Errorf("data after the deletion = %v, want %v (data.a and data.x were added by the patch)", data, want)
	}
	if o := owners(t, after); fmt.Sprint(o) != "map[.data.b:[base/Apply]]" {
		t.Errorf("owners after the deletion %v, want base's data.b only", o)
	}
}
