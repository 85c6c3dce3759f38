#!/usr/bin/env bash
# The chart's installation scenarios (test/k8s/install.test.ts, the same code `npm run test:k8s` runs on
# its real node) on a cluster made by kind (Kubernetes in Docker), for a machine with Docker Engine,
# kind, Node 24 with `npm ci` done, and helm (on PATH, or Go to build it with scripts/k8s/build-helm.sh).
# CI runs it in .github/workflows/e2e-kind.yml.
#
#   bash test/e2e/kind.sh                  build the image, make the cluster, run the scenarios, delete it
#   KEEP_CLUSTER=1 bash test/e2e/kind.sh   leave the cluster (and the scenarios' namespace) for a look
#
# 1. builds the image from the repository's Dockerfile (scripts/build-image.sh; it prints the reference);
# 2. creates the kind cluster $KIND_CLUSTER (default media-service-e2e), or reuses it, and loads the
#    image into its node (the scenarios use imagePullPolicy Never);
# 3. runs test/k8s/install.test.ts against it: MEDIA_K8S_KUBECONFIG (kind's kubeconfig),
#    MEDIA_K8S_IMAGE, MEDIA_K8S_NODE_ADDRESS (the node container's address, where NodePorts answer);
# 4. deletes the cluster, unless KEEP_CLUSTER=1 or it existed before.
#
# Settings (environment): KIND_CLUSTER, KEEP_CLUSTER, E2E_IMAGE (an image already built: skip step 1).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
KIND_CLUSTER=${KIND_CLUSTER:-media-service-e2e}
KEEP_CLUSTER=${KEEP_CLUSTER:-0}

log() { printf '==> %s\n' "$*" >&2; }
fail() {
  printf 'FAIL: %s\n' "$*" >&2
  exit 1
}
for tool in docker kind node; do
  command -v "$tool" >/dev/null || fail "$tool is not installed"
done
[[ -d node_modules ]] || fail "run npm ci first"
HELM=${HELM:-$(command -v helm || true)}
[[ -n "$HELM" ]] || HELM="$(MEDIA_HELM_PRINT_BIN=1 bash scripts/k8s/build-helm.sh)/helm"

if [[ -n "${E2E_IMAGE:-}" ]]; then
  IMAGE=$E2E_IMAGE
else
  log "building the image (scripts/build-image.sh)"
  IMAGE=$(bash scripts/build-image.sh)
fi
log "image $IMAGE"

created=0
if kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER"; then
  log "reusing kind cluster $KIND_CLUSTER"
else
  log "creating kind cluster $KIND_CLUSTER"
  kind create cluster --name "$KIND_CLUSTER" --wait 120s
  created=1
fi
work=$(mktemp -d)
cleanup() {
  rm -rf "$work"
  if [[ $created == 1 && $KEEP_CLUSTER != 1 ]]; then
    log "deleting kind cluster $KIND_CLUSTER"
    kind delete cluster --name "$KIND_CLUSTER" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

kind load docker-image --name "$KIND_CLUSTER" "$IMAGE"
kind get kubeconfig --name "$KIND_CLUSTER" >"$work/kubeconfig"
node_address=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "${KIND_CLUSTER}-control-plane")
[[ -n "$node_address" ]] || fail "no address for the node container ${KIND_CLUSTER}-control-plane"

log "test/k8s/install.test.ts on kind (node $node_address)"
MEDIA_K8S_KUBECONFIG="$work/kubeconfig" MEDIA_K8S_IMAGE="$IMAGE" MEDIA_K8S_NODE_ADDRESS="$node_address" \
  MEDIA_K8S_KEEP="$KEEP_CLUSTER" HELM="$HELM" \
  node --import tsx --test --test-reporter=spec test/k8s/install.test.ts
log "PASS"
