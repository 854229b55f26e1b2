/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package fieldpatch reconciles FieldPatch and ClusterFieldPatch: it applies
// a patch to an object fieldops does not own under a field manager of its
// own, records the previous owner of every field before the first write,
// repairs drift on those fields from watch events, reports managers that
// keep taking fields back (with exponential backoff, never a write loop),
// and on delete hands each field back to its previous owner and relinquishes
// the fields it added. All ownership logic lives in ownershipcore.
package fieldpatch
