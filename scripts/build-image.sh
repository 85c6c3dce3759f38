#!/usr/bin/env bash
# Builds media-service's container image from the Dockerfile with Docker Engine and prints its
# reference, nothing else, on stdout (the build's log goes to stderr):
#
#   bash scripts/build-image.sh [--report]
#   → media-service:3f2a9c0d1b7e
#
# The printed reference is a content tag: the first 12 hex digits of a SHA-256 over what the build
# reads (the build context as Docker receives it, the Dockerfile, the base image's ID and the build
# arguments). The same tree gives the same tag, so a caller can tell whether the image changed; when
# an image with that tag exists already, nothing is built. The image is also tagged IMAGE.
#
# The base (NODE_IMAGE, by default node:24-bookworm-slim, as the Dockerfile says) is used when
# present, pulled when the registry answers, and otherwise made here under the same name with
# scripts/base-image.sh (Debian 12 from the Debian mirror, Node 24 and npm from the npm registry), so
# the Dockerfile builds unchanged without a container registry. It is kept for the next build.
#
# Inside the build, npm and apt trust the host's CA bundle (SSL_CERT_FILE, else
# /etc/ssl/certs/ca-certificates.crt), as behind a TLS-intercepting proxy; it goes into the build
# context as build-ca.pem, which only the build stages read (see the Dockerfile). HTTP_PROXY,
# HTTPS_PROXY and NO_PROXY are passed on.
#
# --report  after the build, prints (on stderr) the size of each layer and the total, and the cold
#           start of a runner container: `docker run` to exit of `runner --job <id>` against a Redis,
#           the median of COLD_RUNS runs (default 5), beside a bare container and `--help`.
#
# Environment: IMAGE (default media-service:dev; its repository names the content tag too),
# NODE_IMAGE, NO_CACHE=1 (build every layer again, even when the content tag exists), DEBIAN_MIRROR
# (for a base made here), REVISION, CREATED, SOURCE (image labels), COLD_RUNS.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IMAGE="${IMAGE:-media-service:dev}"
NODE_IMAGE="${NODE_IMAGE:-node:24-bookworm-slim}"
HOST_CA="${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}"
COLD_RUNS="${COLD_RUNS:-5}"
# shellcheck source=scripts/lib.sh
source "$ROOT/scripts/lib.sh"

report=""
for arg in "$@"; do
  case "$arg" in
    --report) report=1 ;;
    -h | --help)
      sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
      exit 0
      ;;
    *) die "unknown argument $arg (usage: bash scripts/build-image.sh [--report])" ;;
  esac
done
[[ "$COLD_RUNS" =~ ^[1-9][0-9]*$ ]] || die "COLD_RUNS must be a positive number (got $COLD_RUNS)"
# The repository part of IMAGE (a registry's port is not a tag).
if [[ "${IMAGE##*/}" == *:* ]]; then repository="${IMAGE%:*}"; else repository="$IMAGE"; fi
[[ -n "$repository" && "$IMAGE" != *@* ]] || die "IMAGE must be a name with an optional tag (got $IMAGE)"

started=$SECONDS
# One build at a time on a machine (.ci/run starts one in the background; a second waits for it and
# then finds the image built).
lock_dir="$MEDIA_CACHE"
mkdir -p "$lock_dir"
exec 8>"$lock_dir/build-image.lock"
if ! flock -n 8; then
  say "another image build is running; waiting for it ..."
  flock 8
fi
# (without the lock: a dockerd started here must not hold it)
bash "$ROOT/scripts/docker-engine.sh" 8>&-

# ---- The base ------------------------------------------------------------------------------------
pull_log="$(mktemp "${TMPDIR:-/tmp}/media-service-pull.XXXXXX")"
if docker image inspect "$NODE_IMAGE" >/dev/null 2>&1; then
  say "base $NODE_IMAGE (present)"
elif docker pull -q "$NODE_IMAGE" >/dev/null 2>"$pull_log"; then
  say "base $NODE_IMAGE (pulled)"
else
  say "cannot pull $NODE_IMAGE ($(tail -n1 "$pull_log")); making it here"
  bash "$ROOT/scripts/base-image.sh" "$NODE_IMAGE" >/dev/null
fi
rm -f "$pull_log"
base_id="$(docker image inspect -f '{{.Id}}' "$NODE_IMAGE")"

# ---- The build context ---------------------------------------------------------------------------
# The checkout's files (tracked and new, nothing git ignores; every file outside a git checkout) less
# what .dockerignore names. Its patterns are matched against each path and its parent directories,
# `*` across `/` too: that leaves out at least what Docker would, so Docker receives exactly this.
ctx="$(mktemp -d "${TMPDIR:-/tmp}/media-service-image.XXXXXX")"
trap 'rm -rf "$ctx"' EXIT
patterns=()
if [[ -f "$ROOT/.dockerignore" ]]; then
  while IFS= read -r line || [[ -n "$line" ]]; do
    line="${line#"${line%%[![:space:]]*}"}" && line="${line%"${line##*[![:space:]]}"}"
    [[ -z "$line" || "$line" == \#* ]] || patterns+=("$line")
  done <"$ROOT/.dockerignore"
fi
ignored() {
  local path="$1" verdict=1 pattern negate p
  for pattern in ${patterns[@]+"${patterns[@]}"}; do
    negate=""
    [[ "$pattern" == '!'* ]] && negate=1 && pattern="${pattern#!}"
    pattern="${pattern#/}" && pattern="${pattern%/}"
    p="$path"
    while :; do
      # shellcheck disable=SC2053 # the pattern is a glob on purpose
      if [[ "$p" == $pattern ]]; then
        if [[ -n "$negate" ]]; then verdict=1; else verdict=0; fi
        break
      fi
      [[ "$p" == */* ]] || break
      p="${p%/*}"
    done
  done
  return $verdict
}
files=()
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  listing=(git -C "$ROOT" ls-files -z --cached --others --exclude-standard)
else
  # shellcheck disable=SC2016 # expanded by the inner bash
  listing=(bash -c 'cd "$1" && find . -path ./.git -prune -o -path ./node_modules -prune -o \( -type f -o -type l \) -printf "%P\0"' - "$ROOT")
fi
while IFS= read -r -d '' f; do
  [[ -e "$ROOT/$f" || -L "$ROOT/$f" ]] || continue # deleted, not yet committed
  ignored "$f" || files+=("$f")
done < <("${listing[@]}")
[[ ${#files[@]} -gt 0 ]] || die "no files for the build context in $ROOT"
printf '%s\0' "${files[@]}" | (cd "$ROOT" && tar --null -T - -cf -) | tar -xf - -C "$ctx"
cp "$ROOT/Dockerfile" "$ctx/Dockerfile"
if [[ -s "$HOST_CA" ]]; then
  cp "$HOST_CA" "$ctx/build-ca.pem"
else
  say "no CA bundle at $HOST_CA: npm and apt in the build trust their own certificates only"
fi

version="$(sed -n 's/^  "version": "\([^"]*\)",$/\1/p' "$ROOT/package.json")"
build_args=(--build-arg "NODE_IMAGE=$NODE_IMAGE" --build-arg "VERSION=${version:-0.1.0}")
for v in REVISION CREATED SOURCE; do
  [[ -n "${!v:-}" ]] && build_args+=(--build-arg "$v=${!v}")
done
for v in HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy; do
  [[ -n "${!v:-}" ]] && build_args+=(--build-arg "$v")
done

# The content tag: every file of the context but the CA bundle (path, mode, content), the base's ID
# and the build arguments that reach the image (labels), not the proxies.
hash="$(
  {
    printf 'base %s\n' "$base_id"
    printf '%s\n' "${build_args[@]}" | grep -v -i '_proxy' || true
    cd "$ctx"
    find . ! -name build-ca.pem \( -type f -o -type l \) -printf '%m %p %l\n' | LC_ALL=C sort
    find . -type f ! -name build-ca.pem -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
  } | sha256sum | cut -c1-12
)"
reference="$repository:$hash"

# ---- Build ---------------------------------------------------------------------------------------
if [[ "${NO_CACHE:-}" != 1 ]] && docker image inspect "$reference" >/dev/null 2>&1; then
  say "$reference exists: the tree has not changed since it was built"
  docker tag "$reference" "$IMAGE"
else
  # BuildKit when the buildx plugin is there, else the classic builder; the Dockerfile suits both.
  buildkit=0
  docker buildx version >/dev/null 2>&1 && buildkit=1
  no_cache=()
  [[ "${NO_CACHE:-}" == 1 ]] && no_cache=(--no-cache)
  say "building $reference (and $IMAGE) from $NODE_IMAGE with the $([[ $buildkit == 1 ]] && echo BuildKit || echo classic) builder ..."
  build_started=$SECONDS
  if ! DOCKER_BUILDKIT=$buildkit docker build --force-rm ${no_cache[@]+"${no_cache[@]}"} "${build_args[@]}" \
    -t "$reference" -t "$IMAGE" "$ctx" >&2; then
    die "docker build failed (its output is above)"
  fi
  say "built $reference in $((SECONDS - build_started)) s"
fi
say "$reference: $(docker image inspect -f '{{.Size}}' "$reference" | awk '{ printf "%.0f MB", $1 / 1e6 }') ($((SECONDS - started)) s in all)"

# ---- Report --------------------------------------------------------------------------------------
if [[ -n "$report" ]]; then
  {
    echo
    echo "layers of $reference (docker history, newest first):"
    docker history --no-trunc --format '{{.Size}}\t{{.CreatedBy}}' "$reference" |
      awk -F'\t' '{ by = $2; sub(/^\/bin\/sh -c (#\(nop\) +)?/, "", by); if (length(by) > 100) by = substr(by, 1, 97) "..."; printf "  %10s  %s\n", $1, by }'
    docker image inspect -f '{{.Size}}' "$reference" | awk '{ printf "  %10s  total (%.1f MiB)\n", sprintf("%.0fMB", $1 / 1e6), $1 / 1048576 }'
  } >&2

  run_id="media-service-coldstart-$$"
  cleanup_report() {
    docker rm -f "$run_id-redis" >/dev/null 2>&1 || true
    docker network rm "$run_id" >/dev/null 2>&1 || true
    rm -rf "$ctx"
  }
  trap cleanup_report EXIT
  docker network create "$run_id" >/dev/null
  docker run -d --name "$run_id-redis" --network "$run_id" --entrypoint redis-server "$reference" \
    --save '' --appendonly no --protected-mode no >/dev/null
  for _ in $(seq 50); do
    [[ "$(docker exec "$run_id-redis" redis-cli ping 2>/dev/null)" == PONG ]] && break
    sleep 0.2
  done
  [[ "$(docker exec "$run_id-redis" redis-cli ping 2>/dev/null)" == PONG ]] || die "the report's redis-server did not start"

  # Milliseconds from `docker run` to the container's exit (it is removed too), median of COLD_RUNS.
  median_ms() {
    local expect="$1" code="$2"
    shift 2
    local times=() out rc t0 t1
    for _ in $(seq "$COLD_RUNS"); do
      t0=$(date +%s%N)
      rc=0
      out="$(docker run --rm "$@" 2>&1)" || rc=$?
      t1=$(date +%s%N)
      [[ "$rc" == "$code" && "$out" == *"$expect"* ]] || die "unexpected answer (exit $rc) from docker run $*: $out"
      times+=($(((t1 - t0) / 1000000)))
    done
    printf '%s\n' "${times[@]}" | sort -n | awk '{ t[NR] = $1 } END { m = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2; printf "%d ms (runs: ", m; for (i = 1; i <= NR; i++) printf "%s%d", (i > 1 ? ", " : ""), t[i]; printf ")" }'
  }
  {
    echo
    echo "cold start of $reference, median of $COLD_RUNS (docker run --rm to exit):"
    printf '  %-58s %s\n' "bare container (--entrypoint true)" "$(median_ms "" 0 --entrypoint true "$reference")"
    printf '  %-58s %s\n' "media-service --help (node, the CLI)" "$(median_ms "usage: media-service" 0 "$reference" --help)"
    printf '  %-58s %s\n' "runner --job <id> (loads the runner, asks Redis, exits 2)" \
      "$(median_ms "does not exist" 2 --network "$run_id" -e "REDIS_URL=redis://$run_id-redis:6379" "$reference" runner --job cold-start-probe)"
  } >&2
fi

printf '%s\n' "$reference"
