#!/bin/sh
# The first step of a kind node of build-kind-image.sh's image, before kind's entrypoint. Where the node
# runs without --privileged (docker-unprivileged.sh), /sys and the cgroup mounts are read-only: makes
# them writable, as --privileged has them (systemd and the kubelet make cgroups). Where the node lacks
# CAP_SYS_RESOURCE, no process in it may lower an oom_score_adj, which runc does for every pod the
# kubelet asks a low one for (it then fails: "can't get final child's PID from pipe"): containerd is
# told to keep them no lower than its own (restrict_oom_score_adj, as kind does in a user namespace).
# Nothing otherwise.
set -eu
if awk '$2 == "/sys" { split($4, o, ","); exit o[1] == "ro" ? 0 : 1 }' /proc/mounts; then
  echo "media-service: the node is not privileged; making /sys and the cgroup mounts writable" >&2
  mount -o remount,rw /sys
  awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/mounts | while read -r m; do
    mount -o remount,bind,rw "$m"
  done
fi
effective=$(awk '$1 == "CapEff:" { print $2 }' /proc/self/status)
if [ $((0x$effective >> 24 & 1)) -eq 0 ]; then
  echo "media-service: no CAP_SYS_RESOURCE; containerd keeps oom_score_adj no lower than its own" >&2
  sed -i 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' /etc/containerd/config.toml
fi
exec "$@"
