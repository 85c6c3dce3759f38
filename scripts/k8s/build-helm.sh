#!/usr/bin/env bash
# Builds (once) the `helm` CLI used by `npm run test:k8s` from its Go module (helm.sh/helm/vN) through
# the Go module proxy — no git clone, no download from get.helm.sh.
#
# Unlike k8s.io/kubernetes, Helm's go.mod has no replace directives, so `go install
# helm.sh/helm/vN/cmd/helm@vX.Y.Z` builds it straight from the module with exactly the dependency
# versions Helm's own go.mod/go.sum pin. The version `helm version` prints is set through -ldflags the
# same way Helm's Makefile does for a tagged release (-X helm.sh/helm/vN/internal/version.version=...).
#
# The binary is cached outside the repository, in
#   ${MEDIA_SERVICE_HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/media-service/helm}/<version>/bin/helm
# with a stamp file; a second run only checks the stamp. Go's own module and build caches (GOMODCACHE,
# GOCACHE) keep their defaults, so dependencies shared with the control plane build are not recompiled.
#
# Environment:
#   MEDIA_HELM_VERSION        Helm version (default below; v3.x or v4.x; needs a Go >= its go.mod `go` line)
#   MEDIA_HELM_MIN_GO, MEDIA_HELM_GO_TOOLCHAIN
#                             the Go version that version needs, and the toolchain fetched from the module
#                             proxy (golang.org/toolchain) when `go` is missing or older
#   MEDIA_SERVICE_HELM_CACHE  cache root (default above)
#   MEDIA_HELM_REBUILD=1      ignore the stamp and rebuild
#   MEDIA_HELM_PRINT_BIN=1    print only the bin directory on stdout (for callers); logs go to stderr
set -euo pipefail

# The newest stable Helm release on the module proxy (`go list -m -versions helm.sh/helm/v4`).
HELM_VERSION="${MEDIA_HELM_VERSION:-v4.3.1}"
# The Go that helm.sh/helm/v4@$HELM_VERSION's go.mod asks for (checked again against the go.mod below),
# and the toolchain fetched from the module proxy when the installed `go` is missing or older.
MIN_GO="${MEDIA_HELM_MIN_GO:-1.26.0}"
GO_BOOTSTRAP="${MEDIA_HELM_GO_TOOLCHAIN:-go1.26.8}"
# Bump when the way the binary is built changes, so stale caches are rebuilt.
STAMP_FORMAT=1
CACHE_ROOT="${MEDIA_SERVICE_HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/media-service/helm}"
OUT_DIR="$CACHE_ROOT/$HELM_VERSION"
BIN_DIR="$OUT_DIR/bin"
BINARIES=(helm)

# The cache, its stamp and lock, log and die, and the Go toolchain (fetched from the module proxy when
# `go` is missing or too old).
# shellcheck source=scripts/k8s/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
build_cache_init --log helm-build --stamp "helm=$HELM_VERSION format=$STAMP_FORMAT" \
  --rebuild-var MEDIA_HELM_REBUILD --print-var MEDIA_HELM_PRINT_BIN --print "$BIN_DIR" \
  --subject "$BIN_DIR/helm" --details

exit_if_cached

[[ "$HELM_VERSION" =~ ^v([0-9]+)\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
  die "MEDIA_HELM_VERSION must look like vX.Y.Z, got '$HELM_VERSION'"
HELM_MAJOR=${BASH_REMATCH[1]}
((HELM_MAJOR >= 3)) || die "Helm $HELM_VERSION is not a Go module (only v3 and later are)"
MODULE="helm.sh/helm/v$HELM_MAJOR"

# Only one build at a time per cache (parallel test runs wait for the first one).
lock_cache

T0=$(now)
# `go install pkg@version` ignores the current module and rejects -mod=...; drop any inherited GOFLAGS.
use_go "$MIN_GO" "$GO_BOOTSTRAP" "$CACHE_ROOT/go" "-buildvcs=false"
export CGO_ENABLED=0
log "building Helm $HELM_VERSION ($MODULE) with $GO_VERSION into $BIN_DIR (first run only)"

# 1. Helm's go.mod: the Go it needs, and no replace directives (`go install ...@version` refuses those).
download_module "$MODULE@$HELM_VERSION" MEDIA_HELM_MIN_GO
# The commit the proxy recorded for the tag, when it did (Origin.Hash); `helm version` shows it.
GIT_COMMIT=$(module_commit)
refuse_replace "$MODULE@$HELM_VERSION"

# 2. Build into a staging dir, then swap it in, so an interrupted build never leaves half a cache.
new_bin_dir
VERSION_PKG="$MODULE/internal/version"
LDFLAGS="-s -w -X $VERSION_PKG.version=$HELM_VERSION -X $VERSION_PKG.gitTreeState=clean"
[[ -z "$GIT_COMMIT" ]] || LDFLAGS+=" -X $VERSION_PKG.gitCommit=$GIT_COMMIT"

T=$(now)
GOBIN="$NEW_BIN" go install -trimpath -ldflags="$LDFLAGS" "$MODULE/cmd/helm@$HELM_VERSION" ||
  die "go install of $MODULE/cmd/helm@$HELM_VERSION failed (see above)"
[[ -x "$NEW_BIN/helm" ]] || die "go install did not produce $NEW_BIN/helm (GOOS/GOARCH set for another platform?)"
log "built helm ($(elapsed "$T"))"

# 3. The binary runs and reports the version it was built as (proves the -X path above is right).
REPORTED=$("$NEW_BIN/helm" version --template '{{.Version}}') || die "the built helm does not run"
[[ "$REPORTED" == "$HELM_VERSION" ]] ||
  die "the built helm reports version '$REPORTED', expected '$HELM_VERSION' (has $VERSION_PKG.version moved?)"

install_bin_dir "module=$MODULE" "go=$GO_VERSION" "commit=${GIT_COMMIT:-unknown}" \
  "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"

log "done in $(elapsed "$T0"): $(du -sh "$BIN_DIR/helm" | cut -f1) $BIN_DIR/helm"
log "Go caches: GOMODCACHE $(go env GOMODCACHE), GOCACHE $(go env GOCACHE)"
print_bin
