# Sourced by the scripts that run on the host (base-image.sh, build-image.sh, docker-engine.sh): their
# messages on stderr and the project's cache directory. provision.sh and build-ffmpeg.sh are copied
# alone into the image's build stages, so they keep their own.
say() { printf 'media-service: %s\n' "$*" >&2; }
die() {
  say "$*"
  exit 1
}
# shellcheck disable=SC2034 # used by the scripts that source this
MEDIA_CACHE="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/media-service"
