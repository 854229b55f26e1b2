/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package bundle

import (
	"fmt"
	"strconv"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fieldops/fieldops/internal/accountwebhook"
)

// The account-impersonation check of an OLM install. A bundle cannot
// carry the ValidatingAdmissionPolicy fieldops-account-impersonation
// (config/policy), so the bundle's manager serves the same check as a
// validating webhook (internal/accountwebhook), which the CSV declares.
const (
	// AccountPolicy is the policy whose rule the webhook serves.
	AccountPolicy = "fieldops-account-impersonation"
	// AccountWebhookName is the webhook's name (OLM's generateName).
	AccountWebhookName = "vaccount.fieldops.dev"
	// AccountWebhookPort is the manager container's webhook port
	// (--webhook-port, the webhook definition's targetPort).
	AccountWebhookPort = 9443
	// AccountWebhookServicePort is the port of the Service OLM creates in
	// front of it (the webhook definition's containerPort).
	AccountWebhookServicePort = 443
	// managerContainer is the container of the manager in its Deployment.
	managerContainer = "manager"
)

// AccountWebhookArgs are the manager flags the bundle's Deployment adds
// to serve the webhook.
var AccountWebhookArgs = []string{"--account-webhook", "--webhook-port=" + strconv.Itoa(AccountWebhookPort)}

// accountWebhook returns the CSV's webhook definition in place of the
// policy AccountPolicy among objs, and adds AccountWebhookArgs and the
// webhook's port to the manager container of the one Deployment of spec.
// The rules are the policy's matchConstraints (kinds and operations) and
// its failurePolicy; the policy's matchCondition (a create, or an update
// changing spec) cannot be said in a webhook definition and is the
// webhook's own first test. Without the policy, there is no webhook.
func accountWebhook(objs []*unstructured.Unstructured, spec *v1alpha1.StrategyDetailsDeployment) ([]v1alpha1.WebhookDescription, error) {
	var policy *admissionregistrationv1.ValidatingAdmissionPolicy
	for _, obj := range objs {
		if obj.GetKind() == "ValidatingAdmissionPolicy" && obj.GetName() == AccountPolicy {
			policy = &admissionregistrationv1.ValidatingAdmissionPolicy{}
			if err := fromUnstructured(obj, policy); err != nil {
				return nil, err
			}
		}
	}
	if policy == nil {
		return nil, nil
	}
	if len(spec.DeploymentSpecs) != 1 {
		return nil, fmt.Errorf("the webhook of %s needs one Deployment to serve it, config/default has %d", AccountPolicy, len(spec.DeploymentSpecs))
	}
	d := &spec.DeploymentSpecs[0]
	served := false
	for i := range d.Spec.Template.Spec.Containers {
		c := &d.Spec.Template.Spec.Containers[i]
		if c.Name != managerContainer {
			continue
		}
		c.Args = append(c.Args, AccountWebhookArgs...)
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: "webhook-server", ContainerPort: AccountWebhookPort, Protocol: corev1.ProtocolTCP})
		served = true
	}
	if !served {
		return nil, fmt.Errorf("the Deployment %s has no container %q to serve the webhook of %s", d.Name, managerContainer, AccountPolicy)
	}
	if policy.Spec.MatchConstraints == nil || len(policy.Spec.MatchConstraints.ResourceRules) == 0 {
		return nil, fmt.Errorf("ValidatingAdmissionPolicy %s matches no resources", AccountPolicy)
	}
	var rules []admissionregistrationv1.RuleWithOperations
	for _, r := range policy.Spec.MatchConstraints.ResourceRules {
		if len(r.ResourceNames) > 0 {
			return nil, fmt.Errorf("ValidatingAdmissionPolicy %s matches resources by name, which a webhook rule cannot", AccountPolicy)
		}
		rules = append(rules, r.RuleWithOperations)
	}
	sideEffects := admissionregistrationv1.SideEffectClassNone
	targetPort := intstr.FromInt32(AccountWebhookPort)
	path := accountwebhook.Path
	return []v1alpha1.WebhookDescription{{
		GenerateName:            AccountWebhookName,
		Type:                    v1alpha1.ValidatingAdmissionWebhook,
		DeploymentName:          d.Name,
		ContainerPort:           AccountWebhookServicePort,
		TargetPort:              &targetPort,
		Rules:                   rules,
		FailurePolicy:           policy.Spec.FailurePolicy,
		SideEffects:             &sideEffects,
		AdmissionReviewVersions: []string{"v1"},
		WebhookPath:             &path,
	}}, nil
}
