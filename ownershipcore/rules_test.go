/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/ownershipcore"
)

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"hpa", "hpa", true},
		{"hpa", "hpa2", false},
		{"hpa", "hp", false},
		{"", "", true},
		{"", "x", false},
		{"*", "", true},
		{"*", "anything/at all", true},
		{"vpa-*", "vpa-recommender", true},
		{"vpa-*", "vpa-", true},
		{"vpa-*", "vpa", false},
		{"vpa-*", "keda-vpa-x", false},
		{"*-controller", "kube-controller", true},
		{"*-controller", "kube-controller-manager", false},
		{"fieldops-*", "fieldops-fieldpatch/ns/name", true}, // '*' crosses '/', unlike path.Match
		{"kube-?ontroller-manager", "kube-controller-manager", true},
		{"kube-?ontroller-manager", "kube-ontroller-manager", false},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
		{"a*b*c", "abcbc", true},
		{"*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false}, // backtracking stays bounded
		{"[abc]", "[abc]", true},                                           // no character classes: literal
		{"[abc]", "a", false},
		{"é*", "été", true}, // runes, not bytes
		{"?", "é", true},
	} {
		if got := ownershipcore.Glob(tc.pattern, tc.name); got != tc.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

func TestManagerMatch(t *testing.T) {
	for _, tc := range []struct {
		m       ownershipcore.ManagerMatch
		manager string
		op      metav1.ManagedFieldsOperationType
		want    bool
	}{
		{ownershipcore.ManagerMatch{Manager: "kube-controller-manager"}, "kube-controller-manager", update, true},
		{ownershipcore.ManagerMatch{Manager: "kube-controller-manager"}, "kube-controller-manager", apply, true},
		{ownershipcore.ManagerMatch{Manager: "kube-controller-manager", Operation: update}, "kube-controller-manager", update, true},
		{ownershipcore.ManagerMatch{Manager: "kube-controller-manager", Operation: update}, "kube-controller-manager", apply, false},
		{ownershipcore.ManagerMatch{Manager: "keda-*", Operation: apply}, "keda-operator", apply, true},
		{ownershipcore.ManagerMatch{Manager: "keda-*", Operation: apply}, "hpa", apply, false},
	} {
		if got := tc.m.Matches(tc.manager, tc.op); got != tc.want {
			t.Errorf("%v.Matches(%q, %s) = %v, want %v", tc.m, tc.manager, tc.op, got, tc.want)
		}
	}
}

// recorder is a default strategy that answers from a map and records
// which conflicts it was asked about.
type recorder struct {
	answers map[string]ownershipcore.Decision
	asked   []string
	short   bool
	err     error
}

func (r *recorder) Resolve(_ context.Context, _ *unstructured.Unstructured, _ string, cs []ownershipcore.Conflict) ([]ownershipcore.Resolution, error) {
	if r.err != nil {
		return nil, r.err
	}
	var out []ownershipcore.Resolution
	for _, c := range cs {
		r.asked = append(r.asked, c.Manager)
		out = append(out, ownershipcore.Resolution{Decision: r.answers[c.Manager], Message: "default"})
	}
	if r.short {
		out = out[:len(out)-1]
	}
	return out, nil
}

func TestManagerRulesResolve(t *testing.T) {
	conflict := func(manager string, op metav1.ManagedFieldsOperationType) ownershipcore.Conflict {
		return ownershipcore.Conflict{Manager: manager, Operation: op}
	}
	hpa := conflict("kube-controller-manager", update)
	vpa := conflict("vpa-updater", apply)
	ci := conflict("ci-bot", apply)
	helm := conflict("helm", update)
	for _, tc := range []struct {
		name      string
		rules     ownershipcore.ManagerRules
		def       *recorder
		conflicts []ownershipcore.Conflict
		want      []ownershipcore.Decision
		asked     []string
		wantErr   bool
	}{
		{
			name:      "yield to named, force over named, default for the rest in order",
			rules:     ownershipcore.ManagerRules{YieldTo: []ownershipcore.ManagerMatch{{Manager: "kube-controller-manager", Operation: update}, {Manager: "vpa-*"}}, ForceOver: []ownershipcore.ManagerMatch{{Manager: "ci-*"}}},
			def:       &recorder{answers: map[string]ownershipcore.Decision{"helm": ownershipcore.DecisionFail}},
			conflicts: []ownershipcore.Conflict{hpa, ci, helm, vpa},
			want:      []ownershipcore.Decision{ownershipcore.DecisionYield, ownershipcore.DecisionForce, ownershipcore.DecisionFail, ownershipcore.DecisionYield},
			asked:     []string{"helm"},
		},
		{
			name:      "yieldTo wins over forceOver for a manager in both",
			rules:     ownershipcore.ManagerRules{YieldTo: []ownershipcore.ManagerMatch{{Manager: "vpa-updater"}}, ForceOver: []ownershipcore.ManagerMatch{{Manager: "*"}}},
			def:       &recorder{},
			conflicts: []ownershipcore.Conflict{vpa, helm},
			want:      []ownershipcore.Decision{ownershipcore.DecisionYield, ownershipcore.DecisionForce},
		},
		{
			name:      "operation must match when given",
			rules:     ownershipcore.ManagerRules{YieldTo: []ownershipcore.ManagerMatch{{Manager: "kube-controller-manager", Operation: apply}}},
			def:       &recorder{answers: map[string]ownershipcore.Decision{"kube-controller-manager": ownershipcore.DecisionForce}},
			conflicts: []ownershipcore.Conflict{hpa},
			want:      []ownershipcore.Decision{ownershipcore.DecisionForce},
			asked:     []string{"kube-controller-manager"},
		},
		{
			name:      "default not asked when rules decide everything",
			rules:     ownershipcore.ManagerRules{ForceOver: []ownershipcore.ManagerMatch{{Manager: "*"}}},
			def:       &recorder{err: errors.New("must not be called")},
			conflicts: []ownershipcore.Conflict{hpa, vpa},
			want:      []ownershipcore.Decision{ownershipcore.DecisionForce, ownershipcore.DecisionForce},
		},
		{
			name:      "no default is Fail",
			rules:     ownershipcore.ManagerRules{},
			conflicts: []ownershipcore.Conflict{helm},
			want:      []ownershipcore.Decision{ownershipcore.DecisionFail},
		},
		{
			name:      "a default that answers too few fails the apply",
			rules:     ownershipcore.ManagerRules{YieldTo: []ownershipcore.ManagerMatch{{Manager: "vpa-*"}}},
			def:       &recorder{short: true},
			conflicts: []ownershipcore.Conflict{vpa, helm, ci},
			wantErr:   true,
		},
		{
			name:      "a default's error fails the apply",
			rules:     ownershipcore.ManagerRules{},
			def:       &recorder{err: errors.New("plugin died")},
			conflicts: []ownershipcore.Conflict{helm},
			wantErr:   true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules := tc.rules
			if tc.def != nil {
				rules.Default = tc.def
			}
			got, err := rules.Resolve(context.Background(), nil, "me", tc.conflicts)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("want an error, got %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var decisions []ownershipcore.Decision
			for _, r := range got {
				decisions = append(decisions, r.Decision)
				if r.Message == "" {
					t.Errorf("resolution %v has no message", r)
				}
			}
			if !reflect.DeepEqual(decisions, tc.want) {
				t.Errorf("decisions %v, want %v", decisions, tc.want)
			}
			if tc.def != nil && !reflect.DeepEqual(tc.def.asked, tc.asked) {
				t.Errorf("default asked about %v, want %v", tc.def.asked, tc.asked)
			}
		})
	}
}

func TestManagerRulesDecides(t *testing.T) {
	r := ownershipcore.ManagerRules{YieldTo: []ownershipcore.ManagerMatch{{Manager: "hpa-*", Operation: update}}, ForceOver: []ownershipcore.ManagerMatch{{Manager: "h*"}}}
	for _, tc := range []struct {
		manager string
		op      metav1.ManagedFieldsOperationType
		want    ownershipcore.Decision
		ok      bool
	}{
		{"hpa-controller", update, ownershipcore.DecisionYield, true},
		{"hpa-controller", apply, ownershipcore.DecisionForce, true},
		{"helm", update, ownershipcore.DecisionForce, true},
		{"argo", update, "", false},
	} {
		if d, ok := r.Decides(tc.manager, tc.op); d != tc.want || ok != tc.ok {
			t.Errorf("Decides(%q, %s) = %s, %v; want %s, %v", tc.manager, tc.op, d, ok, tc.want, tc.ok)
		}
	}
	if _, ok := (ownershipcore.ManagerRules{}).Decides("x", apply); ok {
		t.Error("empty rules decide")
	}
}
