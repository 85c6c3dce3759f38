// What the dashboard reads from the API. The records (job, batch, queue statistics) are the API's own
// types, imported as types only: they are erased from the bundle, which talks to the API over HTTP.
import type { Batch, Job, JobSummary, QueueStats } from "../../core/jobs/records.js";
import type { BatchStatus, JobStatus, JobType } from "../../core/jobs/types.js";

export type { Batch, BatchStatus, Job, JobStatus, JobSummary, JobType, QueueStats };

/** GET /api/v1/jobs */
export interface JobList {
  jobs: JobSummary[];
  total: number;
  next_cursor?: string;
}

/** GET /api/v1/jobs/batch */
export interface BatchList {
  batches: Batch[];
  total: number;
  next_cursor?: string;
}

/** GET /api/v1/jobs/batch/{id}?include_jobs=true */
export interface BatchWithJobs {
  batch: Batch;
  jobs?: Job[];
}

export interface HistoryFigures {
  completed: number;
  failed: number;
  p50_seconds: number | null;
  p95_seconds: number | null;
  pending: number;
}

/** GET /api/v1/stats/history: one point per minute, oldest first, ending with the current minute. */
export interface StatsHistory {
  interval_seconds: number;
  points: Array<HistoryFigures & { at: string; by_type?: Record<string, HistoryFigures> }>;
  webhooks: { delivered: number; retry: number; failed: number; refused: number };
}

export type JobEventKind =
  | "submitted"
  | "claimed"
  | "started"
  | "progress"
  | "requeued"
  | "completed"
  | "failed"
  | "cancelled"
  | "webhook";

/** GET /api/v1/jobs/{id}/events, oldest first. */
export interface JobEvents {
  events: Array<{
    at: string;
    event: JobEventKind;
    message?: string;
    percent?: number;
    attempt?: number;
    status_code?: number;
    result?: string;
  }>;
}

export interface Link {
  url: string;
  expires_at: string;
}

/** GET /api/v1/jobs/{id}/links: presigned GET URLs of the source and (once completed) the output. */
export interface JobLinks {
  source: Link;
  output?: Link;
}

/** The data of an `event: job` of GET /api/v1/events. */
export interface JobChange {
  id: string;
  type: JobType;
  status: JobStatus;
  batch_id?: string;
  error?: string;
  at: string;
}

/** POST /api/v1/jobs/{id}/retry */
export interface Submitted {
  job_id: string;
  status: "pending";
  message: string;
  queue_position?: number;
}
