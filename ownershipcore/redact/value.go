/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package redact

import "strings"

// looksLikeValue reports whether s starts with a rendered value: quoted,
// JSON, Go syntax, a number or a literal; not with words of a detail.
func looksLikeValue(s string) bool {
	if s == "" {
		return false
	}
	return startsQuotedOrNumber(s) || startsLiteral(s) || startsCompositeLiteral(s)
}

// startsQuotedOrNumber reports whether s starts with a quote, a bracket or
// brace (JSON, Go syntax), a pointer ("&", "*"), a number, or a Go map or
// struct type.
func startsQuotedOrNumber(s string) bool {
	switch c := s[0]; {
	case strings.ContainsRune("\"`{[&*", rune(c)):
		return true
	case isDigit(c):
		return true
	case c == '-' && len(s) > 1 && isDigit(s[1]):
		return true
	}
	return strings.HasPrefix(s, "map[") || strings.HasPrefix(s, "struct {")
}

// literals are the words that render a boolean or a null value.
var literals = []string{"true", "false", "null", "nil", "<nil>"}

// startsLiteral reports whether s starts with one of literals, as a whole
// word.
func startsLiteral(s string) bool {
	for _, lit := range literals {
		if strings.HasPrefix(s, lit) && (len(s) == len(lit) || isTerminator(s[len(lit)])) {
			return true
		}
	}
	return false
}

// startsCompositeLiteral reports whether s starts with a Go composite
// literal: a (qualified) type name and "{", as in core.Container{…}.
func startsCompositeLiteral(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '{' {
			return i > 0
		}
		if c != '.' && !isIdentByte(c) {
			return false
		}
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isIdentByte reports whether c may be part of a Go identifier (ASCII).
func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c)
}

func isTerminator(c byte) bool {
	return c == ' ' || c == ',' || c == ':' || c == ';' || c == '\n' || c == ')' || c == ']' || c == '}'
}

func isOpening(c byte) bool { return c == '{' || c == '[' || c == '(' }

func isClosing(c byte) bool { return c == '}' || c == ']' || c == ')' }

// scanValue returns the length of the value s starts with: a quoted string
// (Go or JSON escapes), a raw string, or text with balanced brackets and
// quotes (JSON, Go syntax such as map[string]interface {}{"a":"b"}) that
// ends at a space, comma, colon, semicolon or newline outside brackets, or
// at an unmatched closing bracket. ok is false when quotes or brackets do
// not close.
func scanValue(s string) (n int, ok bool) {
	depth := 0
	for i := 0; i < len(s); {
		if skip := goTypeWithSpaces(s[i:]); skip > 0 {
			i += skip
			continue
		}
		c := s[i]
		switch {
		case c == '"' || c == '`':
			j := closeQuote(s, i)
			if j < 0 {
				return len(s), false
			}
			if depth == 0 {
				// A quoted value ends at its closing quote.
				return j, true
			}
			i = j
			continue
		case isOpening(c):
			depth++
		case isClosing(c):
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

// goTypeWithSpaces is the length of the Go type name with spaces s starts
// with ("interface {}", or the "struct " of "struct { A int }"), or 0.
func goTypeWithSpaces(s string) int {
	for _, t := range []string{"interface {}", "struct "} {
		if strings.HasPrefix(s, t) {
			return len(t)
		}
	}
	return 0
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
