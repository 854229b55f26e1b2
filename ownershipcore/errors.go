package ownershipcore

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// ErrInvalidIntent is wrapped by the errors of intents that can never be
// applied as they are: a list-map key given twice, a value of the wrong
// type. Only a change of the intent (the spec that produced it) can fix
// such an error, so callers report it and do not retry. Applier.Apply
// returns it, wrapped with the structured-merge-diff error that says why,
// when the apiserver's field manager run locally
// (managedfields.FieldManager.Apply) refuses the intent: nothing is sent.
// A field the schema does not declare is not refused locally (the
// apiserver's schema may be newer); IsTerminal covers the apiserver's
// answers of that kind and the others.
var ErrInvalidIntent = errors.New("invalid intent")

// IsTerminal reports whether err says that the intent itself is wrong, so
// that retrying the same intent can never succeed:
//
//   - it wraps ErrInvalidIntent (the local field manager refused it);
//   - it is the apiserver's 422 Invalid or 400 BadRequest
//     (apierrors.IsInvalid, apierrors.IsBadRequest);
//   - it is the apiserver's 500 for an apply patch it could not type
//     (k8s.io/apiserver handlers/patch.go passes the field manager's plain
//     error through as a 500 with reason Unknown: "failed to create typed
//     patch object (…): .spec…: duplicate entries for key [name=\"X\"]"),
//     or for an object it could not convert into its Go type ("failed to
//     convert new object (…) to proper version: unable to convert
//     unstructured object to apps/v1, Kind=Deployment: cannot convert
//     float64 to int32" for replicas: 1.5; "cannot unmarshal number 1.5
//     into Go struct field … of type int32" when decoding).
//
// Conflicts, a kind that is not served (ErrUnknownKind), Forbidden and
// every other failure are not terminal: the world may change.
func IsTerminal(err error) bool {
	if err == nil || apierrors.IsConflict(err) || errors.Is(err, ErrUnknownKind) {
		return false
	}
	if errors.Is(err, ErrInvalidIntent) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code == 500 {
		return rejectsObject(status.Status().Message)
	}
	return false
}

// rejectsObject reports whether an apiserver message says that the object
// sent does not fit its schema or its Go type.
func rejectsObject(msg string) bool {
	for _, s := range []string{
		"failed to create typed patch object",
		"duplicate entries for key",
		"cannot unmarshal",
		"field not declared in schema",
		// runtime.DefaultUnstructuredConverter into the Go type of a
		// built-in kind (scheme.go): "cannot convert float64 to int32".
		"unable to convert unstructured object to",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// invalidIntent returns the error of the local field manager's refusal of
// intent wrapped with ErrInvalidIntent, or nil when err is not about the
// intent, or may be the schema's (the live object did not convert, a
// field the cached schema does not declare).
//
// The field manager (structuredmerge.go in
// k8s.io/apimachinery/pkg/util/managedfields/internal) reports an intent
// that does not fit the schema as "failed to create typed patch object";
// before calling that final, the intent is converted again with ToTyped
// (which re-reads a schema document older than rereadAge when a field is
// not declared). A field still not declared is left to the apiserver,
// whose schema may be newer than any document read here: one request,
// whose refusal IsTerminal recognises. ToTyped allows duplicate list-map
// keys, as the apiserver does for stored objects; an apply patch may not
// have them.
func (a *Applier) invalidIntent(intent *unstructured.Unstructured, err error) error {
	if err == nil || !strings.Contains(err.Error(), "failed to create typed patch object") {
		return nil
	}
	if _, terr := a.Schema.ToTyped(intent); terr != nil {
		if errors.Is(terr, ErrUnknownKind) || isUndeclaredField(terr) {
			// The apiserver's schema may be newer than the one just
			// read (it republishes a CRD's OpenAPI a moment after the
			// change): it decides.
			return nil
		}
		return fmt.Errorf("%w: %w", ErrInvalidIntent, terr)
	}
	if strings.Contains(err.Error(), "duplicate entries for key") {
		return fmt.Errorf("%w: %w", ErrInvalidIntent, err)
	}
	// The schema just re-read accepts the intent: the field manager had
	// the old one. Let the apiserver decide.
	return nil
}

// SafeMessage is the text of err for status conditions, events and logs:
// readable, and without any value of the object it is about. Controllers
// pass every error through it before reporting it (a target's
// values, such as a Secret's data copied by a JSON patch, never reach
// status, events or logs).
//
// It rewrites:
//
//   - structured-merge-diff validation errors (typed.ValidationErrors, from
//     Schema.ToTyped, FieldSet and the local field manager): each becomes
//     "<path>: expected <type>, got <kind>", e.g. ".spec.x: expected
//     string, got integer" for "expected string, got
//     &value.valueUnstructured{Value:5}"; several are joined with "; ";
//   - the apiserver's Invalid answers (metav1.StatusCause Field, Type,
//     Message): "<Kind> \"name\" is invalid: <field>: <reason>: <detail>",
//     the rejected value left out ("Invalid value (omitted): must be …");
//   - the same shapes where they survive only as text (an error formatted
//     with %v, a 500 whose message carries the field manager's error), by
//     SanitizeText.
//
// A nil err gives "".
func SafeMessage(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	var verrs typed.ValidationErrors
	if errors.As(err, &verrs) && len(verrs) > 0 {
		msg = strings.Replace(msg, verrs.Error(), formatValidationErrors(verrs), 1)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if raw, ok := status.(error); ok {
			if safe, ok := invalidStatusMessage(status.Status()); ok {
				msg = strings.Replace(msg, raw.Error(), safe, 1)
			}
		}
	}
	return SanitizeText(msg)
}

// formatValidationErrors renders structured-merge-diff's validation errors
// one per path, their values left out, sorted: structured-merge-diff lists
// them in map order, and a message that changes on every reconcile would
// rewrite status and repeat events.
func formatValidationErrors(errs typed.ValidationErrors) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		m := sanitizeSMD(e.ErrorMessage, true)
		if e.Path != "" {
			m = e.Path + ": " + m
		}
		parts[i] = m
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// invalidStatusMessage rebuilds the message of an Invalid status from its
// details: kind, name, and per cause the field and the reason, without the
// rejected value. ok is false for other statuses or without causes.
func invalidStatusMessage(s metav1.Status) (string, bool) {
	if s.Reason != metav1.StatusReasonInvalid || s.Details == nil || len(s.Details.Causes) == 0 {
		return "", false
	}
	kind := s.Details.Kind
	if s.Details.Group != "" {
		kind += "." + s.Details.Group
	}
	causes := make([]string, len(s.Details.Causes))
	for i, c := range s.Details.Causes {
		m := causeMessage(c)
		if c.Field != "" {
			m = c.Field + ": " + m
		}
		causes[i] = m
	}
	return fmt.Sprintf("%s %q is invalid: %s", kind, s.Details.Name, strings.Join(causes, "; ")), true
}

// causeTypes are the words field.ErrorType.String gives each cause type
// (k8s.io/apimachinery/pkg/util/validation/field/errors.go): a cause's
// message is "<words>[: <value>][: <detail>]".
var causeTypes = map[metav1.CauseType]string{
	metav1.CauseTypeFieldValueNotFound:     "Not found",
	metav1.CauseTypeFieldValueRequired:     "Required value",
	metav1.CauseTypeFieldValueDuplicate:    "Duplicate value",
	metav1.CauseTypeFieldValueInvalid:      "Invalid value",
	metav1.CauseTypeFieldValueNotSupported: "Unsupported value",
	metav1.CauseTypeForbidden:              "Forbidden",
	metav1.CauseTypeTooLong:                "Too long",
	metav1.CauseTypeTooMany:                "Too many",
	metav1.CauseTypeTypeInvalid:            "Invalid value",
	metav1.CauseType("FieldValueTooShort"): "Too short",
	metav1.CauseType("FieldValueTooFew"):   "Too few",
	metav1.CauseTypeInternal:               "Internal error",
}

// causeMessage is a cause's message without the value.
func causeMessage(c metav1.StatusCause) string {
	words, known := causeTypes[c.Type]
	if !known || !strings.HasPrefix(c.Message, words) {
		return SanitizeText(c.Message)
	}
	rest := strings.TrimPrefix(c.Message, words)
	if !strings.HasPrefix(rest, ": ") {
		return SanitizeText(c.Message)
	}
	rest = rest[2:]
	if !looksLikeValue(rest) {
		// No value (field.Error with an omitted value): rest is the detail.
		return words + ": " + SanitizeText(rest)
	}
	n, ok := scanValue(rest)
	if !ok {
		return words + omitted
	}
	rest = rest[n:]
	if strings.HasPrefix(rest, ": ") {
		return words + omitted + ": " + SanitizeText(rest[2:])
	}
	return words + omitted
}

// omitted marks where a value was left out. It also keeps SanitizeText
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

// SanitizeText rewrites the shapes of error text that leak Go internals or
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
func SanitizeText(s string) string {
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
		for n < len(rest) && (rest[n] == '.' || rest[n] == '_' || rest[n] == '*' || rest[n] >= 'a' && rest[n] <= 'z' || rest[n] >= 'A' && rest[n] <= 'Z' || rest[n] >= '0' && rest[n] <= '9') {
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

// looksLikeValue reports whether s starts with a rendered value: quoted,
// JSON, Go syntax, a number or a literal; not with words of a detail.
func looksLikeValue(s string) bool {
	if s == "" {
		return false
	}
	switch c := s[0]; {
	case strings.ContainsRune("\"`{[&*", rune(c)):
		return true
	case c >= '0' && c <= '9':
		return true
	case c == '-' && len(s) > 1 && s[1] >= '0' && s[1] <= '9':
		return true
	}
	if strings.HasPrefix(s, "map[") || strings.HasPrefix(s, "struct {") {
		return true
	}
	for _, lit := range []string{"true", "false", "null", "nil", "<nil>"} {
		if strings.HasPrefix(s, lit) && (len(s) == len(lit) || isTerminator(s[len(lit)])) {
			return true
		}
	}
	// A Go composite literal: core.Container{…}.
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '{' {
			return i > 0
		}
		if !(c == '.' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return false
}

func isTerminator(c byte) bool {
	return c == ' ' || c == ',' || c == ':' || c == ';' || c == '\n' || c == ')' || c == ']' || c == '}'
}

// scanValue returns the length of the value s starts with: a quoted string
// (Go or JSON escapes), a raw string, or text with balanced brackets and
// quotes (JSON, Go syntax such as map[string]interface {}{"a":"b"}) that
// ends at a space, comma, colon, semicolon or newline outside brackets, or
// at an unmatched closing bracket. ok is false when quotes or brackets do
// not close.
func scanValue(s string) (n int, ok bool) {
	depth := 0
	for i := 0; i < len(s); {
		// Go type names with spaces: interface {}, struct { A int }.
		if strings.HasPrefix(s[i:], "interface {}") {
			i += len("interface {}")
			continue
		}
		if strings.HasPrefix(s[i:], "struct ") {
			i += len("struct ")
			continue
		}
		c := s[i]
		switch {
		case c == '"' || c == '`':
			j := closeQuote(s, i)
			if j < 0 {
				return len(s), false
			}
			i = j
			if depth == 0 {
				// A quoted value ends at its closing quote.
				return i, true
			}
			continue
		case c == '{' || c == '[' || c == '(':
			depth++
		case c == '}' || c == ']' || c == ')':
			if depth == 0 {
				return i, true
			}
			depth--
		case depth == 0 && isTerminator(c):
			return i, true
		}
		i++
	}
	return len(s), depth == 0
}

// closeQuote returns the index after the quote that closes the one at
// s[i], or -1.
func closeQuote(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && q == '"':
			j++
		case s[j] == q:
			return j + 1
		}
	}
	return -1
}
