/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"encoding/json"
	"math/rand"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/diff"
	"sigs.k8s.io/randfill"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

// A packed FieldPatch or ClusterFieldPatch unpacks to exactly what the
// watch decoded: random objects (apimachinery's API fuzzer, with field
// sets and patches that are JSON, HTML-escaped characters among them),
// decoded from the apiserver's JSON as an informer decodes them, then
// packed and unpacked, equal the decoded ones, selector records,
// conditions, times and durations included.
func TestPackedPatchesRoundTrip(t *testing.T) {
	codecs := serializer.NewCodecFactory(Scheme())
	f := fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, func(serializer.CodecFactory) []interface{} {
		return []interface{}{
			func(fv *metav1.FieldsV1, c randfill.Continue) {
				b, _ := json.Marshal(map[string]any{"f:" + c.String(5): map[string]any{}, `k:{"name":"<&>"}`: map[string]any{".": map[string]any{}}})
				fv.SetRawBytes(b)
			},
			func(r *runtime.RawExtension, c randfill.Continue) {
				b, _ := json.Marshal(map[string]any{"data": map[string]any{c.String(8): c.String(8)}, "n": c.Int63(), "h": "<b>&"})
				r.Raw = b
			},
		}
	}), rand.NewSource(1), codecs)
	enc := codecs.LegacyCodec(v1alpha1.GroupVersion)
	for i := 0; i < 500; i++ {
		for _, obj := range []runtime.Object{&v1alpha1.FieldPatch{}, &v1alpha1.ClusterFieldPatch{}} {
			f.Fill(obj)
			raw, err := runtime.Encode(enc, obj)
			if err != nil {
				t.Fatal(err)
			}
			decoded, _, err := codecs.UniversalDeserializer().Decode(raw, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := decoded.DeepCopyObject()
			var got runtime.Object
			switch d := decoded.(type) {
			case *v1alpha1.FieldPatch:
				got = packedFieldPatches.Pack(d).DeepCopyObject()
			case *v1alpha1.ClusterFieldPatch:
				got = packedClusterFieldPatches.Pack(d).DeepCopyObject()
			}
			if !equality.Semantic.DeepEqual(got, want) {
				t.Fatalf("%d %T: unpacked differs from decoded: %s", i, obj, diff.Diff(want, got))
			}
		}
	}
}
