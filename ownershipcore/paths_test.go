/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"testing"

	"github.com/fieldops/fieldops/ownershipcore"
)

func TestParsePathRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		in      string
		wantErr bool
	}{
		{in: ".spec.replicas"},
		{in: `.spec.template.spec.containers[name="aws-node"].env[name="HTTP_PROXY"].value`},
		{in: `.metadata.annotations["policies.kyverno.io/last-applied-patches"]`},
		{in: `.metadata.finalizers[="example.com/x"]`},
		{in: `.spec.ports[port=53,protocol="UDP"].targetPort`},
		{in: `.spec.args[2]`},
		{in: `.metadata.labels["app.kubernetes.io/name"]`},
		{in: ``, wantErr: true},
		{in: `spec`, wantErr: true},
		{in: `.spec.`, wantErr: true},
		{in: `.metadata.annotations.a/b`, wantErr: true},
		{in: `.spec[`, wantErr: true},
		{in: `.spec[name=]`, wantErr: true},
		{in: `.spec["unterminated]`, wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			p, err := ownershipcore.ParsePath(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParsePath(%q) = %v, want an error", tc.in, p)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ownershipcore.FormatPath(p); got != tc.in {
				t.Fatalf("FormatPath(ParsePath(%q)) = %q", tc.in, got)
			}
		})
	}
}

func TestManagerName(t *testing.T) {
	long := make([]byte, 200)
	for i := range long {
		long[i] = 'a'
	}
	for _, tc := range []struct {
		name, prefix, ns, n, want string
	}{
		{name: "namespaced", prefix: "fieldops-fieldpatch", ns: "kube-system", n: "aws-node-proxy", want: "fieldops-fieldpatch/kube-system/aws-node-proxy"},
		{name: "cluster", prefix: "fieldops-clusterfieldpatch", n: "x", want: "fieldops-clusterfieldpatch/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ownershipcore.ManagerName(tc.prefix, tc.ns, tc.n); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	a := ownershipcore.ManagerName("fieldops-fieldpatch", string(long[:63]), string(long[:190]))
	b := ownershipcore.ManagerName("fieldops-fieldpatch", string(long[:63]), string(long[:189]))
	if len(a) != ownershipcore.MaxManagerLength || len(b) != ownershipcore.MaxManagerLength {
		t.Fatalf("lengths %d, %d, want %d", len(a), len(b), ownershipcore.MaxManagerLength)
	}
	if a == b {
		t.Fatalf("two long names share the manager %q", a)
	}
	if a != ownershipcore.ManagerName("fieldops-fieldpatch", string(long[:63]), string(long[:190])) {
		t.Fatal("not deterministic")
	}
}
