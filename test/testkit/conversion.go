/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package testkit

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RenamingCRD returns a namespaced CustomResourceDefinition of kind in
// group (plural: lower-case kind and "s") served in v1 (stored) and v2,
// whose spec holds a map of strings named params in v1 and settings in v2,
// converted by RenamingConversion, and the properties extra in both.
func RenamingCRD(t testing.TB, group, kind string, extra map[string]apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	strMap := apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &str}}
	version := func(name, mapName string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		props := map[string]apiextensionsv1.JSONSchemaProps{mapName: strMap}
		for k, v := range extra {
			props[k] = v
		}
		return apiextensionsv1.CustomResourceDefinitionVersion{
			Name: name, Served: true, Storage: storage,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type:       "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: props}},
			}},
		}
	}
	plural := strings.ToLower(kind) + "s"
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names:      apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Versions:   []apiextensionsv1.CustomResourceDefinitionVersion{version("v1", "params", true), version("v2", "settings", false)},
			Conversion: RenamingConversion(t, "params", "settings"),
		},
	}
}

// RenamingConversion serves a CRD conversion webhook (ConversionReview v1,
// over TLS on 127.0.0.1, stopped at the end of the test) that renames
// spec.<from> in version v1 to spec.<to> in version v2 and back, as
// conversion webhooks do between API versions (cluster-api's v1beta1 and
// v1beta2), and returns the CRD's conversion stanza that calls it.
func RenamingConversion(t testing.TB, from, to string) *apiextensionsv1.CustomResourceConversion {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review apiextensionsv1.ConversionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad ConversionReview", http.StatusBadRequest)
			return
		}
		src, dst := from, to
		if strings.HasSuffix(review.Request.DesiredAPIVersion, "/v1") {
			src, dst = to, from
		}
		resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		for _, raw := range review.Request.Objects {
			var o map[string]interface{}
			if err := json.Unmarshal(raw.Raw, &o); err != nil {
				resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
				break
			}
			o["apiVersion"] = review.Request.DesiredAPIVersion
			if spec, ok := o["spec"].(map[string]interface{}); ok {
				if v, ok := spec[src]; ok {
					spec[dst] = v
					delete(spec, src)
				}
			}
			out, _ := json.Marshal(o)
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: out})
		}
		review.Request, review.Response = nil, resp
		_ = json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(srv.Close)
	url := srv.URL
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig: &apiextensionsv1.WebhookClientConfig{
				URL:      &url,
				CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}),
			},
			ConversionReviewVersions: []string{"v1"},
		},
	}
}
