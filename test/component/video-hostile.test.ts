// video_transcode and video_adaptive on hostile video, against real ffmpeg (tiny media made here):
// variable frame rate, a container that lies about its length (longer or shorter than its frames),
// a one-frame video and a still picture, odd dimensions, 10 bits into 8-bit H.264, no video stream,
// frames over limits.max_input_pixels; and an ffmpeg killed by a signal, which is transient. Bad
// input fails permanently saying what is wrong; what can be processed is processed right.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { chmodSync, rmSync, writeFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, beforeEach, describe, test } from "node:test";
import { videoAdaptive } from "../../jobs/video_adaptive/processor.js";
import { videoTranscode } from "../../jobs/video_transcode/processor.js";
import { isPermanent } from "../../runner/errors.js";
import type { Processor } from "../../runner/processor.js";
import { ffmpeg, makeAudio, makeContext, makeVideo, mediaDir, removeMediaDirs } from "../support/av.js";
import { keyframeTimesOf, startLadderStore, type LadderStore } from "../support/ladder.js";

const run = promisify(execFile);

// ffmpeg through a wrapper that, while its flag file exists, kills itself with SIGKILL (as the OOM
// killer does) when it runs one of the runner's commands (they report progress). fluent-ffmpeg reads
// FFMPEG_PATH on first use.
const bin = mediaDir("hostile-bin");
const killFlag = join(bin, "kill-ffmpeg");
{
  const real = (await run("sh", ["-c", "command -v ffmpeg"])).stdout.trim();
  const wrapper = join(bin, "ffmpeg");
  writeFileSync(
    wrapper,
    [
      "#!/bin/sh",
      `if [ -e '${killFlag}' ]; then`,
      `  case " $* " in *' -progress pipe:1 '*) kill -KILL $$ ;; esac`,
      "fi",
      `exec '${real}' "$@"`,
      "",
    ].join("\n"),
  );
  chmodSync(wrapper, 0o755);
  process.env.FFMPEG_PATH = wrapper;
}

let store: LadderStore;
before(async () => {
  store = await startLadderStore();
});
after(async () => {
  await store.close();
  removeMediaDirs();
});
beforeEach(() => rmSync(killFlag, { force: true }));

interface Stream {
  codec_type: string;
  codec_name: string;
  profile?: string;
  width?: number;
  height?: number;
  pix_fmt?: string;
  avg_frame_rate?: string;
  duration?: string;
}

async function probe(path: string): Promise<{ format: { duration?: string }; streams: Stream[] }> {
  const { stdout } = await run("ffprobe", [
    ...["-v", "error", "-show_format", "-show_streams", "-of", "json", path],
  ]);
  return JSON.parse(stdout) as { format: { duration?: string }; streams: Stream[] };
}

const rate = (r: string | undefined) => {
  const [n, d] = (r ?? "0/1").split("/").map(Number);
  return n! / d!;
};

let counter = 0;
async function handle(type: "video_transcode" | "video_adaptive", source: string, p: object) {
  const h = await makeContext(type, source, {
    preset: type === "video_adaptive" ? "ultrafast" : "fast",
    ...p,
  });
  if (type === "video_adaptive") {
    h.ctx.job.dest_bucket = store.bucket;
    h.ctx.job.dest_key = `hostile/${++counter}/master.m3u8`;
    h.ctx.objects = store.writer;
  }
  return h;
}

const PROCESSORS: Record<"video_transcode" | "video_adaptive", Processor> = {
  video_transcode: videoTranscode,
  video_adaptive: videoAdaptive,
};
const TYPES = ["video_transcode", "video_adaptive"] as const;

async function fails(
  type: (typeof TYPES)[number],
  source: string,
  message: RegExp,
  tweak: (h: Awaited<ReturnType<typeof handle>>) => void = () => {},
) {
  const h = await handle(type, source, type === "video_adaptive" ? { segment_seconds: 1 } : {});
  tweak(h);
  await assert.rejects(PROCESSORS[type](h.ctx), (err: unknown) => {
    assert.ok(isPermanent(err), `${type}: a permanent failure, not ${String(err)}`);
    assert.match(err.message, message, type);
    return true;
  });
  if (type === "video_adaptive")
    assert.deepEqual(await store.list(`hostile/${counter}/`), [], "nothing left");
}

/** Progress never goes back and never passes 100. */
function assertSaneProgress(progress: Array<{ percent: number }>) {
  const percents = progress.map((p) => p.percent);
  for (let i = 1; i < percents.length; i++) {
    assert.ok(percents[i]! >= percents[i - 1]!, `progress went back: ${percents.join(", ")}`);
  }
  assert.ok(Math.max(...percents) <= 100, `progress past 100: ${percents.join(", ")}`);
}

/** A 2 s, 160x90, 25 fps Matroska file whose Segment duration and stream tag claim `seconds`. */
async function lyingMkv(seconds: number): Promise<string> {
  const path = join(mediaDir("lying"), "plain.mkv");
  await ffmpeg([
    ...["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25:duration=2"],
    ...["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", path],
  ]);
  const bytes = await readFile(path);
  // The Segment Info's Duration (0x4489, an 8-byte float of milliseconds) and the stream's DURATION tag.
  const at = bytes.indexOf(Buffer.from([0x44, 0x89, 0x88]));
  assert.ok(at > 0, "a Matroska Duration element");
  bytes.writeDoubleBE(seconds * 1000, at + 3);
  const tag = bytes.indexOf("00:00:02.000000000");
  assert.ok(tag > 0, "a DURATION tag");
  bytes.write(`00:00:${seconds.toFixed(9).padStart(12, "0")}`, tag, "latin1");
  const lying = path.replace("plain", `declares-${seconds}`);
  await writeFile(lying, bytes);
  const declared = Number((await probe(lying)).format.duration);
  assert.equal(declared, seconds, "ffprobe believes the lie");
  return lying;
}

/** 1 s at 10 fps, then 1 s at 30 fps: 40 frames over 2 s, timestamps as they were. */
async function vfrVideo(): Promise<string> {
  const path = join(mediaDir("vfr"), "vfr.mp4");
  await ffmpeg([
    ...["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=1"],
    ...["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30:duration=1"],
    ...["-filter_complex", "[0][1]concat=n=2:v=1", "-fps_mode", "vfr"],
    ...["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", path],
  ]);
  return path;
}

/** A ladder's rendition as one file: its init and segments joined. */
async function renditionFile(prefix: string, playlist: string): Promise<string> {
  const text = await store.text(`${prefix}/${playlist}`);
  const init = /#EXT-X-MAP:URI="([^"]+)"/.exec(text)![1]!;
  const segments = text.split("\n").filter((l) => l.trim() && !l.startsWith("#"));
  const parts = [await store.bytes(`${prefix}/${init}`)];
  for (const s of segments) parts.push(await store.bytes(`${prefix}/${s.trim()}`));
  const file = join(mediaDir("keys"), "joined.mp4");
  await writeFile(file, Buffer.concat(parts));
  return file;
}

/** The key packets' times of a ladder's rendition. */
async function keyframeTimes(prefix: string, playlist: string): Promise<number[]> {
  const file = await renditionFile(prefix, playlist);
  return keyframeTimesOf(file);
}

type LadderResult = {
  duration: number;
  renditions: Array<{ width: number; height: number; codecs: string; playlist_url: string }>;
};

describe("variable frame rate", () => {
  test("video_transcode: the duration kept within a frame, frame_rate what the file says", async () => {
    const source = await vfrVideo();
    const held = Number((await probe(source)).format.duration);
    const h = await handle("video_transcode", source, {});
    const out = await videoTranscode(h.ctx);
    assert.ok(out.output && "path" in out.output);
    const written = await probe(out.output.path);
    const video = written.streams.find((s) => s.codec_type === "video")!;
    const fps = rate(video.avg_frame_rate);
    assert.ok(fps > 0);
    const duration = Number(video.duration);
    assert.ok(Math.abs(duration - held) <= 1 / fps + 1e-3, `${duration} s written of ${held} s`);
    assert.equal(out.result.frame_rate, Math.round(fps * 1000) / 1000);
    assert.ok(Math.abs((out.result.duration as number) - held) <= 1 / fps + 1e-3);
    assertSaneProgress(h.progress);
  });

  test("video_adaptive: segments of every rendition start at the same keyframes", async () => {
    const source = await vfrVideo();
    const h = await handle("video_adaptive", source, {
      segment_seconds: 1,
      renditions: [
        { height: 90, video_bitrate: "200k" },
        { height: 72, video_bitrate: "100k" },
      ],
    });
    const result = (await videoAdaptive(h.ctx)).result as LadderResult;
    assert.ok(Math.abs(result.duration - 2) < 0.1, `duration ${result.duration}`);
    const prefix = `hostile/${counter}`;
    const times = await Promise.all(
      result.renditions.map((r) => keyframeTimes(prefix, r.playlist_url.split("/").pop()!)),
    );
    assert.deepEqual(times[0], [0, 1]);
    assert.deepEqual(times[1], times[0]);
  });
});

describe("a container that lies about its length", () => {
  for (const type of TYPES) {
    test(`${type}: declaring 20 s of a 2 s video fails, saying both`, async () => {
      await fails(
        type,
        await lyingMkv(20),
        /^source video is truncated: it declares 20\.00 s but holds (1\.9\d|2\.00) s$/,
      );
    });

    test(`${type}: declaring 0.5 s of a 2 s video delivers all 2 s, progress within 100`, async () => {
      const h = await handle(
        type,
        await lyingMkv(0.5),
        type === "video_adaptive" ? { segment_seconds: 1 } : {},
      );
      const out = await PROCESSORS[type](h.ctx);
      assert.ok(
        Math.abs((out.result.duration as number) - 2) <= 0.05,
        `duration ${String(out.result.duration)}`,
      );
      assertSaneProgress(h.progress);
    });
  }
});

describe("still pictures are not videos", () => {
  for (const type of TYPES) {
    const what = type === "video_transcode" ? "a transcode" : "a ladder";
    test(`${type}: a one-frame video`, async () => {
      const one = join(mediaDir("one"), "one.mp4");
      await ffmpeg([
        ...["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25", "-frames:v", "1"],
        ...["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", one],
      ]);
      await fails(
        type,
        one,
        new RegExp(
          `^source video holds a single frame \\(h264\\), a still picture: ${what} needs moving pictures$`,
        ),
      );
    });
  }

  test("video_adaptive: a PNG", async () => {
    const png = join(mediaDir("still"), "still.png");
    await ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x64", "-frames:v", "1", png]);
    await fails(
      "video_adaptive",
      png,
      /^source is a still image \(png\), not a video: a ladder needs moving pictures$/,
    );
  });
});

describe("sources a ladder can take", () => {
  test("odd dimensions and 10 bits: even 8-bit H.264 renditions", async () => {
    const source = await makeVideo({
      durationSeconds: 1,
      width: 321,
      height: 241,
      container: "mkv",
      tenBitHevc: true,
    });
    const h = await handle("video_adaptive", source, { segment_seconds: 1 });
    const result = (await videoAdaptive(h.ctx)).result as LadderResult;
    assert.deepEqual(
      result.renditions.map((r) => [r.width, r.height]),
      [[320, 240]],
    );
    const file = await renditionFile(
      `hostile/${counter}`,
      result.renditions[0]!.playlist_url.split("/").pop()!,
    );
    const video = (await probe(file)).streams.find((s) => s.codec_type === "video")!;
    assert.equal(video.codec_name, "h264");
    assert.equal(video.pix_fmt, "yuv420p");
    assert.notEqual(video.profile, "High 10");
  });
});

describe("video_adaptive: bad sources fail permanently, saying what is wrong", () => {
  test("no video stream", async () => {
    const audio = await makeAudio({ durationSeconds: 1, format: "mp3" });
    await fails("video_adaptive", audio, /^source has no video stream \(it holds: audio \(mp3\)\)$/);
  });

  test("frames larger than limits.max_input_pixels", async () => {
    const source = await makeVideo({ durationSeconds: 1, width: 160, height: 90 });
    await fails(
      "video_adaptive",
      source,
      /^source video frames are 160x90 \(14400 pixels\), more than limits.max_input_pixels \(10000\)$/,
      (h) => (h.ctx.limits.maxInputPixels = 10_000),
    );
  });
});

describe("an ffmpeg killed by a signal is transient", () => {
  for (const type of TYPES) {
    test(type, async () => {
      const source = await makeVideo({ durationSeconds: 1, width: 160, height: 90 });
      const h = await handle(type, source, type === "video_adaptive" ? { segment_seconds: 1 } : {});
      writeFileSync(killFlag, "");
      await assert.rejects(PROCESSORS[type](h.ctx), (err: unknown) => {
        assert.ok(!isPermanent(err), `transient, not ${String(err)}`);
        assert.match((err as Error).message, /ffmpeg was killed with signal SIGKILL/);
        return true;
      });
    });
  }
});
