#!/usr/bin/env bash
# Builds (once) helm-docs, which writes charts/media-service/README.md from the `# --` comments of
# the chart's values.yaml (npm run docs), from its Go module (github.com/norwoodj/helm-docs) through
# the Go module proxy, like scripts/k8s/build-helm.sh builds helm.
#
# The binary is cached outside the repository, in
#   ${MEDIA_SERVICE_HELM_DOCS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/media-service/helm-docs}/<version>/bin/helm-docs
# with a stamp file; a second run only checks the stamp, so later runs work offline.
#
# Environment:
#   MEDIA_HELM_DOCS_VERSION        helm-docs version (default below)
#   MEDIA_SERVICE_HELM_DOCS_CACHE  cache root (default above)
#   MEDIA_HELM_DOCS_REBUILD=1      ignore the stamp and rebuild
#   MEDIA_HELM_DOCS_PRINT_BIN=1    print only the path of the binary on stdout (for callers); logs go to stderr
set -euo pipefail

# The newest release on the module proxy (`go list -m -versions github.com/norwoodj/helm-docs`).
VERSION="${MEDIA_HELM_DOCS_VERSION:-v1.14.2}"
MODULE="github.com/norwoodj/helm-docs"
# Its go.mod asks for Go 1.22; the toolchain is fetched from the module proxy when `go` is older.
MIN_GO="1.22.0"
GO_BOOTSTRAP="go1.26.8"
STAMP_FORMAT=1
CACHE_ROOT="${MEDIA_SERVICE_HELM_DOCS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/media-service/helm-docs}"
BIN_DIR="$CACHE_ROOT/$VERSION/bin"
BINARIES=(helm-docs)

# The cache, its stamp and lock, log and die, and the Go toolchain.
# shellcheck source=scripts/k8s/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
build_cache_init --log helm-docs-build --stamp "helm-docs=$VERSION format=$STAMP_FORMAT" \
  --rebuild-var MEDIA_HELM_DOCS_REBUILD --print-var MEDIA_HELM_DOCS_PRINT_BIN --print "$BIN_DIR/helm-docs" \
  --subject "$BIN_DIR/helm-docs"

exit_if_cached

[[ "$VERSION" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "MEDIA_HELM_DOCS_VERSION must look like vX.Y.Z, got '$VERSION'"

# Only one build at a time per cache (a second caller waits for the first one).
lock_cache

# `go install pkg@version` ignores the current module and rejects -mod=...; drop any inherited GOFLAGS.
use_go "$MIN_GO" "$GO_BOOTSTRAP" "$CACHE_ROOT/go" "-buildvcs=false"
export CGO_ENABLED=0
log "building helm-docs $VERSION with $GO_VERSION into $BIN_DIR (first run only)"

# Build into a staging dir, then swap it in, so an interrupted build never leaves half a cache.
new_bin_dir
# `helm-docs --version` prints main.version, which its release build sets the same way.
GOBIN="$NEW_BIN" go install -trimpath -ldflags="-s -w -X main.version=${VERSION#v}" "$MODULE/cmd/helm-docs@$VERSION" ||
  die "go install of $MODULE/cmd/helm-docs@$VERSION failed (see above)"
REPORTED=$("$NEW_BIN/helm-docs" --version) || die "the built helm-docs does not run"
[[ "$REPORTED" == *"${VERSION#v}"* ]] || die "the built helm-docs reports '$REPORTED', expected ${VERSION#v}"

install_bin_dir "go=$GO_VERSION" "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
log "done: $BIN_DIR/helm-docs"
print_bin
