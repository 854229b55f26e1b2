# fieldops Makefile. Every tool it needs is built from pinned Go modules into
# ./bin, so a machine with Go and make runs every target.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

LOCALBIN ?= $(CURDIR)/bin
export GOBIN := $(LOCALBIN)

CONTROLLER_TOOLS_VERSION ?= v0.23.0
# v5.8.x needs Go 1.27; v5.7.1 is the newest that builds with Go 1.26.
KUSTOMIZE_VERSION ?= v5.7.1
# Protocol buffers for the plugin protocol: buf compiles without protoc.
BUF_VERSION ?= v1.75.0
PROTOC_GEN_GO_VERSION ?= v1.36.11
PROTOC_GEN_GO_GRPC_VERSION ?= v1.6.2
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
BUF ?= $(LOCALBIN)/buf-$(BUF_VERSION)
# buf finds the protoc plugins on PATH, under their plain names.
PROTOC_PLUGINS ?= $(LOCALBIN)/protoc-plugins-go$(PROTOC_GEN_GO_VERSION)-grpc$(PROTOC_GEN_GO_GRPC_VERSION)
KUSTOMIZE ?= $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)
# promtool, for the rule unit tests of config/prometheus/alerts.yaml. The
# Prometheus module's versions are v0.3XX.y for Prometheus v3.XX.y.
PROMETHEUS_VERSION ?= v0.316.0
PROMTOOL ?= $(LOCALBIN)/promtool-$(PROMETHEUS_VERSION)
# Lint and release tools, each built from its pinned module.
GOLANGCI_LINT_VERSION ?= v2.15.0
ACTIONLINT_VERSION ?= v1.7.12
KO_VERSION ?= v0.19.1
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
ACTIONLINT ?= $(LOCALBIN)/actionlint-$(ACTIONLINT_VERSION)
KO ?= $(LOCALBIN)/ko-$(KO_VERSION)

# The local control plane (internal/localcp), built from the pinned modules of
# test/tools (Kubernetes and etcd) and test/tools/kwok. Each binary's path
# holds its version, so a binary already built from the pinned version (or
# copied from another clone) is never rebuilt, whatever the file times; a
# version bump builds into a new directory. internal/localcp reads the same
# go.mod files to find them.
KUBE_VERSION := $(shell sed -n 's|^\tk8s.io/kubernetes \(v[^ ]*\).*|\1|p' test/tools/go.mod)
ETCD_VERSION := $(shell sed -n 's|^\tgo.etcd.io/etcd/server/v3 \(v[^ ]*\).*|\1|p' test/tools/go.mod)
KUBE_BIN := $(LOCALBIN)/kubernetes-$(KUBE_VERSION)
KUBE_COMMANDS := kube-apiserver kube-controller-manager kube-scheduler
ETCD := $(LOCALBIN)/etcd-$(ETCD_VERSION)/etcd
KWOK_VERSION := $(shell sed -n 's|^require sigs.k8s.io/kwok \(v[^ ]*\).*|\1|p' test/tools/kwok/go.mod)
KWOK := $(LOCALBIN)/kwok-$(KWOK_VERSION)/kwok
# What `kubectl version` and /version report (hack/lib/version.sh of
# Kubernetes sets the same variables). The module zip has no git metadata:
# the commit stays empty, the tree state is "archive" (built from a source
# archive) and the build date is the release's, from the module proxy
# (evaluated only when building).
KUBE_BUILD_DATE = $(shell cd test/tools && go mod download -json k8s.io/kubernetes@$(KUBE_VERSION) 2>/dev/null | sed -n 's|.*"Info": "\(.*\)",|\1|p' | xargs -r sed -n 's|.*"Time":"\([^"]*\)".*|\1|p')
KUBE_VERSION_PARTS := $(subst ., ,$(patsubst v%,%,$(KUBE_VERSION)))
KUBE_LDFLAGS = $(foreach pkg,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
  -X '$(pkg).gitVersion=$(KUBE_VERSION)' -X '$(pkg).gitMajor=$(word 1,$(KUBE_VERSION_PARTS))' \
  -X '$(pkg).gitMinor=$(word 2,$(KUBE_VERSION_PARTS))' -X '$(pkg).gitCommit=' \
  -X '$(pkg).gitTreeState=archive' -X '$(pkg).buildDate=$(KUBE_BUILD_DATE)')

# The operator version: the one place the bundle's, the chart's (version
# and appVersion) and the images' versions come from. It defaults to the
# committed bundle's; `make bundle chart VERSION=x.y.z` moves both, and
# `make release VERSION=vx.y.z` builds that version into dist/. A leading
# v is dropped.
VERSION ?= $(shell sed -n 's/^  version: //p' bundle/manifests/fieldops.clusterserviceversion.yaml)
override VERSION := $(patsubst v%,%,$(VERSION))
# The images a release builds (make release): the manager, and the example
# plugins' image that config/plugins copies the plugins from.
IMAGE_REPO ?= ghcr.io/fieldops
IMG ?= $(IMAGE_REPO)/manager:v$(VERSION)
PLUGINS_IMG ?= $(IMAGE_REPO)/example-plugins:v$(VERSION)
BUNDLE_IMG ?= $(IMAGE_REPO)/fieldops-bundle:v$(VERSION)
CONTAINER_TOOL ?= docker

# Four test packages (and four parallel tests in each) at once: most of a
# suite's time is spent waiting on a control plane, not on the 2 cores.
# -trimpath keeps source paths out of the build cache's keys, so a fresh
# clone (CI's, another worktree) reuses what any clone compiled.
GO_TEST_FLAGS ?= -count=1 -p 4 -parallel 4 -trimpath
BENCH ?= .

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-16s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC into config/.
	$(CONTROLLER_GEN) rbac:roleName=fieldops-manager-role crd paths="{./api/...,./controllers/...}" output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac

.PHONY: generate
generate: $(CONTROLLER_GEN) $(BUF) $(PROTOC_PLUGINS) ## Generate deepcopy code and the plugin protocol's Go code.
	cd plugins/proto && PATH="$(PROTOC_PLUGINS):$$PATH" $(BUF) generate
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: fmt
fmt: ## go fmt.
	go fmt ./...

.PHONY: vet
vet: ## go vet.
	go vet ./...

.PHONY: chart
chart: manifests ## Generate the Helm chart's CRDs, RBAC, policies and Chart.yaml (charts/fieldops) from config/ and VERSION, and its README from values.yaml.
	go run ./hack/chart --version $(VERSION)
	sed -i 's|^  newTag: .*|  newTag: v$(VERSION)|' config/manager/kustomization.yaml
	sed -i 's|image: $(IMAGE_REPO)/example-plugins:.*|image: $(PLUGINS_IMG)|' config/plugins/manager_plugins_patch.yaml

GENERATED_PATHS := api config plugins/proto charts
.PHONY: verify-generated
verify-generated: generate manifests chart ## Fail when generated files differ from the committed ones.
	@if [ -n "$$(git status --porcelain -- $(GENERATED_PATHS))" ]; then \
	  echo "generated files are stale; run 'make generate manifests chart' and commit:"; \
	  git status --porcelain -- $(GENERATED_PATHS); git --no-pager diff --stat -- $(GENERATED_PATHS); exit 1; fi

.PHONY: lint
lint: $(GOLANGCI_LINT) $(ACTIONLINT) ## Lint the Go code (.golangci.yml) and the CI workflows (actionlint).
	$(GOLANGCI_LINT) run ./...
	$(ACTIONLINT) -color=false

.PHONY: test
# Tests build as the release does (CGO_ENABLED=0, Dockerfile and
# dist): what is tested is what ships, and no test binary needs the
# external linker (kustomize imports the "plugin" package, which with cgo
# makes the linker call gcc). GOGC=400 reaches the compiler, the test
# binaries (managers included) and the control planes they start: a test
# machine has memory to spare, not cores (fewer collections, less CPU).
# The heap tests measure live heap after runtime.GC(), which GOGC does not
# change. The model fuzzer's package (10,000 sequences, CPU-bound) runs
# first, on its own, then every other package, four at once: sharing the
# cores with the control-plane suites, the same sequences take several
# times as long (times: docs/performance.md).
TEST_GOGC ?= 400
MODEL_PKG := ./ownershipcore/modelfuzz/
test: control-plane $(PROMTOOL) ## Run every test (unit and against the local control plane).
	GOGC=$(TEST_GOGC) CGO_ENABLED=0 go test $(GO_TEST_FLAGS) $(MODEL_PKG)
	PROMTOOL=$(PROMTOOL) GOGC=$(TEST_GOGC) CGO_ENABLED=0 go test $(GO_TEST_FLAGS) $$(go list ./... | grep -v '/ownershipcore/modelfuzz$$')
	$(MAKE) test-helm
	$(MAKE) test-gitops

.PHONY: test-helm
test-helm: control-plane ## Run helm upgrades with the post-renderer plugin under the pinned Helm 4 CLI (test/helm, its own module).
	cd test/helm && GOGC=$(TEST_GOGC) CGO_ENABLED=0 go test -count=1 -trimpath ./...

.PHONY: test-gitops
test-gitops: control-plane ## Run the Flux and Argo CD recipes of docs/gitops.md (test/gitops, its own module: fluxcd/pkg/ssa, kubectl's apply).
	cd test/gitops && GOGC=$(TEST_GOGC) CGO_ENABLED=0 go test -count=1 -trimpath ./...

.PHONY: test-alerts
test-alerts: control-plane $(PROMTOOL) ## Run promtool's rule unit tests of the alerts (config/prometheus/alerts_test.yaml).
	PROMTOOL=$(PROMTOOL) CGO_ENABLED=0 go test -count=1 -trimpath -run '^TestAlertRules$$' ./test/deploy/

# The randomized ownership test (test/invariants): `make test` runs 200
# sequences from seed 1; `make fuzz` runs N from SEED (default: the time,
# printed), WORKERS at once. Sequence i has seed SEED+i: N=1 replays one.
# `make test` also runs 40 sequences with faults (a quarter of fieldops'
# writes failing during each step); `make fuzz-faults` runs N of those.
SEED ?= $(shell date +%s)
N ?= 1000
WORKERS ?= 4

.PHONY: fuzz
fuzz: control-plane ## Run N random ownership sequences from SEED (test/invariants): make fuzz SEED=42 N=2000.
	go test -count=1 -timeout 0 -v -run '^TestOwnershipInvariants$$' ./test/invariants/ -args -seed=$(SEED) -sequences=$(N) -workers=$(WORKERS) -shrink=10

# The model fuzzer (ownershipcore/modelfuzz): random sequences over the
# ownership core's model alone, no apiserver. `make test` runs 10,000 of 8
# steps; `make fuzz-model` runs N (default 100,000) of STEPS (default 12)
# from SEED on every core and prints the shortest failing sequence, shrunk.
# Each sequence reads and writes managed fields with apimachinery's and
# structured-merge-diff's own code, so it costs CPU like the apiserver's
# writes do: docs/performance.md has the time per sequence.
STEPS ?= 12

.PHONY: fuzz-model
fuzz-model: ## Run N random sequences over the ownership model alone (default 100000, STEPS=12): make fuzz-model SEED=42 N=100000.
	GOGC=$(TEST_GOGC) CGO_ENABLED=0 go test -count=1 -trimpath -timeout 0 -v -run '^TestModelSequences$$' ./ownershipcore/modelfuzz/ -args -model-seed=$(SEED) \
	  -model-sequences=$(if $(filter command line environment,$(origin N)),$(N),100000) -model-steps=$(STEPS)

.PHONY: fuzz-faults
fuzz-faults: control-plane ## The same with 25% of fieldops' writes failing during each step, half after the apiserver did them: make fuzz-faults SEED=42 N=500.
	go test -count=1 -timeout 0 -v -run '^TestOwnershipInvariantsUnderFaults$$' ./test/invariants/ -args -fault-seed=$(SEED) -fault-sequences=$(N) -workers=$(WORKERS) -shrink=10

.PHONY: bench
bench: control-plane ## Run the Go benchmarks (no-op decision; a patch's life on deep and flat objects; 200 FieldPatches; a label change on a 50-pod PodSet; plugin call latency and restart).
	go test -run '^$$' -bench '$(BENCH)' -benchmem ./ownershipcore/ ./ownershipcore/optable/ ./test/bench/ ./plugins/host/

# make bench-scale N=1000 (issue 11): one local control plane; the Flux ssa
# ResourceManager (test/benchscale/flux, its own module) and the fieldops
# manager binary, one after the other, each adding one env var to N
# Deployments owned by "helm"; prints converge time, requests per object,
# CPU, peak RSS and the hand-back, with the ratios. N=50 is a quick check.
# SHARDS=4 adds a run of the same N FieldPatches over 4 manager processes
# (--watch-label-selector=sharding.fieldops.dev/key=shard-<i>) on the same
# apiserver, beside the one-manager run. SELECTOR=1 (the default) adds,
# after the per-object run, one FieldPatch with spec.targetSelector over N
# Deployments: converge, a quiet minute, drift of 100 targets, hand-back
# (SELECTOR=0 leaves it out).
BENCH_SCALE_FLAGS ?=
SHARDS ?= 0
SELECTOR ?= 1

.PHONY: bench-scale
bench-scale: control-plane build ## Side-by-side benchmark, Flux ssa ApplyAll vs the fieldops manager on N Deployments (default 1000): make bench-scale N=200 [SHARDS=4] [SELECTOR=0] [BENCH_SCALE_FLAGS=-pprof-dir=bin/pprof].
	cd test/benchscale/flux && $(RELEASE_BUILD) -o $(LOCALBIN)/benchscale-flux .
	go run ./test/benchscale -n $(N) -shards $(SHARDS) -selector=$(SELECTOR) -manager $(LOCALBIN)/manager -flux $(LOCALBIN)/benchscale-flux $(BENCH_SCALE_FLAGS)

##@ Build

comma := ,
space := $(empty) $(empty)

.PHONY: build
# RELEASE_BUILD is how the image builds the manager (Dockerfile): a static
# binary without symbol table or DWARF. bench-scale measures that binary,
# and builds its Flux side the same way.
RELEASE_BUILD = CGO_ENABLED=0 go build -trimpath -ldflags="-s -w"

build: ## Build the manager binary into bin/manager, as the image does.
	$(RELEASE_BUILD) -o $(LOCALBIN)/manager ./cmd/manager

.PHONY: plugins
# Plugins run in the manager's image (distroless static: no C library, no
# dynamic loader), so they are built static as the manager is: without
# CGO_ENABLED=0, a binary importing net or os/user links the C library
# dynamically and cannot start there ("no such file or directory").
# PLUGINS_GOOS/PLUGINS_GOARCH cross-build them (make release).
PLUGINS_GOOS ?= $(shell go env GOOS)
PLUGINS_GOARCH ?= $(shell go env GOARCH)
PLUGINS_DIR ?= $(LOCALBIN)/plugins
EXAMPLE_PLUGINS := yield-to-autoscalers ignore-policy-annotations
plugins: ## Build the example plugins, static, into bin/plugins/ (with their SHA-256 in bin/plugins/SHA256SUMS).
	mkdir -p $(PLUGINS_DIR)
	for p in $(EXAMPLE_PLUGINS); do \
	  GOOS=$(PLUGINS_GOOS) GOARCH=$(PLUGINS_GOARCH) $(RELEASE_BUILD) -o $(PLUGINS_DIR)/$$p ./plugins/examples/$$p; done
	cd $(PLUGINS_DIR) && sha256sum $(EXAMPLE_PLUGINS) > SHA256SUMS

.PHONY: kubectl-fieldops
kubectl-fieldops: ## Build the kubectl plugin into bin/kubectl-fieldops, and bin/kubectl_complete-fieldops for kubectl's completion (put bin/ on PATH).
	go build -o $(LOCALBIN)/kubectl-fieldops ./cmd/kubectl-fieldops
	ln -sf kubectl-fieldops $(LOCALBIN)/kubectl_complete-fieldops

# The release archives deploy/krew/fieldops.yaml names, with SHA256SUMS.
KUBECTL_FIELDOPS_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
DIST ?= $(CURDIR)/dist

.PHONY: kubectl-fieldops-dist
kubectl-fieldops-dist: ## Build the kubectl plugin's release archives into dist/ (kubectl-fieldops_vVERSION_OS_ARCH.tar.gz).
	mkdir -p $(DIST)
	for p in $(KUBECTL_FIELDOPS_PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; exe=kubectl-fieldops; [ $$os = windows ] && exe=$$exe.exe; \
	  dir=$(DIST)/kubectl-fieldops_v$(VERSION)_$${os}_$${arch}; mkdir -p $$dir; cp LICENSE $$dir/; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags="-s -X main.version=v$(VERSION)" -o $$dir/$$exe ./cmd/kubectl-fieldops; \
	  tar -czf $$dir.tar.gz -C $$dir $$exe LICENSE; rm -rf $$dir; \
	done
	cd $(DIST) && sha256sum kubectl-fieldops_*.tar.gz > SHA256SUMS

# The archive is named <plugin>-<version>.tgz, as helm plugin package
# names it: Helm 4's installer looks for the plugin's directory under the
# archive's name stripped of its version (internal/plugin/installer).
.PHONY: helm-plugin-dist
helm-plugin-dist: ## Pack the Helm 4 post-renderer plugin into dist/ (fieldops-postrender-VERSION.tgz, its version set to VERSION).
	mkdir -p $(DIST)/helm-plugin/fieldops-postrender
	sed 's/^version: .*/version: $(VERSION)/' deploy/helm-plugin/fieldops-postrender/plugin.yaml > $(DIST)/helm-plugin/fieldops-postrender/plugin.yaml
	cp LICENSE $(DIST)/helm-plugin/fieldops-postrender/
	tar -czf $(DIST)/fieldops-postrender-$(VERSION).tgz -C $(DIST)/helm-plugin fieldops-postrender
	rm -rf $(DIST)/helm-plugin
	cd $(DIST) && sha256sum fieldops-postrender-$(VERSION).tgz >> SHA256SUMS

##@ Release

# make release VERSION=vX.Y.Z writes dist/, offline once the modules are
# downloaded (go mod download):
#   install.yaml             config/default, the manager image at the tag
#   bundle/                  the OLM bundle at VERSION (and its bundle.Dockerfile)
#   fieldops-X.Y.Z.tgz       the Helm chart (linted), version X.Y.Z, appVersion vX.Y.Z
#   kubectl-fieldops_vX.Y.Z_OS_ARCH.tar.gz, SHA256SUMS, .krew.yaml
#   fieldops-postrender-X.Y.Z.tgz  the Helm 4 post-renderer plugin
#   plugins/linux_ARCH/      the example plugins, static, with plugins.yaml
#                            (their SHA-256s, for config/plugins) and SHA256SUMS
#   images/manager/          OCI image layouts (linux/amd64 and linux/arm64),
#   images/example-plugins/  built by ko without Docker, IMG and PLUGINS_IMG
#   sbom/                    the images' SPDX SBOMs (ko)
# KO_BASE is ko's base image: "local" (the default) is hack/kobase's minimal
# non-root base, written into ko's cache (no registry needed); CI sets the
# distroless image of .ko.yaml. KO_PUSH=true also pushes the images to
# IMAGE_REPO (CI, after a registry login).
KO_BASE ?= local
KO_PUSH ?= false
KOCACHE ?= $(LOCALBIN)/kocache
RELEASE_PLATFORMS := linux/amd64 linux/arm64
# A release version is SemVer 2.0.0 (semver.org): MAJOR.MINOR.PATCH, with
# an optional pre-release (-rc.1) and build metadata (+build.5), which the
# chart (Helm), the bundle (OLM) and krew all take.
SEMVER_RE := ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$$
.PHONY: release-version
release-version: ## Check VERSION is a SemVer release version (make release checks it first, before building any tool).
	@[[ "$(VERSION)" =~ $(SEMVER_RE) ]] || { echo "make release VERSION=vX.Y.Z or vX.Y.Z-PRERELEASE (got '$(VERSION)')"; exit 1; }

.PHONY: release
release: release-version ## Build a release into dist/: make release VERSION=vX.Y.Z[-rc.N] (see the comment above for what it holds).
	$(MAKE) $(KUSTOMIZE) $(KO)
	rm -rf $(DIST) && mkdir -p $(DIST)
	$(KUSTOMIZE) build config/default | sed 's|image: $(IMAGE_REPO)/manager:.*|image: $(IMG)|' > $(DIST)/install.yaml
	go run ./hack/bundle --version $(VERSION) --image $(IMG) --out $(DIST)/bundle
	go run ./hack/chart --version $(VERSION) --package $(DIST)
	$(MAKE) kubectl-fieldops-dist VERSION=$(VERSION) DIST=$(DIST)
	$(MAKE) helm-plugin-dist VERSION=$(VERSION) DIST=$(DIST)
	go run ./hack/krew --tag v$(VERSION) --dist $(DIST) > $(DIST)/.krew.yaml
	rm -rf plugins/install-plugins/kodata && mkdir -p plugins/install-plugins/kodata
	for p in $(RELEASE_PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; d=$(DIST)/plugins/$${os}_$${arch}; \
	  $(MAKE) plugins PLUGINS_GOOS=$$os PLUGINS_GOARCH=$$arch PLUGINS_DIR=$$d; \
	  go run ./hack/pluginsconfig --dir $$d > $$d/plugins.yaml; \
	  mkdir -p plugins/install-plugins/kodata/$${os}_$${arch} && cp $$d/$(word 1,$(EXAMPLE_PLUGINS)) $$d/$(word 2,$(EXAMPLE_PLUGINS)) plugins/install-plugins/kodata/$${os}_$${arch}/; done
	base=$(KO_BASE); if [ "$$base" = local ]; then base=$$(go run ./hack/kobase --cache $(KOCACHE)); fi; \
	for img in manager:./cmd/manager:$(IMG) example-plugins:./plugins/install-plugins:$(PLUGINS_IMG); do \
	  IFS=: read -r name pkg ref tag <<< "$$img"; \
	  KOCACHE=$(KOCACHE) KO_DEFAULTBASEIMAGE=$$base KO_DOCKER_REPO=$$ref $(KO) build --bare --push=$(KO_PUSH) \
	    --platform=$(subst $(space),$(comma),$(RELEASE_PLATFORMS)) --tags=$$tag \
	    --oci-layout-path=$(DIST)/images/$$name --sbom-dir=$(DIST)/sbom/$$name $$pkg; done
	rm -rf plugins/install-plugins/kodata
	cd $(DIST) && find . -type f ! -name SHA256SUMS-all | sort | xargs sha256sum > SHA256SUMS-all
	@echo "release v$(VERSION) written to $(DIST)"

.PHONY: docker-build
docker-build: ## Build the manager image IMG (distroless, non-root).
	$(CONTAINER_TOOL) build -t $(IMG) .

.PHONY: run
run: ## Run the manager against the current kubeconfig.
	go run ./cmd/manager

# The manager logs JSON lines (production) unless told --zap-devel.
RUN_LOCAL_ARGS ?= --zap-devel
.PHONY: run-local
run-local: control-plane ## Run the manager on the embedded local cluster (apiserver, etcd, controller-manager, scheduler, a kwok node) with the samples' targets; Ctrl-C stops all.
	go build -o $(LOCALBIN)/fieldops-local ./cmd/fieldops-local
	exec $(LOCALBIN)/fieldops-local --local-dir=$(LOCALBIN)/local $(RUN_LOCAL_ARGS)

.PHONY: demo
demo: control-plane ## The main job: patch the real aws-node DaemonSet on the local cluster, delete the patch, check the hand-back.
	go run ./test/demo

##@ Deployment

KUBECTL ?= kubectl
# Returns once every fieldops kind is served: its CRD Established, listed
# by discovery and a list of it answered (internal/served: Established
# alone leaves discovery behind, and kubectl can answer "no matches for
# kind").
WAIT_SERVED = go run ./hack/wait-served --timeout=2m
ignore-not-found ?= false

.PHONY: install
install: manifests $(KUSTOMIZE) ## Install the CRDs into the current kubeconfig's cluster (for make run).
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply --server-side -f -
	$(WAIT_SERVED)

.PHONY: uninstall
uninstall: manifests $(KUSTOMIZE) ## Remove the CRDs, and every fieldops object with them (delete FieldPatches first, while the manager runs: their finalizers hand fields back). ignore-not-found=true to ignore missing ones.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: deploy
deploy: $(KUSTOMIZE) ## Install fieldops into the current kubeconfig's cluster with image IMG (kustomize).
	$(KUSTOMIZE) build config/default | sed 's|image: $(IMAGE_REPO)/manager:.*|image: $(IMG)|' | $(KUBECTL) apply --server-side -f -
	$(WAIT_SERVED)

.PHONY: undeploy
undeploy: $(KUSTOMIZE) ## Remove fieldops from the current cluster (delete FieldPatches first: their finalizers hand fields back).
	$(KUSTOMIZE) build config/default | $(KUBECTL) delete --ignore-not-found -f -

.PHONY: bundle
bundle: manifests ## Regenerate bundle/ and bundle.Dockerfile from config/: make bundle VERSION=x.y.z [IMG=...].
	go run ./hack/bundle --version $(VERSION) --image $(IMG)

.PHONY: bundle-validate
bundle-validate: ## Check bundle/ with operator-framework/api's validators (default, good practices, OperatorHub, standard capabilities and categories) and internal/bundlecheck's rules.
	go run ./hack/bundle --check

.PHONY: bundle-build
bundle-build: ## Build the OLM bundle image BUNDLE_IMG.
	$(CONTAINER_TOOL) build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

##@ Tools

.PHONY: control-plane
control-plane: $(addprefix $(KUBE_BIN)/,$(KUBE_COMMANDS)) $(ETCD) $(KWOK) ## Build the local cluster from pinned modules (once; time: docs/performance.md).

# One `go build` for the three Kubernetes commands: their shared packages
# compile once. Built into a temporary directory and renamed, so an
# interrupted build leaves no partial set behind.
$(addprefix $(KUBE_BIN)/,$(KUBE_COMMANDS)) &:
	rm -rf $(KUBE_BIN).tmp && mkdir -p $(KUBE_BIN).tmp
	cd test/tools && go build -ldflags "$(KUBE_LDFLAGS)" -o $(KUBE_BIN).tmp/ $(addprefix k8s.io/kubernetes/cmd/,$(KUBE_COMMANDS))
	rm -rf $(KUBE_BIN) && mv $(KUBE_BIN).tmp $(KUBE_BIN)

$(ETCD):
	mkdir -p $(@D) && cd test/tools && go build -o $@.tmp go.etcd.io/etcd/server/v3
	mv $@.tmp $@

# kwok plays each node's kubelet by the Stages of its --config: those of
# `kwokctl` (kustomize/stage/fast of the pinned module: nodes go Ready and
# keep a lease, pods go Running and Ready, complete, and are deleted),
# written next to the binary (stages.yaml) before it.
KWOK_STAGES := node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml
$(KWOK):
	mkdir -p $(@D) && cd test/tools/kwok && go build -o $@.tmp sigs.k8s.io/kwok/cmd/kwok
	cd test/tools/kwok && dir=$$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok) && \
	  for f in $(KWOK_STAGES); do echo "---"; cat "$$dir/kustomize/stage/$$f"; done > $(@D)/stages.yaml
	mv $@.tmp $@

$(CONTROLLER_GEN):
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $@

$(BUF):
	GOBIN=$(LOCALBIN) go install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	mv $(LOCALBIN)/buf $@

$(PROTOC_PLUGINS):
	GOBIN=$@ go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$@ go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)

$(GOLANGCI_LINT):
	GOBIN=$(LOCALBIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(LOCALBIN)/golangci-lint $@

$(ACTIONLINT):
	GOBIN=$(LOCALBIN) go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)
	mv $(LOCALBIN)/actionlint $@

$(KO):
	GOBIN=$(LOCALBIN) CGO_ENABLED=0 go install github.com/google/ko@$(KO_VERSION)
	mv $(LOCALBIN)/ko $@

$(KUSTOMIZE):
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)
	mv $(LOCALBIN)/kustomize $@

$(PROMTOOL):
	GOBIN=$(LOCALBIN) CGO_ENABLED=0 go install github.com/prometheus/prometheus/cmd/promtool@$(PROMETHEUS_VERSION)
	mv $(LOCALBIN)/promtool $@

.PHONY: promtool
promtool: $(PROMTOOL) ## Build promtool (the first time; time: docs/performance.md).

.PHONY: kustomize
kustomize: $(KUSTOMIZE) ## Install kustomize.
