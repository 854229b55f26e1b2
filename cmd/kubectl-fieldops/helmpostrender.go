/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/fieldops/fieldops/internal/names"
	"github.com/fieldops/fieldops/ownershipcore/redact"
)

// helmFieldManager is the field manager of Helm's CLI: it sets
// kube.ManagedFieldsManager to "helm" (helm.sh/helm pkg/kube; Helm 3's
// patches and Helm 4's server-side applies alike). A program using
// Helm's SDK applies as its binary's name unless it sets that variable.
const helmFieldManager = "helm"

type postrenderOptions struct {
	flags        *genericclioptions.ConfigFlags
	streams      genericiooptions.IOStreams
	getenv       func(string) string
	fieldManager string
	yieldTo      []string
	keepLive     bool
	logFile      string
}

func newHelmPostrenderCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &postrenderOptions{flags: flags, streams: streams, getenv: os.Getenv}
	cmd := &cobra.Command{
		Use:   "helm-postrender [--yield-to MANAGER]...",
		Short: "Helm post-renderer: leave to fieldops the fields its FieldPatches hold",
		Long: `Read the manifests Helm rendered on standard input and write them to
standard output, leaving out of each object every field that, on the live
object, a FieldPatch or ClusterFieldPatch (or a field manager named with
--yield-to) owns and the release's field manager (--field-manager) does
not own with the value the manifest gives it. Helm then applies without
conflicting with those managers and without writing their fields (Argo
CD's RespectIgnoreDifferences avoids the conflict for managedFieldsManagers
by applying the live values instead).

Objects not on the cluster, and objects of which nothing is left out,
are written byte for byte as read. Each object is read with one GET;
nothing is written to the cluster. An object that cannot be read (other
than not found) fails the command, and nothing is written to standard
output: Helm then stops before applying anything. Standard error names,
per object, the fields left out and the manager each was left to (paths,
never values); --log-file appends the same to a file, as Helm 4 does not
show a post-renderer plugin's standard error.

The release's namespace is required: --namespace, else HELM_NAMESPACE.
Neither Helm 3 nor Helm 4 passes its -n to a post-renderer, and the
kubeconfig's namespace is never assumed (an object read from another
namespace than the release's would leave nothing out): give it as
--post-renderer-args=--namespace=NS. Without it the command fails and
writes nothing. The cluster is the one kubectl's flags select, else the
one Helm's variables name (KUBECONFIG, HELM_KUBECONTEXT, ...).

Helm 3's three-way merge needs --keep-live-values. A Secret never gets
its live values: Helm records the manifests it applies in the release,
which whoever may read the release can read; its yielded fields are left
out, and standard error says so. See docs/gitops.md#helm.`,
		Example: `  # Helm 4, with the plugin installed (deploy/helm-plugin/fieldops-postrender);
  # Helm 4 does not pass -n to a post-renderer plugin
  helm upgrade web ./chart -n web --post-renderer fieldops-postrender --post-renderer-args=--namespace=web

  # Helm 3 (3.10 and later)
  helm upgrade web ./chart -n web --post-renderer kubectl-fieldops --post-renderer-args helm-postrender \
    --post-renderer-args --namespace=web --post-renderer-args --keep-live-values

  # By hand: what would Helm apply
  helm template web ./chart | kubectl fieldops helm-postrender -n web --yield-to cluster-autoscaler`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	cmd.Flags().StringVar(&o.fieldManager, "field-manager", helmFieldManager, "the field manager the release is applied with: its fields held with the manifest's value are kept")
	cmd.Flags().StringArrayVar(&o.yieldTo, "yield-to", nil, "also leave out the fields this field manager owns (repeatable), e.g. an autoscaler's")
	cmd.Flags().BoolVar(&o.keepLive, "keep-live-values", false, "give the yielded fields their live values instead of leaving them out: for Helm 3, whose three-way merge deletes a field the previous release had and the new manifest lacks (never a Secret's: its yielded fields are left out)")
	cmd.Flags().StringVar(&o.logFile, "log-file", "", "also append what standard error says (the fields left out, a failure) to this file: Helm 4 does not show a post-renderer plugin's standard error")
	return cmd
}

// run reads every document, decides each, and writes the result only
// when every object was read.
func (o *postrenderOptions) run(ctx context.Context) error {
	out, notes, err := o.render(ctx)
	if lerr := o.log(notes, err); lerr != nil {
		fmt.Fprintf(o.streams.ErrOut, "Warning: --log-file: %v\n", lerr)
	}
	if err != nil {
		return err
	}
	if _, err := io.WriteString(o.streams.ErrOut, notes); err != nil {
		return err
	}
	_, err = o.streams.Out.Write(out)
	return err
}

// render returns the manifests of standard input as Helm should apply
// them, and the notes for standard error.
func (o *postrenderOptions) render(ctx context.Context) ([]byte, string, error) {
	in, err := io.ReadAll(o.streams.In)
	if err != nil {
		return nil, "", fmt.Errorf("read the manifests: %w", err)
	}
	o.useHelmEnv()
	ns, err := o.releaseNamespace()
	if err != nil {
		return nil, "", err
	}
	r, err := o.renderer(ns)
	if err != nil {
		return nil, "", err
	}
	var out bytes.Buffer
	var notes strings.Builder
	for _, doc := range splitDocuments(in) {
		b, note, err := r.document(ctx, doc)
		if err != nil {
			// What Helm and --log-file show: no value of the object (a
			// schema error quotes the value it refused).
			return nil, notes.String(), errors.New(redact.Message(err))
		}
		out.Write(b)
		notes.WriteString(note)
	}
	return out.Bytes(), notes.String(), nil
}

// log appends the notes, and the error if any, to --log-file: Helm 4
// keeps a post-renderer plugin's standard error to itself (helm v4.3
// internal/plugin runtime_subprocess.go, runPostrenderer).
func (o *postrenderOptions) log(notes string, failure error) error {
	if o.logFile == "" {
		return nil
	}
	f, err := os.OpenFile(o.logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if failure != nil {
		notes += "Error: " + failure.Error() + "\n"
	}
	_, err = io.WriteString(f, notes)
	return errors.Join(err, f.Close())
}

// helmEnv maps Helm's variables (helm env; pkg/cli EnvSettings.EnvVars,
// which Helm gives its CLI plugins) to kubectl's flags. Helm 4.3 runs a
// post-renderer plugin with Helm's own environment only (pkg/postrenderer
// passes no settings; internal/plugin runPostrenderer adds only
// HELM_PLUGIN_NAME and HELM_PLUGIN_DIR), and Helm 3 runs a post-renderer
// executable with its environment as it is, so these hold what the user
// set, not Helm's flags. KUBECONFIG needs no mapping: the kubeconfig
// loader reads it.
var helmEnv = []struct {
	env  string
	flag func(*genericclioptions.ConfigFlags) *string
}{
	{"HELM_NAMESPACE", func(f *genericclioptions.ConfigFlags) *string { return f.Namespace }},
	{"HELM_KUBECONTEXT", func(f *genericclioptions.ConfigFlags) *string { return f.Context }},
	{"HELM_KUBETOKEN", func(f *genericclioptions.ConfigFlags) *string { return f.BearerToken }},
	{"HELM_KUBEAPISERVER", func(f *genericclioptions.ConfigFlags) *string { return f.APIServer }},
	{"HELM_KUBECAFILE", func(f *genericclioptions.ConfigFlags) *string { return f.CAFile }},
	{"HELM_KUBEASUSER", func(f *genericclioptions.ConfigFlags) *string { return f.Impersonate }},
	{"HELM_KUBETLS_SERVER_NAME", func(f *genericclioptions.ConfigFlags) *string { return f.TLSServerName }},
}

// useHelmEnv sets each kubeconfig flag left empty from Helm's variable
// for it, when set: a flag given on the command line wins.
func (o *postrenderOptions) useHelmEnv() {
	for _, e := range helmEnv {
		if p := e.flag(o.flags); p != nil && *p == "" {
			*p = o.getenv(e.env)
		}
	}
	if g := o.getenv("HELM_KUBEASGROUPS"); g != "" && o.flags.ImpersonateGroup != nil && len(*o.flags.ImpersonateGroup) == 0 {
		*o.flags.ImpersonateGroup = strings.Split(g, ",")
	}
	if o.getenv("HELM_KUBEINSECURE_SKIP_TLS_VERIFY") == "true" && o.flags.Insecure != nil {
		*o.flags.Insecure = true
	}
}

// errNoReleaseNamespace: neither --namespace nor HELM_NAMESPACE gave the
// release's namespace.
var errNoReleaseNamespace = errors.New("the release's namespace is not given: pass --namespace=NS " +
	"(helm --post-renderer-args=--namespace=NS) or set HELM_NAMESPACE; Helm does not pass its -n to a post-renderer, " +
	"and the kubeconfig's namespace is not assumed to be the release's")

// releaseNamespace is the namespace Helm applies an object without one
// into: --namespace, else HELM_NAMESPACE (useHelmEnv). The kubeconfig
// context's namespace is never taken for it: it is the release's only
// when Helm was given no -n, which a post-renderer cannot see, and an
// object read from another namespace would be judged against the wrong
// live object (none: nothing left out, the apply then conflicts; or
// another object's owners).
func (o *postrenderOptions) releaseNamespace() (string, error) {
	if o.flags.Namespace == nil || *o.flags.Namespace == "" {
		return "", errNoReleaseNamespace
	}
	return *o.flags.Namespace, nil
}

// renderer connects to the cluster the flags select; ns is the release's
// namespace.
func (o *postrenderOptions) renderer(ns string) (*postrenderer, error) {
	conn, err := connect(o.flags)
	if err != nil {
		return nil, err
	}
	yield := map[string]bool{}
	for _, m := range o.yieldTo {
		yield[m] = true
	}
	return &postrenderer{client: conn.client, mapper: conn.client.RESTMapper(), applier: conn.applier, namespace: ns, manager: o.fieldManager, yieldTo: yield, keepLiveValues: o.keepLive}, nil
}

// yieldsTo reports whether the post-renderer leaves manager's fields to
// it: a FieldPatch's, a ClusterFieldPatch's, or one of --yield-to.
// Other fieldops managers (a ManagedWorkload's, a PodSet's) own objects
// of their own, not fields of a release's.
func (r *postrenderer) yieldsTo(manager string) bool {
	if r.yieldTo[manager] {
		return true
	}
	prefix, _, _ := strings.Cut(manager, "/")
	return prefix == names.FieldPatchPrefix || prefix == names.ClusterFieldPatchPrefix
}
