# shellcheck shell=bash
# Go toolchain bootstrap shared by scripts/k8s/build-*.sh (through lib.sh) and scripts/provision.sh
# (versitygw). Sourced, not executed; the caller defines `log` and `die` (and runs under
# `set -euo pipefail`).
#
#   version_ge A B                  true when version A >= version B (sort -V order, no "go" prefix)
#   ensure_go MIN_GO TOOLCHAIN DIR  makes `go` on PATH a Go >= MIN_GO and exports GOTOOLCHAIN=local
#
# When `go` is missing or too old (e.g. Debian's golang-go), the official toolchain TOOLCHAIN (e.g.
# go1.26.8) is fetched from the Go module proxy as the module golang.org/toolchain — the same download
# `GOTOOLCHAIN=goX.Y.Z` makes — unpacked under DIR and put first on PATH (with GOROOT).

version_ge() { [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" == "$2" ]]; }

ensure_go() {
  local min_go="$1" bootstrap="$2" dir="$3"
  local have=""
  if command -v go >/dev/null; then have=$(GOTOOLCHAIN=local go env GOVERSION 2>/dev/null || true); fi
  if [[ -n "$have" ]] && version_ge "${have#go}" "$min_go"; then
    export GOTOOLCHAIN=local
    return
  fi
  local arch
  case "$(uname -m)" in
    x86_64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) die "no Go toolchain >= $min_go and no official toolchain for $(uname -m)" ;;
  esac
  local os
  os=$(uname -s | tr '[:upper:]' '[:lower:]')
  local name="v0.0.1-$bootstrap.$os-$arch"
  local root="$dir/$bootstrap.$os-$arch"
  local goroot="$root/golang.org/toolchain@$name"
  if [[ ! -x "$goroot/bin/go" ]]; then
    local proxy
    # First real proxy in GOPROXY (entries are separated by ',' or '|').
    # shellcheck disable=SC2020
    proxy=$(tr ',|' '\n\n' <<<"${GOPROXY:-https://proxy.golang.org}" | grep -Ev '^(direct|off)$' | head -n1)
    [[ -n "$proxy" ]] || proxy=https://proxy.golang.org
    local why="no Go on PATH"
    [[ -z "$have" ]] || why="Go $have is older than $min_go"
    log "$why: fetching $bootstrap from $proxy (golang.org/toolchain@$name)"
    command -v curl >/dev/null || die "curl is needed to fetch the Go toolchain"
    command -v unzip >/dev/null || die "unzip is needed to unpack the Go toolchain (apt-get install -y unzip)"
    rm -rf "$root.partial" && mkdir -p "$root.partial"
    curl -fsSL --retry 3 -o "$root.partial/toolchain.zip" "$proxy/golang.org/toolchain/@v/$name.zip" ||
      die "could not download $proxy/golang.org/toolchain/@v/$name.zip"
    unzip -q "$root.partial/toolchain.zip" -d "$root.partial"
    rm "$root.partial/toolchain.zip"
    # Module zips carry no file modes; cmd/go sets these bits the same way when it switches toolchains.
    chmod -R a+x "$root.partial/golang.org/toolchain@$name/bin" "$root.partial/golang.org/toolchain@$name/pkg/tool"
    rm -rf "$root" && mv "$root.partial" "$root"
  fi
  export PATH="$goroot/bin:$PATH" GOROOT="$goroot" GOTOOLCHAIN=local
  log "using $(go env GOVERSION) from $goroot"
}
