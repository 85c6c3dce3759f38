#!/usr/bin/env bash
# A node lost, a node drained, the Redis node stopped: test/kind/*.test.ts on a kind cluster of one
# control plane and two workers (Docker Engine, kind, kubectl, Node 24 with `npm ci` done, helm on
# PATH or built by scripts/k8s/build-helm.sh). The scenarios stop and drain its workers, so the
# cluster is their own: $KIND_CLUSTER (default media-service-nodeloss), made here and deleted after,
# unless it exists already or KEEP_CLUSTER=1.
#
#   KIND_NODE_IMAGE=<kind node image> bash test/kind/scenarios.sh [test/kind/x.test.ts ...]
#
# Settings (environment): KIND_NODE_IMAGE (the node image `kind create cluster --image` takes; kind's
# own default otherwise), KIND_CLUSTER, KEEP_CLUSTER, E2E_IMAGE (the project's image, built already:
# skip scripts/build-image.sh).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
KIND_CLUSTER=${KIND_CLUSTER:-media-service-nodeloss}
KEEP_CLUSTER=${KEEP_CLUSTER:-0}

log() { printf '==> %s\n' "$*" >&2; }
fail() {
  printf 'FAIL: %s\n' "$*" >&2
  exit 1
}
for tool in docker kind kubectl node; do
  command -v "$tool" >/dev/null || fail "$tool is not installed"
done
[[ -d node_modules ]] || fail "run npm ci first"
HELM=${HELM:-$(command -v helm || true)}
[[ -n "$HELM" ]] || HELM="$(MEDIA_HELM_PRINT_BIN=1 bash scripts/k8s/build-helm.sh)/helm"

IMAGE=${E2E_IMAGE:-$(bash scripts/build-image.sh)}
log "image $IMAGE"

created=0
if kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER"; then
  log "reusing kind cluster $KIND_CLUSTER"
else
  log "creating kind cluster $KIND_CLUSTER (1 control plane, 2 workers)"
  printf '%s\n' 'kind: Cluster' 'apiVersion: kind.x-k8s.io/v1alpha4' 'nodes:' \
    '  - role: control-plane' '  - role: worker' '  - role: worker' |
    kind create cluster --name "$KIND_CLUSTER" ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"} \
      --config /dev/stdin --wait 180s
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
address() { docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$1"; }
node_address=$(address "${KIND_CLUSTER}-control-plane")
[[ -n "$node_address" ]] || fail "no address for ${KIND_CLUSTER}-control-plane"
# Where pods reach this machine: the IPv4 gateway of kind's Docker network.
host_address=$(docker network inspect kind -f '{{range .IPAM.Config}}{{.Gateway}} {{end}}' |
  tr ' ' '\n' | grep -E '^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$' | head -1)
[[ -n "$host_address" ]] || fail "no IPv4 gateway on Docker network kind"

files=("$@")
[[ ${#files[@]} -gt 0 ]] || files=(test/kind/node-loss.test.ts test/kind/drain.test.ts test/kind/redis-node.test.ts)
log "${files[*]} on kind (control plane $node_address, this machine $host_address)"
MEDIA_KIND_CLUSTER="$KIND_CLUSTER" MEDIA_K8S_KUBECONFIG="$work/kubeconfig" MEDIA_K8S_IMAGE="$IMAGE" \
  MEDIA_K8S_NODE_ADDRESS="$node_address" MEDIA_KIND_HOST_ADDRESS="$host_address" \
  MEDIA_K8S_KEEP="$KEEP_CLUSTER" HELM="$HELM" \
  node --import tsx --test --test-concurrency=1 --test-reporter=spec "${files[@]}"
log "PASS"
