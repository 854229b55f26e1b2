/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// SGR (ECMA-48 "Select Graphic Rendition") colours of the output.
const (
	sgrReset  = "\x1b[0m"
	sgrRed    = "\x1b[31m"
	sgrGreen  = "\x1b[32m"
	sgrYellow = "\x1b[33m"
)

// managerColors are the colours field managers get in the order they
// first appear in an output: blue, magenta, cyan, yellow, green, then the
// bright variants.
var managerColors = []string{"\x1b[34m", "\x1b[35m", "\x1b[36m", "\x1b[33m", "\x1b[32m", "\x1b[94m", "\x1b[95m", "\x1b[96m", "\x1b[93m", "\x1b[92m"}

// colorModes are the values of --color.
var colorModes = []string{"auto", "always", "never"}

// painter colours text when enabled and is a no-op otherwise.
type painter struct {
	on       bool
	managers map[string]string
}

// newPainter resolves --color: always and never are what they say; auto
// colours when w is a terminal, NO_COLOR is unset or empty
// (https://no-color.org) and TERM is not "dumb". It fails on any other
// mode.
func newPainter(mode string, w io.Writer) (*painter, error) {
	p := &painter{managers: map[string]string{}}
	switch mode {
	case "always":
		p.on = true
	case "never":
	case "auto", "":
		f, ok := w.(*os.File)
		p.on = ok && term.IsTerminal(int(f.Fd())) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
	default:
		return nil, fmt.Errorf("--color %q: want %s", mode, strings.Join(colorModes, ", "))
	}
	return p, nil
}

func (p *painter) paint(sgr, s string) string {
	if !p.on || s == "" {
		return s
	}
	return sgr + s + sgrReset
}

// manager colours a field manager's name, the same colour for the same
// name throughout one output.
func (p *painter) manager(name string) string {
	if !p.on {
		return name
	}
	c, ok := p.managers[name]
	if !ok {
		c = managerColors[len(p.managers)%len(managerColors)]
		p.managers[name] = c
	}
	return p.paint(c, name)
}

// condition colours a condition status: True green, False red, anything
// else (Unknown, - before the first reconcile) yellow.
func (p *painter) condition(status string) string {
	switch status {
	case "True":
		return p.paint(sgrGreen, status)
	case "False":
		return p.paint(sgrRed, status)
	}
	return p.paint(sgrYellow, status)
}

// cell is one table cell: its text, and how to colour it once padded.
type cell struct {
	text  string
	paint func(string) string
}

// writeTable prints rows in columns two spaces apart, like kubectl's
// tables, padding on the plain text so colour codes do not skew the
// alignment (text/tabwriter counts them as width), in runes (→ is one
// column). The last column is not padded.
func writeTable(w io.Writer, rows [][]cell) error {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c.text))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			text := c.text
			if c.paint != nil {
				text = c.paint(text)
			}
			b.WriteString(text)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c.text)+2))
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
