package fieldpatch

import (
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

// patchedObject returns live with the patch of spec applied, for the
// StrategicMerge, Merge and JSON types. The fields it changes become the
// intent (see ownershipcore.Applier.ChangedIntent).
func patchedObject(spec *v1alpha1.FieldPatchSpec, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	liveJSON, err := json.Marshal(live.Object)
	if err != nil {
		return nil, err
	}
	raw := spec.Patch.Raw
	var out []byte
	switch spec.Type {
	case v1alpha1.PatchTypeJSON:
		p, err := jsonpatch.DecodePatch(raw)
		if err != nil {
			return nil, fmt.Errorf("JSON patch: %w", err)
		}
		if out, err = p.Apply(liveJSON); err != nil {
			return nil, fmt.Errorf("JSON patch: %w", err)
		}
	case v1alpha1.PatchTypeMerge:
		if !isJSONObject(raw) {
			return nil, errors.New("merge patch: must be an object")
		}
		if out, err = jsonpatch.MergePatch(liveJSON, raw); err != nil {
			return nil, fmt.Errorf("merge patch: %w", err)
		}
	case v1alpha1.PatchTypeStrategicMerge:
		if !isJSONObject(raw) {
			return nil, errors.New("strategic merge patch: must be an object")
		}
		typed, err := clientgoscheme.Scheme.New(live.GroupVersionKind())
		if err != nil {
			return nil, fmt.Errorf("strategic merge patch is only defined for built-in kinds, not %s: use Merge or Apply", live.GroupVersionKind().Kind)
		}
		if out, err = strategicpatch.StrategicMergePatch(liveJSON, raw, typed); err != nil {
			return nil, fmt.Errorf("strategic merge patch: %w", err)
		}
	default:
		return nil, fmt.Errorf("patch type %q is not computed locally", spec.Type)
	}
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal(out, &obj.Object); err != nil {
		return nil, fmt.Errorf("patched object: %w", err)
	}
	return obj, nil
}

// applyIntent reads an Apply patch: a partial object, given the identity of
// the target.
func applyIntent(spec *v1alpha1.FieldPatchSpec, gvk schema.GroupVersionKind, namespace string) (*unstructured.Unstructured, error) {
	if !isJSONObject(spec.Patch.Raw) {
		return nil, errors.New("apply patch: must be an object (a partial manifest of the target)")
	}
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal(spec.Patch.Raw, &obj.Object); err != nil {
		return nil, fmt.Errorf("apply patch: %w", err)
	}
	if v, ok := obj.Object["apiVersion"]; ok && v != gvk.GroupVersion().String() {
		return nil, fmt.Errorf("apply patch: apiVersion %v differs from the target's %s", v, gvk.GroupVersion())
	}
	if v, ok := obj.Object["kind"]; ok && v != gvk.Kind {
		return nil, fmt.Errorf("apply patch: kind %v differs from the target's %s", v, gvk.Kind)
	}
	if n := obj.GetName(); n != "" && n != spec.Target.Name {
		return nil, fmt.Errorf("apply patch: metadata.name %q differs from the target's %q", n, spec.Target.Name)
	}
	obj.SetGroupVersionKind(gvk)
	obj.SetName(spec.Target.Name)
	obj.SetNamespace(namespace)
	return obj, nil
}

func isJSONObject(raw []byte) bool {
	var m map[string]interface{}
	return json.Unmarshal(raw, &m) == nil && m != nil
}
