/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package health runs the Argo CD health scripts of config/argocd as
// Argo CD does, with the Lua interpreter it embeds
// (github.com/yuin/gopher-lua). Its tests check the scripts' rules, that
// argocd-cm.yaml and docs/gitops.md carry them as they are, and the
// kustomize install; test/health/states reads the health of objects the
// controllers put in each state on the local control plane, for Argo CD
// and for Flux (kstatus).
package health
