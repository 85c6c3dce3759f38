// A round of jobs through the whole local stack, as a user submits them (bench/video.ts, `jobs`):
// every job POSTed to the API at once, run by the local executor's `runner --serve` processes
// (S3 GET, probe, ffmpeg, S3 PUT, the probe of the output, reports to Redis), waited for to the last
// completion; wall time from the first submit to the last completed_at the store wrote, and the CPU
// time of the runner processes and their ffmpeg and ffprobe children, and of the rest of the stack.
import { readFile } from "node:fs/promises";
import { ListObjectsV2Command, PutObjectCommand } from "@aws-sdk/client-s3";
import type { CoreServices } from "../core/services.js";
import { cpuSince, cpuSnapshot } from "./procs.js";
import { BENCH_API_KEY } from "./stack.js";

export interface StackJob {
  /** Its route under /api/v1, e.g. /jobs/video/transcode. */
  path: string;
  parameters: Record<string, unknown>;
  /** Written under a dest_prefix (video_adaptive) rather than to a dest_key. */
  prefix?: boolean;
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
  const ids = await Promise.all(
    jobs.map(async (job, i) => {
      const dest = `out/jobs-${round}-${i}`;
      const res = await fetch(`${apiBase}${job.path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": BENCH_API_KEY },
        body: JSON.stringify({
          source_bucket: bucket,
          source_key: sourceKey,
          dest_bucket: bucket,
          ...(job.prefix ? { dest_prefix: dest } : { dest_key: `${dest}.mp4` }),
          ...job.parameters,
        }),
      });
      if (res.status !== 202) throw new Error(`POST ${job.path} answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as { job_id: string }).job_id;
    }),
  );
  let records = await Promise.all(ids.map((id) => services.store.getJob(id)));
  while (records.some((j) => j?.status !== "completed" && j?.status !== "failed")) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    records = await Promise.all(ids.map((id) => services.store.getJob(id)));
  }
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
