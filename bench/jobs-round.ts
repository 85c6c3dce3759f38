// A round of jobs through the whole local stack, as a user submits them (bench/video.ts, `jobs`):
// every job POSTed to the API at once, run by the local executor's `runner --serve` processes
// (S3 GET, probe, ffmpeg, S3 PUT, the probe of the output, reports to Redis), waited for to the last
// completion; wall time from the first submit to the last completed_at the store wrote, and the CPU
// time of the runner processes and their ffmpeg and ffprobe children, and of the rest of the stack.
// A job may read another's output (bench/pipeline.ts's single jobs: the watermark on a resize): it is
// submitted once that one has completed, as a client chains jobs (runJobs, also the k8s part's).
import { readFile } from "node:fs/promises";
import { ListObjectsV2Command, PutObjectCommand } from "@aws-sdk/client-s3";
import type { Job } from "../core/jobs/records.js";
import type { CoreServices } from "../core/services.js";
import { cpuSince, cpuSnapshot } from "./procs.js";
import { BENCH_API_KEY } from "./stack.js";

export interface StackJob {
  /** Its route under /api/v1, e.g. /jobs/video/transcode. */
  path: string;
  parameters: Record<string, unknown>;
  /** Written under a dest_prefix (video_adaptive, pipeline) rather than to a dest_key. */
  prefix?: boolean;
  /** The dest_key's extension (default mp4); null: a job that writes no file (no destination). */
  extension?: string | null;
  /**
   * Reads the output of the round's job at this index, submitted once that one has completed: a
   * chain, as a client without pipelines runs it.
   */
  input?: number;
  /** Its source, instead of the request's sourceKey (already in the store). */
  sourceKey?: string;
}

export interface JobsRequest {
  /** The source file, uploaded once under `sourceKey`. */
  source: string;
  sourceKey: string;
  contentType: string;
  /** Submitted at once. */
  jobs: StackJob[];
  /** Start the round only once all the executor's runners are idle (default); false for a warm-up. */
  idle?: boolean;
}

export interface JobsRoundResult {
  jobs: number;
  failed: number;
  error?: string;
  seconds: number;
  /** CPU seconds of the runner processes and everything they ran (ffmpeg, ffprobe). */
  runnerCpu: number;
  /** Of runnerCpu, the runner processes' own (Node: download, upload, reports), without their children. */
  runnerOwnCpu: number;
  /** CPU seconds of the bench server process (the API, the executor, the embedded S3 store) and redis-server. */
  stackCpu: number;
  /** Bytes the jobs wrote (every object under the round's keys). */
  outputBytes: number;
}

const POLL_MS = 50;

const uploaded = new Set<string>();

export async function jobsRound(
  services: CoreServices,
  apiBase: string,
  bucket: string,
  request: JobsRequest,
  round: number,
): Promise<JobsRoundResult> {
  const { jobs, sourceKey } = request;
  if (!uploaded.has(sourceKey)) {
    const body = await readFile(request.source);
    await services.s3.send(
      new PutObjectCommand({ Bucket: bucket, Key: sourceKey, Body: body, ContentType: request.contentType }),
    );
    uploaded.add(sourceKey);
  }
  const redisPid = await redisServerPid(services);
  const before = await cpuSnapshot();
  const started = Date.now();
  const submit = async (path: string, body: Record<string, unknown>) => {
    const res = await fetch(`${apiBase}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": BENCH_API_KEY },
      body: JSON.stringify(body),
    });
    if (res.status !== 202) throw new Error(`POST ${path} answered ${res.status}: ${await res.text()}`);
    return ((await res.json()) as { job_id: string }).job_id;
  };
  const records = await runJobs(jobs, {
    bucket,
    sourceKey,
    dest: (i) => `out/jobs-${round}-${i}`,
    submit,
    getJob: (id) => services.store.getJob(id),
  });
  const after = await cpuSnapshot();
  const cpu = cpuSince(before, after, (pid) => pid === redisPid);
  const last = Math.max(...records.map((j) => Date.parse(j?.completed_at ?? j?.updated_at ?? "") || 0));
  const failed = records.filter((j) => j?.status === "failed");
  return {
    jobs: jobs.length - failed.length,
    failed: failed.length,
    ...(failed[0] ? { error: failed[0].error } : {}),
    seconds: ((last > started ? last : Date.now()) - started) / 1000,
    runnerCpu: cpu.children - cpu.apart,
    runnerOwnCpu: cpu.childrenOwn,
    stackCpu: cpu.own + cpu.apart,
    outputBytes: await storedBytes(services, bucket, `out/jobs-${round}-`),
  };
}

/** How runJobs reaches a stack: where the round's objects go, how it submits and reads a job. */
export interface JobsTarget {
  bucket: string;
  /** The source of the jobs that name none and read no other job's output. */
  sourceKey: string;
  /** The output key (without extension) or prefix of the round's job at index i. */
  dest(i: number): string;
  /** POSTs a job's body to its route under /api/v1; its id. */
  submit(path: string, body: Record<string, unknown>): Promise<string>;
  getJob(id: string): Promise<Job | undefined>;
}

/** A job's dest_key or dest_prefix, or nothing for a job that writes no file. */
function destinationOf(job: StackJob, dest: string): Record<string, string> {
  if (job.extension === null) return {};
  return job.prefix ? { dest_prefix: dest } : { dest_key: `${dest}.${job.extension ?? "mp4"}` };
}

/**
 * Submits the jobs reading a source at once, each chained one as soon as its input job has
 * completed, and waits for every one to end; their records, in the order of `jobs`.
 */
export async function runJobs(jobs: StackJob[], target: JobsTarget): Promise<Array<Job | undefined>> {
  const ids: Array<string | undefined> = jobs.map(() => undefined);
  const post = async (job: StackJob, i: number) => {
    const from =
      job.input !== undefined ? destinationOf(jobs[job.input]!, target.dest(job.input)).dest_key : undefined;
    ids[i] = await target.submit(job.path, {
      source_bucket: target.bucket,
      source_key: from ?? job.sourceKey ?? target.sourceKey,
      ...(job.extension === null ? {} : { dest_bucket: target.bucket }),
      ...destinationOf(job, target.dest(i)),
      ...job.parameters,
    });
  };
  await Promise.all(jobs.flatMap((job, i) => (job.input === undefined ? [post(job, i)] : [])));
  const ended = (j: Job | undefined) => j?.status === "completed" || j?.status === "failed";
  let records: Array<Job | undefined> = [];
  // Each poll reads the jobs not yet ended (a batch of hundreds polled whole would load the machine).
  const read = () =>
    Promise.all(
      ids.map(async (id, i) => (ended(records[i]) ? records[i] : id ? target.getJob(id) : undefined)),
    );
  records = await read();
  while (ids.some((id) => id === undefined) || records.some((j) => !ended(j))) {
    const ready = jobs.flatMap((job, i) => {
      if (ids[i] !== undefined || job.input === undefined) return [];
      const input = records[job.input];
      if (input?.status === "failed")
        throw new Error(`job ${i}'s input job ${job.input} failed: ${input.error}`);
      return input?.status === "completed" ? [post(job, i)] : [];
    });
    await Promise.all(ready);
    await new Promise((r) => setTimeout(r, POLL_MS));
    records = await read();
  }
  return records;
}

async function storedBytes(services: CoreServices, bucket: string, prefix: string): Promise<number> {
  let bytes = 0;
  let token: string | undefined;
  do {
    const page = await services.s3.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
    );
    for (const object of page.Contents ?? []) bytes += object.Size ?? 0;
    token = page.NextContinuationToken;
  } while (token);
  return bytes;
}

/** The pid of the stack's redis-server (INFO server's process_id), if it is this machine's child. */
async function redisServerPid(services: CoreServices): Promise<number | undefined> {
  const info = await services.redis.info("server");
  const pid = Number(/^process_id:(\d+)/m.exec(info)?.[1]);
  if (!pid) return undefined;
  const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
  return cmdline.includes("redis-server") ? pid : undefined;
}
