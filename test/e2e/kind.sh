#!/usr/bin/env bash
# The kind cluster's own checks (test/kind/cluster.test.ts: three Ready nodes, storage, the pod network
# across nodes) and the chart's installation scenarios (test/k8s/install.test.ts, the same code
# `npm run test:k8s` runs on its real node) and the node scenarios of test/kind/ (a worker drained, a
# worker lost, the Redis node stopped, each in a burst of jobs) on a cluster made by kind (Kubernetes
# in Docker) from test/e2e/kind-config.yaml (one control-plane node, two workers), for a machine with Docker Engine,
# kind, kubectl, Node 24 with `npm ci` done, and helm (on PATH, or Go to build it with
# scripts/k8s/build-helm.sh). CI runs it in .github/workflows/e2e-kind.yml with kind's own node image;
# `npm run test:kind` runs it with KIND_LOCAL=1, where kind, kubectl and the node image are made here
# (no registry needed).
#
#   bash test/e2e/kind.sh                  build the image, make the cluster, run the scenarios, delete it
#   KEEP_CLUSTER=1 bash test/e2e/kind.sh   leave the cluster (and the scenarios' namespace) for a look
#
# 1. builds the image from the repository's Dockerfile (scripts/build-image.sh; it prints the reference);
# 2. creates the kind cluster $KIND_CLUSTER (default media-service-e2e), or reuses it, waits for every
#    node to be Ready, and loads the image into its nodes (the scenarios use imagePullPolicy Never);
# 3. runs each test file of KIND_TESTS against it, in order: MEDIA_K8S_KUBECONFIG (kind's kubeconfig),
#    MEDIA_K8S_IMAGE, MEDIA_K8S_NODE_ADDRESS (the control-plane node container's address, where
#    NodePorts answer), and KIND_CLUSTER, KIND (the kind program) for tests that act on the nodes;
# 4. deletes the cluster, unless KEEP_CLUSTER=1 or it existed before.
#
# Settings (environment): KIND_CLUSTER, KEEP_CLUSTER, E2E_IMAGE (an image already built: skip step 1),
# KIND_CONFIG (default test/e2e/kind-config.yaml), KIND_NODE_IMAGE (the node image; default kind's
# own), KIND_TESTS (test files, space-separated, run in order on the same cluster; default
# test/kind/cluster.test.ts test/k8s/install.test.ts, then test/kind/drain.test.ts,
# node-loss.test.ts and redis-node.test.ts, which drain and stop workers), KIND and KUBECTL
# (the programs; default those on PATH), KIND_LOCAL=1 (build kind, kubectl and the node image here:
# scripts/k8s/build-kind.sh and build-kind-image.sh).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
KIND_CLUSTER=${KIND_CLUSTER:-media-service-e2e}
KEEP_CLUSTER=${KEEP_CLUSTER:-0}
KIND_CONFIG=${KIND_CONFIG:-test/e2e/kind-config.yaml}
# The cluster's checks and the installation scenarios first, then the node scenarios: a drain (its
# nodes uncordoned after), a worker lost (started again and Ready before the next file), the Redis
# node stopped (last).
KIND_TESTS=${KIND_TESTS:-test/kind/cluster.test.ts test/k8s/install.test.ts test/kind/drain.test.ts test/kind/node-loss.test.ts test/kind/redis-node.test.ts}

log() { printf '==> %s\n' "$*" >&2; }
fail() {
  printf 'FAIL: %s\n' "$*" >&2
  exit 1
}
started=$SECONDS
created=0
work=$(mktemp -d)
cleanup() {
  rm -rf "$work"
  if [[ $created == 1 && $KEEP_CLUSTER != 1 ]]; then
    log "deleting kind cluster $KIND_CLUSTER"
    "$KIND" delete cluster --name "$KIND_CLUSTER" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

if [[ ${KIND_LOCAL:-0} == 1 ]]; then
  log "kind, kubectl and the node image made here (scripts/k8s/build-kind.sh, build-kind-image.sh)"
  kind_bin=$(MEDIA_KIND_PRINT_BIN=1 bash scripts/k8s/build-kind.sh)
  KIND=${KIND:-$kind_bin/kind}
  KUBECTL=${KUBECTL:-$kind_bin/kubectl}
  KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-$(MEDIA_KIND_PRINT_IMAGE=1 bash scripts/k8s/build-kind-image.sh)}
  log "kind and its node image ready after $((SECONDS - started)) s"
  # kind runs its nodes with `docker run --privileged`, which fails where the machine's capability
  # bounding set lacks one Docker Engine asks for; then kind (and every docker command here) goes
  # through scripts/k8s/kind/docker-unprivileged.sh, which our node image copes with.
  if ! docker run --rm --privileged --entrypoint true "$KIND_NODE_IMAGE" 2>"$work/privileged.err"; then
    grep -q 'unable to apply caps' "$work/privileged.err" || fail "docker run --privileged: $(cat "$work/privileged.err")"
    log "a privileged container cannot start here (a capability is missing): kind's nodes run without --privileged"
    mkdir "$work/docker"
    ln -s "$ROOT/scripts/k8s/kind/docker-unprivileged.sh" "$work/docker/docker"
    KIND_REAL_DOCKER=$(command -v docker)
    export KIND_REAL_DOCKER PATH="$work/docker:$PATH"
  fi
fi
KIND=${KIND:-kind}
KUBECTL=${KUBECTL:-kubectl}
for tool in docker "$KIND" "$KUBECTL" node; do
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

if "$KIND" get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER"; then
  log "reusing kind cluster $KIND_CLUSTER"
else
  log "creating kind cluster $KIND_CLUSTER ($KIND_CONFIG, node image ${KIND_NODE_IMAGE:-the default of kind})"
  t=$SECONDS
  "$KIND" create cluster --name "$KIND_CLUSTER" --config "$KIND_CONFIG" ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"} \
    --wait 180s
  created=1
  log "cluster created in $((SECONDS - t)) s"
fi
"$KIND" get kubeconfig --name "$KIND_CLUSTER" >"$work/kubeconfig"
"$KUBECTL" --kubeconfig "$work/kubeconfig" wait --for=condition=Ready nodes --all --timeout=180s >&2
"$KIND" load docker-image --name "$KIND_CLUSTER" "$IMAGE"
node_address=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "${KIND_CLUSTER}-control-plane")
[[ -n "$node_address" ]] || fail "no address for the node container ${KIND_CLUSTER}-control-plane"

for file in $KIND_TESTS; do
  log "$file on kind (node $node_address)"
  t=$SECONDS
  MEDIA_K8S_KUBECONFIG="$work/kubeconfig" MEDIA_K8S_IMAGE="$IMAGE" MEDIA_K8S_NODE_ADDRESS="$node_address" \
    MEDIA_K8S_KEEP="$KEEP_CLUSTER" HELM="$HELM" KIND="$KIND" KIND_CLUSTER="$KIND_CLUSTER" \
    node --import tsx --test --test-reporter=spec "$file"
  log "$file passed in $((SECONDS - t)) s"
done
log "PASS ($((SECONDS - started)) s in all)"
