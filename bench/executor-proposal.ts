// A prototype of the local-executor change proposed from the resize benchmark, applied to one
// executor instance in the benchmark's server process (BENCH_EXECUTOR_PROPOSAL=1); not used by the
// service. It changes two things about runner processes reaching executor.local_runner_max_jobs:
//
// 1. A runner that has been given its last job is never handed another one. Today the executor
//    puts it back in the idle pool after that job (it is still alive for a moment); the next job
//    then goes to a process that is exiting, comes back as a transient failure ("exited with code 0
//    before reporting"), costs an attempt and waits for a replacement. With max_jobs 1 that fails
//    jobs outright after executor.max_attempts.
// 2. Its replacement is started when it is given that last job, not when it has exited, so the
//    new process starts (~1–2 s of module loading) while the old one still works.
import type { LocalExecutor } from "../controller/local-executor.js";
import { RunnerProcess } from "../controller/runner-process.js";

interface ExecutorInternals {
  stopping: boolean;
  spawnRunner(): void;
}

const served = new WeakMap<RunnerProcess, number>();
let target: { executor: LocalExecutor; maxJobs: number } | undefined;
let installed = false;

/** Applies the proposal to `executor` (one at a time: a later call replaces an earlier one). */
export function applyExecutorProposal(executor: LocalExecutor, maxJobs: number): void {
  target = { executor, maxJobs };
  if (installed) return;
  installed = true;
  const run = RunnerProcess.prototype.run;
  RunnerProcess.prototype.run = function (this: RunnerProcess, jobId: string) {
    const current = target;
    if (current) {
      const count = (served.get(this) ?? 0) + 1;
      served.set(this, count);
      if (count >= current.maxJobs) {
        // (1) Never back to the idle pool: the executor only keeps runners that are alive.
        Object.defineProperty(this, "alive", { get: () => false, configurable: true });
        // (2) The replacement starts now.
        const internals = current.executor as unknown as ExecutorInternals;
        if (!internals.stopping) internals.spawnRunner();
      }
    }
    return run.call(this, jobId);
  };
}

/** Stops applying the proposal (the next executor runs the code as it is). */
export function clearExecutorProposal(): void {
  target = undefined;
}
