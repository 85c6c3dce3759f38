#!/usr/bin/env bash
# Builds (once) what a real Kubernetes node needs beyond kubelet and kube-proxy (which
# build-control-plane.sh builds from the same Kubernetes module): containerd 2 with its runc shim and
# ctr, runc, CoreDNS for cluster DNS, and the pod sandbox ("pause") program — all from their Go modules
# through the Go module proxy (pause from the C source k8s.io/kubernetes carries), no git clone, no
# registry. The CNI plugins come from Debian (scripts/provision.sh k8s).
# The versions (and why containerd 2.2) are in versions.sh.
#
# Cached outside the repository in
#   ${MEDIA_SERVICE_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/media-service/node}/<versions>/bin/
# with a stamp; a second run only checks it. MEDIA_NODE_PRINT_BIN=1 prints only the bin directory.
set -euo pipefail

# shellcheck source=scripts/k8s/versions.sh
source "$(dirname "${BASH_SOURCE[0]}")/versions.sh"
MIN_GO=1.25.0
STAMP_FORMAT=2
CACHE_ROOT="${MEDIA_SERVICE_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/media-service/node}"
OUT_DIR="$CACHE_ROOT/containerd-${CONTAINERD_VERSION}_runc-${RUNC_VERSION}_coredns-${COREDNS_VERSION}_k8s-${K8S_VERSION}"
BIN_DIR="$OUT_DIR/bin"
BINARIES=(containerd containerd-shim-runc-v2 ctr runc coredns pause)

# shellcheck source=scripts/k8s/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
build_cache_init --log node-build --stamp "format=$STAMP_FORMAT" \
  --print-var MEDIA_NODE_PRINT_BIN --print "$BIN_DIR" --subject "$BIN_DIR"

exit_if_cached
lock_cache

started=$SECONDS
use_go "$MIN_GO" "$GO_TOOLCHAIN" "${XDG_CACHE_HOME:-$HOME/.cache}/media-service/go" "-buildvcs=false"
new_bin_dir

# containerd: static, without the btrfs and devmapper snapshotters (cgo; overlayfs is the one used).
log "building containerd $CONTAINERD_VERSION (containerd, containerd-shim-runc-v2, ctr) with $GO_VERSION…"
T=$SECONDS
cd_ver="-X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION"
CGO_ENABLED=0 GOBIN="$NEW_BIN" go install -trimpath -tags "no_btrfs no_devmapper no_zfs" -ldflags "-s -w $cd_ver" \
  "github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION" \
  "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" \
  "github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION" ||
  die "go install of containerd $CONTAINERD_VERSION failed (see above)"
log "built containerd in $((SECONDS - T)) s"

log "building runc $RUNC_VERSION (with seccomp)…"
T=$SECONDS
CGO_ENABLED=1 GOBIN="$NEW_BIN" go install -trimpath -tags seccomp -ldflags "-s -w -X main.version=${RUNC_VERSION#v}" \
  "github.com/opencontainers/runc@$RUNC_VERSION" ||
  die "go install of runc $RUNC_VERSION failed (see above; it needs gcc and libseccomp-dev)"
log "built runc in $((SECONDS - T)) s"

log "building CoreDNS $COREDNS_VERSION…"
T=$SECONDS
CGO_ENABLED=0 GOBIN="$NEW_BIN" go install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION" ||
  die "go install of CoreDNS $COREDNS_VERSION failed (see above)"
log "built CoreDNS in $((SECONDS - T)) s"

# The pod sandbox: Kubernetes' own pause.c (build/pause/linux), static, from the module's source.
log "building pause from k8s.io/kubernetes@$K8S_VERSION…"
pause_src="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | mod_json_field Dir)/build/pause/linux/pause.c"
[[ -f "$pause_src" ]] || die "no $pause_src"
gcc -Os -static -Wall -Werror -DVERSION="\"media-service-${K8S_VERSION}\"" -o "$NEW_BIN/pause" "$pause_src" ||
  die "compiling pause.c failed (static glibc: Debian's libc6-dev)"
strip "$NEW_BIN/pause"

"$NEW_BIN/containerd" --version >/dev/null || die "the built containerd does not run"
"$NEW_BIN/coredns" -version >/dev/null || die "the built coredns does not run"
"$NEW_BIN/runc" --version >/dev/null || die "the built runc does not run"
versions="containerd=$CONTAINERD_VERSION runc=$RUNC_VERSION coredns=$COREDNS_VERSION pause=k8s-$K8S_VERSION go=$GO_VERSION"
install_bin_dir "$versions" "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
log "done in $((SECONDS - started)) s: $(du -sh "$BIN_DIR" | cut -f1) in $BIN_DIR"
print_bin
