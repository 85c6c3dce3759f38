#!/usr/bin/env bash
# Builds (once) kube-score, the linter test/k8s/kube-score.test.ts runs on the chart's renders, from its
# Go module (github.com/zegl/kube-score) through the Go module proxy, like scripts/k8s/build-helm.sh
# builds helm: no git clone, no release download.
#
# The binary is cached outside the repository, in
#   ${MEDIA_SERVICE_KUBE_SCORE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/media-service/kube-score}/<version>/bin/kube-score
# with a stamp file; a second run only checks the stamp, so later runs work offline.
#
# Environment:
#   MEDIA_KUBE_SCORE_VERSION        kube-score version (default below)
#   MEDIA_SERVICE_KUBE_SCORE_CACHE  cache root (default above)
#   MEDIA_KUBE_SCORE_REBUILD=1      ignore the stamp and rebuild
#   MEDIA_KUBE_SCORE_PRINT_BIN=1    print only the path of the binary on stdout (for callers); logs go to stderr
set -euo pipefail

# The newest release on the module proxy (`go list -m -versions github.com/zegl/kube-score`).
VERSION="${MEDIA_KUBE_SCORE_VERSION:-v1.20.0}"
MODULE="github.com/zegl/kube-score"
# Its go.mod asks for Go 1.23; the toolchain is fetched from the module proxy when `go` is older.
MIN_GO="1.23.0"
GO_BOOTSTRAP="go1.26.8"
STAMP_FORMAT=1
CACHE_ROOT="${MEDIA_SERVICE_KUBE_SCORE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/media-service/kube-score}"
BIN_DIR="$CACHE_ROOT/$VERSION/bin"
BINARIES=(kube-score)

# The cache, its stamp and lock, log and die, and the Go toolchain.
# shellcheck source=scripts/k8s/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
build_cache_init --log kube-score-build --stamp "kube-score=$VERSION format=$STAMP_FORMAT" \
  --rebuild-var MEDIA_KUBE_SCORE_REBUILD --print-var MEDIA_KUBE_SCORE_PRINT_BIN \
  --print "$BIN_DIR/kube-score" --subject "$BIN_DIR/kube-score" --details

exit_if_cached

[[ "$VERSION" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "MEDIA_KUBE_SCORE_VERSION must look like vX.Y.Z, got '$VERSION'"

# Only one build at a time per cache (a second caller waits for the first one).
lock_cache

T0=$(now)
# `go install pkg@version` ignores the current module and rejects -mod=...; drop any inherited GOFLAGS.
use_go "$MIN_GO" "$GO_BOOTSTRAP" "$CACHE_ROOT/go" "-buildvcs=false"
export CGO_ENABLED=0
log "building kube-score $VERSION with $GO_VERSION into $BIN_DIR (first run only)"

# Its go.mod: the Go it needs, and no replace directives (`go install ...@version` refuses those).
download_module "$MODULE@$VERSION" MEDIA_KUBE_SCORE_VERSION
refuse_replace "$MODULE@$VERSION"

# Build into a staging dir, then swap it in, so an interrupted build never leaves half a cache.
new_bin_dir
# `kube-score version` prints main.version, which its release build sets the same way.
GOBIN="$NEW_BIN" go install -trimpath -ldflags="-s -w -X main.version=${VERSION#v}" "$MODULE/cmd/kube-score@$VERSION" ||
  die "go install of $MODULE/cmd/kube-score@$VERSION failed (see above)"
REPORTED=$("$NEW_BIN/kube-score" version) || die "the built kube-score does not run"
[[ "$REPORTED" == *"${VERSION#v}"* ]] || die "the built kube-score reports '$REPORTED', expected ${VERSION#v}"

install_bin_dir "go=$GO_VERSION" "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
log "done in $(elapsed "$T0"): $BIN_DIR/kube-score"
print_bin
