// The statuses and states of jobs and batches, and the execution classes: plain lists, with no
// import, which the dashboard's bundle may hold (the job types come from the registry, jobs/).

export const JOB_STATUSES = ["pending", "processing", "completed", "failed"] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/**
 * What a person reads of a job (the extension field `state`): its status, except that a failed job
 * that was cancelled (by request, or by its fail_fast batch) is `cancelled`.
 */
export const JOB_STATES = [...JOB_STATUSES, "cancelled"] as const;
export type JobState = (typeof JOB_STATES)[number];
/** The states that are not a status of their own: each has an index of its own (lib.lua end_job). */
export const ENDED_STATES = ["failed", "cancelled"] as const;

export const BATCH_STATUSES = ["queued", "processing", "completed", "failed", "partial"] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

/**
 * Where a job runs: `job` its own run (a Kubernetes Job, or a local runner), `pool` a warm pool
 * worker, `auto` the pool when the job fits it (see executor.pool).
 */
export const EXECUTION_CLASSES = ["job", "pool", "auto"] as const;
export type ExecutionClass = (typeof EXECUTION_CLASSES)[number];
