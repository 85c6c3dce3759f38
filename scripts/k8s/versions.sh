# shellcheck shell=bash
# shellcheck disable=SC2034 # read by the scripts that source this
# The versions of what scripts/k8s/build-*.sh build, in one place (sourced by build-control-plane.sh,
# build-node.sh, build-kind.sh and build-kind-image.sh). Each can be overridden from the environment by
# the MEDIA_* variable it is read from.

# Kubernetes (the control plane, kubelet, kube-proxy, kubeadm, kubectl; pause from its source).
K8S_VERSION="${MEDIA_K8S_VERSION:-v1.36.3}"
# The node's container runtime. Debian 12's containerd is 1.6, and Kubernetes 1.36 needs containerd
# >= 2.0; 2.2 is the newest line that keeps cgroup v1 supported (its maintained branch does until
# 2029), which this kind of machine runs.
CONTAINERD_VERSION="${MEDIA_CONTAINERD_VERSION:-v2.2.9}"
RUNC_VERSION="${MEDIA_RUNC_VERSION:-v1.3.6}"
COREDNS_VERSION="${MEDIA_COREDNS_VERSION:-v1.14.7}"
# The Go toolchain fetched from the module proxy (golang.org/toolchain) when `go` is missing or older
# than a module asks for.
GO_TOOLCHAIN="${MEDIA_K8S_GO_TOOLCHAIN:-go1.26.8}"

# kind (sigs.k8s.io/kind: the CLI, and the node image's files from the same module) and what its node
# image holds beside the above: crictl, the CNI plugins, the pod network (flannel) and the storage
# provisioner (local-path-provisioner; kind's v0.33.0 ships v0.0.34, the module proxy's newest is
# v0.0.30). The module proxy refuses some versions of the tencentcloud-sdk-go modules flannel needs
# (for its Tencent Cloud backend): v0.28.10's vpc module, v0.28.4's common module; so flannel v0.28.4,
# with the common module lifted to a version the proxy serves.
KIND_VERSION="${MEDIA_KIND_VERSION:-v0.33.0}"
CRICTL_VERSION="${MEDIA_CRICTL_VERSION:-v1.36.0}"
CNI_PLUGINS_VERSION="${MEDIA_CNI_PLUGINS_VERSION:-v1.9.1}"
FLANNEL_VERSION="${MEDIA_FLANNEL_VERSION:-v0.28.4}"
FLANNEL_TENCENT_COMMON_VERSION="${MEDIA_FLANNEL_TENCENT_COMMON_VERSION:-v1.3.190}"
LOCAL_PATH_VERSION="${MEDIA_LOCAL_PATH_VERSION:-v0.0.30}"
# The Debian release of kind's base image (upstream's is trixie; bookworm's systemd 252 still boots on
# cgroup v1 hosts; systemd 256 and later, trixie's among them, refuse to unless forced).
KIND_DEBIAN_SUITE="${MEDIA_KIND_DEBIAN_SUITE:-bookworm}"
