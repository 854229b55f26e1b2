package ownershipcore

import (
	"bytes"
	"strings"
)

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

func containsString(s, sub string) bool { return strings.Contains(s, sub) }
