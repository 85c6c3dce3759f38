// media-service batch submit FILE.jsonl: one batch entry a line, as in POST /api/v1/jobs/batch.
import { readFile } from "node:fs/promises";
import { text } from "node:stream/consumers";
import type { Batch, Job, JobSummary } from "../core/jobs/records.js";
import { parseJobType } from "./args.js";
import type { ApiClient } from "./api.js";
import { stateOf } from "./describe.js";
import { EXIT, UsageError } from "./errors.js";
import type { Output } from "./output.js";
import { createBar } from "./progress.js";
import { status, table } from "./output.js";

export interface BatchOptions {
  failFast?: boolean;
  priority?: number;
  batchId?: string;
  webhookUrl?: string;
  idempotencyKey?: string;
  wait?: boolean;
}

interface Created {
  batch_id: string;
  total_jobs: number;
  job_ids: string[];
  status: "queued";
}

interface BatchAnswer {
  batch: Batch;
  jobs?: JobSummary[];
}

/** How often --wait asks for the batch. */
const POLL_MS = 1000;

/** The entries of a JSON Lines file ("-": stdin); blank lines are skipped. */
export async function readEntries(file: string): Promise<Array<Record<string, unknown>>> {
  let content: string;
  try {
    content = file === "-" ? await text(process.stdin) : await readFile(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UsageError(
      `cannot read ${file}: ${code === "ENOENT" ? "no such file" : (err as Error).message}`,
    );
  }
  const entries: Array<Record<string, unknown>> = [];
  for (const [index, line] of content.split("\n").entries()) {
    if (line.trim() === "") continue;
    let entry: unknown;
    try {
      entry = JSON.parse(line);
    } catch (err) {
      throw new UsageError(`${file}:${index + 1}: not JSON: ${(err as Error).message}`);
    }
    if (!entry || typeof entry !== "object" || Array.isArray(entry)) {
      throw new UsageError(`${file}:${index + 1}: each line must be a JSON object (a batch entry)`);
    }
    const record = entry as Record<string, unknown>;
    // The type as on submit's command line: image/resize is image_resize.
    if (typeof record.type === "string") {
      try {
        record.type = parseJobType(record.type);
      } catch (err) {
        throw new UsageError(`${file}:${index + 1}: ${(err as Error).message}`);
      }
    }
    entries.push(record);
  }
  if (entries.length === 0) throw new UsageError(`${file} holds no batch entry`);
  return entries;
}

export async function submitBatch(
  api: ApiClient,
  out: Output,
  file: string,
  options: BatchOptions,
): Promise<number> {
  const jobs = await readEntries(file);
  const batchOptions: Record<string, unknown> = {};
  if (options.failFast) batchOptions.fail_fast = true;
  if (options.priority !== undefined) batchOptions.priority = options.priority;
  if (options.webhookUrl !== undefined) batchOptions.webhook_url = options.webhookUrl;
  const created = await api.json<Created>("POST", "/jobs/batch", {
    body: {
      ...(options.batchId !== undefined ? { batch_id: options.batchId } : {}),
      jobs,
      ...(Object.keys(batchOptions).length > 0 ? { options: batchOptions } : {}),
    },
    headers: options.idempotencyKey !== undefined ? { "idempotency-key": options.idempotencyKey } : {},
  });
  if (!options.wait) {
    if (out.json) out.printJson(created);
    else out.print(created.batch_id);
    return EXIT.ok;
  }
  if (out.interactive) out.note(`batch ${created.batch_id}: ${created.total_jobs} jobs queued`);
  return waitForBatch(api, out, created.batch_id);
}

/**
 * Follows a batch to its end with one bar (done, failed, of total), then lists its failures.
 *
 * It asks for the batch once a second rather than following each job's event stream: one request a
 * second whatever the batch's size (up to 100 jobs, where streams would hold up to 100 connections
 * open), and the batch record already counts its jobs by state; a bar loses nothing by moving at
 * most a second late.
 */
async function waitForBatch(api: ApiClient, out: Output, id: string): Promise<number> {
  const path = `/jobs/batch/${encodeURIComponent(id)}`;
  let answer = await api.json<BatchAnswer>("GET", path);
  const bar = createBar(
    out,
    answer.batch.total_jobs,
    "{bar} {value}/{total} done | {failed} failed, {cancelled} cancelled, {running} running",
    {
      failed: 0,
      cancelled: 0,
      running: 0,
    },
  );
  const interrupt = () => {
    bar.stop();
    out.note(`stopped following batch ${id}; its jobs go on (media-service jobs --batch ${id})`);
    process.exit(EXIT.interrupted);
  };
  process.once("SIGINT", interrupt);
  try {
    for (;;) {
      const b = answer.batch;
      bar.update(b.completed + b.failed, {
        failed: b.failed - b.cancelled,
        cancelled: b.cancelled,
        running: b.processing,
      });
      if (b.pending + b.processing === 0) break;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      answer = await api.json<BatchAnswer>("GET", path);
    }
  } finally {
    bar.stop();
    process.off("SIGINT", interrupt);
  }
  const final = await api.json<BatchAnswer>("GET", path, { query: { include_jobs: true } });
  const failedIds = (final.jobs ?? []).filter((j) => j.status === "failed").map((j) => j.id);
  const failed = await Promise.all(
    failedIds.map((jobId) => api.json<Job>("GET", `/jobs/${encodeURIComponent(jobId)}`)),
  );
  const b = final.batch;
  if (out.json) {
    out.printJson({ ...final, failed });
  } else {
    out.print(
      `batch ${b.id} ${status(out.out, b.status)}: ${b.completed} completed, ${b.failed - b.cancelled} failed, ${b.cancelled} cancelled, of ${b.total_jobs}`,
    );
    if (failed.length > 0) {
      out.print(
        table(
          out.out,
          ["FAILED JOB", "TYPE", "STATE", "ERROR"],
          failed.map((j) => [j.id, j.type, stateOf(j), j.error ?? ""]),
        ),
      );
    }
  }
  // A job that failed is a failure to look at; a batch whose only misses were cancelled is told apart
  // (as a followed job that was cancelled is).
  if (b.failed > b.cancelled) return EXIT.failure;
  return b.cancelled > 0 ? EXIT.cancelled : EXIT.ok;
}
