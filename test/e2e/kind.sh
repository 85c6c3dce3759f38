#!/usr/bin/env bash
# End-to-end test of the Helm chart charts/media-service on a real Kubernetes cluster made by kind
# (Kubernetes in Docker). For a machine with a Docker engine, kind, kubectl and helm (or Go, to build
# helm with scripts/k8s/build-helm.sh); it is not part of `npm test` or `npm run test:k8s` (those need
# no Docker). CI runs it in .github/workflows/e2e-kind.yml.
#
#   bash test/e2e/kind.sh                     build, install the chart, run one image_resize job, PASS or FAIL
#   KEEP_CLUSTER=1 bash test/e2e/kind.sh      leave the cluster (and the namespace) for a look around
#   bash test/e2e/kind.sh --print-manifests   print what would be applied, touch nothing (needs only helm)
#
# What it does:
#   1. builds the image from the repository's Dockerfile (`docker build -t media-service:e2e .`);
#   2. creates the kind cluster $KIND_CLUSTER (default media-service-e2e), or reuses it if it exists,
#      and loads the image into it (`kind load docker-image`; every media-service pod uses
#      imagePullPolicy Never);
#   3. deploys into the namespace $E2E_NAMESPACE (default media-e2e, recreated from scratch):
#      - an S3-protocol store: the project's embedded store, `media-service object-store` in the
#        image under test (a Secret with fixed throw-away credentials, a Deployment and a Service
#        `objects`, data in an emptyDir), so the test needs no image but its own. The bucket is
#        created, and the test image uploaded, by a Job running the same image with the project's
#        own S3 client (@aws-sdk/client-s3);
#      - the chart: `helm upgrade --install media charts/media-service --wait` with a values file
#        (image media-service:e2e, pullPolicy Never; s3.endpoint the in-cluster store, the
#        throw-away keys; the bundled Redis with its PersistentVolumeClaim on kind's default
#        StorageClass; one fixed API key; webhooks and everything else at the chart's defaults):
#        Secrets, ConfigMap, the controller's RBAC, the API (2 replicas), the controller (2 replicas,
#        leader election), Redis;
#   4. checks that both controller replicas are ready and exactly one of them holds the Lease
#      <fullname>-controller (its holderIdentity names one of the two pods, and exactly one pod reports
#      media_controller_leader 1 on /metrics);
#   5. port-forwards the API Service to 127.0.0.1:$E2E_API_PORT (default 18080), submits an
#      image_resize job (64x48 PNG → 32x24 WebP) with curl, polls GET /api/v1/jobs/<id> until it ends
#      ($E2E_TIMEOUT seconds, default 300), checks its result, that a Kubernetes Job labelled
#      media-service.io/job-id=<id> exists and succeeded, and that the output object is in the bucket;
#   6. runs `helm test media` (the chart's test pod: /health/ready through the API Service); PASS;
#   7. deletes the cluster, unless KEEP_CLUSTER=1. A cluster that existed before the run is never
#      deleted: only the release is uninstalled and the namespace deleted (unless KEEP_CLUSTER=1).
#
# On a failure it prints the state of the namespace (release, workloads, Jobs, pods, PVCs, Lease,
# events) and the logs of the API, the controller, Redis, the object store, the helm test pod and the runner pods before
# cleaning up.
#
# Settings (environment): KIND_CLUSTER, KEEP_CLUSTER, E2E_NAMESPACE, E2E_IMAGE (media-service:e2e),
# E2E_API_PORT, E2E_TIMEOUT, E2E_SKIP_BUILD=1 (use an image already built with that tag),
# REDIS_IMAGE (default: the chart's redis.image).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KIND_CLUSTER=${KIND_CLUSTER:-media-service-e2e}
NAMESPACE=${E2E_NAMESPACE:-media-e2e}
IMAGE=${E2E_IMAGE:-media-service:e2e}
REDIS_IMAGE=${REDIS_IMAGE:-}
API_PORT=${E2E_API_PORT:-18080}
TIMEOUT=${E2E_TIMEOUT:-300}
KEEP_CLUSTER=${KEEP_CLUSTER:-0}

CHART="${ROOT}/charts/media-service"
RELEASE=media
# The chart's media-service.fullname: <release>-<chart name>, as the release name does not contain
# the chart name. Object names below derive from it (<fullname>-api, <fullname>-controller, …).
FULLNAME="${RELEASE}-media-service"
LEASE="${FULLNAME}-controller"
CONTROLLER_REPLICAS=2

# Throw-away credentials of a throw-away cluster.
BUCKET=media
S3_ACCESS_KEY=e2e-access-key
S3_SECRET_KEY=e2e-secret-key-not-secret
API_KEY=e2e-api-key-not-secret
SOURCE_KEY=in/e2e.png
DEST_KEY=out/e2e.webp
S3_ENDPOINT="http://objects.${NAMESPACE}.svc.cluster.local:9000"
CONTEXT="kind-${KIND_CLUSTER}"

# 64x48 PNG, four colour blocks (145 bytes).
TEST_PNG_BASE64='iVBORw0KGgoAAAANSUhEUgAAAEAAAAAwCAMAAACWlYwtAAAADFBMVEXcKCgooDweUMjwyCjBSYb5AAAACXBIWXMAAAPoAAAD6AG1e1JrAAAAK0lEQVRIx+3MQREAMAgDsML8e56E/rlEQJJiiwgEAoHgVDDFKwQCgUBwKvi5dhIBB2G6kAAAAABJRU5ErkJggg=='

log() { printf '==> %s\n' "$*" >&2; }
fail() {
  printf 'FAIL: %s\n' "$*" >&2
  exit 1
}
k() { kubectl --context "$CONTEXT" -n "$NAMESPACE" "$@"; }
h() { "$HELM" --kube-context "$CONTEXT" -n "$NAMESPACE" "$@"; }

# An image reference as repository and tag (the chart takes them apart); digests are not supported.
image_repository() {
  local last=${1##*/}
  if [[ $last == *:* ]]; then printf '%s' "${1%:*}"; else printf '%s' "$1"; fi
}
image_tag() {
  local last=${1##*/}
  if [[ $last == *:* ]]; then printf '%s' "${1##*:}"; else printf 'latest'; fi
}
for ref in "$IMAGE" "$REDIS_IMAGE"; do
  [[ $ref != *@* ]] || fail "image ${ref}: give a tag, not a digest"
done

# ---------------------------------------------------------------------------------------------------
# Manifests

S3_HELPER=$(
  cat <<'EOF'
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
const require = createRequire(`${process.env.APP_DIR ?? "/app"}/package.json`);
const { S3Client, CreateBucketCommand, PutObjectCommand, GetObjectCommand } = require("@aws-sdk/client-s3");
const bucket = process.env.BUCKET;
const s3 = new S3Client({
  endpoint: process.env.S3_ENDPOINT,
  region: "us-east-1",
  forcePathStyle: true,
  credentials: { accessKeyId: process.env.S3_ACCESS_KEY_ID, secretAccessKey: process.env.S3_SECRET_ACCESS_KEY },
});
const [mode, key] = process.argv.slice(2);
if (mode === "setup") {
  try {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (err) {
    if (err.name !== "BucketAlreadyOwnedByYou" && err.name !== "BucketAlreadyExists") throw err;
  }
  const body = readFileSync(new URL("./e2e.png", import.meta.url));
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: process.env.SOURCE_KEY, Body: body, ContentType: "image/png" }));
  console.log(`bucket ${bucket} ready; ${process.env.SOURCE_KEY} uploaded (${body.length} bytes)`);
} else if (mode === "check") {
  const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  const bytes = Buffer.from(await out.Body.transformToByteArray());
  const webp = bytes.subarray(0, 4).toString("latin1") === "RIFF" && bytes.subarray(8, 12).toString("latin1") === "WEBP";
  console.log(`s3://${bucket}/${key}: ${bytes.length} bytes, ${out.ContentType}, WebP: ${webp}`);
  if (bytes.length === 0 || !webp) process.exit(1);
} else {
  console.error(`usage: s3.mjs setup | check <key>`);
  process.exit(2);
}
EOF
)


indent() { sed 's/^/    /'; }

# The object store and the S3 helper's fixtures. Everything else comes from the chart.
render_store() {
  cat <<EOF
apiVersion: v1
kind: Secret
metadata:
  name: e2e-objects
type: Opaque
stringData:
  access-key-id: "${S3_ACCESS_KEY}"
  secret-access-key: "${S3_SECRET_KEY}"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: objects
  labels: { app: objects }
spec:
  replicas: 1
  selector: { matchLabels: { app: objects } }
  template:
    metadata: { labels: { app: objects } }
    spec:
      automountServiceAccountToken: false
      containers:
        - name: objects
          image: ${IMAGE}
          imagePullPolicy: Never
          args: ["object-store"]
          env:
            - { name: EMBEDDED_S3_HOST, value: "0.0.0.0" }
            - { name: EMBEDDED_S3_PORT, value: "9000" }
            - { name: DATA_DIR, value: /data }
            - name: S3_ACCESS_KEY_ID
              valueFrom: { secretKeyRef: { name: e2e-objects, key: access-key-id } }
            - name: S3_SECRET_ACCESS_KEY
              valueFrom: { secretKeyRef: { name: e2e-objects, key: secret-access-key } }
          ports: [{ containerPort: 9000 }]
          readinessProbe:
            tcpSocket: { port: 9000 }
            periodSeconds: 2
          volumeMounts: [{ name: data, mountPath: /data }]
      volumes: [{ name: data, emptyDir: {} }]
---
apiVersion: v1
kind: Service
metadata:
  name: objects
spec:
  selector: { app: objects }
  ports: [{ port: 9000, targetPort: 9000 }]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: e2e-fixtures
data:
  s3.mjs: |
$(printf '%s\n' "$S3_HELPER" | indent)
binaryData:
  e2e.png: ${TEST_PNG_BASE64}
EOF
}

# A Job running the S3 helper in the media-service image: render_s3_job <name> <args...>
render_s3_job() {
  local name=$1
  shift
  local args
  args=$(printf '"%s", ' "$@")
  cat <<EOF
apiVersion: batch/v1
kind: Job
metadata:
  name: ${name}
spec:
  backoffLimit: 3
  template:
    spec:
      restartPolicy: Never
      automountServiceAccountToken: false
      containers:
        - name: s3
          image: ${IMAGE}
          imagePullPolicy: Never
          command: ["node", "/e2e/s3.mjs", ${args%, }]
          env:
            - { name: S3_ENDPOINT, value: "${S3_ENDPOINT}" }
            - { name: BUCKET, value: "${BUCKET}" }
            - { name: SOURCE_KEY, value: "${SOURCE_KEY}" }
            - name: S3_ACCESS_KEY_ID
              valueFrom: { secretKeyRef: { name: e2e-objects, key: access-key-id } }
            - name: S3_SECRET_ACCESS_KEY
              valueFrom: { secretKeyRef: { name: e2e-objects, key: secret-access-key } }
          volumeMounts: [{ name: e2e, mountPath: /e2e, readOnly: true }]
      volumes: [{ name: e2e, configMap: { name: e2e-fixtures } }]
EOF
}

# The chart's values for this test (charts/media-service/values.yaml documents each one).
render_values() {
  cat <<EOF
image:
  repository: "$(image_repository "$IMAGE")"
  tag: "$(image_tag "$IMAGE")"
  # Loaded into the nodes by \`kind load docker-image\`; also used for runner Jobs and the test pod.
  pullPolicy: Never
apiKeys:
  keys: ["${API_KEY}"]
s3:
  endpoint: "${S3_ENDPOINT}"
  region: us-east-1
  forcePathStyle: true
  # /health/ready checks this bucket (created before the install).
  healthBucket: "${BUCKET}"
  accessKeyId: "${S3_ACCESS_KEY}"
  secretAccessKey: "${S3_SECRET_KEY}"
# The bundled Redis; its PersistentVolumeClaim is served by kind's default StorageClass.
redis:
  enabled: true
EOF
  if [[ -n $REDIS_IMAGE ]]; then
    cat <<EOF
  image:
    repository: "$(image_repository "$REDIS_IMAGE")"
    tag: "$(image_tag "$REDIS_IMAGE")"
EOF
  fi
  cat <<EOF
controller:
  # Leader election is checked: two replicas, one holding the Lease.
  replicas: ${CONTROLLER_REPLICAS}
# webhooks and everything else: the chart's defaults.
EOF
}

# ---------------------------------------------------------------------------------------------------
# helm: from PATH, else built from its Go module and cached by scripts/k8s/build-helm.sh (needs Go).

HELM=""
find_helm() {
  if command -v helm >/dev/null 2>&1; then
    HELM=$(command -v helm)
    return 0
  fi
  local bin
  log "helm is not on PATH: scripts/k8s/build-helm.sh (builds it with Go on the first run, then cached)"
  bin=$(MEDIA_HELM_PRINT_BIN=1 bash "${ROOT}/scripts/k8s/build-helm.sh") || return 1
  [[ -x ${bin}/helm ]] || return 1
  HELM="${bin}/helm"
}

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
VALUES="${WORK}/values.yaml"
render_values >"$VALUES"

if [[ ${1:-} == "--print-manifests" ]]; then
  find_helm || fail "helm is needed to render the chart: put it on PATH, or install Go for scripts/k8s/build-helm.sh"
  printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n---\n' "$NAMESPACE"
  render_store
  echo "---"
  render_s3_job e2e-setup setup
  echo "---"
  printf '# helm upgrade --install %s charts/media-service -n %s with these values:\n' "$RELEASE" "$NAMESPACE"
  sed 's/^/#   /' "$VALUES"
  h template "$RELEASE" "$CHART" -f "$VALUES"
  exit 0
elif [[ $# -gt 0 ]]; then
  echo "usage: $0 [--print-manifests]" >&2
  exit 2
fi

# ---------------------------------------------------------------------------------------------------
# Prerequisites

missing=()
if ! command -v docker >/dev/null 2>&1; then
  missing+=("docker: the Docker CLI and a running engine (https://docs.docker.com/engine/install/)")
elif ! docker info >/dev/null 2>&1; then
  missing+=("a Docker engine: the docker CLI is installed but \`docker info\` cannot reach an engine (start dockerd, or check DOCKER_HOST and your permissions on the socket)")
fi
command -v kind >/dev/null 2>&1 ||
  missing+=("kind: https://kind.sigs.k8s.io/docs/user/quick-start/#installation (e.g. \`go install sigs.k8s.io/kind@v0.30.0\`)")
command -v kubectl >/dev/null 2>&1 ||
  missing+=("kubectl: https://kubernetes.io/docs/tasks/tools/")
find_helm || missing+=("helm: https://helm.sh/docs/intro/install/ (or Go, for scripts/k8s/build-helm.sh)")
command -v curl >/dev/null 2>&1 || missing+=("curl")
if ! command -v jq >/dev/null 2>&1 && ! command -v python3 >/dev/null 2>&1; then
  missing+=("jq or python3 (to read the API's JSON answers)")
fi
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "test/e2e/kind.sh needs what is missing here:" >&2
  for m in "${missing[@]}"; do echo "  - $m" >&2; done
  exit 2
fi
log "helm: ${HELM} ($("$HELM" version --template '{{.Version}}' 2>/dev/null || echo '?'))"

# json_get <dotted.path>: a field of the JSON document on stdin ("" when absent).
json_get() {
  if command -v jq >/dev/null 2>&1; then
    jq -r --arg p "$1" 'getpath($p | split(".") | map(if test("^[0-9]+$") then tonumber else . end)) // "" | tostring'
  else
    python3 -c '
import json, sys
value = json.load(sys.stdin)
for part in sys.argv[1].split("."):
    if isinstance(value, list) and part.isdigit() and int(part) < len(value):
        value = value[int(part)]
    elif isinstance(value, dict) and part in value:
        value = value[part]
    else:
        value = ""
        break
print(value if not isinstance(value, (dict, list)) else json.dumps(value))
' "$1"
  fi
}

# ---------------------------------------------------------------------------------------------------
# Cleanup and diagnostics

CREATED_CLUSTER=0
PORT_FORWARD_PID=""
SELECTOR="app.kubernetes.io/instance=${RELEASE}"

diagnostics() {
  echo "---------------- diagnostics (namespace ${NAMESPACE}) ----------------" >&2
  h status "$RELEASE" >&2 || true
  k get deployments,statefulsets,jobs,pods,pvc,leases -o wide >&2 || true
  k get events --sort-by=.lastTimestamp 2>/dev/null | tail -n 40 >&2 || true
  echo "--- API logs ---" >&2
  k logs -l "${SELECTOR},app.kubernetes.io/component=api" --prefix --tail=60 >&2 || true
  echo "--- controller logs ---" >&2
  k logs -l "${SELECTOR},app.kubernetes.io/component=controller" --prefix --tail=100 >&2 || true
  echo "--- Redis log ---" >&2
  k logs -l "${SELECTOR},app.kubernetes.io/component=redis" --prefix --tail=30 >&2 || true
  echo "--- object store log ---" >&2
  k logs -l app=objects --prefix --tail=30 >&2 || true
  if k get pod "${FULLNAME}-test-ready" >/dev/null 2>&1; then
    echo "--- helm test pod log ---" >&2
    k logs "${FULLNAME}-test-ready" --tail=20 >&2 || true
  fi
  local pod
  for pod in $(k get pods -l app.kubernetes.io/component=runner -o name 2>/dev/null); do
    echo "--- ${pod} ---" >&2
    k describe "$pod" 2>/dev/null | sed -n '/^Containers:/,/^Conditions:/p' >&2 || true
    k logs "$pod" --tail=40 >&2 || true
  done
}

# Uninstall the release (if there is one), then delete the namespace: delete_namespace <wait: true|false>
delete_namespace() {
  if h status "$RELEASE" >/dev/null 2>&1; then
    log "helm uninstall ${RELEASE}"
    h uninstall "$RELEASE" --wait --timeout 2m >&2 || true
  fi
  log "deleting namespace ${NAMESPACE}"
  kubectl --context "$CONTEXT" delete namespace "$NAMESPACE" --wait="$1" --timeout=180s >/dev/null
}

cleanup() {
  local rc=$?
  if [[ -n $PORT_FORWARD_PID ]]; then kill "$PORT_FORWARD_PID" 2>/dev/null || true; fi
  if [[ $rc -ne 0 ]] && kubectl --context "$CONTEXT" get namespace "$NAMESPACE" >/dev/null 2>&1; then
    diagnostics
  fi
  rm -rf "$WORK"
  if [[ $KEEP_CLUSTER == 1 ]]; then
    log "KEEP_CLUSTER=1: kind cluster ${KIND_CLUSTER} kept (kubectl --context ${CONTEXT} -n ${NAMESPACE} get all; helm --kube-context ${CONTEXT} -n ${NAMESPACE} status ${RELEASE})"
  elif [[ $CREATED_CLUSTER == 1 ]]; then
    log "deleting kind cluster ${KIND_CLUSTER}"
    kind delete cluster --name "$KIND_CLUSTER" >/dev/null 2>&1 || true
  elif kubectl --context "$CONTEXT" get namespace "$NAMESPACE" >/dev/null 2>&1; then
    log "the cluster existed before this run: kept"
    delete_namespace false || true
  fi
  exit "$rc"
}
trap cleanup EXIT

# wait_job <name> <timeout-seconds>: until the Job succeeded; its log either way.
wait_job() {
  local name=$1 limit=$2 succeeded failed deadline=$((SECONDS + $2))
  while ((SECONDS < deadline)); do
    succeeded=$(k get job "$name" -o jsonpath='{.status.succeeded}')
    failed=$(k get job "$name" -o jsonpath='{.status.conditions[?(@.type=="Failed")].status}')
    if [[ $succeeded == 1 ]]; then
      k logs "job/${name}" >&2
      return 0
    fi
    if [[ $failed == True ]]; then
      k logs "job/${name}" >&2 || true
      fail "Job ${name} failed"
    fi
    sleep 2
  done
  k logs "job/${name}" >&2 || true
  fail "Job ${name} did not finish within ${limit} s"
}

# ---------------------------------------------------------------------------------------------------
# 1. Image

if [[ ${E2E_SKIP_BUILD:-0} == 1 ]]; then
  log "E2E_SKIP_BUILD=1: using the image ${IMAGE} as it is"
else
  log "building ${IMAGE} from ${ROOT}/Dockerfile"
  docker build -t "$IMAGE" "$ROOT"
fi
# Runner Jobs run `media-service runner --job <id>` (controller/kubernetes/job-manifest.ts): the
# image must have that command on its PATH, not only its ENTRYPOINT.
if ! docker run --rm --entrypoint /bin/sh "$IMAGE" -c 'command -v media-service' >/dev/null 2>&1; then
  fail "the image ${IMAGE} has no \`media-service\` command on its PATH, so runner pods (command: media-service runner --job <id>) cannot start; the Dockerfile must install one (e.g. an executable dist/cli.js linked as /usr/local/bin/media-service)"
fi

# ---------------------------------------------------------------------------------------------------
# 2. Cluster

if kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER"; then
  log "reusing kind cluster ${KIND_CLUSTER}"
else
  log "creating kind cluster ${KIND_CLUSTER}"
  CREATED_CLUSTER=1
  kind create cluster --name "$KIND_CLUSTER" --wait 180s
fi
log "loading ${IMAGE} into the cluster"
kind load docker-image "$IMAGE" --name "$KIND_CLUSTER"

# ---------------------------------------------------------------------------------------------------
# 3. Deploy

if kubectl --context "$CONTEXT" get namespace "$NAMESPACE" >/dev/null 2>&1; then
  log "the namespace ${NAMESPACE} is left from an earlier run"
  delete_namespace true
fi
kubectl --context "$CONTEXT" create namespace "$NAMESPACE"
log "deploying the object store (media-service object-store)"
render_store | k apply -f -
k rollout status deployment/objects --timeout=180s
log "creating the bucket ${BUCKET} and uploading ${SOURCE_KEY} (a Job in the media-service image)"
render_s3_job e2e-setup setup | k apply -f -
wait_job e2e-setup 180
log "installing the chart: helm upgrade --install ${RELEASE} charts/media-service -n ${NAMESPACE} with these values:"
sed 's/^/    /' "$VALUES" >&2
h upgrade --install "$RELEASE" "$CHART" --create-namespace --wait --timeout 5m -f "$VALUES"
k rollout status "deployment/${FULLNAME}-api" --timeout=60s
k rollout status "deployment/${FULLNAME}-controller" --timeout=60s
k rollout status "statefulset/${FULLNAME}-redis" --timeout=60s

# ---------------------------------------------------------------------------------------------------
# 4. Leader election: two controller replicas, exactly one holding the Lease

log "checking the controller: ${CONTROLLER_REPLICAS} ready replicas, exactly one holding the Lease ${LEASE}"
ready=$(k get deployment "${FULLNAME}-controller" -o jsonpath='{.status.readyReplicas}')
[[ $ready == "$CONTROLLER_REPLICAS" ]] ||
  fail "deployment/${FULLNAME}-controller has ${ready:-0} ready replicas, expected ${CONTROLLER_REPLICAS}"
read -r -a controller_pods <<<"$(k get pods -l "${SELECTOR},app.kubernetes.io/component=controller" \
  --field-selector=status.phase=Running -o jsonpath='{.items[*].metadata.name}')"
[[ ${#controller_pods[@]} == "$CONTROLLER_REPLICAS" ]] ||
  fail "expected ${CONTROLLER_REPLICAS} running controller pods, found: ${controller_pods[*]:-none}"
CONTROLLER_PORT=$(k get deployment "${FULLNAME}-controller" \
  -o jsonpath='{.spec.template.spec.containers[0].ports[?(@.name=="http")].containerPort}')
[[ -n $CONTROLLER_PORT ]] || fail "deployment/${FULLNAME}-controller has no container port named http"
holder=""
leaders=()
deadline=$((SECONDS + 60))
while ((SECONDS < deadline)); do
  # holderIdentity is <pod name>_<random> (controller/kubernetes/executor.ts: hostname()_uuid).
  holder=$(k get lease "$LEASE" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true)
  leaders=()
  for pod in "${controller_pods[@]}"; do
    # Each replica's own view, read through the API server's pod proxy (no port-forward per pod).
    if kubectl --context "$CONTEXT" get --raw "/api/v1/namespaces/${NAMESPACE}/pods/${pod}:${CONTROLLER_PORT}/proxy/metrics" 2>/dev/null |
      grep -Eq '^media_controller_leader(\{[^}]*\})? 1$'; then
      leaders+=("$pod")
    fi
  done
  if [[ -n $holder && ${#leaders[@]} == 1 && ${holder%_*} == "${leaders[0]}" ]]; then break; fi
  sleep 2
done
[[ -n $holder ]] || fail "no controller holds the Lease ${LEASE} (spec.holderIdentity is empty)"
[[ ${#leaders[@]} == 1 ]] ||
  fail "expected exactly one controller reporting media_controller_leader 1, got ${#leaders[@]}: ${leaders[*]:-none}"
[[ ${holder%_*} == "${leaders[0]}" ]] ||
  fail "the Lease ${LEASE} is held by ${holder}, not by the replica that reports leading (${leaders[0]}); pods: ${controller_pods[*]}"
log "Lease ${LEASE} held by ${holder}; the other replica stands by"

# ---------------------------------------------------------------------------------------------------
# 5. One job through the API

API_SERVICE_PORT=$(k get service "${FULLNAME}-api" -o jsonpath='{.spec.ports[?(@.name=="http")].port}')
[[ -n $API_SERVICE_PORT ]] || fail "service/${FULLNAME}-api has no port named http"
log "port-forwarding service/${FULLNAME}-api:${API_SERVICE_PORT} to 127.0.0.1:${API_PORT}"
k port-forward "service/${FULLNAME}-api" "${API_PORT}:${API_SERVICE_PORT}" >"$WORK/port-forward.log" 2>&1 &
PORT_FORWARD_PID=$!
API="http://127.0.0.1:${API_PORT}"
for _ in $(seq 1 60); do
  if curl -fsS "${API}/health/ready" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$PORT_FORWARD_PID" 2>/dev/null; then
    cat "$WORK/port-forward.log" >&2
    fail "kubectl port-forward exited"
  fi
  sleep 1
done
curl -fsS "${API}/health/ready" >/dev/null || fail "the API is not ready at ${API}/health/ready"

log "submitting an image_resize job"
status=$(curl -sS -o "$WORK/submit.json" -w '%{http_code}' -X POST "${API}/api/v1/jobs/image/resize" \
  -H "X-API-Key: ${API_KEY}" -H 'Content-Type: application/json' \
  -d "{\"source_bucket\":\"${BUCKET}\",\"source_key\":\"${SOURCE_KEY}\",\"dest_bucket\":\"${BUCKET}\",\"dest_key\":\"${DEST_KEY}\",\"width\":32,\"height\":24,\"format\":\"webp\"}")
[[ $status == 202 ]] || fail "POST /api/v1/jobs/image/resize answered ${status}: $(cat "$WORK/submit.json")"
JOB_ID=$(json_get job_id <"$WORK/submit.json")
[[ -n $JOB_ID ]] || fail "no job_id in $(cat "$WORK/submit.json")"
log "job ${JOB_ID} submitted; waiting up to ${TIMEOUT} s for it to end"

deadline=$((SECONDS + TIMEOUT))
job_status=""
while ((SECONDS < deadline)); do
  curl -fsS "${API}/api/v1/jobs/${JOB_ID}" -H "X-API-Key: ${API_KEY}" >"$WORK/job.json"
  job_status=$(json_get status <"$WORK/job.json")
  if [[ $job_status == completed || $job_status == failed ]]; then break; fi
  sleep 2
done
echo "job: $(cat "$WORK/job.json")" >&2
[[ $job_status == completed ]] ||
  fail "job ${JOB_ID} is ${job_status:-unknown}${job_status:+ }(error: $(json_get error <"$WORK/job.json"))"
width=$(json_get result.metadata.width <"$WORK/job.json")
height=$(json_get result.metadata.height <"$WORK/job.json")
format=$(json_get result.metadata.format <"$WORK/job.json")
[[ $width == 32 && $height == 24 && $format == webp ]] ||
  fail "expected a 32x24 webp result, got ${width}x${height} ${format}"

log "checking the Kubernetes Job of ${JOB_ID}"
kjob=$(k get jobs -l "media-service.io/job-id=${JOB_ID}" -o jsonpath='{.items[*].metadata.name}')
[[ -n $kjob && $kjob != *" "* ]] || fail "expected one Kubernetes Job labelled media-service.io/job-id=${JOB_ID}, found: '${kjob}'"
succeeded=$(k get job "$kjob" -o jsonpath='{.status.succeeded}')
[[ $succeeded == 1 ]] || fail "Kubernetes Job ${kjob} has not succeeded (status.succeeded=${succeeded:-0})"
log "Kubernetes Job ${kjob} succeeded"

log "checking s3://${BUCKET}/${DEST_KEY} (a Job in the media-service image)"
render_s3_job e2e-check check "$DEST_KEY" | k apply -f -
wait_job e2e-check 120

# ---------------------------------------------------------------------------------------------------
# 6. The chart's own test

log "helm test ${RELEASE} (the chart's test pod: /health/ready through service/${FULLNAME}-api)"
h test "$RELEASE" --timeout 3m >&2 || fail "helm test ${RELEASE} failed (its pod's log is in the diagnostics below)"

echo "PASS: chart ${RELEASE} installed on kind cluster ${KIND_CLUSTER} (controller ${holder%_*} leading of ${CONTROLLER_REPLICAS}); image_resize job ${JOB_ID} ran as Kubernetes Job ${kjob} and wrote s3://${BUCKET}/${DEST_KEY} (${width}x${height} ${format}); helm test passed"
