#!/usr/bin/env bash
# Builds (once) the binaries of the container-less Kubernetes control plane used by `npm run test:k8s`:
# kube-apiserver, kube-controller-manager and kube-scheduler from the k8s.io/kubernetes Go module, and
# etcd from go.etcd.io/etcd/server/v3 at the version Kubernetes itself pins — everything through the
# Go module proxy, no Docker, no git clone.
#
# k8s.io/kubernetes cannot be `go install`ed directly: its go.mod has `replace k8s.io/api =>
# ./staging/src/k8s.io/api` (and 30-odd more) which do not apply to dependents, and it requires those
# staging modules at v0.0.0. So a throw-away wrapper module requires k8s.io/kubernetes vX.Y.Z and
# replaces every staging module it requires with the published k8s.io/<module> v0.Y.Z.
#
# The binaries are cached outside the repository, in
#   ${MEDIA_SERVICE_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/media-service/k8s}/<version>/bin/
# with a stamp file; a second run only checks the stamp. Go's own module and build caches (GOMODCACHE,
# GOCACHE) keep their defaults, so a rebuild after a version bump only recompiles what changed.
#
# Environment:
#   MEDIA_K8S_VERSION        Kubernetes version (default below; needs a Go toolchain >= its go.mod `go` line)
#   MEDIA_K8S_MIN_GO, MEDIA_K8S_GO_TOOLCHAIN
#                            the Go version that version needs, and the toolchain fetched from the module
#                            proxy (golang.org/toolchain) when `go` is missing or older
#   MEDIA_SERVICE_K8S_CACHE  cache root (default above)
#   MEDIA_K8S_REBUILD=1      ignore the stamp and rebuild
#   MEDIA_K8S_PRINT_BIN=1    print only the bin directory on stdout (for callers); logs go to stderr
set -euo pipefail

K8S_VERSION="${MEDIA_K8S_VERSION:-v1.36.3}"
# The Go that k8s.io/kubernetes@$K8S_VERSION's go.mod asks for (checked again against the go.mod below),
# and the toolchain fetched from the module proxy when the installed `go` is missing or older.
MIN_GO="${MEDIA_K8S_MIN_GO:-1.26.0}"
GO_BOOTSTRAP="${MEDIA_K8S_GO_TOOLCHAIN:-go1.26.8}"
# Bump when the set of binaries or the way they are built changes, so stale caches are rebuilt.
STAMP_FORMAT=3
CACHE_ROOT="${MEDIA_SERVICE_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/media-service/k8s}"
OUT_DIR="$CACHE_ROOT/$K8S_VERSION"
BIN_DIR="$OUT_DIR/bin"
STAMP="$BIN_DIR/.stamp"
BINARIES=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)

log() { printf '[k8s-build] %s\n' "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

done_msg() {
  if [[ "${MEDIA_K8S_PRINT_BIN:-}" == 1 ]]; then
    printf '%s\n' "$BIN_DIR"
  fi
}

is_cached() {
  [[ "${MEDIA_K8S_REBUILD:-}" != 1 && -f "$STAMP" ]] || return 1
  grep -qx "kubernetes=$K8S_VERSION format=$STAMP_FORMAT" <(head -n1 "$STAMP") || return 1
  local b
  for b in "${BINARIES[@]}"; do [[ -x "$BIN_DIR/$b" ]] || return 1; done
}

if is_cached; then
  log "cached: $BIN_DIR ($(tail -n +2 "$STAMP" | tr '\n' ' '))"
  done_msg
  exit 0
fi

mkdir -p "$CACHE_ROOT"

# A Go toolchain new enough for k8s.io/kubernetes' go.mod (fetched from the Go module proxy into the cache
# when `go` is missing or too old): version_ge and ensure_go.
# shellcheck source=scripts/k8s/go-toolchain.sh
source "$(dirname "${BASH_SOURCE[0]}")/go-toolchain.sh"

# Only one build at a time per cache (parallel test runs wait for the first one).
exec 9>"$CACHE_ROOT/.lock"
if ! flock -n 9; then
  log "another build holds $CACHE_ROOT/.lock; waiting…"
  flock 9
fi
if is_cached; then
  log "cached (built by a concurrent run): $BIN_DIR"
  done_msg
  exit 0
fi

T0=$(now)
ensure_go "$MIN_GO" "$GO_BOOTSTRAP" "$CACHE_ROOT/go"
export GOFLAGS="-mod=mod -buildvcs=false"
export CGO_ENABLED=0
GO_VERSION=$(go env GOVERSION)
log "building Kubernetes $K8S_VERSION control plane with $GO_VERSION into $BIN_DIR (first run only; takes a while)"

# 1. k8s.io/kubernetes' go.mod: the staging modules to pin and the etcd version it uses.
T=$(now)
MOD_JSON=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION") ||
  die "cannot download k8s.io/kubernetes@$K8S_VERSION through $(go env GOPROXY)"
K8S_GOMOD=$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p' <<<"$MOD_JSON")
[[ -f "$K8S_GOMOD" ]] || die "no go.mod path in: $MOD_JSON"
log "downloaded k8s.io/kubernetes@$K8S_VERSION ($(elapsed "$T"))"

NEEDED_GO=$(awk '$1 == "go" { print $2; exit }' "$K8S_GOMOD")
if ! version_ge "${GO_VERSION#go}" "$NEEDED_GO"; then
  die "k8s.io/kubernetes@$K8S_VERSION needs Go >= $NEEDED_GO, found $GO_VERSION (set MEDIA_K8S_MIN_GO=$NEEDED_GO)"
fi

# Staging modules = the left-hand sides of `k8s.io/X => ./staging/src/k8s.io/X`.
mapfile -t STAGING < <(awk '$2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }' "$K8S_GOMOD")
((${#STAGING[@]} > 0)) || die "no staging replace directives found in $K8S_GOMOD"
# Only the ones k8s.io/kubernetes actually requires (a few, e.g. sample-cli-plugin, are not published
# for every release and are not needed).
REQUIRED=()
for m in "${STAGING[@]}"; do
  if grep -Eq "^[[:space:]]*(require[[:space:]]+)?${m//./\\.}[[:space:]]+v0\.0\.0" "$K8S_GOMOD"; then
    REQUIRED+=("$m")
  fi
done
((${#REQUIRED[@]} > 0)) || die "k8s.io/kubernetes@$K8S_VERSION requires none of its staging modules?"
STAGING_VERSION="v0.${K8S_VERSION#v1.}"
ETCD_VERSION=$(awk '$1 == "go.etcd.io/etcd/server/v3" { print $2; exit }' "$K8S_GOMOD")
[[ -n "$ETCD_VERSION" ]] || die "k8s.io/kubernetes@$K8S_VERSION does not pin go.etcd.io/etcd/server/v3"
log "${#REQUIRED[@]} staging modules pinned to $STAGING_VERSION; etcd $ETCD_VERSION"

# 2. The wrapper module.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/k8s-wrapper.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
{
  echo "module media-service.test/k8s-control-plane"
  echo
  echo "go $NEEDED_GO"
  echo
  echo "require ("
  echo "	k8s.io/kubernetes $K8S_VERSION"
  echo "	go.etcd.io/etcd/server/v3 $ETCD_VERSION"
  echo ")"
  echo
  echo "replace ("
  for m in "${REQUIRED[@]}"; do echo "	$m => $m $STAGING_VERSION"; done
  echo ")"
} >"$WORK/go.mod"
# Keeps the mains in the module's build list so -mod=mod records their go.sum lines.
cat >"$WORK/tools.go" <<'EOF'
//go:build tools

package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
)
EOF

# 3. Build into a staging dir, then swap it in, so an interrupted build never leaves half a cache.
mkdir -p "$OUT_DIR"
NEW_BIN=$(mktemp -d "$OUT_DIR/bin.new.XXXXXX")
chmod 755 "$NEW_BIN"
trap 'rm -rf "$WORK" "$NEW_BIN"' EXIT
MINOR=${K8S_VERSION#v1.}
MINOR=${MINOR%%.*}
VERSION_LDFLAGS=""
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  VERSION_LDFLAGS+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$MINOR"
  VERSION_LDFLAGS+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

T=$(now)
(cd "$WORK" && go build -trimpath -ldflags="-s -w$VERSION_LDFLAGS" -o "$NEW_BIN/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/cmd/kubelet \
  k8s.io/kubernetes/cmd/kube-proxy) ||
  die "go build of the Kubernetes components failed (see above)"
log "built kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy ($(elapsed "$T"))"

T=$(now)
(cd "$WORK" && go build -trimpath -ldflags="-s -w" -o "$NEW_BIN/etcd" go.etcd.io/etcd/server/v3) ||
  die "go build of etcd $ETCD_VERSION failed (see above)"
log "built etcd $ETCD_VERSION ($(elapsed "$T"))"

"$NEW_BIN/etcd" --version >/dev/null || die "the built etcd does not run"
"$NEW_BIN/kube-apiserver" --version >/dev/null || die "the built kube-apiserver does not run"

mkdir -p "$OUT_DIR/wrapper"
cp "$WORK/go.mod" "$WORK/go.sum" "$WORK/tools.go" "$OUT_DIR/wrapper/"
{
  echo "kubernetes=$K8S_VERSION format=$STAMP_FORMAT"
  echo "etcd=$ETCD_VERSION"
  echo "go=$GO_VERSION"
  echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$NEW_BIN/.stamp"
rm -rf "$BIN_DIR.old"
[[ -d "$BIN_DIR" ]] && mv "$BIN_DIR" "$BIN_DIR.old"
mv "$NEW_BIN" "$BIN_DIR"
rm -rf "$BIN_DIR.old"

log "done in $(elapsed "$T0"): $(du -sh "$BIN_DIR" | cut -f1) of binaries in $BIN_DIR"
log "Go caches: GOMODCACHE $(go env GOMODCACHE), GOCACHE $(go env GOCACHE)"
done_msg
