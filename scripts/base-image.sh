#!/usr/bin/env bash
# Makes a bare Debian 12 image with Node 24 and npm, without any container registry: debootstrap's
# minbase of bookworm from the Debian mirror, Node from the npm registry's node-linux-<arch> package
# (bin/node only) and npm from its own package, imported with `docker import`. Its APT sources are
# those of Debian's own images (bookworm, bookworm-updates, bookworm-security).
#
#   scripts/base-image.sh [REFERENCE]
#
# Prints the image's reference on stdout (messages go to stderr). With REFERENCE (scripts/build-image.sh
# passes node:24-bookworm-slim when the registry is out of reach) the image is made under that name
# unless it exists already, and also tagged with the versioned name below. Without it, the name is
# media-service-base/debian12:node<version>-npm<version>, from the newest Node 24 and npm 11 in the
# npm registry (test/e2e/fresh-machine.sh uses that), so a new Node release makes a new image.
#
# Needs root and debootstrap (scripts/provision.sh fresh) when it has to make the image; Node and npm
# on the host (npm pack fetches the packages, through the host's npm configuration and proxies).
#
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian), DEBIAN_SECURITY_MIRROR (default
# http://deb.debian.org/debian-security; empty: no security suite).
set -euo pipefail

NODE_MAJOR=24
NPM_MAJOR=11
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SECURITY_MIRROR="${DEBIAN_SECURITY_MIRROR-http://deb.debian.org/debian-security}"
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CACHE="$MEDIA_CACHE/base-image"

wanted="${1:-}"
if [[ -n "$wanted" ]] && docker image inspect "$wanted" >/dev/null 2>&1; then
  printf '%s\n' "$wanted"
  exit 0
fi

case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) die "no node-linux package for $(uname -m)" ;;
esac
command -v npm >/dev/null 2>&1 || die "npm is needed on this machine to fetch node-linux-${arch}@${NODE_MAJOR} and npm@${NPM_MAJOR}"
mkdir -p "$CACHE"
node_tgz="$CACHE/$(cd "$CACHE" && npm pack --silent "node-linux-${arch}@${NODE_MAJOR}" 2>/dev/null | tail -n1)"
npm_tgz="$CACHE/$(cd "$CACHE" && npm pack --silent "npm@${NPM_MAJOR}" 2>/dev/null | tail -n1)"
[[ -f "$node_tgz" && -f "$npm_tgz" ]] ||
  die "could not fetch node-linux-${arch}@${NODE_MAJOR} and npm@${NPM_MAJOR} from the npm registry ($(npm config get registry 2>/dev/null))"
node_version="$(basename "$node_tgz" .tgz)" && node_version="${node_version##*-}"
npm_version="$(basename "$npm_tgz" .tgz)" && npm_version="${npm_version##*-}"
versioned="media-service-base/debian12:node${node_version}-npm${npm_version}"

if docker image inspect "$versioned" >/dev/null 2>&1; then
  say "bare image $versioned (cached)"
else
  [[ "$(id -u)" -eq 0 ]] || die "making the bare image needs root (debootstrap); run this as root, or pull an image with Node ${NODE_MAJOR}"
  command -v debootstrap >/dev/null 2>&1 || die "debootstrap is missing (bash scripts/provision.sh fresh installs it)"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  rootfs="$work/rootfs"
  say "making $versioned: debootstrap bookworm (minbase) from $MIRROR, Node ${node_version}, npm ${npm_version} ..."
  started=$SECONDS
  if ! debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1; then
    tail -n 20 "$work/debootstrap.log" >&2
    die "debootstrap failed (bookworm from $MIRROR; set DEBIAN_MIRROR to another mirror)"
  fi
  {
    printf 'Types: deb\nURIs: %s\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$MIRROR"
    if [[ -n "$SECURITY_MIRROR" ]]; then
      printf '\nTypes: deb\nURIs: %s\nSuites: bookworm-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$SECURITY_MIRROR"
    fi
  } >"$rootfs/etc/apt/sources.list.d/debian.sources"
  rm -f "$rootfs/etc/apt/sources.list"
  mkdir -p "$rootfs/usr/local/lib/node_modules/npm" "$work/node"
  tar -xzf "$node_tgz" -C "$work/node" --strip-components=1
  install -m 755 "$work/node/bin/node" "$rootfs/usr/local/bin/node"
  tar -xzf "$npm_tgz" -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "LABEL org.opencontainers.image.description=\"Debian 12 minbase with Node ${node_version} and npm ${npm_version}, made by media-service's scripts/base-image.sh\"" \
    --change 'CMD ["bash"]' - "$versioned" >/dev/null
  say "made $versioned in $((SECONDS - started)) s"
fi

if [[ -n "$wanted" ]]; then
  docker tag "$versioned" "$wanted"
  printf '%s\n' "$wanted"
else
  printf '%s\n' "$versioned"
fi
