#!/usr/bin/env bash
# Makes (once) a kind node image here, for `kind create cluster --image`, without a container registry:
# what kind's images/base/Dockerfile and `kind build node-image` make, from Debian packages and the
# programs scripts/k8s/build-*.sh build from Go modules.
#
#   1. a Debian root (debootstrap of KIND_DEBIAN_SUITE from the Debian mirror, with the packages the
#      node and the component images need), imported as media-service-kind/debian;
#   2. kind's base image, media-service-kind/base: that root with kind's node files (entrypoint,
#      containerd config, kubelet units, from the sigs.k8s.io/kind module's images/base/files),
#      containerd, runc, crictl and the CNI plugins;
#   3. the images a kind node runs, on the same root, tagged as kubeadm and kind's manifests name
#      them: kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy, etcd, CoreDNS and
#      pause (`kubeadm config images list`, containerd's sandbox image), local-path-provisioner and its
#      helper (kind's storage manifest, kept as upstream's), and flannel (the pod network,
#      scripts/k8s/kind/default-cni.yaml, in place of kindnetd, whose module the proxy does not serve);
#   4. the node image, media-service-kind/node, as kind's buildcontext.go makes it: a container of the
#      base with kubeadm, kubelet and kubectl in /usr/bin, /kind/version, the CNI and storage manifests,
#      the images of 3. imported into its containerd (pinned), committed.
#
# The node's entrypoint is kind's, after kind/node-unprivileged.sh (which does something only where
# the node is not privileged or lacks a capability: kind/docker-unprivileged.sh, test/e2e/kind.sh
# says when).
#
# Each image's tag is a digest of what it is made from (versions, stamps, this script, the manifest),
# so a second run finds it and builds nothing; older tags of the same repositories are removed.
# Prints the node image's reference on stdout when MEDIA_KIND_PRINT_IMAGE=1 (logs go to stderr).
#
# Needs root (debootstrap), Docker Engine, debootstrap, gcc and libseccomp-dev (scripts/provision.sh
# k8s). Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian), MEDIA_KIND_REBUILD_IMAGE=1
# (make the images again), the MEDIA_*_VERSION of versions.sh.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/k8s/versions.sh
source "$HERE/versions.sh"
# shellcheck source=scripts/k8s/lib.sh
source "$HERE/lib.sh"
build_cache_init --log kind-image
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
CACHE_ROOT="${MEDIA_SERVICE_KIND_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/media-service/kind}"
CNI_MANIFEST="$HERE/kind/default-cni.yaml"
NODE_UNPRIVILEGED="$HERE/kind/node-unprivileged.sh"
ENTRYPOINT='["/kind/bin/node-unprivileged.sh", "/usr/local/bin/entrypoint", "/sbin/init"]'
# What kind's base image installs (images/base/Dockerfile), less nfs-common, open-iscsi and
# fuse-overlayfs (volumes over NFS or iSCSI, rootless Docker), plus what the component images need.
PACKAGES=(systemd conntrack iptables nftables iproute2 ethtool kmod libseccomp2 pigz e2fsprogs
  ca-certificates curl jq procps)

command -v docker >/dev/null || die "Docker Engine is needed (docker)"
KIND_BIN=$(MEDIA_KIND_PRINT_BIN=1 bash "$HERE/build-kind.sh")
NODE_BIN=$(MEDIA_NODE_PRINT_BIN=1 bash "$HERE/build-node.sh")
CP_BIN=$(MEDIA_K8S_PRINT_BIN=1 bash "$HERE/build-control-plane.sh")

digest() { sha256sum | cut -c1-12; }
root_tag="media-service-kind/debian:$KIND_DEBIAN_SUITE-$(printf '%s\n' "$MIRROR" "${PACKAGES[@]}" | digest)"
base_tag="media-service-kind/base:$({
  echo "$root_tag"
  cat "$NODE_BIN/.stamp" "$KIND_BIN/.stamp" "${BASH_SOURCE[0]}" "$NODE_UNPRIVILEGED"
} | digest)"
node_tag="media-service-kind/node:$K8S_VERSION-$({
  echo "$base_tag"
  cat "$CP_BIN/.stamp" "$CNI_MANIFEST"
} | digest)"

exists() { docker image inspect "$1" >/dev/null 2>&1; }
print_image() { if [[ "${MEDIA_KIND_PRINT_IMAGE:-}" == 1 ]]; then printf '%s\n' "$node_tag"; fi; }
if [[ "${MEDIA_KIND_REBUILD_IMAGE:-}" != 1 ]] && exists "$node_tag"; then
  log "cached: $node_tag"
  print_image
  exit 0
fi
mkdir -p "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/.image.lock"
flock -n 9 || {
  log "another build holds $CACHE_ROOT/.image.lock; waiting…"
  flock 9
  if [[ "${MEDIA_KIND_REBUILD_IMAGE:-}" != 1 ]] && exists "$node_tag"; then
    log "cached (made by a concurrent run): $node_tag"
    print_image
    exit 0
  fi
}
started=$SECONDS
use_go 1.26.0 "$GO_TOOLCHAIN" "${XDG_CACHE_HOME:-$HOME/.cache}/media-service/go" "-buildvcs=false"
KIND_SRC=$(go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | mod_json_field Dir)
[[ -d "$KIND_SRC/images/base/files" ]] || die "no images/base/files in sigs.k8s.io/kind@$KIND_VERSION ($KIND_SRC)"
work=$(mktemp -d "${TMPDIR:-/tmp}/kind-image.XXXXXX")
remove_on_exit "$work"

# docker build -t TAG DIR, its log shown only when it fails (the legacy builder's notice otherwise).
build() {
  docker build -q -t "$1" "$2" >/dev/null 2>"$work/build.log" || {
    cat "$work/build.log" >&2
    die "docker build of $1 failed"
  }
}

# Keeps only the newest tag of a repository of ours (each build makes new ones).
prune() {
  local repo="${1%%:*}" ref
  docker image ls --format '{{.Repository}}:{{.Tag}}' "$repo" | while read -r ref; do
    if [[ "$ref" != "$1" ]]; then docker rmi "$ref" >/dev/null 2>&1 || true; fi
  done
}

# 1. The Debian root.
if exists "$root_tag" && [[ "${MEDIA_KIND_REBUILD_IMAGE:-}" != 1 ]]; then
  log "cached: $root_tag"
else
  [[ "$(id -u)" -eq 0 ]] || die "debootstrap needs root; run this as root"
  command -v debootstrap >/dev/null || die "debootstrap is missing (bash scripts/provision.sh k8s installs it)"
  T=$SECONDS
  log "making $root_tag: debootstrap $KIND_DEBIAN_SUITE (minbase, ${#PACKAGES[@]} packages) from $MIRROR…"
  rootfs="$work/rootfs"
  include=$(IFS=, && echo "${PACKAGES[*]}")
  if ! debootstrap --variant=minbase --include="$include" "$KIND_DEBIAN_SUITE" "$rootfs" "$MIRROR" \
    >"$work/debootstrap.log" 2>&1; then
    tail -n 20 "$work/debootstrap.log" >&2
    die "debootstrap failed ($KIND_DEBIAN_SUITE from $MIRROR; set DEBIAN_MIRROR to another mirror)"
  fi
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* \
    "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
  tar -C "$rootfs" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' - "$root_tag" >/dev/null
  rm -rf "$rootfs"
  prune "$root_tag"
  log "made $root_tag in $((SECONDS - T)) s"
fi

# 2. kind's base image.
if exists "$base_tag" && [[ "${MEDIA_KIND_REBUILD_IMAGE:-}" != 1 ]]; then
  log "cached: $base_tag"
else
  T=$SECONDS
  ctx="$work/base"
  mkdir -p "$ctx/bin" "$ctx/cni"
  cp -r --no-preserve=mode "$KIND_SRC/images/base/files" "$ctx/files"
  install -m 755 "$NODE_UNPRIVILEGED" "$ctx/files/kind/bin/node-unprivileged.sh"
  chmod 755 "$ctx"/files/usr/local/bin/* "$ctx"/files/kind/bin/*
  cp "$NODE_BIN"/{containerd,containerd-shim-runc-v2,ctr,runc} "$KIND_BIN/crictl" "$ctx/bin/"
  cp "$KIND_BIN"/{bridge,host-local,loopback,ptp,portmap} "$ctx/cni/"
  # containerd's default OCI spec with kind's hook (the product_uuid mounts) and without rlimits.
  "$NODE_BIN/ctr" oci spec |
    jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' |
    jq 'del(.process.rlimits)' >"$ctx/cri-base.json"
  cat >"$ctx/Dockerfile" <<EOF
FROM $root_tag
COPY files/usr/local/bin/ /usr/local/bin/
COPY files/kind/ /kind/
COPY files/etc/ /etc/
COPY bin/containerd bin/containerd-shim-runc-v2 bin/ctr bin/crictl /usr/local/bin/
COPY bin/runc /usr/local/sbin/runc
COPY cni/ /opt/cni/bin/
COPY cri-base.json /etc/containerd/cri-base.json
RUN find /lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete \\
 && rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \\
      /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \\
      /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/* \\
 && echo ReadKMsg=no >>/etc/systemd/journald.conf \\
 && ln -sf /usr/lib/systemd/systemd /sbin/init \\
 && systemctl enable kubelet.service containerd.service undo-mount-hacks.service \\
 && systemctl mask systemd-binfmt.service \\
 && mkdir -p /etc/kubernetes/manifests \\
 && containerd --version && runc --version
ENV container=docker
STOPSIGNAL SIGRTMIN+3
ENTRYPOINT $ENTRYPOINT
EOF
  build "$base_tag" "$ctx"
  prune "$base_tag"
  log "made $base_tag in $((SECONDS - T)) s"
fi

# 3. The images the node runs, tagged as kubeadm and the manifests name them. Built under our own
# names; the registry names exist only in the archive the node imports (and in the node).
T=$SECONDS
mapfile -t kubeadm_images < <("$KIND_BIN/kubeadm" config images list --kubernetes-version "$K8S_VERSION")
((${#kubeadm_images[@]} > 0)) || die "kubeadm config images list gave nothing"
sandbox=$(sed -n 's/^[[:space:]]*sandbox_image = "\(.*\)"$/\1/p' "$KIND_SRC/images/base/files/etc/containerd/config.toml")
[[ -n "$sandbox" ]] || die "no sandbox_image in kind's containerd config.toml"
storage_go="$KIND_SRC/pkg/build/nodeimage/const_storage.go"
provisioner=$(sed -n 's/^const storageProvisionerImage = "\(.*\)"$/\1/p' "$storage_go")
helper=$(sed -n 's/^const storageHelperImage = "\(.*\)"$/\1/p' "$storage_go")
[[ -n "$provisioner" && -n "$helper" ]] || die "no storage images in $storage_go"
flannel="docker.io/media-service-kind/flannel:$FLANNEL_VERSION"

# component NAME ENTRYPOINT FILE...: an image on the Debian root with FILEs in /usr/local/bin.
declare -A built=()
component() {
  local name="$1" entrypoint="$2" ctx="$work/img-$1"
  shift 2
  mkdir -p "$ctx/bin"
  {
    echo "FROM $root_tag"
    if (($# > 0)); then cp "$@" "$ctx/bin/" && echo "COPY bin/ /usr/local/bin/"; fi
    if [[ -n "$entrypoint" ]]; then echo "ENTRYPOINT [\"$entrypoint\"]"; fi
  } >"$ctx/Dockerfile"
  built[$name]="media-service-kind/$name:$(find "$ctx" -type f -print0 | sort -z | xargs -0 cat | digest)"
  exists "${built[$name]}" || build "${built[$name]}" "$ctx"
  prune "${built[$name]}"
}
component kube-apiserver "" "$CP_BIN/kube-apiserver"
component kube-controller-manager "" "$CP_BIN/kube-controller-manager"
component kube-scheduler "" "$CP_BIN/kube-scheduler"
component kube-proxy "" "$CP_BIN/kube-proxy"
component etcd "" "$CP_BIN/etcd"
component coredns /usr/local/bin/coredns "$NODE_BIN/coredns"
component pause /usr/local/bin/pause "$NODE_BIN/pause"
component local-path-provisioner "" "$KIND_BIN/local-path-provisioner"
# The helper runs the storage ConfigMap's setup and teardown scripts with sh: the root alone.
component local-path-helper ""
component flannel "" "$KIND_BIN/flanneld"

# The registry name of each image the node holds, beside the image of ours it is.
declare -A want=(["$sandbox"]=pause ["$provisioner"]=local-path-provisioner ["$helper"]=local-path-helper
  ["$flannel"]=flannel)
for ref in "${kubeadm_images[@]}"; do
  name=${ref##*/} && name=${name%%:*}
  [[ -n "${built[$name]:-}" ]] || die "kubeadm wants $ref, which this script does not make"
  want[$ref]=$name
done
log "component images ready in $((SECONDS - T)) s: ${!want[*]}"

# 4. The node image.
T=$SECONDS
cid=$(docker run -d --entrypoint=sleep --security-opt seccomp=unconfined "$base_tag" infinity)
trap 'docker rm -f -v "$cid" >/dev/null 2>&1; rm -rf "${_build_remove[@]}"' EXIT
for b in "$KIND_BIN/kubeadm" "$CP_BIN/kubelet" "$KIND_BIN/kubectl"; do
  docker cp "$b" "$cid:/usr/bin/${b##*/}"
done
docker exec "$cid" chown root:root /usr/bin/kubeadm /usr/bin/kubelet /usr/bin/kubectl
printf '%s' "$K8S_VERSION" | docker exec -i "$cid" sh -c 'mkdir -p /kind/manifests && cat >/kind/version'
sed "s#image: FLANNEL_IMAGE#image: $flannel#" "$CNI_MANIFEST" |
  docker exec -i "$cid" sh -c 'cat >/kind/manifests/default-cni.yaml'
# kind's storage manifest as its Go source holds it (a raw string with the two image names spliced in).
awk '/^const defaultStorageManifest = `$/ { f = 1; next } f && /^`$/ { exit } f' "$storage_go" |
  sed "s#\` + storageProvisionerImage + \`#$provisioner#g; s#\` + storageHelperImage + \`#$helper#g" >"$work/storage.yaml"
if ! grep -q 'provisioner: rancher.io/local-path' "$work/storage.yaml" || grep -q '`' "$work/storage.yaml"; then
  die "could not take the storage manifest out of $storage_go"
fi
docker exec -i "$cid" sh -c 'cat >/kind/manifests/default-storage.yaml' <"$work/storage.yaml"

# Under a shell that reaps it when it stops (the container's first process, sleep, reaps nothing).
docker exec -d "$cid" sh -c 'containerd >/dev/null 2>&1; true'
for i in 1 2 3 4 5 6 7 8 9 10; do
  docker exec "$cid" ctr version >/dev/null 2>&1 && break
  ((i < 10)) || die "containerd in the build container did not start"
  sleep 1
done
# One archive with every image (layers shared), under the registry names, then our names again.
for ref in "${!want[@]}"; do docker tag "${built[${want[$ref]}]}" "$ref"; done
docker save "${!want[@]}" | docker exec -i "$cid" ctr --namespace=k8s.io images import \
  --label=io.cri-containerd.pinned=pinned --all-platforms --no-unpack --digests - >/dev/null ||
  die "importing the images into the node's containerd failed"
for ref in "${!want[@]}"; do docker rmi "$ref" >/dev/null; done
docker exec "$cid" ctr --namespace=k8s.io images list -q | grep -v '^sha256:' >&2
docker exec "$cid" pkill -x containerd
for i in $(seq 50); do
  docker exec "$cid" pgrep -x containerd >/dev/null || break
  ((i < 50)) || die "containerd in the build container did not stop"
  sleep 0.2
done
docker commit --change "ENTRYPOINT $ENTRYPOINT" "$cid" "$node_tag" >/dev/null
prune "$node_tag"
log "made $node_tag in $((SECONDS - T)) s ($((SECONDS - started)) s in all)"
print_image
