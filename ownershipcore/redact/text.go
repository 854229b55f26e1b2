/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package redact

import (
	"fmt"
	"regexp"
	"strings"
)

// omitted marks where a value was left out. It also keeps Text
// idempotent: "Invalid value (omitted): …" is not rewritten again.
const omitted = " (omitted)"

var (
	// smdExpected finds structured-merge-diff's type errors
	// (typed/validate.go validateScalar, typed/helpers.go listValue and
	// mapValue): "expected <type>, got <value>".
	smdExpected = regexp.MustCompile(`expected (numeric \(int or float\)|string|boolean|any scalar|list|map), got `)
	// fieldValue finds a value after the words of a field error.
	fieldValue = regexp.MustCompile(`(Invalid value|Unsupported value|Duplicate value|Not found|Too many|Too few): `)
	// unmarshalNumber finds encoding/json's UnmarshalTypeError for a
	// number, which quotes the number.
	unmarshalNumber = regexp.MustCompile(`cannot unmarshal number [^ ]+ into`)
	// typedPatch is the field manager's wrapping of an intent that does
	// not fit the schema, with the object's namespace/name and GVK.
	typedPatch = regexp.MustCompile(`(?:Internal error occurred: )?failed to create typed patch object \(([^;()]*); ([^,()]*), Kind=([^()]*)\): `)
	// goTypeConversion is the apiserver's conversion of an applied object
	// into the Go type of a built-in kind (runtime.Scheme.Convert with
	// DefaultUnstructuredConverter), which names no field.
	goTypeConversion = regexp.MustCompile(`failed to convert new object \(([^;()]*); ([^,()]*), Kind=([^()]*)\) to proper version: unable to convert unstructured object to [^:]*: `)
	// cannotConvert is DefaultUnstructuredConverter's type mismatch
	// (runtime/converter.go): "cannot convert <Go source> to <Go type>".
	cannotConvert = regexp.MustCompile(`cannot convert (float64|int64|string|bool|map\[string\]interface \{\}|\[\]interface \{\}) to `)
	// duplicateSetItem is a duplicate in a set (a list whose items are
	// their own keys): the key is the value.
	duplicateSetItem = regexp.MustCompile(`duplicate entries for key \[=`)
)

// Text rewrites the shapes of error text that leak Go internals or
// values, wherever they occur in s, and leaves the rest as it is:
//
//   - "expected string, got &value.valueUnstructured{Value:5}" becomes
//     "expected string, got integer" (and likewise for boolean, list, map,
//     "any scalar" and "numeric (int or float)", the latter as "number");
//     from the %v renderings structured-merge-diff uses for boolean, list
//     and map ("&{5}"), a string that reads as a number or a boolean is
//     reported as one;
//   - "Invalid value: \"secret\": must be …" (and Unsupported value,
//     Duplicate value, Not found, Too many, Too few) becomes "Invalid value
//     (omitted): must be …"; a value that cannot be delimited takes the
//     rest of its line with it;
//   - "cannot unmarshal number 1.5 into" loses the number;
//   - "duplicate entries for key [=\"x\"]" (a set, whose key is the value)
//     becomes "duplicate entries of one value";
//   - "failed to create typed patch object (ns/name; apps/v1,
//     Kind=Deployment): " becomes "the object does not fit the schema of
//     apps/v1 Deployment: ";
//   - "failed to convert new object (ns/name; apps/v1, Kind=Deployment) to
//     proper version: unable to convert unstructured object to apps/v1,
//     Kind=Deployment: cannot convert float64 to int32" becomes "the object
//     does not fit the Go type of apps/v1 Deployment: expected int32, got
//     number" (the apiserver names no field there).
//
// It is idempotent.
func Text(s string) string {
	s = rewriteAll(s, typedPatch, func(match, _ string) (string, int) {
		m := typedPatch.FindStringSubmatch(match)
		return fmt.Sprintf("the object does not fit the schema of %s %s: ", strings.TrimPrefix(m[2], "/"), m[3]), 0
	})
	s = rewriteAll(s, goTypeConversion, func(match, _ string) (string, int) {
		m := goTypeConversion.FindStringSubmatch(match)
		return fmt.Sprintf("the object does not fit the Go type of %s %s: ", strings.TrimPrefix(m[2], "/"), m[3]), 0
	})
	s = rewriteAll(s, cannotConvert, func(match, rest string) (string, int) {
		src := cannotConvert.FindStringSubmatch(match)[1]
		n := 0
		for n < len(rest) && (rest[n] == '.' || rest[n] == '*' || isIdentByte(rest[n])) {
			n++
		}
		return fmt.Sprintf("expected %s, got %s", rest[:n], goKinds[src]), n
	})
	s = unmarshalNumber.ReplaceAllString(s, "cannot unmarshal number into")
	s = sanitizeSMD(s, false)
	s = rewriteAll(s, fieldValue, func(match, rest string) (string, int) {
		words := strings.TrimSuffix(match, ": ")
		if !looksLikeValue(rest) {
			return words + ": ", 0
		}
		n, ok := scanValue(rest)
		if !ok {
			n = lineEnd(rest)
		}
		return words + omitted, n
	})
	return rewriteAll(s, duplicateSetItem, func(_, rest string) (string, int) {
		n, ok := scanValue(rest)
		if !ok || !strings.HasPrefix(rest[n:], "]") {
			n = lineEnd(rest) - 1
		}
		return "duplicate entries of one value", n + 1
	})
}

// sanitizeSMD rewrites structured-merge-diff's "expected <type>, got
// <value>". whole says s is one validation error's message, so a %v
// rendering ("&{…}") runs to its end.
func sanitizeSMD(s string, whole bool) string {
	return rewriteAll(s, smdExpected, func(match, rest string) (string, int) {
		want := strings.TrimSuffix(strings.TrimPrefix(match, "expected "), ", got ")
		if want == "numeric (int or float)" {
			// %T of the unstructured value.
			for goType, kind := range goKinds {
				if strings.HasPrefix(rest, goType) {
					return "expected number, got " + kind, len(goType)
				}
			}
			return "expected number, got ", 0
		}
		prefix := "expected " + want + ", got "
		switch {
		case strings.HasPrefix(rest, "&{"):
			// fmt's %v of *valueUnstructured: "&{" + %v of the value + "}",
			// strings unquoted.
			end := len(rest)
			if !whole {
				end = plainEnd(rest)
			}
			inner := strings.TrimSuffix(rest[2:end], "}")
			return prefix + plainKind(inner), end
		case strings.HasPrefix(rest, "nil"):
			return prefix + "null", len("nil")
		case looksLikeValue(rest):
			// %#v: "&value.valueUnstructured{Value:5}".
			n, ok := scanValue(rest)
			if !ok {
				n = lineEnd(rest)
			}
			return prefix + goSyntaxKind(rest[:n]), n
		}
		return prefix, 0
	})
}

// goKinds name the Go types of unstructured values.
var goKinds = map[string]string{
	"map[string]interface {}": "map", "[]interface {}": "list",
	"string": "string", "bool": "boolean", "<nil>": "null",
	"float64": "number", "int64": "integer",
}

// rewriteAll replaces, at each match of re in s, the match and the first n
// bytes after it by what fn returns (fn sees the match and what follows).
func rewriteAll(s string, re *regexp.Regexp, fn func(match, rest string) (string, int)) string {
	var b strings.Builder
	for {
		loc := re.FindStringSubmatchIndex(s)
		if loc == nil {
			b.WriteString(s)
			return b.String()
		}
		match := s[loc[0]:loc[1]]
		rest := s[loc[1]:]
		out, n := fn(match, rest)
		b.WriteString(s[:loc[0]])
		b.WriteString(out)
		s = rest[n:]
	}
}

// plainEnd is where a "&{…}" rendering ends in running text: after the
// first "}" at the end of s or of a line (its value may hold anything).
func plainEnd(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '}' && (i+1 == len(s) || s[i+1] == '\n') {
			return i + 1
		}
	}
	return len(s)
}

// lineEnd is the length of s up to its first newline.
func lineEnd(s string) int {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return i
	}
	return len(s)
}

// plainKind names the kind of an unstructured value from its %v text.
func plainKind(v string) string {
	switch {
	case strings.HasPrefix(v, "map["):
		return "map"
	case strings.HasPrefix(v, "["):
		return "list"
	case v == "true" || v == "false":
		return "boolean"
	case v == "<nil>":
		return "null"
	case numberRE.MatchString(v):
		return numberKind(v)
	}
	return "string"
}

// goSyntaxKind names the kind of an unstructured value from its %#v text,
// with or without the "&value.valueUnstructured{Value:…}" around it.
func goSyntaxKind(v string) string {
	if i := strings.Index(v, "{Value:"); i >= 0 && strings.HasSuffix(v, "}") {
		v = v[i+len("{Value:") : len(v)-1]
	}
	switch {
	case strings.HasPrefix(v, `"`), strings.HasPrefix(v, "`"):
		return "string"
	case strings.HasPrefix(v, "map["):
		return "map"
	case strings.HasPrefix(v, "[]"):
		return "list"
	case v == "true" || v == "false":
		return "boolean"
	case v == "<nil>" || v == "interface {}(nil)" || v == "nil" || v == "null":
		return "null"
	case numberRE.MatchString(v):
		return numberKind(v)
	}
	return "a value of another type"
}

var numberRE = regexp.MustCompile(`^-?[0-9][0-9.eE+-]*$`)

func numberKind(v string) string {
	if strings.ContainsAny(v, ".eE") {
		return "number"
	}
	return "integer"
}
