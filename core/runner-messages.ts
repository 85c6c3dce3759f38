// The messages between an executor (the local executor, a pool worker) and a runner process it
// started with `media-service runner --serve`, over the process's IPC channel (JSON). Both sides
// import them from here: the controller and the runner never import each other.
import type { Job } from "./jobs/records.js";

/** Executor to runner. */
export type ExecutorMessage = {
  type: "run";
  jobId: string;
  /**
   * The job's record as the executor's start (start.lua) returned it: the job is processing under
   * the executor's lease, its attempt charged, so the runner goes straight to its work instead of
   * starting it again. Without it the runner starts the job itself, as `runner --job` does.
   */
  job?: Job;
};

/** Runner to executor. */
export type RunnerMessage = { type: "ready" } | { type: "done"; jobId: string; code: number; error?: string };
