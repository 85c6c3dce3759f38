// The image's ffmpeg (scripts/build-ffmpeg.sh) writes what video_transcode and video_adaptive ask of
// it, and its ffprobe reads that back as JSON (media_probe): each video encoder into the containers
// it goes in, an HLS ladder of fMP4 (CMAF) segments from one `split`, and a DASH manifest with HLS
// playlists beside it. No cluster: the project's image (support/cluster.ts) under `docker run`, as the
// service user, on a two-second clip the host's ffmpeg makes (the image's has no lavfi: libavdevice
// is left out of it).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { projectImage } from "./support/cluster.js";

const run = promisify(execFile);

let image: string;
let dir: string;

before(async () => {
  image = await projectImage();
  dir = await mkdtemp(join(tmpdir(), "image-ffmpeg-"));
  // The container runs as user 10001: it reads the clip and writes its outputs here.
  await chmod(dir, 0o777);
  await run("ffmpeg", [
    ...["-hide_banner", "-nostdin", "-v", "error"],
    ...["-f", "lavfi", "-i", "testsrc2=s=320x240:d=2:r=25", "-f", "lavfi", "-i", "sine=d=2"],
    ...["-c:v", "ffv1", "-c:a", "pcm_s16le", join(dir, "source.mkv")],
  ]);
});

after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Probe {
  streams: {
    codec_type: string;
    codec_name: string;
    codec_tag_string: string;
    width?: number;
    height?: number;
  }[];
  format: { format_name: string; duration: string; tags?: Record<string, string> };
}

/** `sh -c script args…` in the image, in the clip's directory; its stdout. */
async function inImage(script: string, args: string[]): Promise<string> {
  const { stdout } = await run(
    "docker",
    [
      "run",
      "--rm",
      "-v",
      `${dir}:/work`,
      "-w",
      "/work",
      "--entrypoint",
      "sh",
      image,
      "-c",
      script,
      "sh",
      ...args,
    ],
    { maxBuffer: 16 << 20 },
  );
  return stdout;
}

/** The image's ffmpeg from the clip into `output` with `args`, then its ffprobe's JSON of the output. */
async function encode(output: string, args: string[]): Promise<Probe> {
  const stdout = await inImage(
    'out="$1"; shift; ffmpeg -hide_banner -nostdin -v error -i source.mkv "$@" "$out" && ' +
      'ffprobe -v error -show_format -show_streams -of json "$out"',
    [output, ...args],
  );
  return JSON.parse(stdout) as Probe;
}

const H264 = ["-c:v", "libx264", "-preset", "ultrafast"];
const H265 = ["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "log-level=error"];
const VP9 = ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "300k"];
const AV1 = ["-c:v", "libsvtav1", "-preset", "12"];
const AAC = ["-c:a", "aac", "-b:a", "96k"];
const OPUS = ["-c:a", "libopus", "-b:a", "64k"];
const MP3 = ["-c:a", "libmp3lame", "-b:a", "96k"];

// Each video encoder in the containers video_transcode writes it into; the codec ffprobe names.
const CASES: { output: string; args: string[]; video: string; audio: string; brand?: string }[] = [
  {
    output: "h264.mp4",
    args: [...H264, ...AAC, "-movflags", "+faststart"],
    video: "h264",
    audio: "aac",
    brand: "isom",
  },
  { output: "h264.mov", args: [...H264, ...AAC], video: "h264", audio: "aac", brand: "qt  " },
  { output: "h264.mkv", args: [...H264, ...MP3], video: "h264", audio: "mp3" },
  {
    output: "h265.mp4",
    args: [...H265, "-tag:v", "hvc1", ...AAC],
    video: "hevc",
    audio: "aac",
    brand: "isom",
  },
  {
    output: "h265.mov",
    args: [...H265, "-tag:v", "hvc1", ...AAC],
    video: "hevc",
    audio: "aac",
    brand: "qt  ",
  },
  { output: "h265.mkv", args: [...H265, ...OPUS], video: "hevc", audio: "opus" },
  { output: "vp9.webm", args: [...VP9, ...OPUS], video: "vp9", audio: "opus" },
  { output: "vp9.mp4", args: [...VP9, ...AAC], video: "vp9", audio: "aac", brand: "isom" },
  { output: "vp9.mkv", args: [...VP9, ...OPUS], video: "vp9", audio: "opus" },
  { output: "av1.webm", args: [...AV1, ...OPUS], video: "av1", audio: "opus" },
  { output: "av1.mp4", args: [...AV1, ...AAC], video: "av1", audio: "aac", brand: "isom" },
  { output: "av1.mkv", args: [...AV1, ...OPUS], video: "av1", audio: "opus" },
];

describe("the image's ffmpeg encodes every video codec into its containers", () => {
  for (const c of CASES) {
    test(c.output, async () => {
      const probe = await encode(c.output, c.args);
      const video = probe.streams.find((s) => s.codec_type === "video");
      const audio = probe.streams.find((s) => s.codec_type === "audio");
      assert.equal(video?.codec_name, c.video);
      assert.deepEqual([video.width, video.height], [320, 240]);
      assert.equal(audio?.codec_name, c.audio);
      const duration = Number(probe.format.duration);
      assert.ok(duration > 1.9 && duration < 2.2, `duration ${probe.format.duration}`);
      if (c.output.endsWith(".mkv") || c.output.endsWith(".webm")) {
        assert.equal(probe.format.format_name, "matroska,webm");
      } else {
        assert.match(probe.format.format_name, /^mov,mp4/);
        assert.equal(probe.format.tags?.major_brand, c.brand);
      }
      if (c.video === "hevc" && c.brand) assert.equal(video.codec_tag_string, "hvc1");
    });
  }

  test("mp4 with +faststart has its index before the media data", async () => {
    const bytes = await readFile(join(dir, "h264.mp4"));
    const moov = bytes.indexOf("moov");
    assert.ok(moov > 0 && moov < bytes.indexOf("mdat"), "moov before mdat");
  });
});

// video_adaptive's shape: one ffmpeg, the video split into scaled outputs shown at the source's
// aspect ratio (setdar, as jobs/video_adaptive/ladder.ts), keyframes forced every second so that the
// renditions' segments line up, an audio-only AAC rendition.
const LADDER = [
  "-filter_complex",
  "[0:v]split=2[a][b];[a]scale=320:240,setdar=4/3[v0];[b]scale=160:120,setdar=4/3[v1]",
  ...["-map", "[v0]", "-map", "[v1]", "-map", "0:a"],
  ...H264,
  ...["-force_key_frames", "expr:gte(t,n_forced*1)", "-b:v:0", "400k", "-b:v:1", "150k"],
  ...AAC,
];

describe("the image's ffmpeg writes adaptive streams", () => {
  test("HLS with fMP4 segments and a master playlist, from one split", async () => {
    await mkdir(join(dir, "hls"));
    await chmod(join(dir, "hls"), 0o777);
    await inImage('ffmpeg -hide_banner -nostdin -v error -i source.mkv "$@"', [
      ...LADDER,
      ...["-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod", "-hls_segment_type", "fmp4"],
      ...["-hls_segment_filename", "hls/%v/seg_%03d.m4s", "-hls_fmp4_init_filename", "init.mp4"],
      ...[
        "-master_pl_name",
        "master.m3u8",
        "-var_stream_map",
        "v:0,agroup:aud v:1,agroup:aud a:0,agroup:aud",
      ],
      "hls/%v/index.m3u8",
    ]);
    const master = await readFile(join(dir, "hls/master.m3u8"), "utf8");
    assert.match(master, /#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="group_aud".*URI="2\/index.m3u8"/);
    assert.match(master, /#EXT-X-STREAM-INF:.*RESOLUTION=320x240,CODECS="avc1\.[0-9a-f]+,mp4a\.40\.2"/);
    assert.match(master, /#EXT-X-STREAM-INF:.*RESOLUTION=160x120,/);
    const segments = async (variant: number) => {
      const playlist = await readFile(join(dir, `hls/${variant}/index.m3u8`), "utf8");
      assert.match(playlist, /#EXT-X-MAP:URI="init_\d\.mp4"/);
      assert.match(playlist, /#EXT-X-ENDLIST/);
      return [...playlist.matchAll(/#EXTINF:([\d.]+),\n(seg_\d+\.m4s)/g)].map((m) => [m[1], m[2]]);
    };
    const [large, small, audio] = [await segments(0), await segments(1), await segments(2)];
    // Aligned keyframes: the two video renditions cut the same two one-second segments.
    assert.deepEqual(large, [
      ["1.000000", "seg_000.m4s"],
      ["1.000000", "seg_001.m4s"],
    ]);
    assert.deepEqual(small, large);
    assert.ok(audio.length >= 2, "the audio rendition has segments");
    const probe = JSON.parse(
      await inImage("ffprobe -v error -show_format -show_streams -of json hls/1/index.m3u8", []),
    ) as Probe;
    assert.deepEqual(
      probe.streams.map((s) => [s.codec_name, s.width, s.height]),
      [["h264", 160, 120]],
    );
  });

  test("DASH with HLS playlists beside its manifest", async () => {
    await mkdir(join(dir, "dash"));
    await chmod(join(dir, "dash"), 0o777);
    await inImage('ffmpeg -hide_banner -nostdin -v error -i source.mkv "$@"', [
      ...LADDER,
      ...[
        "-f",
        "dash",
        "-seg_duration",
        "1",
        "-use_template",
        "1",
        "-use_timeline",
        "1",
        "-hls_playlist",
        "1",
      ],
      ...["-adaptation_sets", "id=0,streams=v id=1,streams=a"],
      ...[
        "-init_seg_name",
        "init-$RepresentationID$.m4s",
        "-media_seg_name",
        "chunk-$RepresentationID$-$Number%05d$.m4s",
      ],
      "dash/manifest.mpd",
    ]);
    const files = await readdir(join(dir, "dash"));
    for (const f of [
      "manifest.mpd",
      "master.m3u8",
      "init-0.m4s",
      "init-1.m4s",
      "init-2.m4s",
      "chunk-2-00001.m4s",
    ]) {
      assert.ok(files.includes(f), `${f} in ${files.join(" ")}`);
    }
    const mpd = await readFile(join(dir, "dash/manifest.mpd"), "utf8");
    assert.match(
      mpd,
      /<Representation id="0" mimeType="video\/mp4" codecs="avc1\.[^"]+"[^>]* width="320" height="240"/,
    );
    assert.match(mpd, /<Representation id="1" mimeType="video\/mp4"[^>]* width="160" height="120"/);
    assert.match(mpd, /<Representation id="2" mimeType="audio\/mp4" codecs="mp4a\.40\.2"/);
    const master = await readFile(join(dir, "dash/master.m3u8"), "utf8");
    assert.match(master, /#EXT-X-MEDIA:TYPE=AUDIO.*URI="media_2\.m3u8"/);
    assert.match(master, /RESOLUTION=320x240,.*\nmedia_0\.m3u8/);
    assert.match(master, /RESOLUTION=160x120,.*\nmedia_1\.m3u8/);
  });
});
