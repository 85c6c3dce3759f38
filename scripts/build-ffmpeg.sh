#!/usr/bin/env bash
# Builds the container image's ffmpeg and ffprobe from Debian's own source of its ffmpeg package
# (`apt-get source`: the version and the security patches of Debian 12's build), configured with only
# what media-service runs, and installs them with their shared libraries under DESTDIR/usr/local
# (bin/ffmpeg, bin/ffprobe, lib/libav*.so.*, lib/libsw*.so.*). The Dockerfile's native stage runs it.
#
#   scripts/build-ffmpeg.sh DESTDIR
#
# What is in it, and why (docs/image.md says more):
#   - every native decoder, demuxer, parser and bitstream filter, so the sources the service accepts
#     are read as Debian's ffmpeg reads them; dav1d for AV1 (ffmpeg's own AV1 decoder needs hardware);
#   - the encoders and muxers the runner writes with: thumbnails and frames (mjpeg, png, libwebp;
#     image2), audio_convert (runner/av/codecs.ts: libmp3lame, aac, libopus, libvorbis, flac,
#     pcm_s16le; mp3, adts, ipod, opus, ogg, flac, wav), analyze's MP3 segments (segment), the input
#     check that decodes into nothing (null, wrapped_avframe), video_transcode (libx264, libx265,
#     libvpx-vp9, libsvtav1 with aac, libopus, libmp3lame; mp4, mov, webm, matroska) and
#     video_adaptive (the same encoders; hls with its fMP4 and MPEG-TS segments, dash);
#   - the filters its commands name (scale, setsar, setdar, format, fps, split, asplit, trim, atrim,
#     setpts, asetpts, aresample) and those ffmpeg inserts by itself (aformat, aresample, trim, atrim for
#     seeking, transpose, hflip, vflip, rotate for rotated video);
#   - the file and pipe protocols only (the runner reads local files and reports progress on a pipe;
#     hls and dash write their playlists and segments into local files through the file protocol);
#   - no libavdevice, no libpostproc, no network, no hardware acceleration, no external library found
#     by chance (--disable-autodetect), no documentation.
#
# Licence: x264 and x265 are GPL 2 or later, so ffmpeg is configured with --enable-gpl and the
# ffmpeg, ffprobe and libav* built here are GPL 2 or later as a whole (the other libraries they link,
# dav1d, LAME, Opus, Vorbis, WebP, libvpx and SVT-AV1, are LGPL or BSD). docs/image.md says what
# that means for the image.
#
# Needs root on Debian 12 with APT sources (it adds their deb-src and installs the build
# dependencies) and about 3 minutes on 2 cores.
set -euo pipefail

DESTDIR="${1:-}"
[[ -n "$DESTDIR" ]] || {
  echo "usage: scripts/build-ffmpeg.sh DESTDIR" >&2
  exit 2
}
say() { printf 'build-ffmpeg: %s\n' "$*" >&2; }
die() {
  say "$*"
  exit 1
}
[[ "$(id -u)" -eq 0 ]] || die "needs root (it installs the build dependencies with apt-get)"
command -v apt-get >/dev/null 2>&1 || die "needs Debian's apt-get (it builds Debian's source package)"

ENCODERS=mjpeg,png,libwebp,libmp3lame,aac,libopus,libvorbis,flac,pcm_s16le,wrapped_avframe
ENCODERS+=,libx264,libx265,libvpx_vp9,libsvtav1
MUXERS=image2,mp3,adts,ipod,opus,ogg,flac,wav,segment,null
# (hls writes fMP4 segments with the mp4 muxer and MPEG-TS ones with mpegts; dash needs mp4, webm)
MUXERS+=,mp4,mov,webm,matroska,hls,mpegts,dash
FILTERS=scale,setsar,format,aformat,aresample,null,anull,trim,atrim,transpose,hflip,vflip,rotate
FILTERS+=,fps,split,asplit,setpts,asetpts,setdar
PROTOCOLS=file,pipe
# The -dev packages of the libraries it links; scripts/provision.sh (profile image) installs their
# runtime packages.
BUILD_DEPENDS=(dpkg-dev gcc libc6-dev make nasm pkg-config xz-utils
  zlib1g-dev libbz2-dev liblzma-dev libdav1d-dev libmp3lame-dev libopus-dev libvorbis-dev libwebp-dev
  libx264-dev libx265-dev libvpx-dev libsvtav1enc-dev)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export DEBIAN_FRONTEND=noninteractive

# ---- Debian's source package --------------------------------------------------------------------
# Every deb source also as deb-src (deb822 .sources files and one-line .list files alike).
for f in /etc/apt/sources.list.d/*.sources; do
  [[ -f "$f" ]] && sed -i 's/^Types: deb$/Types: deb deb-src/' "$f"
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [[ -f "$f" ]] && sed -n 's/^deb /deb-src /p' "$f" >>"$work/deb-src.list"
done
[[ -s "$work/deb-src.list" ]] && cp "$work/deb-src.list" /etc/apt/sources.list.d/media-service-deb-src.list
say "installing the build dependencies: ${BUILD_DEPENDS[*]}"
if ! { apt-get update -q && apt-get install -y -q --no-install-recommends "${BUILD_DEPENDS[@]}"; } >"$work/apt.log" 2>&1; then
  tail -n 20 "$work/apt.log" >&2
  die "apt-get could not install the build dependencies"
fi
mkdir -p "$work/src"
(cd "$work/src" && apt-get source -q ffmpeg) >"$work/source.log" 2>&1 || {
  tail -n 20 "$work/source.log" >&2
  die "apt-get source ffmpeg failed (are there deb-src entries for the Debian mirror?)"
}
src="$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name 'ffmpeg-*' | head -n1)"
[[ -n "$src" ]] || die "apt-get source ffmpeg unpacked nothing"
cd "$src"
debian_version="$(dpkg-parsechangelog -S Version)"
revision="${debian_version#*:}" && revision="${revision#*-}"
say "ffmpeg ${debian_version} from Debian's source (patches applied)"

# ---- Configure and build -------------------------------------------------------------------------
started=$SECONDS
if ! ./configure \
  --prefix=/usr/local \
  --toolchain=hardened \
  --extra-version="${revision}+media-service" \
  --enable-shared --disable-static \
  --disable-autodetect --disable-doc --disable-debug --disable-ffplay \
  --disable-avdevice --disable-postproc --disable-network \
  --enable-gpl \
  --enable-zlib --enable-bzlib --enable-lzma \
  --enable-libdav1d --enable-libmp3lame --enable-libopus --enable-libvorbis --enable-libwebp \
  --enable-libx264 --enable-libx265 --enable-libvpx --enable-libsvtav1 \
  --disable-decoder=libvpx_vp8,libvpx_vp9 \
  --disable-encoders --enable-encoder="$ENCODERS" \
  --disable-muxers --enable-muxer="$MUXERS" \
  --disable-filters --enable-filter="$FILTERS" \
  --disable-protocols --enable-protocol="$PROTOCOLS" \
  >"$work/configure.log" 2>&1; then
  tail -n 30 "$work/configure.log" >&2
  tail -n 30 ffbuild/config.log >&2 2>/dev/null || true
  die "configure failed"
fi
# The summary of what is in it: the libraries, encoders, muxers, protocols and filters.
awk '/^[A-Z][^ ].*:$/ { show = ($0 ~ /^(External libraries|Libraries|Programs|Enabled (encoders|muxers|protocols|filters)):$/) }
  /^License:/ { print; show = 0 } show' "$work/configure.log" >&2
if ! make -j"$(nproc)" >"$work/make.log" 2>&1; then
  tail -n 40 "$work/make.log" >&2
  die "make failed"
fi
make install DESTDIR="$work/stage" >"$work/install.log" 2>&1 || {
  tail -n 20 "$work/install.log" >&2
  die "make install failed"
}
say "built in $((SECONDS - started)) s"

# ---- Install the programs and their libraries ------------------------------------------------------
mkdir -p "$DESTDIR/usr/local/bin" "$DESTDIR/usr/local/lib"
cp -a "$work/stage/usr/local/bin/ffmpeg" "$work/stage/usr/local/bin/ffprobe" "$DESTDIR/usr/local/bin/"
cp -a "$work/stage/usr/local/lib/"*.so.* "$DESTDIR/usr/local/lib/"
strip --strip-all "$DESTDIR/usr/local/bin/ffmpeg" "$DESTDIR/usr/local/bin/ffprobe"
find "$DESTDIR/usr/local/lib" -type f -name '*.so.*' -exec strip --strip-unneeded {} +

# What the runner asks of it, checked here rather than on a job.
export LD_LIBRARY_PATH="$DESTDIR/usr/local/lib"
ff="$DESTDIR/usr/local/bin/ffmpeg"
"$DESTDIR/usr/local/bin/ffprobe" -hide_banner -version >/dev/null || die "the ffprobe built does not run"
# (Each answer is read whole: grep -q stopping early would make ffmpeg fail on a closed pipe.)
has() {
  local answer
  answer="$("$ff" -hide_banner -h "$1=$2" 2>/dev/null || true)"
  [[ "$answer" == "$3 $2 "* || "$answer" == "$3 $2,"* || "$answer" == "$3 $2"$'\n'* ]]
}
# (configure names libvpx-vp9 libvpx_vp9)
for e in ${ENCODERS//,/ }; do e="${e/libvpx_vp9/libvpx-vp9}" && { has encoder "$e" Encoder || die "encoder $e is missing"; }; done
for m in ${MUXERS//,/ }; do has muxer "$m" Muxer || die "muxer $m is missing"; done
for f in ${FILTERS//,/ }; do has filter "$f" Filter || die "filter $f is missing"; done
for d in h264 hevc vp8 vp9 libdav1d mpeg4 mpeg2video mjpeg prores aac mp3 opus vorbis flac alac pcm_s16le; do
  has decoder "$d" Decoder || die "decoder $d is missing"
done
for d in mov matroska avi mpegts mpeg flv ogg mp3 wav flac aac asf image2 webp_pipe; do
  has demuxer "$d" Demuxer || die "demuxer $d is missing"
done
du -sh "$DESTDIR/usr/local/bin/ffmpeg" "$DESTDIR/usr/local/bin/ffprobe" "$DESTDIR/usr/local/lib" >&2
