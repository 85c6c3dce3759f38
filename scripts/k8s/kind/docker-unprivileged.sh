#!/usr/bin/env bash
# `docker` for kind on a machine whose capability bounding set lacks a capability (CAP_SYS_RESOURCE on
# some virtual machines). Docker Engine 20.10 gives a --privileged container every capability it knows,
# whatever the bounding set, and runc then fails ("unable to apply caps: operation not permitted"). kind
# runs its nodes with `docker run --privileged` and its commands in them with `docker exec --privileged`;
# this runs them with what --privileged means less the missing capabilities: every other capability, no
# seccomp, AppArmor or masked paths, every device allowed, /dev/kmsg (the kubelet reads it). The
# node image's first step (node-unprivileged.sh) makes /sys and the cgroup mounts writable, as
# --privileged has them, and copes with the missing capability. `docker exec` runs with the
# container's own capabilities.
#
# test/e2e/kind.sh puts it first on PATH, named docker, for kind's commands only, and only where
# `docker run --privileged` fails so; KIND_REAL_DOCKER is the Docker CLI it calls.
set -euo pipefail

real=${KIND_REAL_DOCKER:?KIND_REAL_DOCKER names the Docker CLI}
# Capabilities by number (capability.h), those Docker Engine 20.10 knows.
names=(CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE
  NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT
  SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE
  AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ)
bounding=$((16#$(awk '$1 == "CapBnd:" { print $2 }' /proc/self/status)))
privileged=(--cap-add=ALL)
for i in "${!names[@]}"; do
  if ((((bounding >> i) & 1) == 0)); then privileged+=("--cap-drop=${names[$i]}"); fi
done
privileged+=(--security-opt=seccomp=unconfined --security-opt=apparmor=unconfined
  --security-opt=systempaths=unconfined "--device-cgroup-rule=a *:* rwm" --device=/dev/kmsg)

args=()
for arg in "$@"; do
  if [[ "$arg" != --privileged ]]; then
    args+=("$arg")
  elif [[ "${1:-}" == run ]]; then
    args+=("${privileged[@]}")
  fi
done
exec "$real" "${args[@]}"
