/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/controllers/fieldpatch"
)

// fieldops's own writes to a FieldPatch (the finalizer, the status) are
// recorded in its managedFields under the field manager "fieldops", not
// under the client's generic default (the binary's name, "manager").
func TestOwnWritesUnderFieldManagerFieldops(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "fp-owner")
	applyAs(t, "eks", fmt.Sprintf(daemonSet, ns))
	fp := fieldPatch(t, fmt.Sprintf(proxyPatch, "proxy", ns))
	creator := fp.ManagedFields[0].Manager // the test's own client
	waitReason(t, fp, "Applied")
	get(t, fp)

	var finalizer, status bool
	for _, e := range fp.ManagedFields {
		fields := ""
		if e.FieldsV1 != nil {
			fields = e.FieldsV1.GetRawString()
		}
		switch {
		case e.Manager == creator && e.Subresource == "":
			if strings.Contains(fields, "f:finalizers") {
				t.Errorf("the finalizer is owned by the test's client %q: %s", creator, fields)
			}
		case e.Manager == controllers.FieldManager:
			finalizer = finalizer || (e.Subresource == "" && strings.Contains(fields, `"v:\"`+fieldpatch.Finalizer+`\""`))
			status = status || (e.Subresource == "status" && strings.Contains(fields, `"f:status"`))
		default:
			t.Errorf("managedFields entry of %q (%s, subresource %q): want every write of fieldops under %q: %s", e.Manager, e.Operation, e.Subresource, controllers.FieldManager, fields)
		}
	}
	if !finalizer {
		t.Errorf("no managedFields entry of %q owns the finalizer %s: %+v", controllers.FieldManager, fieldpatch.Finalizer, fp.ManagedFields)
	}
	if !status {
		t.Errorf("no managedFields entry of %q owns the status: %+v", controllers.FieldManager, fp.ManagedFields)
	}
}
