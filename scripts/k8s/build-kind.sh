#!/usr/bin/env bash
# Builds (once) the programs of a kind cluster made here (`npm run test:kind`), from Go modules through
# the Go module proxy, no git clone: the kind CLI; kubeadm and kubectl (the node image's, from the same
# wrapper module build-control-plane.sh makes for k8s.io/kubernetes, so Go's build cache reuses what
# the control plane compiled; `npm run test:k8s` does not build them); crictl; the CNI plugins the node
# and the pod network use (bridge, host-local, loopback, ptp, portmap); flanneld (the pod network);
# local-path-provisioner (the default StorageClass). build-kind-image.sh puts them into images.
# Versions: versions.sh.
#
# Cached outside the repository in
#   ${MEDIA_SERVICE_KIND_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/media-service/kind}/<kind version>/bin/
# with a stamp naming every version; a second run only checks it.
#
# Environment: MEDIA_KIND_REBUILD=1 (ignore the stamp), MEDIA_KIND_PRINT_BIN=1 (print only the bin
# directory on stdout; logs go to stderr), the MEDIA_*_VERSION of versions.sh.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/k8s/versions.sh
source "$HERE/versions.sh"
MIN_GO=1.26.0
STAMP_FORMAT=1
CACHE_ROOT="${MEDIA_SERVICE_KIND_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/media-service/kind}"
BIN_DIR="$CACHE_ROOT/$KIND_VERSION/bin"
BINARIES=(kind kubeadm kubectl crictl bridge host-local loopback ptp portmap flanneld local-path-provisioner)
STAMP="kind=$KIND_VERSION k8s=$K8S_VERSION crictl=$CRICTL_VERSION cni-plugins=$CNI_PLUGINS_VERSION"
STAMP+=" flannel=$FLANNEL_VERSION+common-$FLANNEL_TENCENT_COMMON_VERSION local-path-provisioner=$LOCAL_PATH_VERSION format=$STAMP_FORMAT"

# shellcheck source=scripts/k8s/lib.sh
source "$HERE/lib.sh"
build_cache_init --log kind-build --stamp "$STAMP" --rebuild-var MEDIA_KIND_REBUILD \
  --print-var MEDIA_KIND_PRINT_BIN --print "$BIN_DIR" --subject "$BIN_DIR"

exit_if_cached
# kubeadm and kubectl come from the control plane's wrapper module (built first when missing; it has
# its own cache and lock).
CP_BIN=$(MEDIA_K8S_PRINT_BIN=1 bash "$HERE/build-control-plane.sh")
WRAPPER="${CP_BIN%/bin}/wrapper"
[[ -f "$WRAPPER/go.mod" ]] || die "no wrapper module in $WRAPPER (build-control-plane.sh keeps it beside bin/)"
lock_cache

started=$SECONDS
use_go "$MIN_GO" "$GO_TOOLCHAIN" "${XDG_CACHE_HOME:-$HOME/.cache}/media-service/go" "-buildvcs=false"
export CGO_ENABLED=0
new_bin_dir
log "building kind's programs with $GO_VERSION into $BIN_DIR (first run only; takes a while)"

# go install PKG@VERSION... into NEW_BIN, timed; LABEL names it in the log.
install_go() {
  local label="$1" ldflags="$2" t=$SECONDS
  shift 2
  GOBIN="$NEW_BIN" go install -trimpath -ldflags "-s -w $ldflags" "$@" || die "go install of $label failed (see above)"
  log "built $label in $((SECONDS - t)) s"
}

install_go "kind $KIND_VERSION" "" "sigs.k8s.io/kind@$KIND_VERSION"

T=$SECONDS
work=$(mktemp -d "${TMPDIR:-/tmp}/kind-kubeadm.XXXXXX")
remove_on_exit "$work"
cp "$WRAPPER/go.mod" "$WRAPPER/go.sum" "$work/"
(cd "$work" && GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w $(k8s_version_ldflags "$K8S_VERSION")" \
  -o "$NEW_BIN/" k8s.io/kubernetes/cmd/kubeadm k8s.io/kubernetes/cmd/kubectl) ||
  die "go build of kubeadm and kubectl $K8S_VERSION failed (see above)"
log "built kubeadm and kubectl $K8S_VERSION in $((SECONDS - T)) s"

install_go "crictl $CRICTL_VERSION" "-X sigs.k8s.io/cri-tools/pkg/version.Version=$CRICTL_VERSION" \
  "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION"
cni=github.com/containernetworking/plugins/plugins
install_go "CNI plugins $CNI_PLUGINS_VERSION" "" "$cni/main/bridge@$CNI_PLUGINS_VERSION" \
  "$cni/ipam/host-local@$CNI_PLUGINS_VERSION" "$cni/main/loopback@$CNI_PLUGINS_VERSION" \
  "$cni/main/ptp@$CNI_PLUGINS_VERSION" "$cni/meta/portmap@$CNI_PLUGINS_VERSION"
# flanneld, through a wrapper module that lifts tencentcloud-sdk-go's common module (versions.sh says
# why). Its UDP backend is C on amd64, as upstream builds it (linked to the host's glibc: the node
# image's Debian is the host's, scripts/provision.sh's).
T=$SECONDS
mkdir -p "$work/flannel"
printf 'module media-service.test/flannel\n\ngo %s\n\nrequire (\n\t%s %s\n\t%s %s\n)\n' "$MIN_GO" \
  github.com/flannel-io/flannel "$FLANNEL_VERSION" \
  github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common "$FLANNEL_TENCENT_COMMON_VERSION" >"$work/flannel/go.mod"
(cd "$work/flannel" && CGO_ENABLED=1 GOFLAGS=-mod=mod go build -trimpath -o "$NEW_BIN/flanneld" \
  -ldflags "-s -w -X github.com/flannel-io/flannel/pkg/version.Version=$FLANNEL_VERSION" github.com/flannel-io/flannel) ||
  die "go build of flanneld $FLANNEL_VERSION failed (see above)"
log "built flanneld $FLANNEL_VERSION in $((SECONDS - T)) s"
install_go "local-path-provisioner $LOCAL_PATH_VERSION" "-X main.VERSION=$LOCAL_PATH_VERSION" \
  "github.com/rancher/local-path-provisioner@$LOCAL_PATH_VERSION"

"$NEW_BIN/kind" version >/dev/null || die "the built kind does not run"
"$NEW_BIN/kubeadm" version -o short >/dev/null || die "the built kubeadm does not run"
install_bin_dir "go=$GO_VERSION" "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
log "done in $((SECONDS - started)) s: $(du -sh "$BIN_DIR" | cut -f1) in $BIN_DIR"
print_bin
