/**
 * A client's limits (server.clients: max_running, max_pending, job_types, max_priority) and its
 * fair-share weight, as the store applies them: job_types and max_priority before a submission's
 * script runs (a 403: nothing about them can change by a race), max_pending in submit.lua and
 * max_running in claim.lua, atomically (core/store/lua/).
 */
import type { JobType } from "./types.js";

/** What the store needs of a client's settings (core/config/schema.ts ApiClientConfig). */
export interface ClientLimits {
  weight?: number;
  maxRunning?: number;
  maxPending?: number;
  jobTypes?: readonly JobType[];
  maxPriority?: number;
  maxSourceBytes?: number;
}

/** Which limit refused a request: its name in server.clients. */
export type LimitName = "max_pending" | "max_running" | "job_types" | "max_priority" | "max_source_bytes";

/**
 * A request a client's limit refuses: 429 for a limit that frees up (max_pending: try again once
 * some of its jobs have started), 403 for one that does not (a job type or priority not allowed).
 * The message names the client, the limit and its value.
 */
export class ClientLimitError extends Error {
  override name = "ClientLimitError";
  constructor(
    message: string,
    readonly limit: LimitName,
    readonly status: 403 | 429,
  ) {
    super(message);
  }
}

/** Refuses (ClientLimitError, 403) jobs of a type or a priority the client's limits do not allow. */
export function checkSubmission(
  client: string,
  limits: ClientLimits | undefined,
  jobs: ReadonlyArray<{ type: JobType; priority?: number }>,
): void {
  if (!limits) return;
  for (const job of jobs) {
    if (limits.jobTypes && !limits.jobTypes.includes(job.type)) {
      throw new ClientLimitError(
        `client "${client}" may not submit ${job.type} jobs: its server.clients job_types are ${limits.jobTypes.join(", ") || "none"}`,
        "job_types",
        403,
      );
    }
    if (limits.maxPriority !== undefined && (job.priority ?? 0) > limits.maxPriority) {
      throw new ClientLimitError(
        `client "${client}" may not submit priority ${job.priority ?? 0}: its server.clients max_priority is ${limits.maxPriority}`,
        "max_priority",
        403,
      );
    }
  }
}

/**
 * What claim.lua takes as its clients' settings: {<client>: {weight?, max_running?}} for the clients
 * whose settings are not the defaults (weight 1, no max_running).
 */
export function claimSettings(clients: ReadonlyMap<string, ClientLimits>): string {
  const out: Record<string, { weight?: number; max_running?: number }> = {};
  for (const [name, limits] of clients) {
    const weight = limits.weight !== undefined && limits.weight !== 1 ? limits.weight : undefined;
    if (weight === undefined && limits.maxRunning === undefined) continue;
    out[name] = {
      ...(weight !== undefined ? { weight } : {}),
      ...(limits.maxRunning !== undefined ? { max_running: limits.maxRunning } : {}),
    };
  }
  return JSON.stringify(out);
}
