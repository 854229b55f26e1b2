/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package gitops

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/kubectl/pkg/cmd/apply"
	cmddelete "k8s.io/kubectl/pkg/cmd/delete"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/fieldops/fieldops/ownershipcore"
)

// argoManager is the field manager of Argo CD's server-side apply
// (ArgoCDSSAManager of argo-cd's common package).
const argoManager = "argocd-controller"

// application is an Argo CD Application's sync of its objects with the
// sync option ServerSideApply=true, as Argo CD's controller and
// gitops-engine run it: each object is applied by kubectl's apply code
// (k8s.io/kubectl/pkg/cmd/apply, set up as gitops-engine's
// newApplyOptions of pkg/utils/kube/resource_ops.go does: server-side,
// --force-conflicts, field manager argocd-controller), objects of one
// kind after another in gitops-engine's kind order. With
// RespectIgnoreDifferences=true, each object is first normalized against
// its live state (normalizeTarget).
type application struct {
	// managers are the managedFieldsManagers of the Application's
	// ignoreDifferences entry for the objects (one entry, for every
	// object of the test).
	managers []string
	// respect is the sync option RespectIgnoreDifferences=true.
	respect bool
	factory cmdutil.Factory
}

// newApplication is the Application app (a recipe's; nil: no
// ignoreDifferences, no RespectIgnoreDifferences).
func newApplication(t *testing.T, app *unstructured.Unstructured) *application {
	t.Helper()
	a := &application{factory: kubectlFactory(t)}
	if app == nil {
		return a
	}
	opts, _, _ := unstructured.NestedStringSlice(app.Object, "spec", "syncPolicy", "syncOptions")
	if !slices.Contains(opts, "ServerSideApply=true") {
		t.Fatalf("Application %s does not sync with ServerSideApply=true: %v", app.GetName(), opts)
	}
	a.respect = slices.Contains(opts, "RespectIgnoreDifferences=true")
	ignores, _, _ := unstructured.NestedSlice(app.Object, "spec", "ignoreDifferences")
	for _, ig := range ignores {
		ms, _, _ := unstructured.NestedStringSlice(ig.(map[string]any), "managedFieldsManagers")
		a.managers = append(a.managers, ms...)
	}
	return a
}

// kubectlFactory is a kubectl factory of a kubeconfig written for the
// local control plane, as gitops-engine's kubeCmdFactory builds one.
func kubectlFactory(t *testing.T) cmdutil.Factory {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin"}
	kc.CurrentContext = "local"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig = &path
	return cmdutil.NewFactory(cmdutil.NewMatchVersionFlags(flags))
}

// argoKindOrder is the start of gitops-engine's kindOrder
// (pkg/sync/sync_tasks.go) for the kinds of these tests; a kind it does
// not name (a custom resource) comes after them.
var argoKindOrder = []string{"Namespace", "ServiceAccount", "Role", "RoleBinding", "Deployment"}

// sync applies objects (copies) as one sync wave: by kind, in
// gitops-engine's order, then by name.
func (a *application) sync(t *testing.T, objects ...*unstructured.Unstructured) {
	t.Helper()
	objs := make([]*unstructured.Unstructured, len(objects))
	for i, o := range objects {
		objs[i] = o.DeepCopy()
	}
	rank := func(o *unstructured.Unstructured) int {
		if i := slices.Index(argoKindOrder, o.GetKind()); i >= 0 {
			return i
		}
		return len(argoKindOrder)
	}
	sort.SliceStable(objs, func(i, j int) bool {
		if rank(objs[i]) != rank(objs[j]) {
			return rank(objs[i]) < rank(objs[j])
		}
		return objs[i].GetName() < objs[j].GetName()
	})
	for _, o := range objs {
		// The annotation tracking method, Argo CD's default.
		ann := o.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann["argocd.argoproj.io/tracking-id"] = "web:" + o.GroupVersionKind().Group + "/" + o.GetKind() + ":" + o.GetNamespace() + "/" + o.GetName()
		o.SetAnnotations(ann)
		if a.respect && len(a.managers) > 0 {
			o = normalizeTarget(t, o, a.managers)
		}
		a.apply(t, o)
	}
}

// apply runs kubectl's server-side apply of obj with the options
// gitops-engine's newApplyOptions sets for a sync with
// ServerSideApply=true: field manager argocd-controller, ForceConflicts,
// Overwrite, OpenAPIPatch, strict validation, no dry run. Like
// gitops-engine, it hands kubectl the object as a JSON manifest file.
func (a *application) apply(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	b, err := json.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}
	flags := apply.NewApplyFlags(streams)
	o := &apply.ApplyOptions{
		IOStreams: streams, VisitedUids: sets.Set[types.UID]{}, VisitedNamespaces: sets.Set[string]{},
		Recorder: genericclioptions.NoopRecorder{}, PrintFlags: flags.PrintFlags,
		Overwrite: true, OpenAPIPatch: true, ServerSideApply: true, ForceConflicts: true, FieldManager: argoManager,
		DryRunStrategy: cmdutil.DryRunNone, Namespace: obj.GetNamespace(), OpenAPIGetter: a.factory,
	}
	if o.DynamicClient, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if o.DeleteOptions, err = cmddelete.NewDeleteFlags("").ToOptions(o.DynamicClient, streams); err != nil {
		t.Fatal(err)
	}
	o.DeleteOptions.Filenames = []string{file}
	if o.Validator, err = a.factory.Validator(metav1.FieldValidationStrict); err != nil {
		t.Fatal(err)
	}
	o.Builder = a.factory.NewBuilder()
	if o.Mapper, err = a.factory.ToRESTMapper(); err != nil {
		t.Fatal(err)
	}
	o.ToPrinter = func(operation string) (printers.ResourcePrinter, error) {
		o.PrintFlags.NamePrintFlags.Operation = operation
		return o.PrintFlags.ToPrinter()
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(); err != nil {
		t.Fatalf("Argo CD's apply of %s %s: %v\n%s", obj.GetKind(), obj.GetName(), err, errOut.String())
	}
}

// normalizeTarget emulates what Argo CD does to an object it syncs with
// RespectIgnoreDifferences=true when ignoreDifferences names
// managedFieldsManagers; gitops-engine and Argo CD's controller do not
// build here (docs/gitops.md), so the test does the same steps itself,
// with structured-merge-diff as they do:
//
//   - util/argo/managedfields.Normalize (called by preDiffNormalize of
//     util/argo/diff): the live object and the desired one are compared
//     as typed values of the apiserver's schema; every field a listed
//     manager owns in the live object whose value the desired object
//     changes (the comparison's Modified set) is removed from both.
//   - normalizeTargetResources of controller/sync.go: the difference
//     between the normalized live object and the live one (those fields,
//     with their live values) is patched into the normalized desired
//     object, so that the sync applies the live values.
//
// Argo CD thus does not leave the fields out: it applies their live
// values, and argocd-controller becomes a co-owner of them.
func normalizeTarget(t *testing.T, target *unstructured.Unstructured, managers []string) *unstructured.Unstructured {
	t.Helper()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(target.GroupVersionKind())
	if err := k8s.Get(context.Background(), clientKey(target), live); err != nil {
		return target // not there yet: the desired object as it is
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := ownershipcore.NewSchema(dc).TypeConverter(target.GroupVersionKind().GroupVersion())
	if err != nil {
		t.Fatal(err)
	}
	typedLive, err := tc.ObjectToTyped(live)
	if err != nil {
		t.Fatal(err)
	}
	typedTarget, err := tc.ObjectToTyped(target)
	if err != nil {
		t.Fatal(err)
	}
	cmp, err := typedLive.Compare(typedTarget)
	if err != nil {
		t.Fatal(err)
	}
	ignored := &fieldpath.Set{}
	for _, e := range live.GetManagedFields() {
		if !slices.Contains(managers, e.Manager) {
			continue
		}
		owned := &fieldpath.Set{}
		if err := owned.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			t.Fatal(err)
		}
		ignored = ignored.Union(owned.Intersection(cmp.Modified))
	}
	if ignored.Empty() {
		return target
	}
	normalized := typedTarget.RemoveItems(ignored)
	patched, err := normalized.Merge(typedLive.ExtractItems(ignored, typed.WithAppendKeyFields()))
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: patched.AsValue().Unstructured().(map[string]any)}
}

// Without a recipe, Argo CD's sync (server-side apply with force) takes
// the patched field back to Git's value, and fieldops takes it again:
// each sync costs two writes of the Deployment, one each. The
// Application of the recipe without RespectIgnoreDifferences=true (its
// ignoreDifferences alone) changes nothing to that.
func TestArgoWithoutRecipe(t *testing.T) {
	deploy, patch, _ := testApp(t, "")
	plain := newApplication(t, nil)
	plain.sync(t, deploy)
	fp := createPatch(t, patch)
	ignoring := newApplication(t, pick(t, recipe(t, "TestArgoRespectIgnoreDifferences", deploy.GetNamespace()), "Application"))
	ignoring.respect = false
	for _, app := range []*application{plain, ignoring} {
		fight(t, fp, deploy, func() { app.sync(t, deploy) })
	}
}

// Recipe: ignoreDifferences.managedFieldsManagers naming the patch's
// manager, with the sync option RespectIgnoreDifferences=true. A sync (of
// a new image) applies replicas with its live value, the patch's: the
// image changes, replicas does not, fieldops writes nothing, and
// argocd-controller becomes a co-owner of replicas. After the patch is
// deleted, replicas is argocd-controller's alone (the previous owner, and
// a co-owner already) with the patch's value; the next sync applies
// Git's value, since no listed manager owns it any more.
func TestArgoRespectIgnoreDifferences(t *testing.T) {
	deploy, patch, objs := testApp(t, "TestArgoRespectIgnoreDifferences")
	app := newApplication(t, pick(t, objs, "Application"))
	app.sync(t, deploy)
	fp := createPatch(t, patch)
	if !slices.Contains(app.managers, manager(fp)) {
		t.Fatalf("the Application lists %v, not the patch's manager %s", app.managers, manager(fp))
	}
	setImage(t, deploy, "nginx:1.28")
	app.sync(t, deploy)
	if image(t, deploy) != "nginx:1.28" || replicas(t, deploy) != 5 {
		t.Errorf("after the sync: image %s replicas %d, want nginx:1.28 and the patch's 5", image(t, deploy), replicas(t, deploy))
	}
	want := []string{argoManager + "/Apply", manager(fp) + "/Apply"}
	if got := owners(t, deploy, ".spec.replicas"); !slices.Equal(got, want) {
		t.Errorf("replicas owned by %v, want %v", got, want)
	}
	quiet(t, fp, deploy)
	deletePatch(t, fp)
	if got := owners(t, deploy, ".spec.replicas"); !slices.Equal(got, []string{argoManager + "/Apply"}) || replicas(t, deploy) != 5 {
		t.Errorf("after the deletion: replicas %d owned by %v, want 5, argocd-controller's", replicas(t, deploy), got)
	}
	app.sync(t, deploy)
	if replicas(t, deploy) != 2 {
		t.Errorf("the sync after the deletion: replicas %d, want Git's 2", replicas(t, deploy))
	}
}

// Recipe: yieldTo: argocd-controller on the patch. As with Flux: replicas
// (in Git) is Argo CD's, the proxy variable (not in Git) the patch's; a
// sync changes nothing, and when Git comes to set the variable, the sync
// takes it and fieldops lets it.
func TestArgoYieldTo(t *testing.T) {
	deploy, patch, _ := testApp(t, "TestArgoYieldTo")
	app := newApplication(t, nil)
	app.sync(t, deploy)
	fp := createPatch(t, patch)
	yielded(t, fp, deploy)
	gen := kit.Live(t, deploy).GetGeneration()
	app.sync(t, deploy)
	if kit.Live(t, deploy).GetGeneration() != gen {
		t.Error("Argo CD's sync over the patch changed the Deployment")
	}
	quiet(t, fp, deploy)
	gitTakesProxy(t, fp, deploy, func() { app.sync(t, deploy) })
}
