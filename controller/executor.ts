import type { Job } from "../core/jobs/records.js";
import type { JobType } from "../core/jobs/types.js";

/**
 * What runs jobs: the local executor (runner processes on this machine) or the Kubernetes executor
 * (one batch/v1 Job per job). The controller drives either through this interface alone; both take
 * their work from a Dispatcher and their verdicts from core/policy.ts.
 */
export interface Executor {
  /** Starts claiming and running jobs; resolves once it is running. */
  start(): Promise<void>;
  /**
   * Stops claiming. Jobs still running after `graceMs` are handed back to their queue (local) or left
   * to the next leader (Kubernetes, where they run on in the cluster).
   */
  stop(graceMs: number): Promise<void>;
  /** Undefined when ready to run jobs, else why not (the controller's /readyz says it). */
  ready(): string | undefined;
  /**
   * Stops the execution of a job that has already ended in the store (cancelled): its runner is
   * stopped and nothing of it is uploaded or recorded. Harmless for a job this executor is not running.
   */
  cancel(jobId: string): Promise<void>;
}

export interface Room {
  total: number;
  full?: ReadonlySet<JobType>;
}

/** Where a Dispatcher hands the jobs it claims. */
export interface DispatchTarget {
  /**
   * How many more jobs may be claimed now (0: wait for `Dispatcher.notify`), and the types at their
   * own cap, which are skipped. Asked once per claim.
   */
  room(): Room;
  /**
   * Takes a claimed job; from this call on it counts against `room()`. Resolves once the job is
   * handed over (not when it ends); a rejection hands the job back to its queue. `job`: its record,
   * when the dispatcher read it after the claim (to route it), so the target need not read it again;
   * without it, a target that wants the record reads it itself.
   */
  launch(id: string, type: JobType, job?: Job): Promise<void>;
}
