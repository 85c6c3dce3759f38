# shellcheck shell=bash
# What scripts/k8s/build-*.sh share. Each builds programs once, from Go modules through the Go module
# proxy, into a bin directory cached outside the repository, BIN_DIR (<cache root>/<version>/bin), with
# a stamp file BIN_DIR/.stamp whose first line names what was built and the stamp format; a second run
# only checks the stamp. Sourced, not executed, under `set -euo pipefail`; it brings in go-toolchain.sh
# (version_ge, ensure_go) and defines the `log` and `die` that it and the scripts use.
#
# The caller sets CACHE_ROOT (the cache root, which holds .lock), BIN_DIR and BINARIES (the programs
# a good cache has in BIN_DIR), then describes its cache once:
#
#   build_cache_init --log TAG --stamp LINE [--rebuild-var VAR] --print-var VAR --print PATH
#                    --subject PATH [--details]
#     TAG          log lines start with [TAG]
#     LINE         the stamp's first line; a cache is good when it matches and BINARIES are there
#     --rebuild-var  the variable that, set to 1, makes every cache stale (MEDIA_..._REBUILD)
#     --print-var  the variable that, set to 1, makes print_bin print PATH on stdout (MEDIA_..._PRINT_BIN)
#     --subject    the path the "cached" log lines name; --details adds the stamp's other lines to
#                  the first one
#
# and then calls, in this order:
#
#   exit_if_cached            when the cache is good: logs "cached: SUBJECT", print_bin, exit 0
#   lock_cache                makes CACHE_ROOT and takes its .lock on fd 9 until the script ends
#                             (waiting for a build in progress), then, when that build made the
#                             cache, logs "cached (built by a concurrent run): SUBJECT", print_bin, exit 0
#   use_go MIN_GO TOOLCHAIN DIR GOFLAGS
#                             ensure_go, then exports GOFLAGS and sets GO_VERSION (go env GOVERSION)
#   new_bin_dir               NEW_BIN: an empty directory beside BIN_DIR to build into, removed on exit
#                             unless install_bin_dir moved it
#   install_bin_dir LINE...   writes the stamp (its first line, then LINEs) into NEW_BIN and swaps
#                             NEW_BIN in as BIN_DIR, so an interrupted build never leaves half a cache
#   print_bin                 prints the --print PATH on stdout when the --print-var is 1
#
# and, where they need them:
#
#   now, elapsed T            a timestamp; the time since T as "12.3s"
#   remove_on_exit PATH...    removes PATHs (rm -rf) when the script exits
#   mod_json_field NAME       the string field NAME of `go mod download -json` on stdin
#   download_module MODULE@VERSION MIN_GO_VAR
#                             downloads it through the module proxy (MOD_JSON: the answer, MOD_GOMOD:
#                             its go.mod) and checks GO_VERSION against its go.mod's `go` line
#                             (NEEDED_GO), naming MIN_GO_VAR as the setting that picks another Go
#   module_commit             the commit the proxy recorded for the downloaded module's tag
#                             (Origin.Hash in MOD_JSON), or nothing
#   k8s_version_ldflags VERSION
#                             the -X flags that give a k8s.io/kubernetes program its version
#   refuse_replace WHAT       dies when the downloaded go.mod (MOD_GOMOD) has replace directives,
#                             which `go install WHAT/...@version` refuses

# shellcheck source=scripts/k8s/go-toolchain.sh
source "$(dirname "${BASH_SOURCE[0]}")/go-toolchain.sh"

log() { printf '[%s] %s\n' "$_build_log_tag" "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

_build_log_tag=build
_build_stamp_head=""
_build_rebuild_var=""
_build_print_var=""
_build_print=""
_build_subject=""
_build_details=""
_build_remove=()

build_cache_init() {
  while (($# > 0)); do
    case "$1" in
      --log) _build_log_tag="$2" && shift 2 ;;
      --stamp) _build_stamp_head="$2" && shift 2 ;;
      --rebuild-var) _build_rebuild_var="$2" && shift 2 ;;
      --print-var) _build_print_var="$2" && shift 2 ;;
      --print) _build_print="$2" && shift 2 ;;
      --subject) _build_subject="$2" && shift 2 ;;
      --details) _build_details=1 && shift ;;
      *) die "build_cache_init: unknown option $1" ;;
    esac
  done
}

print_bin() {
  if [[ -n "$_build_print_var" && "${!_build_print_var:-}" == 1 ]]; then
    printf '%s\n' "$_build_print"
  fi
}

# True when BIN_DIR holds a finished build of what the stamp line names (and no rebuild is asked for).
cache_is_good() {
  local stamp="$BIN_DIR/.stamp" b
  [[ -z "$_build_rebuild_var" || "${!_build_rebuild_var:-}" != 1 ]] || return 1
  [[ -f "$stamp" ]] || return 1
  grep -qx "$_build_stamp_head" <(head -n1 "$stamp") || return 1
  for b in "${BINARIES[@]}"; do [[ -x "$BIN_DIR/$b" ]] || return 1; done
}

exit_if_cached() {
  cache_is_good || return 0
  if [[ -n "$_build_details" ]]; then
    log "cached: $_build_subject ($(tail -n +2 "$BIN_DIR/.stamp" | tr '\n' ' '))"
  else
    log "cached: $_build_subject"
  fi
  print_bin
  exit 0
}

# One build at a time per cache (parallel runs wait for the first one, then find its cache).
lock_cache() {
  mkdir -p "$CACHE_ROOT"
  exec 9>"$CACHE_ROOT/.lock"
  if ! flock -n 9; then
    log "another build holds $CACHE_ROOT/.lock; waiting…"
    flock 9
  fi
  cache_is_good || return 0
  log "cached (built by a concurrent run): $_build_subject"
  print_bin
  exit 0
}

use_go() {
  ensure_go "$1" "$2" "$3"
  export GOFLAGS="$4"
  GO_VERSION=$(go env GOVERSION)
}

remove_on_exit() {
  _build_remove+=("$@")
  trap 'rm -rf "${_build_remove[@]}"' EXIT
}

new_bin_dir() {
  mkdir -p "${BIN_DIR%/*}"
  NEW_BIN=$(mktemp -d "${BIN_DIR%/*}/bin.new.XXXXXX")
  chmod 755 "$NEW_BIN"
  remove_on_exit "$NEW_BIN"
}

install_bin_dir() {
  printf '%s\n' "$_build_stamp_head" "$@" >"$NEW_BIN/.stamp"
  rm -rf "$BIN_DIR.old"
  if [[ -d "$BIN_DIR" ]]; then mv "$BIN_DIR" "$BIN_DIR.old"; fi
  mv "$NEW_BIN" "$BIN_DIR"
  rm -rf "$BIN_DIR.old"
}

mod_json_field() { sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}\$/\1/p"; }

download_module() {
  local module="$1" min_go_var="$2" t
  t=$(now)
  MOD_JSON=$(go mod download -json "$module") || die "cannot download $module through $(go env GOPROXY)"
  MOD_GOMOD=$(mod_json_field GoMod <<<"$MOD_JSON")
  [[ -f "$MOD_GOMOD" ]] || die "no go.mod path in: $MOD_JSON"
  log "downloaded $module ($(elapsed "$t"))"
  NEEDED_GO=$(awk '$1 == "go" { print $2; exit }' "$MOD_GOMOD")
  if ! version_ge "${GO_VERSION#go}" "$NEEDED_GO"; then
    die "$module needs Go >= $NEEDED_GO, found $GO_VERSION (set $min_go_var=$NEEDED_GO)"
  fi
}

module_commit() { sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]\{40\}\)",\{0,1\}$/\1/p' <<<"$MOD_JSON" | head -n1; }

refuse_replace() {
  if grep -Eq '^[[:space:]]*replace([[:space:]]|\(|$)' "$MOD_GOMOD"; then
    die "$1's go.mod has replace directives; \`go install\` cannot build it as is"
  fi
}

k8s_version_ldflags() {
  local minor=${1#v1.} pkg flags=""
  minor=${minor%%.*}
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    flags+=" -X $pkg.gitVersion=$1 -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  printf '%s\n' "${flags# }"
}
