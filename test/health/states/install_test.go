/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package states_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/test/health"
)

// The docs' install command, `kubectl patch configmap argocd-cm -n argocd
// --patch-file config/argocd/argocd-cm.yaml`: a strategic merge patch
// (kubectl's default for a ConfigMap) of the file as JSON, which adds
// the scripts and keeps the rest of argocd-cm; patching again changes
// nothing.
func TestInstallWithKubectlPatch(t *testing.T) {
	ctx := context.Background()
	ns := kit.Namespace(t, "argocd")
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-cm", Namespace: ns, Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"}},
		Data:       map[string]string{"url": "https://argocd.example.com"},
	}
	if err := k8s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root(t), "config", "argocd", "argocd-cm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	patch, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	var rv string
	for i := 0; i < 2; i++ {
		if err := k8s.Patch(ctx, cm, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
		if i == 1 && cm.ResourceVersion != rv {
			t.Errorf("patching again changed argocd-cm (resourceVersion %s → %s)", rv, cm.ResourceVersion)
		}
		rv = cm.ResourceVersion
	}
	if cm.Data["url"] != "https://argocd.example.com" || len(cm.Data) != len(health.Kinds)+1 {
		t.Errorf("argocd-cm holds %d keys, url %q: want the user's url and the %d scripts", len(cm.Data), cm.Data["url"], len(health.Kinds))
	}
	for _, k := range health.Kinds {
		want, err := health.Script(root(t), k)
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data[health.ConfigMapKey(k)] != want {
			t.Errorf("%s is not %s's health.lua after the patch", health.ConfigMapKey(k), k)
		}
	}
}
