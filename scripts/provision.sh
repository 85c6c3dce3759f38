#!/usr/bin/env bash
# Installs the system programs media-service needs and this machine lacks, then gets out of the way.
# It is what `npm start`, `npm test`, `npm run bench`, `npm run test:k8s`, `.ci/run` and the image
# build run first, so every one of them takes the path a newcomer takes. When everything is present it
# prints nothing and returns at once.
#
#   scripts/provision.sh start|test|bench|k8s|fresh|contract|browser|versitygw|ci|image
#
#   start  the local stack: redis-server (unless REDIS_URL is set), ffmpeg and ffprobe, a font for
#          watermark text
#   test   start's programs, redis-server always, pgrep (procps) and tmux (a terminal for the CLI's tests)
#   bench  test's programs and the vips command-line tools (the benchmarks compare against them)
#   k8s    openssl (the test control plane's certificates); Docker Engine and debootstrap (the image
#          the test node runs); the CNI plugins, iptables and conntrack (the node's networking); gcc,
#          libc6-dev and libseccomp-dev (runc and the pod sandbox program, built once); Node 24
#   fresh  Docker Engine and debootstrap (test/e2e/fresh-machine.sh)
#   contract  redis-server and Python's venv (test/contract/schemathesis.sh installs Schemathesis)
#   browser  Debian's Chromium, which the dashboard's browser tests (npm run test:browser) drive
#          headless through playwright-core (no browser download: the system's build is used)
#   versitygw  the versitygw S3 gateway (npm run test:s3-compat runs the tests against it, npm run
#          bench compares the embedded store with it), built once
#          from its Go module into ~/.cache/media-service/versitygw-<version>/ (about 10 minutes on
#          2 cores; a Go toolchain is fetched from the Go module proxy when `go` is missing or too old)
#   ci     all of the above but versitygw, which npm run test:s3-compat builds in its own CI step
#   image  what the container image runs: start's programs, tini, CA certificates, and the shared
#          libraries of the image's own ffmpeg build (MP3, Opus, Vorbis, AV1, WebP); the Dockerfile
#          puts that ffmpeg in place first, so Debian's ffmpeg package is not installed there
#
# Debian and Ubuntu: apt-get, as root or through passwordless sudo. macOS: Homebrew. Anywhere else, or
# without the rights to install, it stops with the one command to run.
# MEDIA_SERVICE_PROVISION=check only checks: it names what is missing and how to install it, and fails.
set -euo pipefail

profile="${1:-}"
case "$profile" in
  start | test | bench | k8s | fresh | contract | browser | versitygw | ci | image) ;;
  *)
    echo "usage: scripts/provision.sh start|test|bench|k8s|fresh|contract|browser|versitygw|ci|image" >&2
    exit 2
    ;;
esac

NODE_TARGET=24
say() { printf 'media-service: %s\n' "$*" >&2; }

case "$profile" in
  start | test) what="npm $profile" ;;
  bench) what="npm run bench" ;;
  k8s) what="npm run test:k8s" ;;
  fresh) what="test/e2e/fresh-machine.sh" ;;
  contract) what="test/contract/schemathesis.sh" ;;
  browser) what="npm run test:browser" ;;
  versitygw) what="npm run test:s3-compat" ;;
  ci) what=".ci/run" ;;
  image) what="the container image" ;;
esac

# ---- Node ----------------------------------------------------------------------------------------
node_version="$(node -p 'process.versions.node' 2>/dev/null || echo none)"
node_major="${node_version%%.*}"
if [[ "$profile" != image && "$profile" != fresh && "$profile" != versitygw && "$node_major" != "$NODE_TARGET" ]]; then
  if [[ "$profile" == k8s || "$profile" == ci ]] && { [[ "$node_major" == none ]] || ((node_major < NODE_TARGET)); }; then
    say "$what needs Node ${NODE_TARGET} (this is Node ${node_version}; the Kubernetes client does not load on older ones): install Node ${NODE_TARGET} from https://nodejs.org or your version manager (nvm install ${NODE_TARGET})"
    exit 1
  fi
  # npm start and npm test run this under Node 24 (scripts/node.sh fetches it when the machine's Node
  # is older); run by hand under another Node, it says so.
  if [[ "$node_major" == none ]] || ((node_major < NODE_TARGET)); then
    say "media-service targets Node ${NODE_TARGET}; this is Node ${node_version} (npm start and npm test run under Node ${NODE_TARGET}, fetched by scripts/node.sh when needed)"
  fi
fi

# ---- versitygw -----------------------------------------------------------------------------------
# An S3 gateway other than our embedded store, for the tests run against an outside object store and
# the benchmarks that compare the two. Built once with `go install` from its Go module through the Go
# module proxy (no git clone), as the test control plane's binaries are (scripts/k8s/), and cached
# outside the repository; test/support/versitygw.ts looks for it in the same place.
VERSITYGW_VERSION=1.8.0
VERSITYGW_MIN_GO=1.25.0 # its go.mod's `go` line
if [[ "$profile" == versitygw ]]; then
  vgw_dir="${XDG_CACHE_HOME:-$HOME/.cache}/media-service/versitygw-${VERSITYGW_VERSION}"
  vgw_module="github.com/versity/versitygw/cmd/versitygw@v${VERSITYGW_VERSION}"
  [[ -x "$vgw_dir/versitygw" ]] && exit 0
  if [[ "${MEDIA_SERVICE_PROVISION:-}" == check ]]; then
    say "versitygw ${VERSITYGW_VERSION} is not built (no $vgw_dir/versitygw); to build it: GOBIN=$vgw_dir go install $vgw_module"
    exit 1
  fi
  log() { say "$*"; }
  die() {
    say "$*"
    exit 1
  }
  # shellcheck source=scripts/k8s/go-toolchain.sh
  source "$(dirname "${BASH_SOURCE[0]}")/k8s/go-toolchain.sh"
  mkdir -p "$vgw_dir"
  # One build at a time (parallel runs wait for the first one).
  exec 9>"$vgw_dir/.lock"
  if ! flock -n 9; then
    say "another run is building versitygw; waiting ..."
    flock 9
  fi
  [[ -x "$vgw_dir/versitygw" ]] && exit 0
  ensure_go "$VERSITYGW_MIN_GO" go1.26.8 "${XDG_CACHE_HOME:-$HOME/.cache}/media-service/go"
  log="$(mktemp "${TMPDIR:-/tmp}/media-service-versitygw.XXXXXX")"
  partial="$(mktemp -d "$vgw_dir/partial.XXXXXX")"
  say "building versitygw ${VERSITYGW_VERSION} with $(go env GOVERSION) into $vgw_dir (once; about 10 minutes on 2 cores; output in $log) ..."
  started=$SECONDS
  if ! GOBIN="$partial" go install "$vgw_module" >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    rm -rf "$partial"
    say "building versitygw failed (the whole output is in $log); to do it by hand: GOBIN=$vgw_dir go install $vgw_module"
    exit 1
  fi
  mv "$partial/versitygw" "$vgw_dir/versitygw"
  rm -rf "$partial" "$log"
  say "built versitygw ${VERSITYGW_VERSION} in $((SECONDS - started)) s"
  exit 0
fi

# ---- What each profile needs ---------------------------------------------------------------------
# One line a requirement: id | Debian/Ubuntu package | Homebrew formula ("-": none) | why it is needed.
# Each id has a check_<id> function below that succeeds when the machine has it.
REQUIREMENTS='
redis       | redis-server      | redis   | the job store that start runs for itself (not needed when REDIS_URL is set)
ffmpeg      | ffmpeg            | ffmpeg  | video thumbnails, audio conversion and analyze (ffmpeg and ffprobe)
font        | fonts-dejavu-core | -       | the font watermark text is drawn with
procps      | procps            | -       | the tests look for left-over processes with pgrep
tmux        | tmux              | tmux    | the CLI tests draw progress bars on a terminal that tmux provides
vips        | libvips-tools     | vips    | the benchmarks compare against vipsthumbnail
openssl     | openssl           | openssl | the test control plane makes its certificates with openssl
tini        | tini              | -       | the container image runs media-service under tini
certs       | ca-certificates   | -       | the container image reaches HTTPS object stores and AI providers
docker      | docker.io         | -       | the fresh-machine test runs the README in a bare Debian container
debootstrap | debootstrap       | -       | the fresh-machine test makes its bare Debian image
pyvenv      | python3-venv      | python  | the contract test installs Schemathesis into a Python virtual environment
chromium    | chromium          | -       | the dashboard browser tests drive headless Chromium through playwright-core
lame        | libmp3lame0       | -       | the image ffmpeg encodes MP3 with LAME
opus        | libopus0          | -       | the image ffmpeg encodes Opus with libopus
vorbis      | libvorbisenc2     | -       | the image ffmpeg encodes Vorbis with libvorbis
dav1d       | libdav1d6         | -       | the image ffmpeg decodes AV1 with dav1d
webp        | libwebp7          | -       | the image ffmpeg writes WebP thumbnails with libwebp
x264        | libx264-164       | -       | the image ffmpeg encodes H.264 with x264
x265        | libx265-199       | -       | the image ffmpeg encodes H.265 with x265
vpx         | libvpx7           | -       | the image ffmpeg encodes VP9 with libvpx
svtav1      | libsvtav1enc1     | -       | the image ffmpeg encodes AV1 with SVT-AV1
cni         | containernetworking-plugins | - | the test node connects its pods (bridge, host-local, loopback, portmap)
iptables    | iptables          | -       | the test node routes Services (kube-proxy) and lets pod traffic through
conntrack   | conntrack         | -       | kube-proxy clears stale UDP flows (cluster DNS) with conntrack
seccomp     | libseccomp-dev    | -       | the test node builds runc with seccomp
cc          | gcc               | -       | the test node builds runc (cgo) and the pod sandbox program
libc        | libc6-dev         | -       | the pod sandbox program is linked statically
'
have() { command -v "$1" >/dev/null 2>&1; }
check_redis() { have redis-server; }
check_ffmpeg() { have ffmpeg && have ffprobe; }
# runner/image/text.ts draws with DejaVu Sans Bold (Debian, Ubuntu) or, on macOS, the system's Arial Bold.
check_font() {
  [ -f /usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf ] ||
    [ -f "/System/Library/Fonts/Supplemental/Arial Bold.ttf" ]
}
check_procps() { have pgrep; }
check_tmux() { have tmux; }
check_vips() { have vips && have vipsthumbnail; }
check_openssl() { have openssl; }
check_tini() { have tini; }
check_certs() { [ -s /etc/ssl/certs/ca-certificates.crt ]; }
check_docker() { have dockerd && have docker; }
check_debootstrap() { have debootstrap; }
check_cni() { [ -x /usr/lib/cni/bridge ] || [ -x /opt/cni/bin/bridge ]; }
check_iptables() { have iptables || [ -x /usr/sbin/iptables ]; }
check_conntrack() { have conntrack || [ -x /usr/sbin/conntrack ]; }
check_seccomp() { [ -f /usr/include/seccomp.h ]; }
check_cc() { have gcc; }
check_libc() { [ -f /usr/lib/x86_64-linux-gnu/libc.a ] || [ -f /usr/lib/aarch64-linux-gnu/libc.a ] || [ -f /usr/lib/libc.a ]; }
check_chromium() { have chromium || [ -x /usr/bin/chromium ]; }
check_pyvenv() { have python3 && python3 -c 'import venv, ensurepip' >/dev/null 2>&1; }
# A shared library the dynamic linker finds (ldconfig's cache: /sbin is not on every user's PATH).
have_lib() {
  local cache
  cache="$(ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true)"
  [[ "$cache" == *[[:space:]]"$1 ("* ]]
}
check_lame() { have_lib libmp3lame.so.0; }
check_opus() { have_lib libopus.so.0; }
check_vorbis() { have_lib libvorbisenc.so.2; }
check_dav1d() { have_lib libdav1d.so.6; }
check_webp() { have_lib libwebp.so.7; }
check_x264() { have_lib libx264.so.164; }
check_x265() { have_lib libx265.so.199; }
check_vpx() { have_lib libvpx.so.7; }
check_svtav1() { have_lib libSvtAv1Enc.so.1; }

case "$profile" in
  start)
    wanted=(ffmpeg font)
    [[ -n "${REDIS_URL:-}" ]] || wanted=(redis "${wanted[@]}")
    ;;
  test) wanted=(redis ffmpeg font procps tmux) ;;
  bench) wanted=(redis ffmpeg font procps tmux vips) ;;
  k8s) wanted=(openssl docker debootstrap cni iptables conntrack seccomp cc libc) ;;
  fresh) wanted=(docker debootstrap) ;;
  contract) wanted=(redis pyvenv) ;;
  browser) wanted=(chromium) ;;
  ci) wanted=(redis ffmpeg font procps tmux vips openssl docker debootstrap pyvenv chromium cni iptables conntrack seccomp cc libc) ;;
  image) wanted=(redis ffmpeg font tini certs lame opus vorbis dav1d webp x264 x265 vpx svtav1) ;;
esac

field() {
  awk -F'|' -v id="$1" -v n="$2" '{ gsub(/^ +| +$/, "", $1) } $1 == id { gsub(/^ +| +$/, "", $n); print $n }' <<<"$REQUIREMENTS"
}
missing_of() {
  local id
  for id in "$@"; do "check_$id" || printf '%s\n' "$id"; done
}

# (Word splitting on purpose: ids have no spaces, and macOS's bash 3.2 has no mapfile.)
# shellcheck disable=SC2207
missing=($(missing_of "${wanted[@]}"))
[[ ${#missing[@]} -eq 0 ]] && exit 0

# ---- How to install here -------------------------------------------------------------------------
os="$(uname -s)"
manager=""
if [[ "$os" == Linux ]] && have apt-get; then
  manager=apt
  column=2
elif [[ "$os" == Darwin ]]; then
  manager=brew
  column=3
fi

packages=()
unavailable=()
say "this machine lacks what $what needs:"
for id in "${missing[@]}"; do
  package=""
  [[ -n "$manager" ]] && package="$(field "$id" "$column")"
  printf '  %-18s %s\n' "${package:-$id}" "$(field "$id" 4)" >&2
  if [[ -n "$package" && "$package" != - ]]; then packages+=("$package"); else unavailable+=("$id"); fi
done

if [[ -z "$manager" || ${#unavailable[@]} -gt 0 ]]; then
  say "no installer known here ($os) for: ${unavailable[*]:-${missing[*]}}; install it with the system's package manager, then run the command again"
  exit 1
fi
if [[ "$manager" == apt ]]; then
  hint="sudo apt-get update && sudo apt-get install -y --no-install-recommends ${packages[*]}"
  runner=()
  if [[ "$(id -u)" -ne 0 ]]; then
    if have sudo && sudo -n true 2>/dev/null; then runner=(sudo -n); else runner=(none); fi
  fi
  [[ ${#runner[@]} -gt 0 ]] || runner=(env)
else
  hint="brew install ${packages[*]}"
  runner=()
  if ! have brew; then
    runner=(none)
    hint="install Homebrew (https://brew.sh), then: $hint"
  fi
fi

if [[ "${MEDIA_SERVICE_PROVISION:-}" == check || "${runner[*]:-}" == none ]]; then
  why="to install them"
  [[ "${runner[*]:-}" == none && "$manager" == apt ]] && why="this user cannot install packages (not root, no passwordless sudo); run"
  say "$why: $hint"
  exit 1
fi

log="$(mktemp "${TMPDIR:-/tmp}/media-service-provision.XXXXXX")"
say "installing ${packages[*]} with ${manager} (output in $log) ..."
started=$SECONDS
if [[ "$manager" == apt ]]; then
  export DEBIAN_FRONTEND=noninteractive
  # The lock timeout covers apt-daily/unattended-upgrades still running on a freshly booted machine.
  if ! { "${runner[@]}" apt-get -o DPkg::Lock::Timeout=600 update -q &&
    "${runner[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${packages[@]}"; } >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    say "installing failed (the whole output is in $log); to do it by hand: $hint"
    exit 1
  fi
else
  if ! HOMEBREW_NO_AUTO_UPDATE=1 brew install "${packages[@]}" >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    say "installing failed (the whole output is in $log); to do it by hand: $hint"
    exit 1
  fi
fi

# shellcheck disable=SC2207
still=($(missing_of "${missing[@]}"))
if [[ ${#still[@]} -gt 0 ]]; then
  say "still missing after the install: ${still[*]} (see $log)"
  exit 1
fi
rm -f "$log"
say "installed ${packages[*]} in $((SECONDS - started)) s"
