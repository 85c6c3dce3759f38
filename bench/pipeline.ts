// npm run bench -- pipeline: what a pipeline saves over the single jobs that make the same outputs.
// The outputs are those a site makes of an uploaded photo: from one 24-megapixel JPEG (6000×4000,
// bench/fixtures.ts photo()), four widths (320, 640, 1280, 1920) as AVIF (its default effort) and as
// WebP, a watermark on the 1920 WebP, and the dominant colours: ten outputs, as one pipeline job
// (one download, one shared decode, the steps side by side) or as ten single jobs (each downloads
// and decodes the source; the watermark reads the 1920 WebP once that job has completed, as a
// client without pipelines chains them). Side by side in one run, the two alternating round by round.
//
//   local  through the local stack (bench/resize-server.ts `jobs`, bench/jobs-round.ts): the API,
//          the local executor at its default concurrency (one runner per CPU, started and idle), the
//          embedded S3 store. Machine time per source: the CPU seconds of the runner processes (from
//          /proc; the rest of the stack's — API, executor, store, redis-server — shown apart), and
//          the wall time from the first POST to the last completion. Target: the single jobs' runner
//          CPU >= 2.5 × the pipeline's.
//   k8s    on the real node the k8s benchmark builds (bench/k8s.ts, `npm run build` first, root,
//          Node 24): a batch of BENCH_PIPELINE_K8S_SOURCES sources (20) as that many pipeline jobs vs
//          ten times as many single jobs, one run each: runner pods created (a watch on the
//          namespace's pods), the wall time from the first POST to the last completion and the
//          whole machine's CPU seconds meanwhile (the node's and control plane's work for each pod
//          too). Targets: >= 5 × fewer pods, >= 3 × less wall time (bench/pipeline-k8s.ts).
//
// Knobs: BENCH_PIPELINE_PARTS (local; local,k8s adds the cluster), BENCH_PIPELINE_ROUNDS (5, local),
// BENCH_PIPELINE_SOURCE (6000x4000: the photo's size, both parts), BENCH_PIPELINE_K8S_SOURCES (20),
// BENCH_PIPELINE_K8S_CAP (the controller's max_running_jobs, 10), BENCH_PIPELINE_K8S_LIMIT (seconds
// allowed to one batch, 1800). Local with 5 rounds: about 4 minutes on 2 CPUs; k8s: the cluster's
// start (a few minutes, the image built once) and two batches, tens of minutes at 20 sources.
import { definitionOf, JOB_MEDIA, type JobType } from "../core/jobs/types.js";
import { availableCpus } from "../runner/cpus.js";
import { compileProject } from "./compile.js";
import { photo } from "./fixtures.js";
import type { StackJob } from "./jobs-round.js";
import { alternate, fileSize, fmt, log, num, ResizeServer } from "./runner.js";
import { formatRatio, formatSummary, printTable, ratio, summarize, type Summary } from "./stats.js";

/** The four widths, each written as AVIF and as WebP. */
export const WIDTHS = [320, 640, 1280, 1920] as const;

export type Steps = Record<string, { type: JobType; parameters: Record<string, unknown>; input?: string }>;

/** The source's size, `WIDTHxHEIGHT` (BENCH_PIPELINE_SOURCE). */
export function sourceSize(): { width: number; height: number } {
  const raw = process.env.BENCH_PIPELINE_SOURCE ?? "6000x4000";
  const match = /^(\d+)x(\d+)$/.exec(raw);
  if (!match) throw new Error(`BENCH_PIPELINE_SOURCE=${raw}: WIDTHxHEIGHT, e.g. 6000x4000`);
  return { width: Number(match[1]), height: Number(match[2]) };
}

/** The ten outputs of a source of this size, as a pipeline's steps. */
export function tenOutputs(source: { width: number; height: number }): Steps {
  const steps: Steps = {};
  for (const width of WIDTHS) {
    const height = Math.round((width * source.height) / source.width);
    for (const format of ["avif", "webp"]) {
      steps[`w${width}_${format}`] = { type: "image_resize", parameters: { width, height, format } };
    }
  }
  steps.marked = {
    type: "image_watermark",
    input: "w1920_webp",
    parameters: { watermark_text: "media-service", position: "bottom-right" },
  };
  steps.colours = { type: "image_colors", parameters: {} };
  return steps;
}

/** The same outputs as single jobs: one per step, a step reading another's output chained to it. */
export function singleJobs(steps: Steps, sourceKey?: string, offset = 0): StackJob[] {
  const names = Object.keys(steps);
  return names.map((name) => {
    const step = steps[name]!;
    const format = step.parameters.format ?? (step.input ? steps[step.input]!.parameters.format : undefined);
    return {
      path: definitionOf(step.type).route.path,
      parameters: step.parameters,
      extension: JOB_MEDIA[step.type].output === null ? null : typeof format === "string" ? format : "jpg",
      ...(step.input !== undefined ? { input: offset + names.indexOf(step.input) } : {}),
      ...(sourceKey !== undefined ? { sourceKey } : {}),
    };
  });
}

/** The same outputs as one pipeline job. */
export const pipelineJob = (steps: Steps, sourceKey?: string): StackJob => ({
  path: "/jobs/pipeline",
  parameters: { steps },
  prefix: true,
  ...(sourceKey !== undefined ? { sourceKey } : {}),
});

interface Round {
  seconds: number;
  runnerCpu: number;
  stackCpu: number;
  outputBytes: number;
}

export interface PipelineFigures {
  /** Runners' CPU seconds of the single jobs over the pipeline's. */
  singleOverPipelineCpu?: Summary;
  singleOverPipelineWall?: Summary;
}

async function localPart(rounds: number): Promise<PipelineFigures> {
  const size = sourceSize();
  const source = await photo(size.width, size.height);
  log(
    `pipeline: source ${source}, ${size.width}×${size.height}, ${fmt((await fileSize(source)) / 1e6, 1)} MB`,
  );
  const steps = tenOutputs(size);
  const one = pipelineJob(steps);
  const ten = singleJobs(steps);
  const server = new ResizeServer(await compileProject());
  const cpus = availableCpus();
  let t: Record<string, Round[]>;
  try {
    // The stack at the executor's default concurrency (0: one runner per CPU).
    await server.send({ cmd: "setup", source, concurrency: 0 });
    const request = { source, sourceKey: "in/photo.jpg", contentType: "image/jpeg" };
    const submit = async (jobs: StackJob[], name: string): Promise<Round> => {
      const r = await server.send({ cmd: "jobs", ...request, jobs });
      if (r.failed) throw new Error(`${r.failed} ${name} job(s) failed: ${r.error}`);
      return {
        seconds: r.seconds,
        runnerCpu: r.runnerCpu ?? Number.NaN,
        stackCpu: r.stackCpu ?? Number.NaN,
        outputBytes: r.outputBytes ?? 0,
      };
    };
    // Untimed: the executor starts its runners as jobs come, and each loads its processors (and a
    // pipeline's checks of its steps) when its first job of a type runs; a service that has run jobs
    // has them started and loaded. A pipeline and the single jobs for each runner.
    const warmUp = Array.from({ length: cpus }, (_, c) => [
      one,
      ...singleJobs(steps, undefined, c * (ten.length + 1) + 1),
    ]).flat();
    await server.send({ cmd: "jobs", ...request, jobs: warmUp, idle: false });
    t = await alternate(
      "pipeline local",
      rounds,
      { pipeline: () => submit([one], "pipeline"), single: () => submit(ten, "single") },
      (r) => `${fmt(r.seconds)} s (runners' CPU ${fmt(r.runnerCpu)} s)`,
    );
  } finally {
    await server.close();
  }
  const of = (name: string, figure: keyof Round) => t[name]!.map((r) => r[figure]);
  const row = (name: string) => ({
    "runners' CPU s": formatSummary(summarize(of(name, "runnerCpu")), 2),
    "rest of the stack's CPU s": formatSummary(summarize(of(name, "stackCpu")), 2),
    "wall s": formatSummary(summarize(of(name, "seconds")), 2),
    "output MB": fmt(summarize(of(name, "outputBytes")).median / 1e6, 2),
  });
  console.log(
    `\nPipeline: ten outputs of a ${size.width}×${size.height} JPEG (${WIDTHS.join(", ")} wide as AVIF and WebP, a watermark on the 1920 WebP, the colours) through the local stack`,
  );
  console.log(
    `(median [min–max] of ${rounds} alternating rounds; submitted over HTTP, the executor at its default concurrency, ${cpus} runner processes started and idle; runners' CPU s: the runner processes' from /proc, the machine time a source costs; the rest: the API, executor and embedded S3 store's process and redis-server; wall: first POST to last completion)\n`,
  );
  printTable({
    "one pipeline job": row("pipeline"),
    "ten single jobs (the watermark chained)": row("single"),
  });
  const singleOverPipelineCpu = ratio(of("single", "runnerCpu"), of("pipeline", "runnerCpu"));
  const singleOverPipelineWall = ratio(of("single", "seconds"), of("pipeline", "seconds"));
  const stack = ratio(of("single", "stackCpu"), of("pipeline", "stackCpu"));
  console.log(`runners' CPU single/pipeline: ${formatRatio(singleOverPipelineCpu, { atLeast: 2.5 })}`);
  const saved = summarize(of("single", "runnerCpu").map((cpu, i) => cpu - of("pipeline", "runnerCpu")[i]!));
  // The encodes are the same work in both: what a pipeline can save is the rest (downloads, decodes).
  console.log(`runners' CPU s the pipeline saves per source: ${formatSummary(saved, 2)}`);
  console.log(`wall time single/pipeline:    ${formatRatio(singleOverPipelineWall)}`);
  console.log(`rest of the stack's CPU single/pipeline: ${formatRatio(stack)}`);
  return { singleOverPipelineCpu, singleOverPipelineWall };
}

const PARTS = ["local", "k8s"] as const;

export async function pipelineBenchmark(): Promise<PipelineFigures> {
  const parts = (process.env.BENCH_PIPELINE_PARTS ?? "local")
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean);
  const unknown = parts.filter((p) => !(PARTS as readonly string[]).includes(p));
  if (unknown.length > 0) {
    throw new Error(
      `BENCH_PIPELINE_PARTS: unknown part(s) ${unknown.join(", ")}; choose from ${PARTS.join(", ")}`,
    );
  }
  const started = Date.now();
  const figures: PipelineFigures = {};
  if (parts.includes("local")) Object.assign(figures, await localPart(num("BENCH_PIPELINE_ROUNDS", 5)));
  // Loaded only when asked: @kubernetes/client-node needs Node 24.
  if (parts.includes("k8s")) await (await import("./pipeline-k8s.js")).pipelineK8sPart();
  log(`pipeline: ${((Date.now() - started) / 1000).toFixed(0)} s in all`);
  return figures;
}
