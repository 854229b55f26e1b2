package localcp

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/discovery"
)

// The apiserver reports the pinned Kubernetes version (stamped with
// ldflags by `make control-plane`), as `kubectl version`, Helm and OLM's
// minKubeVersion read it from /version.
func TestServerVersion(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	versions, err := requiredVersions(filepath.Join(root, toolsGoMod), kubernetesModule)
	if err != nil {
		t.Fatal(err)
	}
	want := versions[kubernetesModule]
	cp, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	}()
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != want || !strings.HasPrefix(want, "v"+v.Major+"."+v.Minor+".") {
		t.Errorf("/version = %+v, want gitVersion %s with its major and minor", v, want)
	}
}
