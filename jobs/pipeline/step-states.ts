// What each step of a pipeline is doing, or what became of it, read from the job's record: the
// states the dashboard's graph of a pipeline shows (view.tsx). Pure, so that it is tested apart from
// the browser.
import type { Job } from "../../core/jobs/records.js";

export interface Step {
  type?: string;
  input?: string;
}

/** A step's entry of `result.steps`: its type's result, or its error. */
export type StepResult = {
  output_url?: string;
  file_size?: number;
  metadata?: { width?: number; height?: number; format?: string };
  error?: string;
} & Record<string, unknown>;

/** What became of a step, or what it is doing. */
export type StepState =
  | { state: "waiting" }
  | { state: "running"; percent: number }
  | { state: "completed"; result?: StepResult }
  | { state: "failed"; error: string }
  | { state: "not-run"; reason: string };

/** How a step's entry of `result.steps` begins when the step did not run (processor.ts writes it). */
export const NOT_RUN = "not run: ";

/**
 * A step's state from the job's record: its entry of `result.steps` once there is one (a completed
 * pipeline, or a failed one with keep_partial), the step the job's error names, and while it runs
 * its percent in `steps_progress` (100: done; running once its input is done; waiting before).
 */
export function stepState(job: Job, steps: Record<string, Step>, name: string): StepState {
  const record: Record<string, unknown> = job.result ?? {};
  const results = record.steps as Record<string, StepResult> | undefined;
  const result = results?.[name];
  if (result?.error !== undefined) {
    return result.error.startsWith(NOT_RUN)
      ? { state: "not-run", reason: result.error.slice(NOT_RUN.length) }
      : { state: "failed", error: result.error };
  }
  if (result) return { state: "completed", result };
  if (job.status === "completed") return { state: "completed" };
  if (job.status === "failed") {
    // Without a result (no keep_partial, or a failure that was not the input's) the job's error
    // names the step that failed: `step <name> (<type>): <error>`.
    const prefix = `step ${name} (${steps[name]?.type ?? ""}): `;
    if (job.error?.startsWith(prefix)) return { state: "failed", error: job.error.slice(prefix.length) };
    if (job.cancelled_at !== undefined) return { state: "not-run", reason: "the job was cancelled" };
    return { state: "not-run", reason: "the pipeline stopped when another step failed; no result was kept" };
  }
  const progress = job.status === "processing" ? job.steps_progress : undefined;
  const percent = progress?.[name];
  if (percent === undefined) return { state: "waiting" };
  if (percent >= 100) return { state: "completed" };
  const input = steps[name]?.input;
  if (input === undefined || (progress?.[input] ?? 0) >= 100) return { state: "running", percent };
  return { state: "waiting" };
}
