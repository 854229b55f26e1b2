/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package localcp

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ClusterOptions make the control plane a small cluster (Options.Cluster).
type ClusterOptions struct {
	// Nodes is how many simulated nodes kwok plays, kwok-node-0 and on;
	// 0 means 1.
	Nodes int
}

const (
	// kwokNodeAnnotation marks the nodes kwok manages.
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	// saSigningKey is where envtest puts the key the apiserver signs
	// service account tokens with (and kube-controller-manager must too).
	saSigningKey = "sa-signer.key"
	// clusterStartTimeout bounds the wait for the nodes to be Ready.
	clusterStartTimeout = time.Minute
)

// LogDir is where the logs of kube-controller-manager, kube-scheduler and
// kwok are while the control plane runs (Stop removes them).
func (cp *ControlPlane) LogDir() string { return filepath.Join(cp.root, "logs") }

// NodeName is the name of simulated node i.
func NodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

// startCluster starts kube-controller-manager, kube-scheduler and kwok
// (on the launcher's thread), registers the simulated nodes and waits
// until they are Ready, in that order.
func (cp *ControlPlane) startCluster(bins Binaries, opts ClusterOptions) error {
	kubeconfig, ca, err := cp.componentFiles()
	if err != nil {
		return err
	}
	if err := os.Mkdir(cp.LogDir(), 0o700); err != nil {
		return err
	}
	for _, c := range components(bins, kubeconfig, ca, cp.Env.ControlPlane.APIServer.CertDir) {
		if err := cp.startComponent(c); err != nil {
			return err
		}
	}
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterStartTimeout)
	defer cancel()
	n := max(opts.Nodes, 1)
	for i := range n {
		if _, err := cs.CoreV1().Nodes().Create(ctx, node(i), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("register node %s: %w", NodeName(i), err)
		}
	}
	return cp.waitNodesReady(ctx, cs, n)
}

// componentFiles writes the components' kubeconfig (a system:masters
// user of their own) and the apiserver's CA, and returns their paths.
func (cp *ControlPlane) componentFiles() (kubeconfig, ca string, err error) {
	user, err := cp.Env.ControlPlane.AddUser(envtest.User{Name: "fieldops-localcp-components", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", "", err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return "", "", err
	}
	kubeconfig = filepath.Join(cp.root, "components.kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		return "", "", err
	}
	ca = filepath.Join(cp.root, "ca.crt")
	if err := os.WriteFile(ca, cp.Config.CAData, 0o600); err != nil {
		return "", "", err
	}
	return kubeconfig, ca, nil
}

// component is a process of the cluster: its name, binary and arguments.
type component struct {
	name, path string
	args       []string
}

// components are the cluster's processes in start order, each with
// kubeconfig; kube-controller-manager signs service account tokens with
// the key envtest gave the apiserver (in certDir) and trusts ca.
func components(bins Binaries, kubeconfig, ca, certDir string) []component {
	return []component{
		// Every controller on by default (garbage collector, namespace
		// deletion, Deployments, ReplicaSets, DaemonSets, StatefulSets,
		// Jobs, service accounts, node lifecycle...); nothing served.
		{"kube-controller-manager", bins.KubeControllerManager, []string{
			"--kubeconfig=" + kubeconfig, "--leader-elect=false", "--secure-port=0",
			"--service-account-private-key-file=" + filepath.Join(certDir, saSigningKey),
			"--root-ca-file=" + ca,
		}},
		{"kube-scheduler", bins.KubeScheduler, []string{
			"--kubeconfig=" + kubeconfig, "--leader-elect=false", "--secure-port=0",
		}},
		// The kubelet of every node annotated kwok.x-k8s.io/node=fake.
		{"kwok", bins.Kwok, []string{
			"--kubeconfig=" + kubeconfig, "--config=" + bins.KwokStages,
			"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
			"--node-lease-duration-seconds=40", "--cidr=10.0.0.1/16",
		}},
	}
}

// startComponent starts c as a child of the control plane, its output in
// LogDir.
func (cp *ControlPlane) startComponent(c component) error {
	log, err := os.Create(filepath.Join(cp.LogDir(), c.name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(c.path, c.args...)
	cmd.Stdout, cmd.Stderr = log, log
	ch, err := startChild(cp.root, c.name, cmd)
	_ = log.Close() // the child has its own descriptor
	if err != nil {
		return err
	}
	ch.log = log.Name()
	cp.children = append(cp.children, ch)
	return nil
}

// waitNodesReady waits until the n simulated nodes are Ready, failing
// when a component exits or, with the components' log tails, when ctx
// ends first.
func (cp *ControlPlane) waitNodesReady(ctx context.Context, cs kubernetes.Interface, n int) error {
	var notReady []string
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, c := range cp.children {
			if c.exited() {
				return false, fmt.Errorf("%s exited: %v\n%s", c.name, c.err, c.logTail())
			}
		}
		notReady = notReady[:0]
		for i := range n {
			nd, err := cs.CoreV1().Nodes().Get(ctx, NodeName(i), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if !nodeReady(nd) {
				notReady = append(notReady, nd.Name)
			}
		}
		return len(notReady) == 0, nil
	})
	if wait.Interrupted(err) {
		var tails []string
		for _, c := range cp.children {
			tails = append(tails, c.logTail())
		}
		return fmt.Errorf("nodes %v not Ready within %s:\n%s", notReady, clusterStartTimeout, strings.Join(tails, "\n"))
	}
	return err
}

// node is simulated node i, as kwokctl registers them.
func node(i int) *corev1.Node {
	name := NodeName(i)
	rl := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{kwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{
				"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "kubernetes.io/hostname": name,
				"kubernetes.io/role": "agent", "node-role.kubernetes.io/agent": "", "type": "kwok",
			},
		},
		Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.0.%d.0/24", i), PodCIDRs: []string{fmt.Sprintf("10.0.%d.0/24", i)}},
		Status: corev1.NodeStatus{
			Allocatable: rl,
			Capacity:    rl,
			Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("192.0.2.%d", i+1)}},
			NodeInfo:    corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux"},
		},
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// logTail returns the last lines of the child's log, for errors.
func (c *child) logTail() string {
	if c.log == "" {
		return ""
	}
	b, err := os.ReadFile(c.log)
	if err != nil {
		return fmt.Sprintf("%s: %v", c.name, err)
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return fmt.Sprintf("--- %s (%s):\n%s", c.name, c.log, bytes.Join(lines, []byte("\n")))
}
