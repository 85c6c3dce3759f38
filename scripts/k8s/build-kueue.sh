#!/usr/bin/env bash
# Builds (once) Kueue's manager for the real-node test of Kueue-managed runner Jobs
# (test/k8s/kueue.test.ts) from its Go module, sigs.k8s.io/kueue, through the Go module proxy, and
# keeps beside it what the test installs from the same module: the CRDs (config/components/crd/bases)
# and the webhook configurations (config/components/webhook/manifests.yaml).
#
# Kueue's go.mod has no replace directives, so `go install sigs.k8s.io/kueue/cmd/kueue@vX.Y.Z` builds
# the manager straight from the module with the dependency versions Kueue's own go.mod/go.sum pin; the
# version it reports is set through -ldflags as Kueue's Makefile does (pkg/version.GitVersion).
#
# Cached outside the repository, in
#   ${MEDIA_SERVICE_KUEUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/media-service/kueue}/<version>/
#     bin/kueue, bin/.stamp, crd/*.yaml, webhook/manifests.yaml
# with a stamp file; a second run only checks the stamp. Go's own module and build caches (GOMODCACHE,
# GOCACHE) keep their defaults, so what Kueue shares with Helm and the control plane is not recompiled.
#
# Environment:
#   MEDIA_KUEUE_VERSION        Kueue version (default below)
#   MEDIA_KUEUE_MIN_GO, MEDIA_KUEUE_GO_TOOLCHAIN
#                              the Go that version needs, and the toolchain fetched from the module proxy
#                              (golang.org/toolchain) when `go` is missing or older
#   MEDIA_SERVICE_KUEUE_CACHE  cache root (default above)
#   MEDIA_KUEUE_REBUILD=1      ignore the stamp and rebuild
#   MEDIA_KUEUE_PRINT_DIR=1    print only the version directory on stdout (for callers); logs go to stderr
set -euo pipefail

# The Kueue release on the module proxy (`go list -m -versions sigs.k8s.io/kueue`).
KUEUE_VERSION="${MEDIA_KUEUE_VERSION:-v0.17.0}"
# The Go that sigs.k8s.io/kueue@$KUEUE_VERSION's go.mod asks for (checked again against the go.mod
# below), and the toolchain fetched from the module proxy when the installed `go` is missing or older.
MIN_GO="${MEDIA_KUEUE_MIN_GO:-1.25.0}"
GO_BOOTSTRAP="${MEDIA_KUEUE_GO_TOOLCHAIN:-go1.26.8}"
# Bump when what is kept or the way it is built changes, so stale caches are rebuilt.
STAMP_FORMAT=1
MODULE=sigs.k8s.io/kueue
CACHE_ROOT="${MEDIA_SERVICE_KUEUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/media-service/kueue}"
OUT_DIR="$CACHE_ROOT/$KUEUE_VERSION"
BIN_DIR="$OUT_DIR/bin"
BINARIES=(kueue)

# shellcheck source=scripts/k8s/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
build_cache_init --log kueue-build --stamp "kueue=$KUEUE_VERSION format=$STAMP_FORMAT" \
  --rebuild-var MEDIA_KUEUE_REBUILD --print-var MEDIA_KUEUE_PRINT_DIR --print "$OUT_DIR" \
  --subject "$BIN_DIR/kueue" --details

manifests_present() { [[ -f "$OUT_DIR/webhook/manifests.yaml" ]] && compgen -G "$OUT_DIR/crd/*.yaml" >/dev/null; }
if manifests_present; then exit_if_cached; fi
# Only one build at a time per cache (parallel test runs wait for the first one).
lock_cache

T0=$(now)
# `go install pkg@version` ignores the current module and rejects -mod=...; drop any inherited GOFLAGS.
use_go "$MIN_GO" "$GO_BOOTSTRAP" "$CACHE_ROOT/go" "-buildvcs=false"
export CGO_ENABLED=0
log "building Kueue $KUEUE_VERSION with $GO_VERSION into $BIN_DIR (first run only)"

# 1. Kueue's module: its go.mod (the Go it needs, no replace directives) and its source, for the CRDs
# and webhook configurations.
download_module "$MODULE@$KUEUE_VERSION" MEDIA_KUEUE_MIN_GO
MOD_DIR=$(mod_json_field Dir <<<"$MOD_JSON")
[[ -d "$MOD_DIR/config/components/crd/bases" ]] || die "no config/components/crd/bases in $MOD_DIR"
[[ -f "$MOD_DIR/config/components/webhook/manifests.yaml" ]] ||
  die "no config/components/webhook/manifests.yaml in $MOD_DIR"
GIT_COMMIT=$(module_commit)
refuse_replace "$MODULE@$KUEUE_VERSION"

# 2. Build into a staging dir, then swap it in, so an interrupted build never leaves half a cache.
new_bin_dir
VERSION_PKG="$MODULE/pkg/version"
LDFLAGS="-s -w -X $VERSION_PKG.GitVersion=$KUEUE_VERSION -X $VERSION_PKG.BuildDate=1970-01-01T00:00:00Z"
[[ -z "$GIT_COMMIT" ]] || LDFLAGS+=" -X $VERSION_PKG.GitCommit=$GIT_COMMIT"
T=$(now)
GOBIN="$NEW_BIN" go install -trimpath -ldflags="$LDFLAGS" "$MODULE/cmd/kueue@$KUEUE_VERSION" ||
  die "go install of $MODULE/cmd/kueue@$KUEUE_VERSION failed (see above)"
[[ -x "$NEW_BIN/kueue" ]] || die "go install did not produce $NEW_BIN/kueue"
log "built kueue ($(elapsed "$T"))"

# 3. The manifests of the same version, copied out of the read-only module cache.
rm -rf "$OUT_DIR/crd" "$OUT_DIR/webhook"
mkdir -p "$OUT_DIR/crd" "$OUT_DIR/webhook"
cp "$MOD_DIR"/config/components/crd/bases/*.yaml "$OUT_DIR/crd/"
cp "$MOD_DIR/config/components/webhook/manifests.yaml" "$OUT_DIR/webhook/"
chmod -R u+w "$OUT_DIR/crd" "$OUT_DIR/webhook"

install_bin_dir "go=$GO_VERSION" "commit=${GIT_COMMIT:-unknown}" "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"

log "done in $(elapsed "$T0"): $(du -sh "$BIN_DIR/kueue" | cut -f1) $BIN_DIR/kueue, $(find "$OUT_DIR/crd" -name '*.yaml' | wc -l) CRDs"
print_bin
