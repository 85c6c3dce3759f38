#!/usr/bin/env bash
# End-to-end test of media-service on a real Kubernetes cluster made by kind (Kubernetes in Docker).
# For a machine with a Docker engine, kind and kubectl; it is not part of `npm test` or
# `npm run test:k8s` (those need no Docker).
#
#   bash test/e2e/kind.sh                     build, deploy, run one image_resize job, PASS or FAIL
#   KEEP_CLUSTER=1 bash test/e2e/kind.sh      leave the cluster (and the namespace) for a look around
#   bash test/e2e/kind.sh --print-manifests   print what would be applied, touch nothing
#
# What it does:
#   1. builds the image from the repository's Dockerfile (`docker build -t media-service:e2e .`);
#   2. creates the kind cluster $KIND_CLUSTER (default media-service-e2e), or reuses it if it exists,
#      and loads the image into it (`kind load docker-image`; every pod uses imagePullPolicy Never);
#   3. deploys into the namespace $E2E_NAMESPACE (default media-e2e, recreated from scratch):
#      - Redis: redis:7-alpine, a Deployment and a Service;
#      - an S3-protocol store: MinIO (a Deployment and a Service, fixed throw-away credentials, data
#        in an emptyDir). The embedded store of `media-service start` only listens on 127.0.0.1 inside
#        that process, so it cannot serve other pods. The bucket is created, and the test image
#        uploaded, by a Job running the media-service image itself with the project's own S3 client
#        (@aws-sdk/client-s3): no MinIO client image is needed;
#      - Secrets: the Redis URL, the S3 keys and the API key;
#      - the controller's ServiceAccount, a Role with exactly the rules of
#        controller/kubernetes/rbac.ts (batch jobs get/list/watch/create/delete, pods get/list/watch,
#        coordination.k8s.io leases get/create/update) and its RoleBinding;
#      - a ConfigMap with config.yaml (executor.kind kubernetes, kubernetes.image media-service:e2e,
#        image_pull_policy Never, redis_secret, s3_secret, the in-cluster storage endpoint);
#      - `media-service api` (Deployment + Service) and `media-service controller` (Deployment, the
#        ServiceAccount above);
#   4. waits for the rollouts, port-forwards the API to 127.0.0.1:$E2E_API_PORT (default 18080),
#      submits an image_resize job (64x48 PNG → 32x24 WebP) with curl, polls
#      GET /api/v1/jobs/<id> until it ends ($E2E_TIMEOUT seconds, default 300), checks its result,
#      that a Kubernetes Job labelled media-service.io/job-id=<id> exists and succeeded, and that the
#      output object is in the bucket; prints PASS;
#   5. deletes the cluster, unless KEEP_CLUSTER=1. A cluster that existed before the run is never
#      deleted: only the namespace is (unless KEEP_CLUSTER=1).
#
# On a failure it prints the state of the namespace (Jobs, pods, events) and the logs of the API, the
# controller and the runner pods before cleaning up.
#
# Settings (environment): KIND_CLUSTER, KEEP_CLUSTER, E2E_NAMESPACE, E2E_IMAGE (media-service:e2e),
# E2E_API_PORT, E2E_TIMEOUT, E2E_SKIP_BUILD=1 (use an image already built with that tag),
# REDIS_IMAGE (redis:7-alpine), MINIO_IMAGE (quay.io/minio/minio:RELEASE.2025-04-22T22-12-26Z).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KIND_CLUSTER=${KIND_CLUSTER:-media-service-e2e}
NAMESPACE=${E2E_NAMESPACE:-media-e2e}
IMAGE=${E2E_IMAGE:-media-service:e2e}
REDIS_IMAGE=${REDIS_IMAGE:-redis:7-alpine}
MINIO_IMAGE=${MINIO_IMAGE:-quay.io/minio/minio:RELEASE.2025-04-22T22-12-26Z}
API_PORT=${E2E_API_PORT:-18080}
TIMEOUT=${E2E_TIMEOUT:-300}
KEEP_CLUSTER=${KEEP_CLUSTER:-0}

# Throw-away credentials of a throw-away cluster.
BUCKET=media
S3_ACCESS_KEY=e2e-access-key
S3_SECRET_KEY=e2e-secret-key-not-secret
API_KEY=e2e-api-key-not-secret
SOURCE_KEY=in/e2e.png
DEST_KEY=out/e2e.webp
S3_ENDPOINT="http://minio.${NAMESPACE}.svc.cluster.local:9000"
REDIS_URL="redis://redis.${NAMESPACE}.svc.cluster.local:6379"
CONTEXT="kind-${KIND_CLUSTER}"

# 64x48 PNG, four colour blocks (145 bytes).
TEST_PNG_BASE64='iVBORw0KGgoAAAANSUhEUgAAAEAAAAAwCAMAAACWlYwtAAAADFBMVEXcKCgooDweUMjwyCjBSYb5AAAACXBIWXMAAAPoAAAD6AG1e1JrAAAAK0lEQVRIx+3MQREAMAgDsML8e56E/rlEQJJiiwgEAoHgVDDFKwQCgUBwKvi5dhIBB2G6kAAAAABJRU5ErkJggg=='

log() { printf '==> %s\n' "$*" >&2; }
fail() {
  printf 'FAIL: %s\n' "$*" >&2
  exit 1
}
k() { kubectl --context "$CONTEXT" -n "$NAMESPACE" "$@"; }

# ---------------------------------------------------------------------------------------------------
# Manifests

# The S3 helper run by the setup and check Jobs, with the image's own @aws-sdk/client-s3.
#   node /e2e/s3.mjs setup            create the bucket (if missing), upload the test image
#   node /e2e/s3.mjs check <key>      the object exists, is not empty, and is a WebP file
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

render_infra() {
  cat <<EOF
apiVersion: v1
kind: Secret
metadata:
  name: media-service-redis
type: Opaque
stringData:
  redis-url: "${REDIS_URL}"
---
apiVersion: v1
kind: Secret
metadata:
  name: media-service-s3
type: Opaque
stringData:
  access-key-id: "${S3_ACCESS_KEY}"
  secret-access-key: "${S3_SECRET_KEY}"
---
apiVersion: v1
kind: Secret
metadata:
  name: media-service-api
type: Opaque
stringData:
  api-key: "${API_KEY}"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: redis
  labels: { app: redis }
spec:
  replicas: 1
  selector: { matchLabels: { app: redis } }
  template:
    metadata: { labels: { app: redis } }
    spec:
      containers:
        - name: redis
          image: ${REDIS_IMAGE}
          args: ["--save", "", "--appendonly", "no"]
          ports: [{ containerPort: 6379 }]
          readinessProbe:
            exec: { command: ["redis-cli", "ping"] }
            periodSeconds: 2
---
apiVersion: v1
kind: Service
metadata:
  name: redis
spec:
  selector: { app: redis }
  ports: [{ port: 6379, targetPort: 6379 }]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: minio
  labels: { app: minio }
spec:
  replicas: 1
  selector: { matchLabels: { app: minio } }
  template:
    metadata: { labels: { app: minio } }
    spec:
      containers:
        - name: minio
          image: ${MINIO_IMAGE}
          args: ["server", "/data", "--address", ":9000"]
          env:
            - name: MINIO_ROOT_USER
              valueFrom: { secretKeyRef: { name: media-service-s3, key: access-key-id } }
            - name: MINIO_ROOT_PASSWORD
              valueFrom: { secretKeyRef: { name: media-service-s3, key: secret-access-key } }
          ports: [{ containerPort: 9000 }]
          readinessProbe:
            httpGet: { path: /minio/health/ready, port: 9000 }
            periodSeconds: 2
          volumeMounts: [{ name: data, mountPath: /data }]
      volumes: [{ name: data, emptyDir: {} }]
---
apiVersion: v1
kind: Service
metadata:
  name: minio
spec:
  selector: { app: minio }
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
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: media-service-config
data:
  config.yaml: |
    server:
      port: 8080
    redis:
      key_prefix: media
    storage:
      endpoint: ${S3_ENDPOINT}
      region: us-east-1
      force_path_style: true
      health_bucket: ${BUCKET}
    executor:
      kind: kubernetes
    kubernetes:
      namespace: ${NAMESPACE}
      image: ${IMAGE}
      image_pull_policy: Never
      redis_secret: { name: media-service-redis, key: redis-url }
      s3_secret: { name: media-service-s3, access_key_key: access-key-id, secret_key_key: secret-access-key }
      max_running_jobs: 4
    log_level: info
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: media-service-controller
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: media-service-controller
rules:
  - apiGroups: ["batch"]
    resources: ["jobs"]
    verbs: ["get", "list", "watch", "create", "delete"]
  - apiGroups: [""]
    resources: ["pods"]
    verbs: ["get", "list", "watch"]
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    verbs: ["get", "create", "update"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: media-service-controller
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: media-service-controller
subjects:
  - kind: ServiceAccount
    name: media-service-controller
    namespace: ${NAMESPACE}
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
              valueFrom: { secretKeyRef: { name: media-service-s3, key: access-key-id } }
            - name: S3_SECRET_ACCESS_KEY
              valueFrom: { secretKeyRef: { name: media-service-s3, key: secret-access-key } }
          volumeMounts: [{ name: e2e, mountPath: /e2e, readOnly: true }]
      volumes: [{ name: e2e, configMap: { name: e2e-fixtures } }]
EOF
}

# Environment shared by the API and the controller: the configuration file, credentials from Secrets.
render_app_env() {
  cat <<EOF
          env:
            - { name: CONFIG_FILE, value: /etc/media-service/config.yaml }
            - { name: DATA_DIR, value: /tmp/media-service }
            - name: REDIS_URL
              valueFrom: { secretKeyRef: { name: media-service-redis, key: redis-url } }
            - name: S3_ACCESS_KEY_ID
              valueFrom: { secretKeyRef: { name: media-service-s3, key: access-key-id } }
            - name: S3_SECRET_ACCESS_KEY
              valueFrom: { secretKeyRef: { name: media-service-s3, key: secret-access-key } }
            - name: API_KEYS
              valueFrom: { secretKeyRef: { name: media-service-api, key: api-key } }
          volumeMounts:
            - { name: config, mountPath: /etc/media-service, readOnly: true }
            - { name: tmp, mountPath: /tmp }
EOF
}

render_app() {
  cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata:
  name: media-service-api
  labels: { app: media-service-api }
spec:
  replicas: 1
  selector: { matchLabels: { app: media-service-api } }
  template:
    metadata: { labels: { app: media-service-api } }
    spec:
      automountServiceAccountToken: false
      containers:
        - name: api
          image: ${IMAGE}
          imagePullPolicy: Never
          args: ["api"]
          ports: [{ containerPort: 8080 }]
$(render_app_env)
          readinessProbe:
            httpGet: { path: /health/ready, port: 8080 }
            periodSeconds: 2
          livenessProbe:
            httpGet: { path: /health/live, port: 8080 }
            periodSeconds: 10
      volumes:
        - { name: config, configMap: { name: media-service-config } }
        - { name: tmp, emptyDir: {} }
---
apiVersion: v1
kind: Service
metadata:
  name: media-service-api
spec:
  selector: { app: media-service-api }
  ports: [{ port: 8080, targetPort: 8080 }]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: media-service-controller
  labels: { app: media-service-controller }
spec:
  replicas: 1
  selector: { matchLabels: { app: media-service-controller } }
  template:
    metadata: { labels: { app: media-service-controller } }
    spec:
      serviceAccountName: media-service-controller
      containers:
        - name: controller
          image: ${IMAGE}
          imagePullPolicy: Never
          args: ["controller"]
          ports: [{ containerPort: 8080 }]
$(render_app_env)
          readinessProbe:
            httpGet: { path: /readyz, port: 8080 }
            periodSeconds: 2
          livenessProbe:
            httpGet: { path: /healthz, port: 8080 }
            periodSeconds: 10
      volumes:
        - { name: config, configMap: { name: media-service-config } }
        - { name: tmp, emptyDir: {} }
EOF
}

if [[ ${1:-} == "--print-manifests" ]]; then
  printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n---\n' "$NAMESPACE"
  render_infra
  echo "---"
  render_s3_job e2e-setup setup
  echo "---"
  render_app
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
  missing+=("kind: https://kind.sigs.k8s.io/docs/user/quick-start/#installation (e.g. \`go install sigs.k8s.io/kind@latest\`)")
command -v kubectl >/dev/null 2>&1 ||
  missing+=("kubectl: https://kubernetes.io/docs/tasks/tools/")
command -v curl >/dev/null 2>&1 || missing+=("curl")
if ! command -v jq >/dev/null 2>&1 && ! command -v python3 >/dev/null 2>&1; then
  missing+=("jq or python3 (to read the API's JSON answers)")
fi
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "test/e2e/kind.sh needs what is missing here:" >&2
  for m in "${missing[@]}"; do echo "  - $m" >&2; done
  exit 2
fi

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
WORK=$(mktemp -d)

diagnostics() {
  echo "---------------- diagnostics (namespace ${NAMESPACE}) ----------------" >&2
  k get jobs,pods -o wide >&2 || true
  k get events --sort-by=.lastTimestamp 2>/dev/null | tail -n 40 >&2 || true
  echo "--- API log ---" >&2
  k logs deployment/media-service-api --tail=60 >&2 || true
  echo "--- controller log ---" >&2
  k logs deployment/media-service-controller --tail=100 >&2 || true
  local pod
  for pod in $(k get pods -l app.kubernetes.io/component=runner -o name 2>/dev/null); do
    echo "--- ${pod} ---" >&2
    k describe "$pod" 2>/dev/null | sed -n '/^Containers:/,/^Conditions:/p' >&2 || true
    k logs "$pod" --tail=40 >&2 || true
  done
}

cleanup() {
  local rc=$?
  if [[ -n $PORT_FORWARD_PID ]]; then kill "$PORT_FORWARD_PID" 2>/dev/null || true; fi
  if [[ $rc -ne 0 ]] && kubectl --context "$CONTEXT" get namespace "$NAMESPACE" >/dev/null 2>&1; then
    diagnostics
  fi
  rm -rf "$WORK"
  if [[ $KEEP_CLUSTER == 1 ]]; then
    log "KEEP_CLUSTER=1: kind cluster ${KIND_CLUSTER} kept (kubectl --context ${CONTEXT} -n ${NAMESPACE} get all)"
  elif [[ $CREATED_CLUSTER == 1 ]]; then
    log "deleting kind cluster ${KIND_CLUSTER}"
    kind delete cluster --name "$KIND_CLUSTER" >/dev/null 2>&1 || true
  elif kubectl --context "$CONTEXT" get namespace "$NAMESPACE" >/dev/null 2>&1; then
    log "the cluster existed before this run: kept; deleting namespace ${NAMESPACE}"
    kubectl --context "$CONTEXT" delete namespace "$NAMESPACE" --wait=false >/dev/null 2>&1 || true
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
  log "deleting the namespace ${NAMESPACE} left by an earlier run"
  kubectl --context "$CONTEXT" delete namespace "$NAMESPACE" --wait=true --timeout=180s
fi
kubectl --context "$CONTEXT" create namespace "$NAMESPACE"
log "deploying Redis, MinIO, Secrets, RBAC and the configuration"
render_infra | k apply -f -
k rollout status deployment/redis --timeout=180s
k rollout status deployment/minio --timeout=180s
log "creating the bucket ${BUCKET} and uploading ${SOURCE_KEY} (a Job in the media-service image)"
render_s3_job e2e-setup setup | k apply -f -
wait_job e2e-setup 180
log "deploying media-service api and controller"
render_app | k apply -f -
k rollout status deployment/media-service-api --timeout=180s
k rollout status deployment/media-service-controller --timeout=180s

# ---------------------------------------------------------------------------------------------------
# 4. One job through the API

log "port-forwarding the API to 127.0.0.1:${API_PORT}"
k port-forward service/media-service-api "${API_PORT}:8080" >"$WORK/port-forward.log" 2>&1 &
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

echo "PASS: image_resize job ${JOB_ID} ran as Kubernetes Job ${kjob} on kind cluster ${KIND_CLUSTER} and wrote s3://${BUCKET}/${DEST_KEY} (${width}x${height} ${format})"
