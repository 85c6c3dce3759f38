#!/usr/bin/env bash
# The README's promise, checked the way a newcomer meets it. In a container made from a bare Debian 12
# image with Node 24 and npm and nothing else (debootstrap's minbase, Node from the npm registry's
# node-linux-<arch> package, npm from its own package):
#
#   1. `npm ci && npm start` on a terminal provisions what is missing, serves /health/ready, shows the
#      banner and logs no warning; the API is unreachable from outside the container and its Redis
#      demands a password; the README's quickstart, copied from the README, completes a resize.
#   2. `npm ci && npm test` passes in the same container (when part 2b is skipped: 2b runs the tests
#      on Debian's Node, under the Node 24 its launcher fetches, which is the same run). .ci/run has
#      no `npm test` step of its own: 2b is CI's run of the tests.
#   2b. The same two commands in a bare Debian 12 with Debian's own `nodejs` (18) and `npm` packages
#      instead of Node 24: they fetch Node 24 for themselves (scripts/node.sh) and run under it; the
#      quickstart, copied from the README, completes a resize; closing the terminal (SIGHUP) leaves
#      no process behind; `npm test` passes.
#   3. The image built from the Dockerfile runs the same stack with `start`: it refuses to serve
#      without API keys, and with them the example it prints works from the host through the
#      published ports.
#
# Docker Engine and debootstrap come through scripts/docker-engine.sh (scripts/provision.sh, profile
# fresh), the bare image through scripts/base-image.sh, which caches it by its Node and npm versions,
# and part 3's image through scripts/build-image.sh, as a developer builds it. Inside the containers
# npm trusts the host's CA bundle, as behind a corporate proxy. Needs root (debootstrap, dockerd).
#
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian), FRESH_KEEP=1 keeps the containers
# for a look afterwards, FRESH_SKIP_IMAGE=1 skips part 3, FRESH_SKIP_NODE24=1 parts 1 and 2,
# FRESH_SKIP_DEBIAN_NODE=1 part 2b.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
HOST_CA="${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}"
RUN_ID="$$"
APP=/root/media-service

started_at=$SECONDS
log() { printf '\n--> %s  [+%ds]\n' "$*" $((SECONDS - started_at)); }
die() {
  printf 'fresh-machine: FAILED: %s\n' "$*" >&2
  exit 1
}

work="$(mktemp -d)"
containers=()
cleanup() {
  if [[ "${FRESH_KEEP:-}" != 1 ]]; then
    for c in "${containers[@]}"; do docker rm -f "$c" >/dev/null 2>&1 || true; done
  else
    echo "kept containers: ${containers[*]}"
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# ---- Docker Engine -------------------------------------------------------------------------------
log "Docker Engine and debootstrap"
bash scripts/provision.sh fresh
bash scripts/docker-engine.sh
echo "docker $(docker version --format '{{.Server.Version}}'), storage driver $(docker info --format '{{.Driver}}')"

# ---- The bare image: Debian 12 minbase + Node 24 + npm -------------------------------------------
log "bare image: Debian 12 (debootstrap minbase), Node 24 and npm from the npm registry"
BASE="$(bash scripts/base-image.sh)" || die "could not make the bare image (see above)"
echo "$BASE"
docker run --rm "$BASE" bash -c 'echo "node $(node --version), npm $(npm --version)";
  for p in redis-server ffmpeg curl gcc python3; do command -v $p >/dev/null && echo "unexpected: $p" && exit 1; done; true'

# What reaches the containers: the host's CA bundle, its npm registry and proxies.
registry="$(npm config get registry 2>/dev/null || true)"
env_args=(-e NODE_EXTRA_CA_CERTS=/etc/ssl/host-ca.crt -e "npm_config_registry=${registry:-https://registry.npmjs.org/}")
for v in HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy; do
  [[ -n "${!v:-}" ]] && env_args+=(-e "$v")
done
ca_args=(-v "$HOST_CA:/etc/ssl/host-ca.crt:ro")

# The working tree as a newcomer's checkout: tracked and new files, nothing ignored (no node_modules,
# dist or .data).
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf "$work/src.tar"

# ---- 1. npm ci && npm start ----------------------------------------------------------------------
if [[ "${FRESH_SKIP_NODE24:-}" != 1 ]]; then
box="media-service-fresh-$RUN_ID"
containers+=("$box")
docker run -d --name "$box" "${ca_args[@]}" "${env_args[@]}" -v "$work/src.tar:/src.tar:ro" \
  "$BASE" sleep infinity >/dev/null
in_box() { docker exec "$box" bash -c "$1"; }
in_box "mkdir -p $APP && tar -xf /src.tar -C $APP"

log "1. npm ci && npm start (on a terminal, as the README says)"
# `script` (util-linux, in every Debian) gives the command a terminal, as a person's shell would.
docker exec -d "$box" script -qfec "cd $APP && npm ci && npm start" /root/start.log
ready=""
for _ in $(seq 900); do
  if in_box "node -e \"fetch('http://127.0.0.1:8080/health/ready').then(r => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))\"" 2>/dev/null; then
    ready=1
    break
  fi
  in_box "grep -q 'npm error\|start failed\|refusing' /root/start.log" && break
  sleep 1
done
start_log="$work/start.log"
docker exec "$box" cat /root/start.log | tr -d '\r' | sed 's/\x1b\[[0-9;]*m//g' >"$start_log"
[[ -n "$ready" ]] || {
  tail -n 60 "$start_log"
  die "npm start did not serve /health/ready"
}
echo "/health/ready answered 200 after $((SECONDS - started_at)) s (provisioning, npm ci and the build included)"
grep -E '^media-service: ' "$start_log" || true

grep -q '^  media-service is running' "$start_log" || die "no banner on the terminal"
if grep -E '^\[[0-9:.]+\] (WARN|ERROR|FATAL)' "$start_log"; then die "npm start logged the warnings above at a clean start"; fi
echo "banner shown, no warning logged"

redis_port="$(sed -nE 's/.*local redis-server started.*"address":"127\.0\.0\.1:([0-9]+)".*/\1/p' "$start_log" | head -n1)"
[[ -n "$redis_port" ]] || die "no redis-server address in the log"
reply="$(in_box "redis-cli -p $redis_port ping" 2>&1 || true)"
[[ "$reply" == *NOAUTH* ]] || die "the local Redis answered PING without a password: $reply"
in_box "redis-cli -p $redis_port -a \"\$(cat $APP/.data/redis/password)\" --no-auth-warning ping" | grep -qx PONG ||
  die "the local Redis refused its own password"
echo "redis-server on 127.0.0.1:$redis_port: PING without a password -> $reply; with the generated one -> PONG"

address="$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$box")"
if curl -sS --max-time 5 -o /dev/null "http://$address:8080/health/live" 2>"$work/curl.err"; then
  die "the API answered on the container's address $address (it must listen on loopback only)"
fi
grep -q 'Connection refused\|Failed to connect\|Couldn.t connect' "$work/curl.err" || die "unexpected: $(cat "$work/curl.err")"
echo "from the host, $address:8080 -> $(head -c 120 "$work/curl.err")"

log "1. the README's quickstart, as written"
# A newcomer brings a photo into the project's directory; the quickstart itself is taken from the
# README and uses nothing but the project's own command line.
awk '/^<!-- quickstart -->/ { grab = 1; next } grab && /^```sh/ { inside = 1; next } inside && /^```/ { exit } inside' \
  README.md >"$work/quickstart.sh"
[[ -s "$work/quickstart.sh" ]] || die "README.md has no block marked <!-- quickstart -->"
docker cp "$work/quickstart.sh" "$box:/root/quickstart.sh"
in_box "cd $APP && node -e \"require('sharp')({ create: { width: 1600, height: 1200, channels: 3, background: '#2a6f97' } }).jpeg().toFile('photo.jpg')\""
in_box "cd $APP && bash -euo pipefail /root/quickstart.sh" | tee "$work/quickstart.out"
grep -q '^image_resize job .* completed' "$work/quickstart.out" || die "the quickstart's job did not complete"
in_box "cd $APP && node -e \"require('sharp')('photo.webp').metadata().then(m => { console.log('photo.webp:', m.format, m.width + 'x' + m.height); process.exit(m.format === 'webp' && m.width === 640 ? 0 : 1) })\"" ||
  die "photo.webp is not the 640-wide WebP the quickstart asked for"

log "1. Ctrl-C stops it cleanly"
# No procps in a bare image: processes are found in /proc. (The [d] and [r] keep the pattern from
# matching the shell that carries it.)
# shellcheck disable=SC2016
in_box 'for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline 2>/dev/null | grep -q "^node [d]ist/cli.js start" && kill -INT ${p#/proc/}; done; true'
# shellcheck disable=SC2016
left='for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline 2>/dev/null | grep "[d]ist/cli\.js\|[r]edis-server"; done; true'
for _ in $(seq 30); do
  [[ -z "$(in_box "$left")" ]] && break
  sleep 1
done
[[ -z "$(in_box "$left")" ]] || die "processes of npm start are left after Ctrl-C: $(in_box "$left")"
echo "no media-service or redis-server process left"

# ---- 2. npm ci && npm test -----------------------------------------------------------------------
if [[ "${FRESH_SKIP_DEBIAN_NODE:-}" == 1 ]]; then
  log "2. npm ci && npm test, in the same container"
  if ! in_box "cd $APP && npm ci && npm test" >"$work/test.log" 2>&1; then
    grep -E '^ℹ|^✖' "$work/test.log" | tail -n 40
    tail -n 80 "$work/test.log"
    die "npm test failed in the fresh container"
  fi
  grep -E '^ℹ (tests|pass|fail|skipped)' "$work/test.log"
fi
fi # parts 1 and 2

# ---- 2b. Debian's own Node ------------------------------------------------------------------------
if [[ "${FRESH_SKIP_DEBIAN_NODE:-}" != 1 ]]; then
  log "2b. a bare Debian 12 with Debian's own nodejs and npm packages instead of Node 24"
  # The bare image without its Node 24 and npm, with Debian's nodejs and npm instead; made once per
  # bare image.
  debian_node="${BASE%%:*}:$(printf '%s' "${BASE##*:}" | tr -c 'A-Za-z0-9_.-' -)-debian-nodejs"
  if ! docker image inspect "$debian_node" >/dev/null 2>&1; then
    maker="media-service-debian-node-$RUN_ID"
    containers+=("$maker")
    docker run --name "$maker" "${ca_args[@]}" "$BASE" bash -c \
      'rm -rf /usr/local/bin/node /usr/local/bin/npm /usr/local/bin/npx /usr/local/lib/node_modules &&
       apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nodejs npm >/dev/null &&
       rm -rf /var/lib/apt/lists/*' || die "could not install Debian's nodejs and npm"
    docker commit "$maker" "$debian_node" >/dev/null
  fi
  dbox="media-service-debian-node-box-$RUN_ID"
  containers+=("$dbox")
  docker run -d --name "$dbox" "${ca_args[@]}" "${env_args[@]}" -v "$work/src.tar:/src.tar:ro" \
    "$debian_node" sleep infinity >/dev/null
  in_dbox() { docker exec "$dbox" bash -c "$1"; }
  in_dbox 'echo "node $(node --version) ($(command -v node)), npm $(npm --version)"'
  in_dbox "mkdir -p $APP && tar -xf /src.tar -C $APP"

  log "2b. npm ci && npm start on Debian's Node, on a terminal"
  docker exec -d "$dbox" script -qfec "cd $APP && npm ci && npm start" /root/start.log
  ready=""
  for _ in $(seq 900); do
    if in_dbox "node -e \"fetch('http://127.0.0.1:8080/health/ready').then(r => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))\"" 2>/dev/null; then
      ready=1
      break
    fi
    in_dbox "grep -q 'npm ERR\|npm error\|start failed\|refusing\|is required' /root/start.log" && break
    sleep 1
  done
  docker exec "$dbox" cat /root/start.log | tr -d '\r' | sed 's/\x1b\[[0-9;]*m//g' >"$work/debian-start.log"
  [[ -n "$ready" ]] || {
    tail -n 60 "$work/debian-start.log"
    die "npm start on Debian's Node did not serve"
  }
  grep -E '^media-service: ' "$work/debian-start.log" || true
  grep -q '^  media-service is running' "$work/debian-start.log" || die "no banner on the terminal"
  if grep -E '^\[[0-9:.]+\] (WARN|ERROR|FATAL)' "$work/debian-start.log"; then die "npm start logged the warnings above"; fi
  echo "served after $((SECONDS - started_at)) s; banner shown, no warning logged"

  log "2b. the README's quickstart, as written"
  docker cp "$work/quickstart.sh" "$dbox:/root/quickstart.sh" 2>/dev/null || {
    awk '/^<!-- quickstart -->/ { grab = 1; next } grab && /^```sh/ { inside = 1; next } inside && /^```/ { exit } inside' \
      README.md >"$work/quickstart.sh"
    docker cp "$work/quickstart.sh" "$dbox:/root/quickstart.sh"
  }
  in_dbox "cd $APP && bash scripts/node.sh node -e \"require('sharp')({ create: { width: 1600, height: 1200, channels: 3, background: '#2a6f97' } }).jpeg().toFile('photo.jpg')\""
  in_dbox "cd $APP && bash -euo pipefail /root/quickstart.sh" | tee "$work/debian-quickstart.out"
  grep -q '^image_resize job .* completed' "$work/debian-quickstart.out" || die "the quickstart's job did not complete on Debian's Node"

  log "2b. closing the terminal (SIGHUP to start) leaves no process behind"
  # shellcheck disable=SC2016
  in_dbox 'for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline 2>/dev/null | grep -q "node [d]ist/cli.js start" && kill -HUP ${p#/proc/}; done; true'
  # shellcheck disable=SC2016
  left='for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline 2>/dev/null | grep "[d]ist/cli\.js\|[r]edis-server"; done; true'
  for _ in $(seq 30); do
    [[ -z "$(in_dbox "$left")" ]] && break
    sleep 1
  done
  [[ -z "$(in_dbox "$left")" ]] || die "processes of npm start are left after SIGHUP: $(in_dbox "$left")"
  echo "no media-service or redis-server process left"

  log "2b. npm ci && npm test on Debian's Node"
  if ! in_dbox "cd $APP && npm ci && npm test" >"$work/debian-test.log" 2>&1; then
    # This is CI's one run of npm test: the failures in full (the runner lists them last), then the tail.
    sed -n '/^✖ failing tests:/,$p' "$work/debian-test.log" | head -n 600
    tail -n 80 "$work/debian-test.log"
    die "npm test failed on Debian's Node"
  fi
  grep -E '^ℹ (tests|pass|fail|skipped)' "$work/debian-test.log"
fi

[[ "${FRESH_SKIP_IMAGE:-}" == 1 ]] && {
  log "done (image skipped)"
  exit 0
}

# ---- 3. The image as an all-in-one ---------------------------------------------------------------
log "3. the image from the Dockerfile, on the same bare base (scripts/build-image.sh)"
# As a developer builds it: npm and apt in the build trust the host's CA too, and the image keeps
# nothing of it.
if ! image="$(IMAGE="media-service:fresh-$RUN_ID" NODE_IMAGE="$BASE" bash scripts/build-image.sh 2>"$work/build.log")"; then
  tail -n 40 "$work/build.log"
  die "scripts/build-image.sh failed"
fi
trap 'docker rmi -f "$image" "media-service:fresh-$RUN_ID" >/dev/null 2>&1 || true; cleanup' EXIT
docker image inspect -f "image $image {{.Id}}: {{.Size}} bytes" "$image"
# shellcheck disable=SC2016
docker run --rm --entrypoint sh "$image" -c \
  'test -z "${NODE_EXTRA_CA_CERTS:-}" && test -z "$(find / -xdev -name build-ca.pem 2>/dev/null)" && test ! -e /etc/apt/apt.conf.d/99build-ca' ||
  die "the build's CA bundle reached the image"

log "3. docker run IMAGE start without API keys is refused"
if docker run --rm "$image" start >"$work/refused.log" 2>&1; then die "start served 0.0.0.0 without API keys"; fi
grep -q 'refusing to serve the API on 0.0.0.0:8080 without authentication' "$work/refused.log" ||
  die "unexpected refusal: $(cat "$work/refused.log")"
cat "$work/refused.log"

log "3. docker run -it -p … IMAGE start with API keys and the store published"
free_port() { node -e "const s = require('net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })"; }
api_port="$(free_port)"
s3_port="$(free_port)"
API_KEY="key-$RUN_ID-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
S3_ACCESS_KEY_ID=media
S3_SECRET_ACCESS_KEY="secret-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
export API_KEY S3_ACCESS_KEY_ID S3_SECRET_ACCESS_KEY
allin="media-service-allinone-$RUN_ID"
containers+=("$allin")
docker run -d -t --name "$allin" -p "127.0.0.1:$api_port:$api_port" -p "127.0.0.1:$s3_port:$s3_port" \
  -e PORT="$api_port" -e EMBEDDED_S3_PORT="$s3_port" -e EMBEDDED_S3_HOST=0.0.0.0 \
  -e API_KEYS="$API_KEY" -e S3_ACCESS_KEY_ID -e S3_SECRET_ACCESS_KEY "$image" start >/dev/null
for _ in $(seq 120); do
  [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$api_port/health/ready")" == 200 ]] && break
  sleep 1
done
docker logs "$allin" 2>&1 | tr -d '\r' | sed 's/\x1b\[[0-9;]*m//g' >"$work/allinone.log"
[[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$api_port/health/ready")" == 200 ]] || {
  tail -n 40 "$work/allinone.log"
  die "the all-in-one container did not become ready"
}
[[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$api_port/api/v1/jobs")" == 401 ]] ||
  die "the all-in-one API answered without a key"
if grep -E '^\[[0-9:.]+\] (WARN|ERROR|FATAL)' "$work/allinone.log"; then die "the all-in-one logged warnings at start"; fi
grep -q "$API_KEY\|$S3_SECRET_ACCESS_KEY" "$work/allinone.log" && die "a secret reached the container's output"
sed -n '/^  try it/,$p' "$work/allinone.log" | sed '1,2d; s/^    //' | grep -v '^API_KEY=' >"$work/printed.sh"
echo "the example it printed:"
cat "$work/printed.sh"
mkdir -p "$work/host"
docker run --rm --entrypoint node -w /app "$image" -e \
  "require('sharp')({ create: { width: 1200, height: 900, channels: 3, background: '#c05621' } }).jpeg().pipe(process.stdout)" \
  >"$work/host/photo.jpg"
(cd "$work/host" && bash -euo pipefail "$work/printed.sh") | tee "$work/allinone.out"
grep -q '"status":"completed"' "$work/allinone.out" || die "the all-in-one's job did not complete"
[[ "$(head -c 4 "$work/host/photo.webp")" == RIFF ]] || die "the all-in-one's photo.webp is not a WebP"

log "all passed"
