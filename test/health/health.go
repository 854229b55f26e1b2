/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package health

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	lua "github.com/yuin/gopher-lua"
)

// Group is the API group of the kinds, as Argo CD's keys name it.
const Group = "fieldops.dev"

// Kinds are the fieldops kinds, each with a health script.
var Kinds = []string{"FieldPatch", "ClusterFieldPatch", "ManagedWorkload", "PodSet"}

// Statuses are the values Argo CD accepts in a health script's hs.status.
var Statuses = map[string]bool{"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true}

// Health is what a script returns: hs.status and hs.message.
type Health struct {
	Status  string
	Message string
}

// ScriptPath is kind's script under the module root, laid out as Argo
// CD's resource_customizations directory is: <group>/<kind>/health.lua.
func ScriptPath(root, kind string) string {
	return filepath.Join(root, "config", "argocd", Group, kind, "health.lua")
}

// Script reads kind's script.
func Script(root, kind string) (string, error) {
	b, err := os.ReadFile(ScriptPath(root, kind))
	return string(b), err
}

// ConfigMapKey is the argocd-cm key of kind's health script.
func ConfigMapKey(kind string) string {
	return "resource.customizations.health." + Group + "_" + kind
}

// Run runs a health script over obj as Argo CD does: obj, turned from
// its JSON into a Lua table, is the global `obj`; the table the script
// returns is read back. Only Lua's base, table, string and math
// libraries are open, so a script cannot come to need more. A script
// that fails, returns something else than a table of a status Argo CD
// knows and a message, is an error.
func Run(src string, obj map[string]any) (Health, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return Health{}, err
	}
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return Health{}, err
	}
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for name, open := range map[string]lua.LGFunction{lua.BaseLibName: lua.OpenBase, lua.TabLibName: lua.OpenTable, lua.StringLibName: lua.OpenString, lua.MathLibName: lua.OpenMath} {
		L.Push(L.NewFunction(open))
		L.Push(lua.LString(name))
		L.Call(1, 0)
	}
	L.SetGlobal("obj", toLua(L, decoded))
	if err := L.DoString(src); err != nil {
		return Health{}, fmt.Errorf("the script fails: %w", err)
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return Health{}, fmt.Errorf("the script returns %s, not a table", L.Get(-1).Type())
	}
	var h Health
	var bad []string
	hs.ForEach(func(k, v lua.LValue) {
		s, isString := v.(lua.LString)
		switch {
		case k.String() == "status" && isString:
			h.Status = string(s)
		case k.String() == "message" && isString:
			h.Message = string(s)
		default:
			bad = append(bad, fmt.Sprintf("%s=%s (%s)", k, v, v.Type()))
		}
	})
	if len(bad) > 0 {
		return h, fmt.Errorf("the script returns more than a status and a message: %v", bad)
	}
	if !Statuses[h.Status] {
		return h, fmt.Errorf("the script returns status %q, which Argo CD does not know", h.Status)
	}
	return h, nil
}

// toLua turns a value decoded from JSON into Lua: objects and arrays
// become tables (arrays indexed from 1), numbers LNumber, null nil.
func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for i, e := range v {
			t.RawSetInt(i+1, toLua(L, e))
		}
		return t
	case string:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case bool:
		return lua.LBool(v)
	}
	return lua.LNil // null: a key Lua does not hold
}
