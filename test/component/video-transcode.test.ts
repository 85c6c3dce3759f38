// The video_transcode processor against real ffmpeg, on small videos generated with `ffmpeg -f
// lavfi` (testsrc2 320x240, 2 s, 25 fps, a sine tone): each codec in each container it goes in,
// read back with ffprobe (codec, exact size, frame rate, duration within a frame), trims, rotation,
// the frame rate cap, 10-bit sources, and bad sources failing permanently with what is wrong.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { isPermanent } from "../../runner/errors.js";
import type { ProcessOutput } from "../../runner/processor.js";
import { videoTranscode } from "../../jobs/video_transcode/processor.js";
import { availableCpus } from "../../runner/cpus.js";
import { runFfmpeg } from "../../runner/av/run.js";
import {
  ffmpeg,
  makeAudio,
  makeContext,
  makeVideo,
  mediaDir,
  removeMediaDirs,
  truncated,
} from "../support/av.js";

const run = promisify(execFile);
const FRAME = 1 / 25;
/** Where the processor puts the end of the encode (its share of the job ends at 95 %). */
const ENCODE_DONE = 95;

after(removeMediaDirs);

interface Stream {
  codec_type: string;
  codec_name: string;
  codec_tag_string: string;
  width?: number;
  height?: number;
  pix_fmt?: string;
  avg_frame_rate?: string;
  nb_read_packets?: string;
  side_data_list?: Array<{ rotation?: number }>;
}

/** ffprobe's view of a file, independent of the code under test: streams, packets counted. */
async function probe(path: string): Promise<{ format: { format_name: string }; streams: Stream[] }> {
  const { stdout } = await run("ffprobe", [
    ...["-v", "error", "-count_packets", "-show_format", "-show_streams", "-of", "json", path],
  ]);
  return JSON.parse(stdout) as { format: { format_name: string }; streams: Stream[] };
}

const rate = (r: string | undefined) => {
  const [n, d] = (r ?? "0/1").split("/").map(Number);
  return n! / d!;
};

function outputPath(out: ProcessOutput): string {
  assert.ok(out.output && "path" in out.output, "the processor names an output file");
  return out.output.path;
}

async function transcode(source: string, parameters: Record<string, unknown>) {
  const handle = await makeContext("video_transcode", source, parameters);
  const out = await videoTranscode(handle.ctx);
  const path = outputPath(out);
  const probed = await probe(path);
  const video = probed.streams.find((s) => s.codec_type === "video")!;
  const audio = probed.streams.find((s) => s.codec_type === "audio");
  return { out, path, probed, video, audio, result: out.result, progress: handle.progress };
}

/** The pids of processes whose command line matches, one per line ("" for none). */
async function pgrep(pattern: string): Promise<string> {
  try {
    return (await run("pgrep", ["-f", pattern])).stdout.trim();
  } catch {
    return ""; // pgrep exits 1 when nothing matches
  }
}

/** The video's duration as written: its frames over its frame rate. */
const frameSeconds = (video: Stream) => Number(video.nb_read_packets) / rate(video.avg_frame_rate);

async function failsWith(source: string, parameters: Record<string, unknown>, message: RegExp) {
  const { ctx } = await makeContext("video_transcode", source, parameters);
  await assert.rejects(videoTranscode(ctx), (err: unknown) => {
    assert.ok(isPermanent(err), `a permanent failure, not ${String(err)}`);
    assert.match(err.message, message);
    return true;
  });
}

let source: string;
before(async () => {
  source = await makeVideo({ durationSeconds: 2, audio: true });
});

describe("video_transcode: codecs and containers", () => {
  const PAIRS: Array<[string, string, string, string]> = [
    // container, video_codec, audio_codec, ffprobe's names
    ["mp4", "h264", "aac", "h264/aac"],
    ["mp4", "h265", "aac", "hevc/aac"],
    ["mp4", "vp9", "opus", "vp9/opus"],
    ["mp4", "av1", "mp3", "av1/mp3"],
    ["webm", "vp9", "opus", "vp9/opus"],
    ["webm", "av1", "opus", "av1/opus"],
    ["mkv", "h264", "mp3", "h264/mp3"],
    ["mov", "h265", "aac", "hevc/aac"],
  ];
  for (const [container, video_codec, audio_codec, names] of PAIRS) {
    test(`${video_codec} and ${audio_codec} in ${container}: fitted inside 200x200, 25 fps, 2 s`, async () => {
      const t = await transcode(source, {
        container,
        video_codec,
        audio_codec,
        preset: "fast",
        width: 200,
        height: 200,
      });
      const [v, a] = names.split("/");
      assert.equal(t.video.codec_name, v);
      assert.equal(t.audio?.codec_name, a);
      assert.match(
        t.probed.format.format_name,
        container === "mkv" || container === "webm" ? /matroska|webm/ : /mp4|mov/,
      );
      // 320x240 inside 200x200: 200x150.
      assert.equal(t.video.width, 200);
      assert.equal(t.video.height, 150);
      assert.equal(t.video.pix_fmt, "yuv420p");
      assert.equal(rate(t.video.avg_frame_rate), 25);
      assert.ok(Math.abs(frameSeconds(t.video) - 2) <= FRAME, `2 s of video, got ${frameSeconds(t.video)}`);
      // The result is read back from the file.
      assert.deepEqual(
        {
          width: t.result.width,
          height: t.result.height,
          video: t.result.video_codec,
          audio: t.result.audio_codec,
        },
        { width: 200, height: 150, video: v, audio: a },
      );
      assert.equal(t.result.frame_rate, 25);
      assert.ok(
        Math.abs((t.result.duration as number) - 2) <= FRAME,
        `result duration ${String(t.result.duration)}`,
      );
      assert.ok((t.result.bitrate as number) > 0);
      if (video_codec === "h265")
        assert.equal(t.video.codec_tag_string, "hvc1", "tagged for Apple's players");
      // A 2 s encode may end before ffmpeg's first periodic report (reports during a long encode
      // are waited for by the cancel test below); its final report always comes and carries the
      // encode to its end.
      const progress = t.progress.map((p) => p.percent);
      assert.ok(
        progress.every((p, i) => i === 0 || p >= progress[i - 1]!),
        `percent never goes back: ${JSON.stringify(progress)}`,
      );
      assert.ok(
        t.progress.some((p) => p.percent >= ENCODE_DONE && /^encoding /.test(p.message ?? "")),
        `ffmpeg's end report carries the encode to its end: ${JSON.stringify(t.progress)}`,
      );
    });
  }

  test("defaults: h264 and aac in mp4 with its index first, the size as it was", async () => {
    const t = await transcode(source, {});
    assert.equal(t.video.codec_name, "h264");
    assert.equal(t.audio?.codec_name, "aac");
    assert.deepEqual([t.video.width, t.video.height], [320, 240]);
    assert.equal(t.out.output && "contentType" in t.out.output ? t.out.output.contentType : "", "video/mp4");
    // faststart: the moov box before the mdat box.
    const { stdout } = await run("sh", [
      "-c",
      `head -c 65536 '${t.path}' | grep -abo 'moov\\|mdat' | head -2`,
    ]);
    assert.match(stdout, /moov[\s\S]*mdat/, "the index comes first");
  });

  test("copy: the streams as they are, into another container", async () => {
    const t = await transcode(source, { container: "mkv", video_codec: "copy", audio_codec: "copy" });
    assert.equal(t.video.codec_name, "h264");
    assert.equal(t.audio?.codec_name, "aac");
    assert.deepEqual([t.video.width, t.video.height], [320, 240]);
  });

  test("audio none: no audio stream; channels and sample rate as asked", async () => {
    const silent = await transcode(source, { audio_codec: "none", preset: "fast" });
    assert.equal(silent.audio, undefined);
    assert.equal(silent.result.audio_codec, undefined);
    const { stdout } = await run("ffprobe", [
      ...[
        "-v",
        "error",
        "-select_streams",
        "a:0",
        "-show_entries",
        "stream=channels,sample_rate",
        "-of",
        "csv=p=0",
      ],
      (await transcode(source, { audio_channels: 1, audio_sample_rate: 22050, preset: "fast" })).path,
    ]);
    assert.equal(stdout.trim(), "22050,1");
  });
});

describe("video_transcode: trims, sizes, rates and pixel formats", () => {
  test("start and duration: the second from 0.5 s to 1.5 s", async () => {
    const t = await transcode(source, { start: 0.5, duration: 1, preset: "fast" });
    assert.ok(Math.abs(frameSeconds(t.video) - 1) <= FRAME, `1 s, got ${frameSeconds(t.video)}`);
    assert.ok(Math.abs((t.result.duration as number) - 1) <= FRAME);
    const tail = await transcode(source, { start: 1.5, preset: "fast" });
    assert.ok(Math.abs(frameSeconds(tail.video) - 0.5) <= FRAME, `0.5 s, got ${frameSeconds(tail.video)}`);
  });

  test("a rotated source comes out upright, at its displayed size", async () => {
    const rotated = await makeVideo({ durationSeconds: 2, rotate: 90 });
    const t = await transcode(rotated, { width: 120, preset: "fast" });
    // 320x240 turned a quarter: 240x320 displayed; inside width 120: 120x160, with no rotation left.
    assert.deepEqual([t.video.width, t.video.height], [120, 160]);
    assert.ok(
      !(t.video.side_data_list ?? []).some((d) => d.rotation),
      "no display matrix left to turn it again",
    );
    assert.deepEqual([t.result.width, t.result.height], [120, 160]);
  });

  test("fps caps the frame rate and never raises it", async () => {
    const capped = await transcode(source, { fps: 10, preset: "fast" });
    assert.equal(rate(capped.video.avg_frame_rate), 10);
    assert.equal(capped.result.frame_rate, 10);
    assert.ok(Math.abs(frameSeconds(capped.video) - 2) <= 0.1);
    const kept = await transcode(source, { fps: 60, preset: "fast" });
    assert.equal(rate(kept.video.avg_frame_rate), 25);
  });

  test("odd dimensions come out even; never enlarged", async () => {
    const odd = await makeVideo({
      durationSeconds: 1,
      width: 321,
      height: 241,
      container: "mkv",
      codec: ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv444p"],
    });
    const t = await transcode(odd, { preset: "fast" });
    assert.deepEqual([t.video.width, t.video.height], [320, 240]);
    const small = await transcode(source, { width: 1000, height: 1000, preset: "fast" });
    assert.deepEqual([small.video.width, small.video.height], [320, 240]);
  });

  test("a 10-bit source becomes 8-bit by default, and stays 10-bit when asked", async () => {
    const tenBit = await makeVideo({
      durationSeconds: 1,
      container: "mkv",
      tenBitHevc: true,
    });
    const eight = await transcode(tenBit, { preset: "fast" });
    assert.equal(eight.video.codec_name, "h264");
    assert.equal(eight.video.pix_fmt, "yuv420p");
    const ten = await transcode(tenBit, { video_codec: "h265", pixel_format: "yuv420p10le", preset: "fast" });
    assert.equal(ten.video.pix_fmt, "yuv420p10le");
  });
});

describe("video_transcode: bad sources fail permanently, saying what is wrong", () => {
  test("no video stream", async () => {
    const audio = await makeAudio({ durationSeconds: 1, format: "mp3" });
    await failsWith(audio, {}, /source has no video stream \(it holds: audio \(mp3\)\)/);
  });

  test("a still image", async () => {
    const png = join(mediaDir("still"), "still.png");
    await ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x64", "-frames:v", "1", png]);
    await failsWith(png, {}, /source is a still image \(png\), not a video/);
  });

  test("a truncated file", async () => {
    const long = await makeVideo({ durationSeconds: 5, container: "mkv" });
    await failsWith(
      await truncated(long, 0.46),
      { preset: "fast" },
      /source video is truncated: it declares 5\.00 s but holds [0-9.]+ s \(File ended prematurely\)/,
    );
  });

  test("a trim that starts past the end", async () => {
    await failsWith(source, { start: 5 }, /start 5 s is past the end of the video \(duration 00:00:02/);
  });

  test("frames larger than limits.max_input_pixels", async () => {
    const { ctx } = await makeContext("video_transcode", source, {});
    ctx.limits.maxInputPixels = 320 * 200;
    await assert.rejects(videoTranscode(ctx), (err: unknown) => {
      assert.ok(isPermanent(err));
      assert.match(
        err.message,
        /source video frames are 320x240 \(76800 pixels\), more than limits.max_input_pixels \(64000\)/,
      );
      return true;
    });
  });

  test("a copied stream the container cannot hold", async () => {
    await failsWith(
      source,
      { container: "webm", video_codec: "copy", audio_codec: "none" },
      /the source's h264 video cannot be copied into webm \(Only VP8 or VP9 or AV1 video/,
    );
  });

  test("av1 smaller than SVT-AV1 encodes", async () => {
    await failsWith(
      source,
      { video_codec: "av1", width: 40 },
      /av1 \(SVT-AV1\) encodes frames of at least 64x64/,
    );
  });
});

describe("ffmpeg's threads", () => {
  test("every ffmpeg the runner starts decodes and encodes with -threads of the CPUs it has", async () => {
    let args: string[] = [];
    await runFfmpeg(
      { input: source, output: "-", outputOptions: ["-frames:v", "1", "-f", "null"] },
      { signal: new AbortController().signal, onSpawn: (child) => (args = child.spawnargs) },
    );
    const threads = String(availableCpus());
    const input = args.indexOf("-i");
    assert.equal(args[args.indexOf("-threads") + 1], threads, "the decoder's threads, before -i");
    assert.ok(args.indexOf("-threads") < input);
    assert.equal(args[args.lastIndexOf("-threads") + 1], threads, "the encoder's threads, after -i");
    assert.ok(args.lastIndexOf("-threads") > input);
  });
});

describe("video_transcode: cancelled", () => {
  test("an abort kills ffmpeg at once and the job fails with the abort, not a result", async () => {
    const long = await makeVideo({ durationSeconds: 60 });
    const handle = await makeContext("video_transcode", long, { preset: "slow", video_codec: "h265" });
    const running = videoTranscode(handle.ctx);
    const deadline = Date.now() + 60_000;
    while (!handle.progress.some((p) => p.percent > 5)) {
      assert.ok(Date.now() < deadline, "the encode reports progress");
      await new Promise((r) => setTimeout(r, 20));
    }
    handle.abort.abort(new Error("cancelled by request"));
    await assert.rejects(running, /cancelled by request/);
    assert.equal(await pgrep(long), "", "no ffmpeg left on the source");
  });
});
