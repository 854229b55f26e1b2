/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package accountwebhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Path is the URL path the webhook is served at; the OLM bundle's
// webhook definition names it.
const Path = "/validate-fieldops-dev-v1alpha1-account"

// Group is the API group of the kinds the webhook checks.
const Group = "fieldops.dev"

// Options are the manager's tenancy settings that decide which account an
// object naming none acts as.
type Options struct {
	// DefaultServiceAccount is the account, in their own namespace, of
	// FieldPatches and ManagedWorkloads naming none (the manager's
	// --default-service-account); empty: such objects are not checked.
	// Set, such an object is checked as the policy checks it, which does
	// not know the name: its author must be allowed to impersonate every
	// ServiceAccount of its namespace (the default one among them).
	DefaultServiceAccount string
	// ManagerRightsNamespaces is the manager's --manager-rights-namespaces.
	// Holding "*", namespaced objects naming no account act with the
	// manager's rights everywhere and are not checked (as config/manager-
	// rights' policy checks only objects naming an account); a list of
	// namespaces changes nothing here: an object naming none is checked as
	// config/default's policy does, so only those who may impersonate
	// every account of the namespace write such objects there.
	ManagerRightsNamespaces []string
}

// Account is the ServiceAccount an object acts as, by namespace and name.
// Namespace is empty for a ClusterFieldPatch naming no
// serviceAccountNamespace: the check then asks for the right to
// impersonate that name in every namespace, as the policy does. Name is
// empty for a namespaced object naming none: it acts as the default
// account of Namespace, and the check asks for the right to impersonate
// every ServiceAccount of Namespace, as the policy does.
type Account struct {
	Namespace, Name string
}

func (a Account) String() string {
	if a.Name == "" {
		return "every ServiceAccount of " + a.Namespace
	}
	return "ServiceAccount " + a.Namespace + "/" + a.Name
}

// object is the part of a fieldops object the decision reads.
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec map[string]interface{} `json:"spec"`
}

func (o *object) specString(key string) string {
	s, _ := o.Spec[key].(string)
	return s
}

// AccountToCheck decides, as the policy fieldops-account-impersonation
// does, whether a request needs the right to impersonate an account and
// which: a CREATE always, an UPDATE only when spec changes (the manager's
// finalizer updates, the garbage collector's ownerReference updates and
// status do not), of a FieldPatch, ClusterFieldPatch or ManagedWorkload.
// A namespaced object acts as spec.serviceAccountName of its namespace,
// else as opts.DefaultServiceAccount (unless opts.ManagerRightsNamespaces
// holds "*"), checked as every account of its namespace (Account); a
// ClusterFieldPatch as
// spec.serviceAccountNamespace/spec.serviceAccountName, and naming none
// it is not checked. ok is false when nothing is to be checked; kind is
// the object's kind; an error means the object could not be decoded.
func AccountToCheck(req admission.Request, opts Options) (account Account, kind string, ok bool, err error) {
	if req.Kind.Group != Group || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || req.SubResource != "" {
		return Account{}, "", false, nil
	}
	obj, changed, err := decode(req)
	if err != nil || !changed {
		return Account{}, obj.Kind, false, err
	}
	account, ok = obj.account(opts)
	return account, obj.Kind, ok, nil
}

// decode reads the request's object, its kind and namespace filled in
// from the request when the object leaves them out; changed is false for
// an update that leaves spec as it was.
func decode(req admission.Request) (obj object, changed bool, err error) {
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return obj, false, fmt.Errorf("decode %s: %w", req.Kind.Kind, err)
	}
	if obj.Kind == "" {
		obj.Kind = req.Kind.Kind
	}
	if obj.Metadata.Namespace == "" {
		obj.Metadata.Namespace = req.Namespace
	}
	if req.Operation != admissionv1.Update {
		return obj, true, nil
	}
	var old object
	if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
		return obj, false, fmt.Errorf("decode the old %s: %w", req.Kind.Kind, err)
	}
	return obj, !equality.Semantic.DeepEqual(old.Spec, obj.Spec), nil
}

// account is the account obj acts as, if it is to be checked (see
// AccountToCheck).
func (o *object) account(opts Options) (Account, bool) {
	name := o.specString("serviceAccountName")
	switch o.Kind {
	case "ClusterFieldPatch":
		if name == "" {
			return Account{}, false
		}
		return Account{Namespace: o.specString("serviceAccountNamespace"), Name: name}, true
	case "FieldPatch", "ManagedWorkload":
		if name == "" && (opts.DefaultServiceAccount == "" || slices.Contains(opts.ManagerRightsNamespaces, "*")) {
			return Account{}, false
		}
		return Account{Namespace: o.Metadata.Namespace, Name: name}, true
	}
	return Account{}, false
}

// Handler admits a fieldops object only when the requesting user may
// impersonate the ServiceAccount it acts as (AccountToCheck), asking the
// apiserver with a SubjectAccessReview of the request's user, groups, uid
// and extra: verb impersonate, resource serviceaccounts (core group), the
// account's namespace and name (no name: every ServiceAccount of the
// namespace). It denies with reason Forbidden (403) and
// a message naming the account and the missing right, the message of the
// policy; a review the apiserver fails to answer is an error (500), which
// the webhook's failurePolicy Fail turns into a refusal.
type Handler struct {
	// Client creates the SubjectAccessReviews (the manager's client; its
	// ServiceAccount needs create on subjectaccessreviews).
	Client  client.Client
	Options Options
}

var _ admission.Handler = &Handler{}

// Handle decides one admission request.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	account, kind, ok, err := AccountToCheck(req, h.Options)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if !ok {
		return admission.Allowed("")
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range req.UserInfo.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: req.UserInfo.Username, Groups: req.UserInfo.Groups, UID: req.UserInfo.UID, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: "", Resource: "serviceaccounts", Namespace: account.Namespace, Name: account.Name, Verb: "impersonate",
		},
	}}
	if err := h.Client.Create(ctx, sar); err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("review whether %s may impersonate %s: %w", req.UserInfo.Username, account, err))
	}
	if !sar.Status.Allowed {
		return admission.Denied(DeniedMessage(kind, account))
	}
	return admission.Allowed("")
}

// DeniedMessage is the refusal of an object of kind acting as account,
// word for word the policy's messageExpression.
func DeniedMessage(kind string, account Account) string {
	if account.Name == "" {
		return fmt.Sprintf("this %s names no serviceAccountName and acts as the default ServiceAccount of namespace %s (--default-service-account), and you may not impersonate every ServiceAccount of %s: name one you may impersonate (RBAC: impersonate on serviceaccounts)", kind, account.Namespace, account.Namespace)
	}
	return fmt.Sprintf("this %s acts as ServiceAccount %s/%s, and you may not impersonate it (RBAC: impersonate on serviceaccounts)", kind, account.Namespace, account.Name)
}

// Register serves the webhook at Path on srv, reviewing with c.
func Register(srv webhook.Server, c client.Client, opts Options) {
	srv.Register(Path, &webhook.Admission{Handler: &Handler{Client: c, Options: opts}})
}
