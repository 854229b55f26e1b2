/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package chartgen

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"

	yaml "go.yaml.in/yaml/v3"
)

// A Value is one documented value of values.yaml: its dotted path, its
// default as YAML flow text, and the comment above it.
type Value struct {
	Path        string
	Default     string
	Description string
}

// Values lists the documented values of values.yaml, in its order. A value
// is a key with a comment above it, or a key whose value is not a block
// mapping (a scalar, a list, a flow or empty mapping); a block mapping
// without a comment is a group, whose keys are listed instead. A value
// without a comment is an error: every value is documented.
func Values(valuesYAML []byte) ([]Value, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(valuesYAML, &doc); err != nil {
		return nil, fmt.Errorf("values.yaml: %w", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("values.yaml: want a mapping")
	}
	var out []Value
	return out, walkValues(doc.Content[0], "", &out)
}

func walkValues(m *yaml.Node, prefix string, out *[]Value) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, val := m.Content[i], m.Content[i+1]
		path := prefix + key.Value
		comment := commentText(key.HeadComment)
		group := val.Kind == yaml.MappingNode && val.Style&yaml.FlowStyle == 0 && len(val.Content) > 0
		if group && comment == "" {
			if err := walkValues(val, path+".", out); err != nil {
				return err
			}
			continue
		}
		if comment == "" {
			return fmt.Errorf("values.yaml: %s (line %d) has no comment: say what it does", path, key.Line)
		}
		def, err := flowText(val)
		if err != nil {
			return fmt.Errorf("values.yaml: %s: %w", path, err)
		}
		*out = append(*out, Value{Path: path, Default: def, Description: comment})
	}
	return nil
}

// markdownEscaper keeps a comment's text as it is in a table cell: a
// pipe ends a cell, an angle bracket starts HTML.
var markdownEscaper = strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;")

// commentText is a YAML comment as one line of Markdown: the lines joined,
// a blank comment line a paragraph break.
func commentText(c string) string {
	var parts []string
	for _, l := range strings.Split(c, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#"))
		if l == "" {
			if len(parts) > 0 {
				parts = append(parts, "<br><br>")
			}
			continue
		}
		parts = append(parts, markdownEscaper.Replace(l))
	}
	return strings.Join(parts, " ")
}

// flowText is a value as one line of YAML.
func flowText(n *yaml.Node) (string, error) {
	n = deepCopyFlow(n)
	b, err := yaml.Marshal(n)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func deepCopyFlow(n *yaml.Node) *yaml.Node {
	c := *n
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	if c.Kind == yaml.MappingNode || c.Kind == yaml.SequenceNode {
		c.Style |= yaml.FlowStyle
	}
	c.Content = nil
	for _, e := range n.Content {
		c.Content = append(c.Content, deepCopyFlow(e))
	}
	return &c
}

// README renders the chart's README from its template (text/template; its
// fields: .Values, the Markdown table of values.yaml's values, and
// .Version, the chart's version) and values.yaml.
func README(tmpl, valuesYAML []byte, version string) ([]byte, error) {
	vals, err := Values(valuesYAML)
	if err != nil {
		return nil, err
	}
	var table strings.Builder
	table.WriteString("| value | default | description |\n| --- | --- | --- |\n")
	for _, v := range vals {
		fmt.Fprintf(&table, "| `%s` | `%s` | %s |\n", v.Path, strings.ReplaceAll(v.Default, "|", `\|`), v.Description)
	}
	t, err := template.New("README.md.gotmpl").Option("missingkey=error").Parse(string(tmpl))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, struct{ Values, Version string }{table.String(), version}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
