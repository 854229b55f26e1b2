/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package app

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldops/fieldops/controllers"
)

func TestSharedTargetWatchFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, controllers.DefaultSharedWatchAt},
		{[]string{"--shared-target-watch-at=40"}, 40},
		{[]string{"--shared-target-watch-at=0"}, -1}, // never share
	} {
		var f Flags
		if err := f.NewFlagSet("manager", false).Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if got := sharedWatchAt(f.sharedWatchAt); got != tc.want {
			t.Errorf("%v: SharedWatchAt %d, want %d", tc.args, got, tc.want)
		}
	}
}

// Namespaced objects act as fieldops-tenant of their namespace unless a
// cluster administrator names the namespaces (or "*") whose objects act
// with the manager's rights; an empty default account alone is refused.
func TestTenancyFlags(t *testing.T) {
	for _, tc := range []struct {
		args        []string
		env         map[string]string
		account     string
		rights      []string
		noCrossRefs bool
		err         string
	}{
		{args: nil, account: "fieldops-tenant", noCrossRefs: true},
		{args: []string{"--default-service-account=robot"}, account: "robot", noCrossRefs: true},
		{args: []string{"--manager-rights-namespaces=kube-system, platform"}, account: "fieldops-tenant", rights: []string{"kube-system", "platform"}, noCrossRefs: true},
		{args: []string{"--manager-rights-namespaces=*", "--default-service-account=", "--no-cross-namespace-refs=false"}, rights: []string{"*"}},
		{args: []string{"--default-service-account="}, err: "to mean that, say --manager-rights-namespaces='*'"},
		{args: []string{"--manager-rights-namespaces=Kube_System"}, err: "is not a namespace name"},
		{args: []string{"--default-service-account=a/b"}, err: "--default-service-account"},
		{env: map[string]string{"FIELDOPS_DEFAULT_SERVICE_ACCOUNT": "", "FIELDOPS_MANAGER_RIGHTS_NAMESPACES": "*", "FIELDOPS_NO_CROSS_NAMESPACE_REFS": "false"}, rights: []string{"*"}},
		{env: map[string]string{"FIELDOPS_DEFAULT_SERVICE_ACCOUNT": ""}, err: "--default-service-account is empty"},
	} {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		var f Flags
		if err := f.NewFlagSet("manager", false).Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := f.Check()
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v %v: %v, want an error with %q", tc.args, tc.env, err, tc.err)
			}
		case err != nil:
			t.Errorf("%v %v: %v", tc.args, tc.env, err)
		case f.Setup.DefaultServiceAccount != tc.account || !slices.Equal(f.Setup.ManagerRightsNamespaces, tc.rights) || f.Setup.NoCrossNamespaceRefs != tc.noCrossRefs:
			t.Errorf("%v %v: account %q, manager rights in %v, no cross-namespace refs %v; want %q, %v, %v", tc.args, tc.env,
				f.Setup.DefaultServiceAccount, f.Setup.ManagerRightsNamespaces, f.Setup.NoCrossNamespaceRefs, tc.account, tc.rights, tc.noCrossRefs)
		}
		for k := range tc.env {
			_ = os.Unsetenv(k)
		}
	}
}

// The account webhook is off unless asked for (kustomize and Helm check
// accounts with the admission policy); on, it listens on
// controller-runtime's default port and reads the certificate from its
// default directory (where OLM mounts it) unless told otherwise.
func TestAccountWebhookFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		on      bool
		port    int
		certDir string
	}{
		{nil, false, 9443, ""},
		{[]string{"--account-webhook"}, true, 9443, ""},
		{[]string{"--account-webhook", "--webhook-port=10250", "--webhook-cert-dir=/certs"}, true, 10250, "/certs"},
	} {
		var f Flags
		if err := f.NewFlagSet("manager", false).Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if f.AccountWebhook != tc.on || f.WebhookPort != tc.port || f.WebhookCertDir != tc.certDir {
			t.Errorf("%v: account webhook %v on port %d with certificates in %q; want %v, %d, %q", tc.args, f.AccountWebhook, f.WebhookPort, f.WebhookCertDir, tc.on, tc.port, tc.certDir)
		}
	}
}

// The leader election Lease's timing defaults to controller-runtime's
// (15 s, 10 s, 2 s); timings client-go's leader elector would refuse are
// refused before anything starts.
func TestLeaderElectionFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want LeaderElection
		err  string
	}{
		{args: nil, want: LeaderElection{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}},
		{args: []string{"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=1s", "--leader-elect-namespace=fieldops-system"},
			want: LeaderElection{Namespace: "fieldops-system", LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second}},
		{args: []string{"--leader-elect-renew-deadline=15s"}, err: "must be shorter than --leader-elect-lease-duration"},
		{args: []string{"--leader-elect-retry-period=9s"}, err: "must be longer than 1.2 times --leader-elect-retry-period"},
		{args: []string{"--leader-elect-renew-deadline=2400ms"}, err: "must be longer than 1.2 times"}, // 1.2 × 2 s exactly
		{args: []string{"--leader-elect-retry-period=0s"}, err: "must be positive"},
	} {
		var f Flags
		if err := f.NewFlagSet("manager", false).Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := f.Check()
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.err)
			}
		case err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case f.LeaderElection != tc.want:
			t.Errorf("%v: %+v, want %+v", tc.args, f.LeaderElection, tc.want)
		}
	}
}
