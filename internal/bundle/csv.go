/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package bundle builds and checks fieldops's OLM bundle (registry+v1):
// Generate renders config/ with kustomize and writes bundle/ from it;
// Load and Validate check a bundle for what OLM's bundle validation
// (operator-framework/api pkg/validation) and the operator-sdk scorecard
// check.
//
// operator-framework/api is not used: only the fields fieldops writes are
// typed here, following the ClusterServiceVersion reference
// (https://olm.operatorframework.io/docs/concepts/crds/clusterserviceversion/)
// and the bundle format
// (https://olm.operatorframework.io/docs/tasks/creating-operator-bundle/).
package bundle

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ClusterServiceVersion is operators.coreos.com/v1alpha1
// ClusterServiceVersion, with the fields fieldops's bundle sets.
type ClusterServiceVersion struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              CSVSpec `json:"spec"`
}

// CSVSpec is the CSV's spec.
type CSVSpec struct {
	DisplayName               string                    `json:"displayName"`
	Description               string                    `json:"description,omitempty"`
	Version                   string                    `json:"version"`
	Replaces                  string                    `json:"replaces,omitempty"`
	Maturity                  string                    `json:"maturity,omitempty"`
	MinKubeVersion            string                    `json:"minKubeVersion,omitempty"`
	Provider                  AppLink                   `json:"provider"`
	Maintainers               []Maintainer              `json:"maintainers,omitempty"`
	Keywords                  []string                  `json:"keywords,omitempty"`
	Links                     []AppLink                 `json:"links,omitempty"`
	Icon                      []Icon                    `json:"icon,omitempty"`
	InstallModes              []InstallMode             `json:"installModes"`
	Install                   NamedInstallStrategy      `json:"install"`
	CustomResourceDefinitions CustomResourceDefinitions `json:"customresourcedefinitions,omitempty"`
	WebhookDefinitions        []WebhookDescription      `json:"webhookdefinitions,omitempty"`
}

// AppLink is a name and a URL.
type AppLink struct {
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
}

// Maintainer is a person or team to contact.
type Maintainer struct {
	Name  string `json:"name"`
	Email string `json:"email,omitempty"`
}

// Icon is an image, base64-encoded.
type Icon struct {
	Data      string `json:"base64data"`
	MediaType string `json:"mediatype"`
}

// Install mode types. OLM requires the CSV to state each of them.
const (
	InstallModeOwnNamespace    = "OwnNamespace"
	InstallModeSingleNamespace = "SingleNamespace"
	InstallModeMultiNamespace  = "MultiNamespace"
	InstallModeAllNamespaces   = "AllNamespaces"
)

// InstallMode says whether the operator can watch a set of namespaces.
type InstallMode struct {
	Type      string `json:"type"`
	Supported bool   `json:"supported"`
}

// NamedInstallStrategy is spec.install; Strategy is always "deployment".
type NamedInstallStrategy struct {
	Strategy string              `json:"strategy"`
	Spec     InstallStrategySpec `json:"spec"`
}

// InstallStrategySpec holds the Deployments OLM creates and the RBAC it
// grants their ServiceAccounts: permissions in the install namespace,
// clusterPermissions cluster-wide.
type InstallStrategySpec struct {
	Deployments        []DeploymentSpec `json:"deployments,omitempty"`
	Permissions        []Permissions    `json:"permissions,omitempty"`
	ClusterPermissions []Permissions    `json:"clusterPermissions,omitempty"`
}

// DeploymentSpec is a named Deployment of the install strategy.
type DeploymentSpec struct {
	Name  string                `json:"name"`
	Label map[string]string     `json:"label,omitempty"`
	Spec  appsv1.DeploymentSpec `json:"spec"`
}

// Permissions are the rules granted to one ServiceAccount.
type Permissions struct {
	ServiceAccountName string              `json:"serviceAccountName"`
	Rules              []rbacv1.PolicyRule `json:"rules"`
}

// CustomResourceDefinitions lists the CRDs the operator owns and requires.
type CustomResourceDefinitions struct {
	Owned    []CRDDescription `json:"owned,omitempty"`
	Required []CRDDescription `json:"required,omitempty"`
}

// CRDDescription describes one owned CRD version for the UI.
type CRDDescription struct {
	Name              string                 `json:"name"`
	Version           string                 `json:"version"`
	Kind              string                 `json:"kind"`
	DisplayName       string                 `json:"displayName,omitempty"`
	Description       string                 `json:"description,omitempty"`
	Resources         []APIResourceReference `json:"resources,omitempty"`
	SpecDescriptors   []Descriptor           `json:"specDescriptors,omitempty"`
	StatusDescriptors []Descriptor           `json:"statusDescriptors,omitempty"`
}

// APIResourceReference is a kind the operator creates for an owned CRD.
type APIResourceReference struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

// Descriptor names a field of spec or status for the UI; Path is
// dot-separated from spec or status.
type Descriptor struct {
	Path         string   `json:"path"`
	DisplayName  string   `json:"displayName,omitempty"`
	Description  string   `json:"description,omitempty"`
	XDescriptors []string `json:"x-descriptors,omitempty"`
}

// Webhook types of a WebhookDescription.
const (
	ValidatingAdmissionWebhook = "ValidatingAdmissionWebhook"
	MutatingAdmissionWebhook   = "MutatingAdmissionWebhook"
	ConversionWebhook          = "ConversionWebhook"
)

// WebhookDescription is one of the CSV's spec.webhookdefinitions: OLM
// creates a ValidatingWebhookConfiguration (or a mutating or conversion
// webhook) named after GenerateName, a Service <DeploymentName>-service
// from ContainerPort to the pods' TargetPort, and a serving certificate,
// which it mounts into the Deployment at
// /tmp/k8s-webhook-server/serving-certs (tls.crt, tls.key) and whose CA it
// puts in the webhook's caBundle
// (https://olm.operatorframework.io/docs/advanced-tasks/adding-admission-and-conversion-webhooks/).
type WebhookDescription struct {
	GenerateName            string                                       `json:"generateName"`
	Type                    string                                       `json:"type"`
	DeploymentName          string                                       `json:"deploymentName,omitempty"`
	ContainerPort           int32                                        `json:"containerPort,omitempty"`
	TargetPort              *intstr.IntOrString                          `json:"targetPort,omitempty"`
	Rules                   []admissionregistrationv1.RuleWithOperations `json:"rules,omitempty"`
	FailurePolicy           *admissionregistrationv1.FailurePolicyType   `json:"failurePolicy,omitempty"`
	SideEffects             *admissionregistrationv1.SideEffectClass     `json:"sideEffects"`
	TimeoutSeconds          *int32                                       `json:"timeoutSeconds,omitempty"`
	AdmissionReviewVersions []string                                     `json:"admissionReviewVersions"`
	WebhookPath             *string                                      `json:"webhookPath,omitempty"`
}
