/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"
	"k8s.io/kube-openapi/pkg/spec3"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// Schema turns objects into structured-merge-diff typed values with the
// apiserver's own OpenAPI v3 (GET /openapi/v3/apis/<group>/<version>), so
// list and map semantics (x-kubernetes-list-type atomic/set/map with
// x-kubernetes-list-map-keys, x-kubernetes-map-type) are the apiserver's,
// never guessed. Converters are cached per GroupVersion; Invalidate drops one
// (call it when a CRD changes), and a kind missing from a cached document,
// or a field missing from one older than rereadAge, triggers one re-read. It is safe for concurrent use.
type Schema struct {
	openapi openapi.Client

	mu  sync.Mutex
	tcs map[schema.GroupVersion]managedfields.TypeConverter
	fms map[schema.GroupVersionKind]*managedfields.FieldManager
	// read is when each cached converter's document was read.
	read map[schema.GroupVersion]time.Time
	// none is, per custom resource kind, whether its CRD converts with
	// strategy None (Applier.SameFieldPaths), once read.
	none map[schema.GroupKind]bool
}

// conversionNone returns what setConversionNone kept for gk.
func (s *Schema) conversionNone(gk schema.GroupKind) (none, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	none, ok = s.none[gk]
	return none, ok
}

// setConversionNone keeps whether gk's CRD converts with strategy None,
// until InvalidateGroup (or Invalidate) of its group.
func (s *Schema) setConversionNone(gk schema.GroupKind, none bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.none == nil {
		s.none = map[schema.GroupKind]bool{}
	}
	s.none[gk] = none
}

// rereadAge is how old a cached document must be before an undeclared
// field makes ToTyped read it again, so that a patch with a field the kind
// really lacks costs at most one OpenAPI read per rereadAge, not one per
// reconcile.
const rereadAge = 2 * time.Second

// NewSchema reads OpenAPI v3 through d.
func NewSchema(d discovery.DiscoveryInterface) *Schema {
	return &Schema{
		openapi: d.OpenAPIV3(),
		tcs:     map[schema.GroupVersion]managedfields.TypeConverter{},
		fms:     map[schema.GroupVersionKind]*managedfields.FieldManager{},
		read:    map[schema.GroupVersion]time.Time{},
	}
}

// NewStaticSchema returns a Schema of fixed type converters, one per
// GroupVersion, that never reads from an apiserver: for tests and tools
// that work offline (the converter of client-go's applyconfigurations,
// applyconfigurations.NewTypeConverter(scheme), knows every built-in kind;
// managedfields.NewTypeConverter builds one from OpenAPI schemas, e.g. a
// CRD's). A GroupVersion it does not hold is ErrUnknownKind; Invalidate
// and InvalidateGroup drop nothing.
func NewStaticSchema(converters map[schema.GroupVersion]managedfields.TypeConverter) *Schema {
	s := &Schema{
		tcs:  map[schema.GroupVersion]managedfields.TypeConverter{},
		fms:  map[schema.GroupVersionKind]*managedfields.FieldManager{},
		read: map[schema.GroupVersion]time.Time{},
	}
	for gv, tc := range converters {
		s.tcs[gv] = tc
		s.read[gv] = time.Now()
	}
	return s
}

// static reports whether s was made by NewStaticSchema.
func (s *Schema) static() bool { return s.openapi == nil }

// ErrUnknownKind is returned (wrapped) when the apiserver publishes no
// schema for a kind.
var ErrUnknownKind = errors.New("kind not served by the apiserver")

// Invalidate forgets the cached schema of gv.
func (s *Schema) Invalidate(gv schema.GroupVersion) {
	if s.static() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tcs, gv)
	for gvk := range s.fms {
		if gvk.GroupVersion() == gv {
			delete(s.fms, gvk)
		}
	}
	s.forgetConversions(gv.Group)
}

// forgetConversions drops what setConversionNone kept for group; s.mu is
// held.
func (s *Schema) forgetConversions(group string) {
	for gk := range s.none {
		if gk.Group == group {
			delete(s.none, gk)
		}
	}
}

// InvalidateGroup forgets every cached schema of group: call it when a
// CustomResourceDefinition of the group is created, changed or deleted.
// The apiserver republishes OpenAPI a moment after a CRD changes, so a
// read right after may still see the old schema; a kind or a field missing
// from it is re-read on use (ToTyped).
func (s *Schema) InvalidateGroup(group string) {
	if s.static() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for gv := range s.tcs {
		if gv.Group == group {
			delete(s.tcs, gv)
		}
	}
	for gvk := range s.fms {
		if gvk.Group == group {
			delete(s.fms, gvk)
		}
	}
	s.forgetConversions(group)
}

// TypeConverter returns the converter for gv, reading its OpenAPI v3
// document on first use.
func (s *Schema) TypeConverter(gv schema.GroupVersion) (managedfields.TypeConverter, error) {
	s.mu.Lock()
	tc, ok := s.tcs[gv]
	s.mu.Unlock()
	if ok {
		return tc, nil
	}
	if s.static() {
		return nil, fmt.Errorf("%s: %w", gv, ErrUnknownKind)
	}
	tc, err := readConverter(s.openapi, gv)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.tcs[gv] = tc
	s.read[gv] = time.Now()
	s.mu.Unlock()
	return tc, nil
}

// converters are the type converters built in this process, by the
// server-relative URL of their OpenAPI v3 document (GET /openapi/v3 lists
// them). The apiserver puts the document's content hash in that URL
// (?hash=…), so a Schema that finds a URL it has seen (another manager of
// the process, a re-read after a CRD change elsewhere in the group)
// reuses the converter instead of downloading and parsing the document
// again: parsing is most of a cold reconcile's CPU. At most
// maxConverters are kept, the oldest dropped first; a URL without a hash
// is never shared.
var converters = struct {
	sync.Mutex
	m     map[string]managedfields.TypeConverter
	order []string
}{m: map[string]managedfields.TypeConverter{}}

const maxConverters = 64

// readConverter returns the type converter of gv's OpenAPI v3 document,
// as listed by c now: from converters when its URL (and so its content)
// is known, else downloaded, parsed and remembered.
func readConverter(c openapi.Client, gv schema.GroupVersion) (managedfields.TypeConverter, error) {
	paths, err := c.Paths()
	if err != nil {
		return nil, fmt.Errorf("read OpenAPI v3 of %s: %w", gv, err)
	}
	path := "apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		path = "api/" + gv.Version
	}
	doc, ok := paths[path]
	if !ok {
		return nil, fmt.Errorf("%s: %w", gv, ErrUnknownKind)
	}
	url := doc.ServerRelativeURL()
	shared := strings.Contains(url, "hash=")
	if shared {
		converters.Lock()
		tc, ok := converters.m[url]
		converters.Unlock()
		if ok {
			return tc, nil
		}
	}
	b, err := doc.Schema(runtime.ContentTypeJSON)
	if err != nil {
		return nil, fmt.Errorf("read OpenAPI v3 of %s: %w", gv, err)
	}
	var spec spec3.OpenAPI
	if err := json.Unmarshal(b, &spec); err != nil {
		return nil, fmt.Errorf("read OpenAPI v3 of %s: %w", gv, err)
	}
	if spec.Components == nil {
		return nil, fmt.Errorf("OpenAPI v3 of %s has no components: %w", gv, ErrUnknownKind)
	}
	tc, err := managedfields.NewTypeConverter(spec.Components.Schemas, false)
	if err != nil {
		return nil, fmt.Errorf("build type converter for %s: %w", gv, err)
	}
	if shared {
		converters.Lock()
		if _, ok := converters.m[url]; !ok {
			converters.m[url] = tc
			converters.order = append(converters.order, url)
			if len(converters.order) > maxConverters {
				delete(converters.m, converters.order[0])
				converters.order = converters.order[1:]
			}
		}
		converters.Unlock()
	}
	return tc, nil
}

// ToTyped converts obj with the schema of its kind. An object with fields
// the schema does not know is an error, as it is for the apiserver.
func (s *Schema) ToTyped(obj *unstructured.Unstructured) (*typed.TypedValue, error) {
	gvk := obj.GroupVersionKind()
	tc, err := s.TypeConverter(gvk.GroupVersion())
	if err != nil {
		return nil, err
	}
	tv, err := tc.ObjectToTyped(obj, typed.AllowDuplicates)
	if isNoType(err) && s.static() {
		return nil, fmt.Errorf("%s: %w", gvk, ErrUnknownKind)
	}
	if !s.static() && (isNoType(err) || (isUndeclaredField(err) && s.readBefore(gvk.GroupVersion(), time.Now().Add(-rereadAge)))) {
		// The cached document may predate the kind or the field (a CRD
		// just installed or changed, whose OpenAPI the apiserver
		// republishes a moment later than the CRD watch event that
		// invalidates the group): re-read once.
		s.Invalidate(gvk.GroupVersion())
		if tc, err = s.TypeConverter(gvk.GroupVersion()); err != nil {
			return nil, err
		}
		tv, err = tc.ObjectToTyped(obj, typed.AllowDuplicates)
		if isNoType(err) {
			return nil, fmt.Errorf("%s: %w", gvk, ErrUnknownKind)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	return tv, nil
}

// readBefore reports whether the cached document of gv was read before t.
func (s *Schema) readBefore(gv schema.GroupVersion, t time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read[gv].Before(t)
}

// isUndeclaredField: structured-merge-diff's validation error for a field
// the schema does not have.
func isUndeclaredField(err error) bool {
	return err != nil && strings.Contains(err.Error(), "field not declared in schema")
}

func isNoType(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "no corresponding type for") ||
		strings.Contains(err.Error(), "no type found matching"))
}

// FieldManager returns the apiserver's field manager
// (managedfields.NewDefaultFieldManager) for gvk on the main resource, with
// identity conversion: objects must already be at gvk's version.
func (s *Schema) FieldManager(gvk schema.GroupVersionKind) (*managedfields.FieldManager, error) {
	s.mu.Lock()
	fm, ok := s.fms[gvk]
	s.mu.Unlock()
	if ok {
		return fm, nil
	}
	tc, err := s.TypeConverter(gvk.GroupVersion())
	if err != nil {
		return nil, err
	}
	fm, err = managedfields.NewDefaultFieldManager(tc, identityConvertor{}, noDefaults{}, unstructuredCreater{},
		gvk, gvk.GroupVersion(), "", nil)
	if err != nil {
		return nil, fmt.Errorf("field manager for %s: %w", gvk, err)
	}
	s.mu.Lock()
	s.fms[gvk] = fm
	s.mu.Unlock()
	return fm, nil
}

// identityConvertor converts nothing: the Applier reads live objects at the
// version of the intent.
type identityConvertor struct{}

func (identityConvertor) Convert(in, out, context interface{}) error {
	return errors.New("conversion is not supported")
}

func (identityConvertor) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	gvk := in.GetObjectKind().GroupVersionKind()
	if target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{gvk}); !ok || target != gvk {
		return nil, fmt.Errorf("cannot convert %s to another version locally", gvk)
	}
	return in, nil
}

func (identityConvertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return "", "", errors.New("field labels are not supported")
}

type noDefaults struct{}

func (noDefaults) Default(runtime.Object) {}

type unstructuredCreater struct{}

func (unstructuredCreater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}
