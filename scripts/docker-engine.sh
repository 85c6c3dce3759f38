#!/usr/bin/env bash
# Makes sure a Docker Engine answers: installs it when missing (scripts/provision.sh fresh, which
# brings debootstrap too) and starts the daemon when it is not running (systemd where there is one,
# else dockerd in the background with its log in /var/log/media-service-dockerd.log). Returns at
# once when `docker info` works, so it needs root only for what it has to do.
#
# Used by scripts/build-image.sh and test/e2e/fresh-machine.sh. Messages go to stderr.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DOCKERD_LOG=/var/log/media-service-dockerd.log
# shellcheck source=scripts/lib.sh
source "$ROOT/scripts/lib.sh"

docker info >/dev/null 2>&1 && exit 0

if ! command -v docker >/dev/null 2>&1 || ! command -v dockerd >/dev/null 2>&1; then
  bash "$ROOT/scripts/provision.sh" fresh
fi
docker info >/dev/null 2>&1 && exit 0

if [[ "$(id -u)" -ne 0 ]]; then
  say "the Docker daemon is not running, or this user may not use it; start it (sudo systemctl start docker) or add yourself to the docker group"
  exit 1
fi
if [[ -d /run/systemd/system ]]; then
  say "starting the Docker daemon (systemctl start docker)"
  systemctl start docker
else
  say "starting dockerd (log: $DOCKERD_LOG)"
  nohup dockerd >"$DOCKERD_LOG" 2>&1 &
fi
for _ in $(seq 60); do
  docker info >/dev/null 2>&1 && exit 0
  sleep 1
done
say "the Docker daemon did not start within 60 s (see $DOCKERD_LOG or journalctl -u docker)"
exit 1
