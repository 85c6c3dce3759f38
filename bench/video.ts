// npm run bench -- video: the video job types against plain ffmpeg, on generated 1080p30 H.264
// clips with AAC audio, side by side in one run, the targets alternating their order round by round.
// Two sources (bench/fixtures.ts): `synthetic` (hdVideo: testsrc2, 5.5 Mbit/s, cheap to decode) for
// every part, and `camera` (cameraVideo: the same under sensor grain at a phone's 17 Mbit/s, what a
// ladder is usually made from, twice the decode) for the ladder and jobs parts, whose saving is the
// decodes they do not repeat:
//
//   transcode  video_transcode to 720p H.264 + AAC (preset fast), the processor called in-process as
//              the runner calls it (bench/context.ts), vs the one plain ffmpeg command with the
//              arguments the processor builds (runner/av/video-encode.ts): frames/s of each
//   ladder     video_adaptive's 4-rendition HLS ladder (1080/720/480/360, one decode, one ffmpeg)
//              vs four video_transcode jobs of the same heights, bitrates, codec and preset, one
//              after another: wall time of each
//   jobs       the same through the whole local stack, as a user submits them: one video_adaptive job
//              vs the four video_transcode jobs submitted at once, each downloading the source from the
//              embedded S3 store, run by the local executor's runner processes at its default
//              concurrency (one per CPU), uploading its output: wall time from the first submit to the
//              last completion, CPU time of the runners and their ffmpeg and ffprobe children
//   rss        peak RSS of a `runner --serve` process doing that transcode through the stack (S3 GET,
//              ffmpeg, S3 PUT, its reports to Redis; the node process's VmHWM: ffmpeg is its child)
//              beside the plain command's own peak (GNU time)
//
// Knobs: BENCH_VIDEO_ROUNDS (5), BENCH_VIDEO_SECONDS (10, the clips' length),
// BENCH_VIDEO_PARTS (transcode,ladder,jobs,rss: which of the four), BENCH_VIDEO_LADDER_SOURCES
// (synthetic,camera: the sources of the ladder and jobs parts), BENCH_VIDEO_FFMPEG (system: the
// machine's ffmpeg; image: the one the image ships, bench/image-ffmpeg.ts, for the processors, the
// runners and the plain commands alike; the clips are made with the machine's).
import { readFileSync } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { withDefaults } from "../core/jobs/parameters.js";
import { chooseRenditions } from "../jobs/video_adaptive/ladder.js";
import { probeFile, type MediaInfo } from "../runner/av/probe.js";
import { availableCpus } from "../runner/cpus.js";
import type { ObjectWriter, ProcessContext } from "../runner/processor.js";
import { audioOptions, CONTAINER_FORMATS, fitSize, videoEncodeOptions } from "../runner/av/video-encode.js";
import { compileProject } from "./compile.js";
import { DEFAULT_LIMITS, processContext } from "./context.js";
import { cameraVideo, hdVideo } from "./fixtures.js";
import { imageFfmpeg } from "./image-ffmpeg.js";
import type { StackJob } from "./jobs-round.js";
import { peak } from "./rss.js";
import { alternate, fileSize, fmt, log, num, ResizeServer, run } from "./runner.js";
import { formatRatio, formatSummary, printTable, ratio, summarize, type Summary } from "./stats.js";

const FPS = 30;

/** The ffmpeg the plain commands run: the one the processors run (FFMPEG_PATH, as fluent-ffmpeg reads it). */
const ffmpegPath = () => process.env.FFMPEG_PATH || "ffmpeg";
/** The transcode every part measures: 720 lines, H.264 at x264's veryfast, AAC at its default. */
const TRANSCODE = { height: 720, video_codec: "h264", preset: "fast", audio_codec: "aac" } as const;
/** video_adaptive's preset of the same x264 speed as video_transcode's "fast" (veryfast). */
const LADDER = { video_codec: "h264", preset: "veryfast", formats: ["hls"] } as const;

export interface VideoFigures {
  processorOverFfmpeg?: Summary;
  /** The ladder against four transcodes, per source (synthetic, camera). */
  ladders?: Record<string, LadderFigures>;
  runnerMiB?: Summary;
}

interface LadderFigures {
  /** The processors in-process: wall time and CPU seconds, four transcodes over one ladder. */
  separateOverLadder?: Summary;
  separateOverLadderCpu?: Summary;
  /** Through the stack: four video_transcode jobs over one video_adaptive job. */
  jobsOverLadderJob?: Summary;
  jobsOverLadderJobCpu?: Summary;
}

/** A generated clip, what ffprobe says of it, and how the tables name it. */
interface Source {
  path: string;
  info: MediaInfo;
  description: string;
}

const SOURCES = {
  synthetic: {
    make: hdVideo,
    describe: (s: number) => `a ${s} s 1920x1080 ${FPS} fps H.264 + AAC clip (testsrc2 + sine, 5.5 Mbit/s)`,
  },
  camera: {
    make: cameraVideo,
    describe: (s: number) =>
      `a ${s} s 1920x1080 ${FPS} fps H.264 High + AAC clip (testsrc2 under grain, 17 Mbit/s)`,
  },
} as const;

async function loadSource(kind: keyof typeof SOURCES, seconds: number): Promise<Source> {
  const path = await SOURCES[kind].make(seconds);
  return { path, info: await probeFile(path), description: SOURCES[kind].describe(seconds) };
}

/** Wall and CPU time of one run of a target. */
interface Timing {
  ms: number;
  /** CPU seconds of this process and of its children that ended (ffmpeg, ffprobe): cutime + cstime. */
  cpu: number;
}

/** CPU seconds so far: this process's own, and its ended children's from /proc/self/stat (USER_HZ 100). */
function cpuSeconds(): number {
  const own = process.cpuUsage();
  const stat = readFileSync("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // After the command's name: state is field 3, cutime and cstime fields 16 and 17.
  const children = (Number(fields[13]) + Number(fields[14])) / 100;
  return (own.user + own.system) / 1e6 + children;
}

async function timed(work: () => Promise<unknown>): Promise<Timing> {
  const cpu = cpuSeconds();
  const started = performance.now();
  await work();
  return { ms: performance.now() - started, cpu: cpuSeconds() - cpu };
}

/**
 * The plain ffmpeg command of a video_transcode: what the processor passes to ffmpeg for these
 * parameters and this source (its -threads, map, scale, encoders, container), without its progress
 * pipe and pixel-limit check.
 */
function transcodeArgs(parameters: Record<string, unknown>, info: MediaInfo, input: string, output: string) {
  const p = withDefaults("video_transcode", parameters);
  const video = info.video!;
  const size = fitSize(video, p, DEFAULT_LIMITS.maxOutputDimension);
  const cpus = String(availableCpus());
  const container = CONTAINER_FORMATS[p.container];
  return [
    ...["-hide_banner", "-nostdin", "-v", "error", "-y", "-threads", cpus, "-i", input, "-threads", cpus],
    ...["-map", `0:${video.index}`, ...(info.audio ? ["-map", `0:${info.audio.index}`] : [])],
    ...["-sn", "-dn", "-map_metadata", "0", "-vf", `scale=${size.width}:${size.height},setsar=1`],
    ...videoEncodeOptions(p, p.container, availableCpus()),
    ...audioOptions(p, info.audio),
    ...container.options,
    ...["-f", container.muxer, output],
  ];
}

/** A store that keeps nothing: the ladder's files stay in the scratch directory, their sizes counted. */
function countingWriter(): ObjectWriter & { bytes: number; objects: number } {
  const writer = {
    bytes: 0,
    objects: 0,
    async upload(_bucket: string, _key: string, path: string) {
      const size = (await stat(path)).size;
      writer.bytes += size;
      writer.objects += 1;
      return size;
    },
    remove: () => Promise.resolve(),
  };
  return writer;
}

async function transcodePart(
  { path: source, info, description }: Source,
  rounds: number,
  seconds: number,
  work: string,
) {
  const { videoTranscode } = await import("../jobs/video_transcode/processor.js");
  const frames = seconds * FPS;
  let result: Record<string, unknown> = {};
  const processor = async () => {
    const bench = await processContext("video_transcode", source, { ...TRANSCODE });
    try {
      result = (await videoTranscode(bench.ctx)).result ?? {};
    } finally {
      await bench.cleanup();
    }
  };
  const args = transcodeArgs({ ...TRANSCODE }, info, source, join(work, "plain.mp4"));
  const ffmpeg = () => run(ffmpegPath(), args);
  // The first call in a process loads fluent-ffmpeg and pays its capability checks: not counted.
  const cold = await timed(processor);
  const t = await alternate(
    "video transcode",
    rounds,
    { processor: () => timed(processor), ffmpeg: () => timed(ffmpeg) },
    (m) => `${(frames / (m.ms / 1000)).toFixed(1)} frames/s`,
  );
  const fps = (name: string) => t[name]!.map((m) => frames / (m.ms / 1000));
  const cpu = (name: string) => t[name]!.map((m) => m.cpu);
  const processorOverFfmpeg = ratio(fps("processor"), fps("ffmpeg"));
  const row = (name: string) => ({
    "frames/s": formatSummary(summarize(fps(name)), 1),
    "media s per wall s": formatSummary(summarize(fps(name).map((f) => f / FPS)), 2),
    "wall s": formatSummary(summarize(t[name]!.map((m) => m.ms / 1000)), 2),
    "CPU s": formatSummary(summarize(cpu(name)), 2),
  });
  console.log(
    `\nTranscode: ${description} to 720p H.264 + AAC (video_transcode ${JSON.stringify(TRANSCODE)})`,
  );
  console.log(
    `(median [min–max] of ${rounds} alternating rounds, the ratio of each round's own; the processor called in-process as the runner calls it, its ffprobe before and after included; CPU s: this process's and its ffmpeg and ffprobe children's)\n`,
  );
  printTable({
    "runner processor (video_transcode)": row("processor"),
    "plain ffmpeg, the processor's arguments": row("ffmpeg"),
  });
  console.log(`processor's first call in this process (not counted): ${fmt(cold.ms / 1000)} s`);
  console.log(`ffmpeg ${args.slice(0, -1).join(" ")} out.mp4`);
  console.log(`processor result: ${JSON.stringify(result)}`);
  console.log(`throughput ratio processor/ffmpeg: ${formatRatio(processorOverFfmpeg, { atLeast: 0.95 })}`);
  console.log(`CPU ratio processor/ffmpeg:        ${formatRatio(ratio(cpu("processor"), cpu("ffmpeg")))}`);
  return processorOverFfmpeg;
}

/**
 * The ladder's renditions for this source, and the same renditions as separate transcodes: height,
 * average bitrate and the ladder's ceiling (1.1×; video_transcode's buffer is twice the ceiling,
 * the ladder's twice the average), AAC 128k stereo as the ladder's audio. What a transcode cannot be
 * asked for: the ladder's fixed GOP of one segment and keyframes at segment boundaries (x264's own
 * keyframe placement instead).
 */
function ladderRenditions(info: MediaInfo) {
  const renditions = chooseRenditions(
    withDefaults("video_adaptive", { ...LADDER }),
    info.video!,
    DEFAULT_LIMITS.maxOutputDimension,
  );
  if (typeof renditions === "string") throw new Error(renditions);
  const separate = renditions.map((r) => ({
    ...TRANSCODE,
    height: r.height,
    video_bitrate: `${r.kbps}k`,
    max_bitrate: `${Math.round(r.kbps * 1.1)}k`,
    audio_bitrate: "128k",
    audio_channels: 2,
  }));
  return { renditions, separate };
}

async function ladderPart({ path: source, info, description }: Source, rounds: number, seconds: number) {
  const { videoAdaptive } = await import("../jobs/video_adaptive/processor.js");
  const { videoTranscode } = await import("../jobs/video_transcode/processor.js");
  const { renditions, separate } = ladderRenditions(info);
  let ladderBytes = 0;
  let separateBytes = 0;
  const ladder = async () => {
    const bench = await processContext("video_adaptive", source, { ...LADDER });
    const objects = countingWriter();
    const ctx: ProcessContext = {
      ...bench.ctx,
      job: { ...bench.ctx.job, dest_key: `${bench.ctx.job.dest_key}/master.m3u8` },
      objects,
      config: { storage: {} } as ProcessContext["config"],
    };
    try {
      await videoAdaptive(ctx);
      ladderBytes = objects.bytes;
    } finally {
      await bench.cleanup();
    }
  };
  const transcodes = async () => {
    let bytes = 0;
    for (const parameters of separate) {
      const bench = await processContext("video_transcode", source, parameters);
      try {
        const { output } = await videoTranscode(bench.ctx);
        if (output && "path" in output) bytes += (await stat(output.path)).size;
      } finally {
        await bench.cleanup();
      }
    }
    separateBytes = bytes;
  };
  const t = await alternate(
    "video ladder",
    rounds,
    { ladder: () => timed(ladder), separate: () => timed(transcodes) },
    (m) => `${fmt(m.ms / 1000)} s (CPU ${fmt(m.cpu)} s)`,
  );
  const wall = (name: string) => t[name]!.map((m) => m.ms / 1000);
  const cpu = (name: string) => t[name]!.map((m) => m.cpu);
  const separateOverLadder = ratio(wall("separate"), wall("ladder"));
  const row = (name: string, bytes: number) => ({
    "wall s": formatSummary(summarize(wall(name)), 2),
    "media s per wall s": formatSummary(summarize(wall(name).map((w) => seconds / w)), 2),
    "CPU s": formatSummary(summarize(cpu(name)), 2),
    "output MB": fmt(bytes / 1e6, 1),
  });
  const list = renditions.map((r) => `${r.height}p ${r.kbps}k`).join(", ");
  console.log(`\nLadder: ${description} into ${list} (H.264 veryfast, AAC 128k)`);
  console.log(
    `(median [min–max] of ${rounds} alternating rounds; the processors in-process, the ladder's uploads counted, not sent; CPU s: this process's and its ffmpeg and ffprobe children's)\n`,
  );
  printTable({
    "video_adaptive, one job (HLS, 4 s segments)": row("ladder", ladderBytes),
    "video_transcode × 4, one after another (mp4)": row("separate", separateBytes),
  });
  console.log(`time ratio separate/ladder: ${formatRatio(separateOverLadder, { atLeast: 1.5 })}`);
  const separateOverLadderCpu = ratio(cpu("separate"), cpu("ladder"));
  console.log(`CPU ratio separate/ladder:  ${formatRatio(separateOverLadderCpu)}`);
  return { separateOverLadder, separateOverLadderCpu };
}

async function jobsPart({ path: source, info, description }: Source, rounds: number, seconds: number) {
  const { separate } = ladderRenditions(info);
  const ladder: StackJob = { path: "/jobs/video/adaptive", parameters: { ...LADDER }, prefix: true };
  const transcodes: StackJob[] = separate.map((p) => ({ path: "/jobs/video/transcode", parameters: p }));
  const server = new ResizeServer(await compileProject());
  let bytes: Record<string, number> = {};
  const concurrency = availableCpus();
  let t: Record<
    string,
    Array<{ seconds: number; runnerCpu: number; runnerOwnCpu: number; stackCpu: number }>
  >;
  try {
    // The stack at the executor's default concurrency (0: one per CPU of the machine).
    await server.send({ cmd: "setup", source, concurrency: 0 });
    const submit = async (jobs: StackJob[], name: string) => {
      const r = await server.send({
        cmd: "jobs",
        source,
        sourceKey: "in/video.mp4",
        contentType: "video/mp4",
        jobs,
      });
      if (r.failed) throw new Error(`${r.failed} ${name} job(s) failed: ${r.error}`);
      bytes = { ...bytes, [name]: r.outputBytes ?? 0 };
      return { runnerCpu: Number.NaN, runnerOwnCpu: Number.NaN, stackCpu: Number.NaN, ...r };
    };
    // Untimed: the executor starts its runners as jobs come, and each loads a processor when its
    // first job of that type runs; a service that has run jobs has them started and loaded.
    const warm = await hdVideo(1);
    await server.send({
      cmd: "jobs",
      source: warm,
      sourceKey: "in/warm.mp4",
      contentType: "video/mp4",
      jobs: [ladder, ...transcodes],
      idle: false,
    });
    t = await alternate(
      "video jobs",
      rounds,
      { ladder: () => submit([ladder], "ladder"), separate: () => submit(transcodes, "separate") },
      (r) => `${fmt(r.seconds)} s (runners' CPU ${fmt(r.runnerCpu)} s)`,
    );
  } finally {
    await server.close();
  }
  const wall = (name: string) => t[name]!.map((r) => r.seconds);
  const cpu = (name: string) => t[name]!.map((r) => r.runnerCpu);
  const row = (name: string) => ({
    "wall s": formatSummary(summarize(wall(name)), 2),
    "media s per wall s": formatSummary(summarize(wall(name).map((w) => seconds / w)), 2),
    "runners' CPU s": formatSummary(summarize(cpu(name)), 2),
    "of which the runners' Node": formatSummary(summarize(t[name]!.map((r) => r.runnerOwnCpu)), 2),
    "rest of the stack's CPU s": formatSummary(summarize(t[name]!.map((r) => r.stackCpu)), 2),
    "output MB": fmt(bytes[name]! / 1e6, 1),
  });
  console.log(`\nLadder jobs: ${description} through the local stack, the same renditions`);
  console.log(
    `(median [min–max] of ${rounds} alternating rounds; submitted at once over HTTP, the executor at its default concurrency, ${concurrency} runner processes started and idle; wall: first submit to last completion; runners' CPU s: the runner processes' and their ffmpeg and ffprobe children's, from /proc; the rest: the API, executor and embedded S3 store's process and redis-server)\n`,
  );
  printTable({
    "video_adaptive, one job": row("ladder"),
    [`video_transcode × 4 at once (${concurrency} at a time)`]: row("separate"),
  });
  const jobsOverLadderJob = ratio(wall("separate"), wall("ladder"));
  const jobsOverLadderJobCpu = ratio(cpu("separate"), cpu("ladder"));
  console.log(`time ratio separate/ladder: ${formatRatio(jobsOverLadderJob, { atLeast: 1.5 })}`);
  console.log(`CPU ratio separate/ladder (runners): ${formatRatio(jobsOverLadderJobCpu)}`);
  return { jobsOverLadderJob, jobsOverLadderJobCpu };
}

async function rssPart({ path: source, info, description }: Source, rounds: number, work: string) {
  const server = new ResizeServer(await compileProject());
  const job = {
    path: "/jobs/video/transcode",
    sourceKey: "in/video.mp4",
    contentType: "video/mp4",
    parameters: { ...TRANSCODE },
  };
  const args = transcodeArgs({ ...TRANSCODE }, info, source, join(work, "rss.mp4"));
  const idle: number[] = [];
  const idleRss: number[] = [];
  const jobPeaks: number[] = [];
  let peaks: Record<string, number[]>;
  try {
    // The stack (redis-server, the embedded store, the API); setup's source is the resize one's.
    await server.send({ cmd: "setup", source, concurrency: 1 });
    peaks = await alternate(
      "video rss",
      rounds,
      {
        runner: async () => {
          const r = await server.send({ cmd: "rss", source, job });
          idle.push(r.idleKb! / 1024);
          idleRss.push(r.idleRssKb! / 1024);
          if (r.jobPeakKb !== undefined) jobPeaks.push(r.jobPeakKb / 1024);
          return r.peakKb! / 1024;
        },
        ffmpeg: async () => (await peak(ffmpegPath(), args)).kb / 1024,
      },
      (mib) => `${fmt(mib, 1)} MiB`,
    );
  } finally {
    await server.close();
  }
  const runner = summarize(peaks.runner!);
  const ffmpeg = summarize(peaks.ffmpeg!);
  const both = summarize(peaks.runner!.map((r, i) => r + peaks.ffmpeg![i]!));
  console.log(`\nPeak RSS: the transcode of ${description} to 720p through the stack`);
  console.log(
    `(median [min–max] of ${rounds} alternating rounds, a process of its own each; the runner's node process's VmHWM once its job completed, ffmpeg's by GNU time)\n`,
  );
  printTable({
    "runner --serve (node), its start (VmHWM once idle)": {
      "peak RSS MiB": formatSummary(summarize(idle), 1),
    },
    "runner --serve (node), idle before its job (VmRSS)": {
      "peak RSS MiB": formatSummary(summarize(idleRss), 1),
    },
    ...(jobPeaks.length > 0
      ? {
          "runner --serve (node), while its job ran": {
            "peak RSS MiB": formatSummary(summarize(jobPeaks), 1),
          },
        }
      : {}),
    "runner --serve (node), its whole life": { "peak RSS MiB": formatSummary(runner, 1) },
    "plain ffmpeg, the processor's arguments": { "peak RSS MiB": formatSummary(ffmpeg, 1) },
    "runner + its ffmpeg (its peak taken as the plain one's)": { "peak RSS MiB": formatSummary(both, 1) },
  });
  console.log(`the runner's own memory on top of ffmpeg's, MiB: ${formatRatio(runner, { atMost: 80 })}`);
  return runner;
}

/** The ladder against four transcodes as the two parts measured it, per source, side by side. */
function printLadderComparison(ladders: Record<string, LadderFigures>): void {
  const rows: Record<string, Record<string, string>> = {};
  for (const [kind, f] of Object.entries(ladders)) {
    if (f.separateOverLadder) {
      rows[`${kind}: the processors in-process (ladder)`] = {
        "wall time": formatSummary(f.separateOverLadder),
        "CPU s": formatSummary(f.separateOverLadderCpu!),
      };
    }
    if (f.jobsOverLadderJob) {
      rows[`${kind}: jobs through the local stack (jobs)`] = {
        "wall time": formatSummary(f.jobsOverLadderJob),
        "CPU s": formatSummary(f.jobsOverLadderJobCpu!),
      };
    }
  }
  if (Object.keys(rows).length < 2) return;
  console.log("\nLadder against four transcodes, separate/ladder (target >= 1.5 in wall time):\n");
  printTable(rows);
}

export async function videoBenchmark(): Promise<VideoFigures> {
  const rounds = num("BENCH_VIDEO_ROUNDS", 5);
  const seconds = num("BENCH_VIDEO_SECONDS", 10);
  const parts = (process.env.BENCH_VIDEO_PARTS ?? "transcode,ladder,jobs,rss").split(",");
  const ladderSources = (process.env.BENCH_VIDEO_LADDER_SOURCES ?? "synthetic,camera").split(",");
  for (const kind of ladderSources) {
    if (!(kind in SOURCES))
      throw new Error(`BENCH_VIDEO_LADDER_SOURCES: no source "${kind}" (${Object.keys(SOURCES).join(", ")})`);
  }
  const which = process.env.BENCH_VIDEO_FFMPEG ?? "system";
  if (which === "image") {
    // Set before anything here probes or runs ffmpeg: fluent-ffmpeg looks its programs up once, at
    // their first use, and keeps them (a probe of the source before this would leave every later
    // probe on the machine's ffprobe); the runner processes inherit this process's environment.
    const image = await imageFfmpeg();
    process.env.FFMPEG_PATH = image.ffmpeg;
    process.env.FFPROBE_PATH = image.ffprobe;
    log(`ffmpeg and ffprobe of the image ${image.image}: ${image.ffmpeg}`);
  } else if (which !== "system") {
    throw new Error(`BENCH_VIDEO_FFMPEG: "${which}" is neither system nor image`);
  } else {
    log(`ffmpeg and ffprobe of this machine: ${ffmpegPath()}`);
  }
  const synthetic = await loadSource("synthetic", seconds);
  log(
    `video source ${synthetic.path}: ${fmt((await fileSize(synthetic.path)) / 1e6, 1)} MB, ${availableCpus()} CPUs`,
  );
  const work = await mkdtemp(join(tmpdir(), "media-service-bench-video-"));
  const figures: VideoFigures = {};
  try {
    if (parts.includes("transcode"))
      figures.processorOverFfmpeg = await transcodePart(synthetic, rounds, seconds, work);
    if (parts.includes("ladder") || parts.includes("jobs")) {
      figures.ladders = {};
      for (const kind of ladderSources) {
        const source =
          kind === "synthetic" ? synthetic : await loadSource(kind as keyof typeof SOURCES, seconds);
        if (kind !== "synthetic")
          log(`video source ${source.path}: ${fmt((await fileSize(source.path)) / 1e6, 1)} MB`);
        const f: LadderFigures = {};
        if (parts.includes("ladder")) Object.assign(f, await ladderPart(source, rounds, seconds));
        if (parts.includes("jobs")) Object.assign(f, await jobsPart(source, rounds, seconds));
        figures.ladders[kind] = f;
      }
      printLadderComparison(figures.ladders);
    }
    if (parts.includes("rss")) figures.runnerMiB = await rssPart(synthetic, rounds, work);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return figures;
}
