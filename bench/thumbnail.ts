// npm run bench -- thumbnail: video_thumbnail 50 minutes into a 60-minute video vs one plain ffmpeg
// command (BENCH_THUMB_ROUNDS; bench/runner.ts).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { processContext } from "./context.js";
import { longVideo } from "./fixtures.js";
import { log, num, run } from "./runner.js";
import { formatRatio, formatSummary, printTable, ratio, summarize, type Summary } from "./stats.js";

const THUMB_SECONDS = 3000;

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { ms: performance.now() - started, value };
}

export async function thumbnailBenchmark(): Promise<{ processorOverFfmpeg: Summary }> {
  const rounds = num("BENCH_THUMB_ROUNDS", 7);
  const video = await longVideo();
  const { videoThumbnail } = await import("../jobs/video_thumbnail/processor.js");
  const work = await mkdtemp(join(tmpdir(), "media-service-bench-thumb-"));
  const processor = async () => {
    const bench = await processContext("video_thumbnail", video, { timestamp: "00:50:00", format: "jpeg" });
    try {
      return await videoThumbnail(bench.ctx);
    } finally {
      await bench.cleanup();
    }
  };
  const ffmpegArgs = ["-v", "error", "-y", "-ss", String(THUMB_SECONDS), "-i", video, "-frames:v", "1"];
  const targets: Record<string, () => Promise<unknown>> = {
    processor,
    ffmpeg: () => run("ffmpeg", [...ffmpegArgs, join(work, "out.jpg")]),
    // Where the time goes: one ffprobe of the source, and starting ffmpeg at all.
    probe: () => run("ffprobe", ["-v", "error", "-show_format", "-show_streams", "-of", "json", video]),
    spawn: () => run("ffmpeg", ["-version"]),
  };
  const ms: Record<string, number[]> = {};
  let cold = 0;
  let result: Record<string, unknown> = {};
  try {
    // The first call in a process also loads fluent-ffmpeg, sharp (for the header), and pays
    // fluent-ffmpeg's one-off capability checks (`ffmpeg -formats`, `ffmpeg -encoders`): what the
    // first video job of a runner process pays.
    cold = (await timed(processor)).ms;
    for (const target of Object.values(targets)) await target();
    for (let round = 1; round <= rounds; round++) {
      for (const [name, target] of Object.entries(targets)) {
        const t = await timed(target);
        (ms[name] ??= []).push(t.ms);
        if (name === "processor") result = (t.value as { result: Record<string, unknown> }).result;
      }
      log(
        `thumbnail round ${round}/${rounds}: processor ${Math.round(ms.processor!.at(-1)!)} ms, ` +
          `ffmpeg ${Math.round(ms.ffmpeg!.at(-1)!)} ms`,
      );
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  const row = (name: string) => ({ "ms, median [min–max]": formatSummary(summarize(ms[name]!), 0) });
  const processorOverFfmpeg = ratio(ms.processor!, ms.ffmpeg!);
  console.log(`\nvideo_thumbnail at 00:50:00 of a 60-minute 320x240 H.264 video (5 fps, keyframe every 5 s)`);
  console.log(
    `(median [min–max] of ${rounds} alternating rounds, the ratio of each round's own; the processor ` +
      `called in-process as the runner calls it)\n`,
  );
  printTable({
    "runner processor (video_thumbnail)": row("processor"),
    [`ffmpeg -ss ${THUMB_SECONDS} -i f -frames:v 1 out.jpg`]: row("ffmpeg"),
    "processor, first call in a process": { "ms, median [min–max]": Math.round(cold).toString() },
    "ffprobe of the source alone": row("probe"),
    "ffmpeg -version (starting ffmpeg at all)": row("spawn"),
  });
  console.log(`processor result: ${JSON.stringify(result)}`);
  console.log(`time ratio processor/ffmpeg:          ${formatRatio(processorOverFfmpeg, { atMost: 1.2 })}`);
  return { processorOverFfmpeg };
}
