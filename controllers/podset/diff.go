/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package podset

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// RevisionLabel holds, on each pod, the revision of the template.spec it
// was created from.
const RevisionLabel = "fieldops.dev/revision"

// Diff is what it takes to bring a live pod to the desired one.
type Diff string

const (
	// None: the pod is up to date.
	None Diff = "None"
	// MetadataOnly: only labels or annotations differ; they are applied to
	// the running pod in place.
	MetadataOnly Diff = "MetadataOnly"
	// RequiresRestart: the spec differs; the pod is deleted and created
	// again.
	RequiresRestart Diff = "RequiresRestart"
)

// Revision is the revision of a pod spec: the first 10 hex digits of the
// SHA-256 of its JSON. Only template.spec counts, so a label or annotation
// change keeps the revision.
func Revision(spec *corev1.PodSpec) string {
	b, err := json.Marshal(spec)
	if err != nil {
		// A PodSpec always marshals; keep a stable answer regardless.
		return "invalid"
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:10]
}

// PodDiff compares a live pod with the desired one (desiredPod: the
// template, the revision label, the PodSet's ownerReference) and returns
// what it takes to reconcile them. manager is the PodSet's field manager:
// label and annotation keys it owns on live but no longer desires are
// removals, hence MetadataOnly; keys other managers own never count.
//
// The spec is compared by revision: live's RevisionLabel against
// desired's (Revision(desired.Spec) when desired has none), so fields the apiserver or kubelet fill
// (defaults, nodeName, status) never cause a restart. A live pod without
// the label (made by someone else) is compared field by field: every field
// desired sets must have the same value on live.
func PodDiff(live, desired *corev1.Pod, manager string) (Diff, error) {
	want, ok := desired.Labels[RevisionLabel] // desiredPod sets it
	if !ok {
		want = Revision(&desired.Spec)
	}
	if got, ok := live.Labels[RevisionLabel]; ok {
		if got != want {
			return RequiresRestart, nil
		}
	} else if !subset(toMap(&desired.Spec), toMap(&live.Spec)) {
		return RequiresRestart, nil
	}
	owned, err := ownedMetadata(live, manager)
	if err != nil {
		return "", err
	}
	if metadataDiffers(live.Labels, desired.Labels, owned["labels"]) ||
		metadataDiffers(live.Annotations, desired.Annotations, owned["annotations"]) {
		return MetadataOnly, nil
	}
	return None, nil
}

// metadataDiffers reports whether a desired key is missing or different on
// live, or a key manager owns is no longer desired.
func metadataDiffers(live, desired map[string]string, owned map[string]bool) bool {
	for k, v := range desired {
		if lv, ok := live[k]; !ok || lv != v {
			return true
		}
	}
	for k := range owned {
		if _, ok := desired[k]; !ok {
			if _, onLive := live[k]; onLive {
				return true
			}
		}
	}
	return false
}

// ownedMetadata returns the label and annotation keys manager's Apply entry
// owns on pod.
func ownedMetadata(pod *corev1.Pod, manager string) (map[string]map[string]bool, error) {
	out := map[string]map[string]bool{"labels": {}, "annotations": {}}
	owners, err := ownershipcore.Owners(pod)
	if err != nil {
		return nil, err
	}
	ours := owners.Applied(manager)
	if ours == nil {
		return out, nil
	}
	ours.Fields.Iterate(func(p fieldset.Path) {
		if len(p) == 3 && p[0].FieldName != nil && *p[0].FieldName == "metadata" && p[1].FieldName != nil && p[2].FieldName != nil {
			if m, ok := out[*p[1].FieldName]; ok {
				m[*p[2].FieldName] = true
			}
		}
	})
	return out, nil
}

func toMap(v interface{}) interface{} {
	b, _ := json.Marshal(v)
	var out interface{}
	_ = json.Unmarshal(b, &out)
	return out
}

// subset reports whether every field set in want has the same value in
// got (lists must have the same length, compared item by item).
func subset(want, got interface{}) bool {
	switch w := want.(type) {
	case map[string]interface{}:
		g, ok := got.(map[string]interface{})
		if !ok {
			return false
		}
		for k, wv := range w {
			if !subset(wv, g[k]) {
				return false
			}
		}
		return true
	case []interface{}:
		g, ok := got.([]interface{})
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !subset(w[i], g[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(want, got)
	}
}

// podName is the name of ordinal i.
func podName(ps *v1alpha1.PodSet, i int) string {
	return fmt.Sprintf("%s-%d", ps.Name, i)
}

// ordinal parses the ordinal of a pod of ps from its name; -1 if it is not
// one of ps's names.
func ordinal(ps *v1alpha1.PodSet, name string) int {
	prefix := ps.Name + "-"
	if len(name) <= len(prefix) || name[:len(prefix)] != prefix {
		return -1
	}
	i, err := strconv.Atoi(name[len(prefix):])
	if err != nil || i < 0 || strconv.Itoa(i) != name[len(prefix):] {
		return -1
	}
	return i
}

// desiredPod is the pod of ordinal i: the template's labels (plus the
// revision label), annotations and spec, owned by ps.
func desiredPod(ps *v1alpha1.PodSet, i int, revision string) *corev1.Pod {
	labels := map[string]string{}
	for k, v := range ps.Spec.Template.Metadata.Labels {
		labels[k] = v
	}
	labels[RevisionLabel] = revision
	var annotations map[string]string
	if len(ps.Spec.Template.Metadata.Annotations) > 0 {
		annotations = map[string]string{}
		for k, v := range ps.Spec.Template.Metadata.Annotations {
			annotations[k] = v
		}
	}
	yes := true
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: podName(ps, i), Namespace: ps.Namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "PodSet", Name: ps.Name, UID: ps.UID,
				Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: *ps.Spec.Template.Spec.DeepCopy(),
	}
}
