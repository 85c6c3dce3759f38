// Jobs for the runner, against a test stack (test/support/api.ts): objects put in its S3-protocol
// store, jobs submitted through its API and claimed as the controller claims them before it starts
// a runner, and a job run in-process by runJob, the code path of `runner --job`.
import assert from "node:assert/strict";
import { pino } from "pino";
import type { Job } from "../../core/jobs/records.js";
import type { JobType } from "../../core/jobs/types.js";
import type { Logger } from "../../core/logger.js";
import { runJob, type RunOutcome } from "../../runner/run-job.js";
import type { TestStack } from "./api.js";
import { claimJob } from "./store.js";

export { putObject } from "./jobs.js";

/**
 * Submits a job through the API (`path` under /api/v1/jobs/) and claims it, as the controller does
 * before it starts a runner. Returns the job's id.
 */
export async function submitAndClaim(
  stack: TestStack,
  type: JobType,
  path: string,
  body: Record<string, unknown>,
): Promise<string> {
  const res = await stack.request(`/api/v1/jobs/${path}`, { method: "POST", json: body });
  const json = (await res.json()) as { job_id: string; error?: string };
  assert.equal(res.status, 202, json.error);
  await claimJob(stack.services.store, type, json.job_id);
  return json.job_id;
}

/** Runs a claimed job in-process as `runner --job` does; its outcome and the job as recorded after. */
export async function runClaimed(
  stack: TestStack,
  jobId: string,
  logger: Logger = pino({ level: "silent" }),
): Promise<{ outcome: RunOutcome; job: Job }> {
  const { config, services } = stack;
  const outcome = await runJob(jobId, { config, store: services.store, s3: services.s3, logger });
  const job = await services.store.getJob(jobId);
  assert.ok(job, `job ${jobId} is still recorded`);
  return { outcome, job };
}
