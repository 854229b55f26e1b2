/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package accountwebhook is the validating admission webhook that lets
// only those who may impersonate a ServiceAccount make a fieldops object
// act as it: the same rule as the ValidatingAdmissionPolicy
// fieldops-account-impersonation (config/policy), for installs that cannot
// carry an admission policy (an OLM bundle). The manager serves it with
// --account-webhook, on controller-runtime's webhook server; each decision
// is a SubjectAccessReview (authorization.k8s.io/v1) of the requesting
// user.
package accountwebhook
