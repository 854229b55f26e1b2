/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command demo is fieldops' main job on real input, on the embedded local
// cluster with no real cluster needed (`make demo`):
//
//  1. the aws-node DaemonSet of the Amazon VPC CNI (test/testdata, upstream
//     manifest) is applied by another field manager, "eks";
//  2. a FieldPatch adds HTTP_PROXY to the aws-node container, acting (as
//     every namespaced FieldPatch does by default) as a ServiceAccount of
//     kube-system that may only get and patch that DaemonSet
//     (config/samples/accounts.yaml);
//  3. the FieldPatch status and a per-field table of the DaemonSet's owners
//     are printed;
//  4. the FieldPatch is deleted and the owners are printed again.
//
// It exits non-zero unless the hand-back is exact: every manager owns the
// same fields as before the patch and the DaemonSet is as it was.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/cmd/manager/app"
	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/ownershipcore"
)

const fieldPatch = `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: aws-node-proxy, namespace: kube-system}
spec:
  serviceAccountName: aws-node-patcher
  target: {apiVersion: apps/v1, kind: DaemonSet, name: aws-node}
  patch:
    spec:
      template:
        spec:
          containers:
          - name: aws-node
            env:
            - {name: HTTP_PROXY, value: "http://proxy.internal:3128"}
`

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	fmt.Println("starting the local cluster (kube-apiserver, etcd, kube-controller-manager, kube-scheduler, a kwok node)...")
	cp, err := localcp.Start(localcp.Options{Cluster: &localcp.ClusterOptions{Nodes: 1}})
	if err != nil {
		return err
	}
	defer func() { _ = cp.Stop() }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{Scheme: controllers.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	// The manager's flag defaults: namespaced objects act as accounts of
	// their namespace.
	if err := controllers.SetupWith(mgr, controllers.Options{DefaultServiceAccount: app.DefaultServiceAccount, NoCrossNamespaceRefs: true}); err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	c, err := client.New(cp.Config, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		return err
	}

	root, err := localcp.ModuleRoot()
	if err != nil {
		return err
	}
	ds, err := daemonSet(filepath.Join(root, "test", "testdata", "aws-vpc-cni-aws-k8s-cni.yaml"))
	if err != nil {
		return err
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(ds.DeepCopy()), client.FieldOwner("eks"), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply aws-node as eks: %w", err)
	}
	before, err := rolledOut(ctx, c, ds)
	if err != nil {
		return err
	}
	fmt.Println("\n== aws-node DaemonSet applied by field manager \"eks\"")

	accounts, err := os.ReadFile(filepath.Join(root, "config", "samples", "accounts.yaml"))
	if err != nil {
		return err
	}
	objs, err := localcp.DecodeAll(accounts)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if o.GetNamespace() != "kube-system" {
			continue
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("platform-admin")); err != nil {
			return fmt.Errorf("apply %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	fmt.Println("== ServiceAccount kube-system/aws-node-patcher: get and patch on DaemonSet aws-node only")

	fp := &v1alpha1.FieldPatch{}
	if err := yaml.UnmarshalStrict([]byte(fieldPatch), fp); err != nil {
		return err
	}
	fmt.Printf("\n== FieldPatch\n%s", fieldPatch)
	if err := c.Create(ctx, fp); err != nil {
		return err
	}
	if err := waitFor(ctx, func() (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(fp), fp); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(fp.Status.Conditions, "Ready"), nil
	}); err != nil {
		return fmt.Errorf("FieldPatch not ready: %w (conditions %v)", err, fp.Status.Conditions)
	}
	status, _ := yaml.Marshal(map[string]interface{}{"status": fp.Status})
	fmt.Printf("\n== FieldPatch status\n%s", status)
	patched, err := read(ctx, c, ds)
	if err != nil {
		return err
	}
	fmt.Println("\n== owners of aws-node while patched")
	if err := printOwners(patched); err != nil {
		return err
	}

	fmt.Println("\n== deleting the FieldPatch (deletionPolicy HandBack)")
	if err := c.Delete(ctx, fp); err != nil {
		return err
	}
	if err := waitFor(ctx, func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(fp), &v1alpha1.FieldPatch{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}); err != nil {
		return err
	}
	after, err := rolledOut(ctx, c, ds)
	if err != nil {
		return err
	}
	fmt.Println("\n== owners of aws-node after the hand-back")
	if err := printOwners(after); err != nil {
		return err
	}
	return checkExact(before, after)
}

// daemonSet reads the DaemonSet out of a multi-document manifest.
func daemonSet(path string) (*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	objs, err := localcp.DecodeAll(b)
	if err != nil {
		return nil, err
	}
	for _, u := range objs {
		if u.GetKind() == "DaemonSet" {
			return u, nil
		}
	}
	return nil, fmt.Errorf("no DaemonSet in %s", path)
}

func read(ctx context.Context, c client.Client, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	l := &unstructured.Unstructured{}
	l.SetGroupVersionKind(u.GroupVersionKind())
	return l, c.Get(ctx, client.ObjectKeyFromObject(u), l)
}

// rolledOut waits until the DaemonSet controller has rolled the current
// template out to every node (its status, which kube-controller-manager
// owns, is then steady) and returns the DaemonSet.
func rolledOut(ctx context.Context, c client.Client, ds *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var live *unstructured.Unstructured
	err := waitFor(ctx, func() (bool, error) {
		var err error
		if live, err = read(ctx, c, ds); err != nil {
			return false, err
		}
		st := func(f string) int64 { v, _, _ := unstructured.NestedInt64(live.Object, "status", f); return v }
		desired := st("desiredNumberScheduled")
		return st("observedGeneration") == live.GetGeneration() && desired > 0 && st("updatedNumberScheduled") == desired &&
			st("numberAvailable") == desired && st("numberUnavailable") == 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("aws-node not rolled out: %w (status %v)", err, live.Object["status"])
	}
	return live, nil
}

func waitFor(ctx context.Context, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// printOwners prints one line per owned field: path, manager, operation.
// The fields the patch touches (the aws-node container's key and its
// HTTP_PROXY entry) and every field of a manager other than "eks" are
// shown; the rest is counted.
func printOwners(u *unstructured.Unstructured) error {
	mf, err := ownershipcore.Owners(u)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "FIELD\tMANAGER\tOPERATION")
	for _, e := range mf {
		paths := ownershipcore.FormatSet(e.Fields)
		shown := 0
		for _, p := range paths {
			if strings.Contains(p, "HTTP_PROXY") || p == `.spec.template.spec.containers[name="aws-node"].name` || e.Manager != "eks" {
				fmt.Fprintf(w, "%s\t%s\t%s\n", p, e.Manager, e.Operation)
				shown++
			}
		}
		if rest := len(paths) - shown; rest > 0 {
			fmt.Fprintf(w, "(%d more fields)\t%s\t%s\n", rest, e.Manager, e.Operation)
		}
	}
	return w.Flush()
}

// checkExact fails unless every manager owns what it owned before the patch
// and the object's content is unchanged.
func checkExact(before, after *unstructured.Unstructured) error {
	mb, err := ownershipcore.Owners(before)
	if err != nil {
		return err
	}
	ma, err := ownershipcore.Owners(after)
	if err != nil {
		return err
	}
	if len(mb) != len(ma) {
		return fmt.Errorf("hand-back not exact: %d managed fields entries before, %d after", len(mb), len(ma))
	}
	for i := range mb {
		if mb[i].ManagerKey != ma[i].ManagerKey || !mb[i].Fields.Equals(ma[i].Fields) {
			return fmt.Errorf("hand-back not exact: entry %s differs: %v", mb[i].ManagerKey, mb[i].Fields.Difference(ma[i].Fields))
		}
	}
	specB, _, _ := unstructured.NestedMap(before.Object, "spec")
	specA, _, _ := unstructured.NestedMap(after.Object, "spec")
	if !equality.Semantic.DeepEqual(specB, specA) {
		return errors.New("hand-back not exact: the DaemonSet spec differs from before the patch")
	}
	fmt.Println("\nhand-back exact: every field manager owns what it owned before, the DaemonSet is as it was")
	return nil
}
