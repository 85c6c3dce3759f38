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

# K8S_VERSION and GO_TOOLCHAIN (the toolchain fetched from the module proxy when the installed `go` is
# missing or older).
# shellcheck source=scripts/k8s/versions.sh
source "$(dirname "${BASH_SOURCE[0]}")/versions.sh"
# The Go that k8s.io/kubernetes@$K8S_VERSION's go.mod asks for (checked again against the go.mod below).
MIN_GO="${MEDIA_K8S_MIN_GO:-1.26.0}"
# Bump when the set of binaries or the way they are built changes, so stale caches are rebuilt.
STAMP_FORMAT=3
CACHE_ROOT="${MEDIA_SERVICE_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/media-service/k8s}"
OUT_DIR="$CACHE_ROOT/$K8S_VERSION"
BIN_DIR="$OUT_DIR/bin"
BINARIES=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)

# The cache, its stamp and lock, log and die, and a Go toolchain new enough for k8s.io/kubernetes'
# go.mod (fetched from the Go module proxy into the cache when `go` is missing or too old).
# shellcheck source=scripts/k8s/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
build_cache_init --log k8s-build --stamp "kubernetes=$K8S_VERSION format=$STAMP_FORMAT" \
  --rebuild-var MEDIA_K8S_REBUILD --print-var MEDIA_K8S_PRINT_BIN --print "$BIN_DIR" \
  --subject "$BIN_DIR" --details

exit_if_cached
# Only one build at a time per cache (parallel test runs wait for the first one).
lock_cache

T0=$(now)
use_go "$MIN_GO" "$GO_TOOLCHAIN" "$CACHE_ROOT/go" "-mod=mod -buildvcs=false"
export CGO_ENABLED=0
log "building Kubernetes $K8S_VERSION control plane with $GO_VERSION into $BIN_DIR (first run only; takes a while)"

# 1. k8s.io/kubernetes' go.mod: the staging modules to pin and the etcd version it uses.
download_module "k8s.io/kubernetes@$K8S_VERSION" MEDIA_K8S_MIN_GO
K8S_GOMOD="$MOD_GOMOD"

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
remove_on_exit "$WORK"
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
new_bin_dir
VERSION_LDFLAGS=$(k8s_version_ldflags "$K8S_VERSION")

T=$(now)
(cd "$WORK" && go build -trimpath -ldflags="-s -w $VERSION_LDFLAGS" -o "$NEW_BIN/" \
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
install_bin_dir "etcd=$ETCD_VERSION" "go=$GO_VERSION" "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"

log "done in $(elapsed "$T0"): $(du -sh "$BIN_DIR" | cut -f1) of binaries in $BIN_DIR"
log "Go caches: GOMODCACHE $(go env GOMODCACHE), GOCACHE $(go env GOCACHE)"
print_bin
