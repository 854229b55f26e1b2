package ownershipcore

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxManagerLength is the longest field manager name the apiserver accepts
// (128 characters; ValidateManagedFields in k8s.io/apiserver).
const MaxManagerLength = 128

// ManagerName returns the field manager name for an object of fieldops:
// "<prefix>/<namespace>/<name>", or "<prefix>/<name>" when namespace is empty.
// It is deterministic and unique per (prefix, namespace, name). When longer
// than MaxManagerLength it is cut and ends in "-" and 16 hex digits of the
// SHA-256 of the full name, so two long names never share a manager.
func ManagerName(prefix, namespace, name string) string {
	parts := []string{prefix}
	if namespace != "" {
		parts = append(parts, namespace)
	}
	full := strings.Join(append(parts, name), "/")
	if len(full) <= MaxManagerLength {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	suffix := "-" + hex.EncodeToString(sum[:])[:16]
	return full[:MaxManagerLength-len(suffix)] + suffix
}
