// The job commands: submit, job, watch, cancel, retry, jobs, stats. Each returns its exit code.
import type { Job, JobSummary, QueueStats } from "../core/jobs/records.js";
import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import {
  DESTINATIONS_IN_PARAMETERS,
  WRITES_OUTPUT,
  WRITES_UNDER_PREFIX,
  type JobType,
} from "../core/jobs/types.js";
import { clip } from "../core/text.js";
import { parseJobType, parseParams, parseS3Url, typePath } from "./args.js";
import { filterQuery, type FilterOptions } from "./bulk.js";
import type { ApiClient } from "./api.js";
import { describeEnd, describeJob, stateOf } from "./describe.js";
import { EXIT, UsageError } from "./errors.js";
import { followJob } from "./follow.js";
import { status, table, type Output } from "./output.js";

/** The 200 answer of a retry of a job retried before: its existing retry. */
interface RetriedAlready {
  job_id: string;
  status: Job["status"];
  message: string;
}

/** The 202 answer of a submit or a retry. */
interface Accepted {
  job_id: string;
  status: "pending";
  message: string;
  queue_position?: number;
}

export interface SubmitOptions {
  source: string;
  dest?: string;
  params?: string;
  /** A JSON or YAML file of parameters (a pipeline's steps); --params and key=value pairs win. */
  file?: string;
  priority?: number;
  webhookUrl?: string;
  timeout?: number;
  idempotencyKey?: string;
  wait?: boolean;
  template?: string;
  templateVersion?: number;
  destPrefix?: string;
}

const jobPath = (id: string) => `/jobs/${encodeURIComponent(id)}`;
const idempotency = (key: string | undefined): Record<string, string> =>
  key !== undefined ? { "idempotency-key": key } : {};

/** The body of a single-job submit: locations, parameters, options (docs/api.md#submitting-jobs). */
export function submitBody(
  typeArg: string,
  pairs: string[],
  options: SubmitOptions,
  fromFile: Record<string, unknown> = {},
): { path: string; body: Record<string, unknown> } {
  const type = parseJobType(typeArg);
  const source = parseS3Url(options.source, "--source");
  const body: Record<string, unknown> = { source_bucket: source.bucket, source_key: source.key };
  if (options.template !== undefined) {
    body.template = options.template;
    if (options.templateVersion !== undefined) body.template_version = options.templateVersion;
  } else if (options.templateVersion !== undefined || options.destPrefix !== undefined) {
    throw new UsageError("--template-version and --dest-prefix go with --template");
  }
  if (options.template !== undefined && options.destPrefix !== undefined) {
    const prefix = parseS3Url(options.destPrefix, "--dest-prefix");
    body.dest_bucket = prefix.bucket;
    body.dest_prefix = prefix.key;
  }
  // A template may give the destination: --dest is then optional.
  if (options.template === undefined || options.dest !== undefined) addDestination(body, type, options.dest);
  Object.assign(body, fromFile, parseParams(pairs, options.params));
  if (options.priority !== undefined) body.priority = options.priority;
  if (options.webhookUrl !== undefined) body.webhook_url = options.webhookUrl;
  if (options.timeout !== undefined) body.timeout_seconds = options.timeout;
  return { path: `/jobs/${typePath(type)}`, body };
}

/** Where the output goes, from --dest: a key, or a prefix for a type that writes many objects. */
function addDestination(body: Record<string, unknown>, type: JobType, url: string | undefined): void {
  if (DESTINATIONS_IN_PARAMETERS[type]) {
    // Its steps say where they write; --dest, when given, is the bucket and prefix they default to.
    if (url !== undefined) {
      const dest = parseS3Url(url, "--dest");
      body.dest_bucket = dest.bucket;
      body.dest_prefix = dest.key;
    }
  } else if (WRITES_UNDER_PREFIX[type]) {
    if (url === undefined) {
      throw new UsageError(`${type} writes many objects: --dest s3://bucket/prefix is required`);
    }
    const dest = parseS3Url(url, "--dest");
    body.dest_bucket = dest.bucket;
    body.dest_prefix = dest.key;
  } else if (WRITES_OUTPUT[type]) {
    if (url === undefined) {
      throw new UsageError(`${type} writes a file: --dest s3://bucket/key is required`);
    }
    const dest = parseS3Url(url, "--dest");
    body.dest_bucket = dest.bucket;
    body.dest_key = dest.key;
  } else if (url !== undefined) {
    throw new UsageError(`${type} writes no file (its result is in the job record): leave out --dest`);
  }
}

export async function submit(
  api: ApiClient,
  out: Output,
  typeArg: string,
  pairs: string[],
  options: SubmitOptions,
): Promise<number> {
  const { path, body } = submitBody(
    typeArg,
    pairs,
    options,
    options.file === undefined ? {} : await parametersFile(options.file),
  );
  const accepted = await api.json<Accepted>("POST", path, {
    body,
    headers: idempotency(options.idempotencyKey),
  });
  return queued(api, out, accepted, options.wait === true);
}

/** The parameters of a JSON or YAML file (YAML reads JSON too): an object, such as a pipeline's steps. */
export async function parametersFile(file: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new UsageError(
      `--file ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (err) {
    throw new UsageError(
      `--file ${file} is not valid JSON or YAML: ${(err as Error).message.split("\n")[0]}`,
    );
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new UsageError(`--file ${file} must hold an object of parameters, such as {"steps": {…}}`);
  }
  return parsed as Record<string, unknown>;
}

/** What a submit or a retry prints: the job id (or the answer), or with --wait how the job ended. */
async function queued(api: ApiClient, out: Output, accepted: Accepted, wait: boolean): Promise<number> {
  if (!wait) {
    if (out.json) out.printJson(accepted);
    else out.print(accepted.job_id);
    return EXIT.ok;
  }
  if (out.interactive) {
    const place =
      accepted.queue_position !== undefined ? ` (place ${accepted.queue_position} in its queue)` : "";
    out.note(`${accepted.message}: ${accepted.job_id}${place}`);
  }
  return ended(out, await followJob(api, accepted.job_id, out));
}

/** How a followed job ended: 0 completed, 1 failed, 3 cancelled (its error on stderr). */
function ended(out: Output, job: Job): number {
  if (out.json) out.printJson(job);
  else if (job.status === "completed") out.print(describeEnd(out.out, job));
  if (job.status === "completed") return EXIT.ok;
  if (stateOf(job) === "cancelled") {
    out.note(`${out.err.yellow("cancelled:")} job ${job.id}: ${job.error ?? "cancelled"}`);
    return EXIT.cancelled;
  }
  out.note(`${out.err.red("failed:")} job ${job.id}: ${job.error ?? "no error was recorded"}`);
  return EXIT.failure;
}

export async function show(api: ApiClient, out: Output, id: string): Promise<number> {
  const job = await api.json<Job>("GET", jobPath(id));
  if (out.json) out.printJson(job);
  else out.print(describeJob(out.out, job));
  return EXIT.ok;
}

export async function watch(api: ApiClient, out: Output, id: string): Promise<number> {
  return ended(out, await followJob(api, id, out));
}

export async function cancel(api: ApiClient, out: Output, id: string): Promise<number> {
  const job = await api.json<Job>("POST", `${jobPath(id)}/cancel`);
  if (out.json) out.printJson(job);
  else out.print(`job ${job.id} ${status(out.out, stateOf(job))}: ${job.error ?? ""}`.trimEnd());
  return EXIT.ok;
}

export async function retry(
  api: ApiClient,
  out: Output,
  id: string,
  options: { wait?: boolean; idempotencyKey?: string; force?: boolean },
): Promise<number> {
  const answer = await api.json<Accepted | RetriedAlready>("POST", `${jobPath(id)}/retry`, {
    headers: idempotency(options.idempotencyKey),
    ...(options.force ? { body: { force: true } } : {}),
  });
  // A job retried before answers with its retry (200, no queue_position) and nothing is made: the
  // command goes on with that retry, and says so.
  if (!("queue_position" in answer)) {
    out.note(`job ${id} was retried already as ${answer.job_id}; --force makes another retry`);
    if (!options.wait) {
      if (out.json) out.printJson(answer);
      else out.print(answer.job_id);
      return EXIT.ok;
    }
    return ended(out, await followJob(api, answer.job_id, out));
  }
  return queued(api, out, answer, options.wait === true);
}

export interface ListOptions extends FilterOptions {
  limit?: number;
  cursor?: string;
  all?: boolean;
}

/** The most of a job's error a row of the jobs table shows (`job <id>` shows all of it). */
const LIST_ERROR_CHARS = 60;

/** GET /jobs: one page, or with --all every page (following next_cursor). */
interface JobList {
  jobs: JobSummary[];
  total: number;
  next_cursor?: string;
}

export async function list(api: ApiClient, out: Output, options: ListOptions): Promise<number> {
  const query = { ...filterQuery(options), limit: options.limit };
  let page = await api.json<JobList>("GET", "/jobs", { query: { ...query, cursor: options.cursor } });
  if (options.all) {
    const jobs = [...page.jobs];
    const seen = new Set<string>();
    while (page.next_cursor && !seen.has(page.next_cursor)) {
      seen.add(page.next_cursor);
      page = await api.json<JobList>("GET", "/jobs", { query: { ...query, cursor: page.next_cursor } });
      jobs.push(...page.jobs);
    }
    page = { jobs, total: page.total };
  }
  if (out.json) {
    out.printJson(page);
    return EXIT.ok;
  }
  if (page.jobs.length === 0) {
    out.print("no jobs");
  } else {
    out.print(
      table(
        out.out,
        ["ID", "TYPE", "STATUS", "CREATED", "DURATION", "SOURCE", "OUTPUT", "ERROR"],
        page.jobs.map((j) => [
          j.id,
          j.type,
          status(out.out, j.state ?? j.status),
          j.created_at,
          j.duration_seconds !== undefined ? `${j.duration_seconds.toFixed(1)}s` : "",
          j.source ?? "",
          j.output ?? "",
          j.error !== undefined ? clip(j.error, LIST_ERROR_CHARS) : "",
        ]),
      ),
    );
  }
  const shown = `${page.jobs.length} of ${page.total}`;
  if (page.next_cursor) out.print(out.out.dim(`${shown}; next: --cursor ${page.next_cursor}`));
  else if (page.jobs.length < page.total) out.print(out.out.dim(shown));
  return EXIT.ok;
}

export async function stats(api: ApiClient, out: Output): Promise<number> {
  const s = await api.json<QueueStats>("GET", "/queue/stats");
  if (out.json) {
    out.printJson(s);
    return EXIT.ok;
  }
  // An API from before the cancelled counts answers none: 0 of its failed jobs are told apart.
  const of = (n: number | undefined) => n ?? 0;
  const rows: Array<Array<string | number>> = Object.entries(s.queues)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, q]) => [
      name,
      q.pending,
      q.processing,
      q.completed,
      q.failed - of(q.cancelled),
      of(q.cancelled),
    ]);
  const cancelled = of(s.total_cancelled);
  rows.push([
    out.out.bold("total"),
    s.total_pending,
    s.total_processing,
    s.total_completed,
    s.total_failed - cancelled,
    cancelled,
  ]);
  // FAILED without the cancelled ones, which have a column of their own.
  out.print(table(out.out, ["QUEUE", "PENDING", "PROCESSING", "COMPLETED", "FAILED", "CANCELLED"], rows));
  // With named clients: each client's jobs against its limits (every client for an admin).
  if (s.clients && s.clients.length > 0) {
    const ofLimit = (n: number, limit: number | undefined) =>
      limit === undefined ? `${n}` : `${n}/${limit}`;
    out.print("");
    out.print(
      table(
        out.out,
        ["CLIENT", "RUNNING", "PENDING", "WEIGHT", "JOB TYPES", "MAX PRIORITY", "REFUSED"],
        s.clients.map((c) => [
          c.name,
          ofLimit(c.running, c.max_running),
          ofLimit(c.pending, c.max_pending),
          c.weight,
          c.job_types?.join(",") ?? "all",
          c.max_priority ?? "any",
          Object.values(c.refused).reduce((sum, n) => sum + n, 0),
        ]),
      ),
    );
  }
  return EXIT.ok;
}
