/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package redact_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/ownershipcore/redact"
)

// testTypes is a small structured-merge-diff schema with every kind of
// type a conversion can fail on.
const testTypes = `types:
- name: obj
  map:
    fields:
    - {name: str, type: {scalar: string}}
    - {name: num, type: {scalar: numeric}}
    - {name: flag, type: {scalar: boolean}}
    - {name: any, type: {scalar: untyped}}
    - name: items
      type: {list: {elementType: {scalar: string}, elementRelationship: atomic}}
    - name: labels
      type: {map: {elementType: {scalar: string}}}
    - name: env
      type: {list: {elementType: {namedType: envVar}, elementRelationship: associative, keys: [name]}}
    - name: tags
      type: {list: {elementType: {scalar: string}, elementRelationship: associative}}
- name: envVar
  map:
    fields:
    - {name: name, type: {scalar: string}}
    - {name: value, type: {scalar: string}}
`

// secret values: none may appear in a safe message.
const (
	secretString = "s3cr3t-v4lue"
	secretNumber = 987654
)

var secrets = []string{secretString, fmt.Sprint(secretNumber), "98765.4", "value.valueUnstructured", "&{", "interface {}"}

// convert returns the real error of converting the YAML object with the
// test schema, without allowing duplicates (as for an apply patch).
func convert(t *testing.T, y string) error {
	t.Helper()
	parser, err := typed.NewParser(typed.YAMLObject(testTypes))
	if err != nil {
		t.Fatal(err)
	}
	var u map[string]interface{}
	if err := yaml.Unmarshal([]byte(y), &u); err != nil {
		t.Fatal(err)
	}
	_, err = parser.Type("obj").FromUnstructured(u)
	if err == nil {
		t.Fatalf("%s converted without error", y)
	}
	return err
}

// TestMessageOfConversionErrors covers every shape of
// structured-merge-diff's conversion errors (typed/validate.go,
// typed/helpers.go), as the typed error, as text wrapped with %v, and as
// the apiserver's 500 for an apply patch, which carries the local field
// manager's text (structuredmerge.go: "failed to create typed patch
// object (ns/name; GVK): <smd error>").
func TestMessageOfConversionErrors(t *testing.T) {
	for _, tc := range []struct {
		name, object string
		raw          string // a substring of the raw error, to show the shape
		want         string
	}{
		{"string-got-int", "{str: 987654}", "&value.valueUnstructured{Value:987654}", ".str: expected string, got integer"},
		{"string-got-float", "{str: 98765.4}", "&value.valueUnstructured{Value:98765.4}", ".str: expected string, got number"},
		{"string-got-bool", "{str: true}", "{Value:true}", ".str: expected string, got boolean"},
		{"string-got-map", "{str: {k: s3cr3t-v4lue}}", "map[string]interface {}", ".str: expected string, got map"},
		{"string-got-list", "{str: [s3cr3t-v4lue, 987654]}", "[]interface {}", ".str: expected string, got list"},
		{"number-got-string", "{num: s3cr3t-v4lue}", "expected numeric (int or float), got string", ".num: expected number, got string"},
		{"number-got-bool", "{num: true}", "got bool", ".num: expected number, got boolean"},
		{"number-got-map", "{num: {k: v}}", "got map[string]interface {}", ".num: expected number, got map"},
		{"number-got-list", "{num: [1]}", "got []interface {}", ".num: expected number, got list"},
		{"boolean-got-string", "{flag: s3cr3t-v4lue}", "&{s3cr3t-v4lue}", ".flag: expected boolean, got string"},
		{"boolean-got-int", "{flag: 987654}", "&{987654}", ".flag: expected boolean, got integer"},
		{"boolean-got-map", "{flag: {k: s3cr3t-v4lue}}", "&{map[k:s3cr3t-v4lue]}", ".flag: expected boolean, got map"},
		{"boolean-got-list", "{flag: [s3cr3t-v4lue]}", "&{[s3cr3t-v4lue]}", ".flag: expected boolean, got list"},
		{"boolean-got-string-with-braces", "{flag: \"s3cr3t} v4lue\\nnext}\"}", "&{s3cr3t}", ".flag: expected boolean, got string"},
		{"scalar-got-map", "{any: {k: s3cr3t-v4lue}}", "expected any scalar", ".any: expected any scalar, got map"},
		{"scalar-got-list", "{any: [987654]}", "expected any scalar", ".any: expected any scalar, got list"},
		{"list-got-string", "{items: s3cr3t-v4lue}", "expected list, got &{s3cr3t-v4lue}", ".items: expected list, got string"},
		{"list-got-map", "{items: {k: s3cr3t-v4lue}}", "expected list, got &{map[", ".items: expected list, got map"},
		{"map-got-string", "{labels: s3cr3t-v4lue}", "expected map, got &{s3cr3t-v4lue}", ".labels: expected map, got string"},
		{"map-got-list", "{labels: [987654]}", "expected map, got &{[987654]}", ".labels: expected map, got list"},
		{"map-got-int", "{labels: 987654}", "expected map, got &{987654}", ".labels: expected map, got integer"},
		{"undeclared", "{zz: s3cr3t-v4lue}", "field not declared in schema", ".zz: field not declared in schema"},
		{"duplicate-keys", "{env: [{name: A, value: s3cr3t-v4lue}, {name: A, value: b}]}", "duplicate entries for key", `.env: duplicate entries for key [name="A"]`},
		{"duplicate-set-item", "{tags: [s3cr3t-v4lue, s3cr3t-v4lue]}", `[="s3cr3t-v4lue"]`, ".tags: duplicate entries of one value"},
		{"keyed-null-element", "{env: [null]}", "may not have a null element", ".env: element 0: associative list with keys may not have a null element"},
		{"keyed-non-map-element", "{env: [s3cr3t-v4lue]}", "non-map elements", ".env: element 0: associative list with keys may not have non-map elements"},
		{"keyed-no-key", "{env: [{value: s3cr3t-v4lue}]}", "omits all key fields", `.env: element 0: associative list with keys has an element that omits all key fields ["name"] (and doesn't have default values for any key fields)`},
		{"set-map-element", "{tags: [{k: s3cr3t-v4lue}]}", "that's a map type", ".tags: element 0: associative list without keys has an element that's a map type"},
		{"set-list-element", "{tags: [[s3cr3t-v4lue]]}", "lists as elements", ".tags: element 0: not supported: associative list with lists as elements"},
		{"set-null-element", "{tags: [null]}", "explicit null", ".tags: element 0: associative list without keys has an element that's an explicit null"},
		{"two-errors", "{str: 987654, flag: s3cr3t-v4lue}", "errors:", ".flag: expected boolean, got string; .str: expected string, got integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := convert(t, tc.object)
			if !strings.Contains(err.Error(), tc.raw) {
				t.Fatalf("raw error %q does not show the shape %q", err, tc.raw)
			}
			var verrs typed.ValidationErrors
			if !errors.As(err, &verrs) {
				t.Fatalf("%T is not typed.ValidationErrors", err)
			}
			wrapped := fmt.Errorf("Widget w: %w", err)
			check(t, "typed", redact.Message(wrapped), "Widget w: "+tc.want)

			// As text only: the order of several errors is kept, their
			// lines too.
			textWant := tc.want
			if tc.name == "two-errors" {
				textWant = "errors:\n  .str: expected string, got integer\n  .flag: expected boolean, got string"
				if !strings.HasPrefix(err.Error(), "errors:\n  .str") {
					textWant = "errors:\n  .flag: expected boolean, got string\n  .str: expected string, got integer"
				}
			}
			check(t, "text", redact.Message(fmt.Errorf("patch does not fit: %v", err)), "patch does not fit: "+textWant)

			server := &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonUnknown,
				Message: fmt.Sprintf("failed to create typed patch object (ns/w; example.com/v1, Kind=Widget): %v", err),
			}}
			check(t, "500", redact.Message(fmt.Errorf("apply Widget ns/w: %w", server)), "apply Widget ns/w: the object does not fit the schema of example.com/v1 Widget: "+textWant)
		})
	}
}

func check(t *testing.T, how, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\n got %q\nwant %q", how, got, want)
	}
	for _, s := range secrets {
		if strings.Contains(got, s) {
			t.Errorf("%s: %q leaks %q", how, got, s)
		}
	}
	if again := redact.Text(got); again != got {
		t.Errorf("%s: not idempotent: %q → %q", how, got, again)
	}
}

// TestMessageOfAPIStatus covers the apiserver's Invalid answers (built
// as the apiserver builds them, from field errors) and BadRequest ones.
func TestMessageOfAPIStatus(t *testing.T) {
	gk := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	p := field.NewPath("spec")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"invalid-string", apierrors.NewInvalid(gk, "web", field.ErrorList{field.Invalid(p.Child("x"), secretString, "must be no more than 63 characters")}),
			`Deployment.apps "web" is invalid: spec.x: Invalid value (omitted): must be no more than 63 characters`},
		{"invalid-number", apierrors.NewInvalid(gk, "web", field.ErrorList{field.Invalid(p.Child("replicas"), int64(-secretNumber), "must be greater than or equal to 0")}),
			`Deployment.apps "web" is invalid: spec.replicas: Invalid value (omitted): must be greater than or equal to 0`},
		{"invalid-object", apierrors.NewInvalid(gk, "web", field.ErrorList{field.Invalid(p.Child("o"), map[string]interface{}{"k": secretString, "n": []int{secretNumber}}, "bad: really")}),
			`Deployment.apps "web" is invalid: spec.o: Invalid value (omitted): bad: really`},
		{"invalid-go-struct", apierrors.NewInvalid(gk, "web", field.ErrorList{field.Invalid(p.Child("c"), struct{ A func() }{}, "no JSON")}),
			`Deployment.apps "web" is invalid: spec.c: Invalid value (omitted): no JSON`},
		{"omitted-value", apierrors.NewInvalid(gk, "web", field.ErrorList{field.Invalid(p.Child("x"), field.OmitValueType{}, "must be set with y")}),
			`Deployment.apps "web" is invalid: spec.x: Invalid value: must be set with y`},
		{"type-invalid", apierrors.NewInvalid(gk, "web", field.ErrorList{field.TypeInvalid(p.Child("replicas"), "number", "spec.replicas in body must be of type integer: \"number\"")}),
			`Deployment.apps "web" is invalid: spec.replicas: Invalid value (omitted): spec.replicas in body must be of type integer: "number"`},
		{"several", apierrors.NewInvalid(gk, "web", field.ErrorList{
			field.NotSupported(p.Child("policy"), secretString, []string{"Force", "Fail"}),
			field.Required(p.Child("selector"), ""),
			field.Duplicate(p.Child("env").Index(1).Child("name"), secretString),
			field.TooMany(p.Child("items"), secretNumber, 3),
			field.NotFound(p.Child("ref"), secretString),
		}), `Deployment.apps "web" is invalid: spec.policy: Unsupported value (omitted): supported values: "Force", "Fail"; spec.selector: Required value; spec.env[1].name: Duplicate value (omitted); spec.items: Too many (omitted): must have at most 3 items; spec.ref: Not found (omitted)`},
		{"go-type-500", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonUnknown,
			Message: "failed to convert new object (ns/web; apps/v1, Kind=Deployment) to proper version: unable to convert unstructured object to apps/v1, Kind=Deployment: cannot convert float64 to int32"}},
			"the object does not fit the Go type of apps/v1 Deployment: expected int32, got number"},
		{"bad-request", apierrors.NewBadRequest("error decoding patch: json: cannot unmarshal number 98765.4 into Go struct field DeploymentSpec.spec.replicas of type int32"),
			"error decoding patch: json: cannot unmarshal number into Go struct field DeploymentSpec.spec.replicas of type int32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check(t, "status", redact.Message(fmt.Errorf("apply Deployment ns/web: %w", tc.err)), "apply Deployment ns/web: "+tc.want)
			// As text, the values go too; the words differ where the
			// structure was needed.
			text := redact.Message(errors.New("rejected: " + tc.err.Error()))
			for _, s := range secrets {
				if strings.Contains(text, s) {
					t.Errorf("text %q leaks %q", text, s)
				}
			}
			if again := redact.Text(text); again != text {
				t.Errorf("text: not idempotent: %q → %q", text, again)
			}
		})
	}
}

func TestTextLeavesOtherTextAlone(t *testing.T) {
	for _, s := range []string{
		"",
		"target Deployment ns/web not found; it is patched when it appears",
		`1 conflict(s): .spec.replicas owned by "hpa" (Update)`,
		"Invalid value: must be set",
		"expected string, got integer",
		"the object does not fit the schema of apps/v1 Deployment: .spec.x: expected number, got string",
		"ünïcödé: expected map, got null",
	} {
		if got := redact.Text(s); got != s {
			t.Errorf("redact.Text(%q) = %q", s, got)
		}
	}
}
