/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package targetcache

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A list is decoded one item at a time, each item held compressed; the
// list's metadata and every item come through, whatever the order of
// the list's keys.
func TestDecodeList(t *testing.T) {
	item := func(name string) string {
		return `{"metadata":{"name":"` + name + `","namespace":"ns","uid":"u-` + name + `","resourceVersion":"7"},"data":{"a":"` + strings.Repeat("x", 200) + `"}}`
	}
	for _, tc := range []struct {
		name, body string
		rv         string
		items      []string
		err        bool
	}{
		{name: "items", body: `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[` + item("a") + `,` + item("b") + `]}`, rv: "9", items: []string{"a", "b"}},
		{name: "items before metadata", body: `{"items":[` + item("a") + `],"metadata":{"resourceVersion":"3","continue":"c"}}`, rv: "3", items: []string{"a"}},
		{name: "no items", body: `{"kind":"ConfigMapList","metadata":{"resourceVersion":"4"},"items":[]}`, rv: "4"},
		{name: "null items", body: `{"metadata":{"resourceVersion":"5"},"items":null}`, rv: "5"},
		{name: "not an object", body: `[]`, err: true},
		{name: "items not an array", body: `{"items":{}}`, err: true},
		{name: "cut short", body: `{"metadata":{"resourceVersion":"5"},"items":[` + item("a"), err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := decodeList(json.NewDecoder(strings.NewReader(tc.body)))
			if tc.err {
				if err == nil {
					t.Fatalf("decoded %+v, want an error", l)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.ResourceVersion != tc.rv || len(l.Items) != len(tc.items) {
				t.Fatalf("resourceVersion %q, %d items; want %q, %d", l.ResourceVersion, len(l.Items), tc.rv, len(tc.items))
			}
			for i, name := range tc.items {
				o := l.Items[i]
				if o.Name != name || o.Namespace != "ns" || string(o.UID) != "u-"+name || o.ResourceVersion != "7" {
					t.Errorf("item %d: %s/%s %s %s", i, o.Namespace, o.Name, o.UID, o.ResourceVersion)
				}
				if len(o.raw) > len(item(name)) {
					t.Errorf("item %d held in %d bytes, its JSON is %d: more than the item's own JSON", i, len(o.raw), len(item(name)))
				}
				u, err := decode(o.raw, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
				if err != nil {
					t.Fatal(err)
				}
				if u.GetName() != name || u.GetKind() != "ConfigMap" || len(u.Object["data"].(map[string]any)["a"].(string)) != 200 {
					t.Errorf("item %d decoded: %v", i, u.Object)
				}
			}
		})
	}
}
