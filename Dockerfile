# The manager image: a static binary on distroless, run as a non-root user.
#   make docker-build IMG=REGISTRY/fieldops:vX.Y.Z
FROM golang:1.26.8 AS builder
ARG TARGETOS
ARG TARGETARCH
WORKDIR /workspace
# Module downloads in their own layer, cached while go.mod and go.sum stay.
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/manager/ cmd/manager/
COPY controllers/ controllers/
COPY feature/ feature/
COPY internal/accountwebhook/ internal/accountwebhook/
COPY internal/conflicts/ internal/conflicts/
COPY internal/inputlimits/ internal/inputlimits/
COPY internal/logcap/ internal/logcap/
COPY internal/names/ internal/names/
COPY internal/patchintent/ internal/patchintent/
COPY internal/patchplan/ internal/patchplan/
COPY internal/scheme/ internal/scheme/
COPY internal/tenancy/ internal/tenancy/
COPY internal/workloadspec/ internal/workloadspec/
COPY internal/patchtarget/ internal/patchtarget/
COPY metrics/ metrics/
COPY ownershipcore/ ownershipcore/
COPY plugins/ plugins/
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -trimpath -ldflags="-s -w" -o manager ./cmd/manager

FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager .
# 65532 is distroless's nonroot user.
USER 65532:65532
ENTRYPOINT ["/manager"]
