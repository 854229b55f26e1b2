/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package bundlecheck checks an OLM bundle (registry+v1) and its
// bundle.Dockerfile: with operator-framework/api's validators (what
// `operator-sdk bundle validate --select-optional suite=operatorframework`
// runs, but the multiple-architectures one), and with the rules of
// rules.go, which those validators lack. `make bundle` (hack/bundle),
// `make bundle-validate` and test/deploy run it.
package bundlecheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	"sigs.k8s.io/yaml"
)

// Bundle is a loaded registry+v1 bundle: operator-framework/api's, with
// every annotation of metadata/annotations.yaml (that type reads three)
// and the labels of bundle.Dockerfile.
type Bundle struct {
	*manifests.Bundle
	// Annotations of metadata/annotations.yaml; Validate takes the
	// package and channels from them.
	Annotations map[string]string
	// Labels set by LABEL lines of bundle.Dockerfile.
	Labels map[string]string
}

// Load reads the bundle in dir and its Dockerfile.
func Load(dir, dockerfilePath string) (*Bundle, error) {
	mb, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		return nil, err
	}
	b := &Bundle{Bundle: mb}
	path := filepath.Join(dir, "metadata", "annotations.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ann struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(raw, &ann); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	b.Annotations = ann.Annotations
	df, err := os.ReadFile(dockerfilePath)
	if err != nil {
		return nil, err
	}
	b.Labels = dockerLabels(df)
	return b, nil
}

// Validate loads the bundle in dir and returns every problem found.
func Validate(dir, dockerfilePath string) []error {
	b, err := Load(dir, dockerfilePath)
	if err != nil {
		return []error{err}
	}
	return b.Validate()
}

// dockerLabels reads `LABEL key=value` lines.
func dockerLabels(df []byte) map[string]string {
	labels := map[string]string{}
	s := bufio.NewScanner(bytes.NewReader(df))
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if rest, ok := strings.CutPrefix(line, "LABEL "); ok {
			if k, v, ok := strings.Cut(strings.TrimSpace(rest), "="); ok {
				labels[k] = strings.Trim(v, `"`)
			}
		}
	}
	return labels
}

// validators are operator-framework/api's: the default bundle validators
// (CSV, CRDs, owned CRDs, alm-examples, install modes, bundle size), good
// practices (channel naming, resource requests, CRD descriptions),
// OperatorHub's (provider, maintainers, links, icon, versions, removed
// APIs), and its standard capabilities and categories. Not the
// multiple-architectures validator: it pulls and inspects the manager
// image with a container engine, over the network, and without one
// reports only that it could not; the platform labels are a rule here
// (checkPlatformLabels).
var validators = validation.DefaultBundleValidators.WithValidators(
	validation.GoodPracticesValidator,
	validation.OperatorHubV2Validator,
	validation.StandardCapabilitiesValidator,
	validation.StandardCategoriesValidator,
)

// tolerated are the validators' warnings that are no problem, by a
// substring of the message, each with why. Any other warning is one.
var tolerated = map[string]string{
	"Migrate the API(s) for events": "an RBAC rule names no version: the validator takes events.k8s.io events for the removed v1beta1; the manager uses events.k8s.io/v1",
}

// Validate returns the errors and the warnings not tolerated of the
// validators, and what the rules find, sorted by message. The package
// and channels are taken from Annotations first.
func (b *Bundle) Validate() []error {
	if b.CSV == nil {
		return []error{fmt.Errorf("manifests/: no ClusterServiceVersion")}
	}
	b.Package, b.DefaultChannel, b.Channels = b.annotation("package"), b.annotation("channel.default"), b.channels()
	var p problems
	for _, r := range validators.Validate(b.ObjectsToValidate()...) {
		for _, e := range r.Errors {
			p = append(p, e)
		}
		for _, w := range r.Warnings {
			if !isTolerated(w) {
				p = append(p, w)
			}
		}
	}
	for _, rule := range rules {
		rule(b, &p)
	}
	sort.Slice(p, func(i, j int) bool { return p[i].Error() < p[j].Error() })
	return p
}

func isTolerated(w errors.Error) bool {
	for substring := range tolerated {
		if strings.Contains(w.Error(), substring) {
			return true
		}
	}
	return false
}

// annotation is the value of operators.operatorframework.io.bundle.<key>.v1.
func (b *Bundle) annotation(key string) string {
	return b.Annotations["operators.operatorframework.io.bundle."+key+".v1"]
}

// channels are the bundle's channels, trimmed (an empty name stays).
func (b *Bundle) channels() []string {
	var out []string
	for _, c := range strings.Split(b.annotation("channels"), ",") {
		out = append(out, strings.TrimSpace(c))
	}
	return out
}

// problems are the problems a validation found, one error each.
type problems []error

// add records a problem, formatted as fmt.Errorf formats.
func (p *problems) add(format string, args ...interface{}) {
	*p = append(*p, fmt.Errorf(format, args...))
}
