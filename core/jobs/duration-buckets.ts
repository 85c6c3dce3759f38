/**
 * Bounds (seconds) of media_job_duration_seconds. The store keeps the counts in Redis (complete.lua);
 * kept apart from core/metrics.ts so a runner does not load prom-client to complete a job.
 */
export const JOB_DURATION_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
