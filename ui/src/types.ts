// What the dashboard reads from the API. The records (job, batch, queue statistics) are the API's own
// types, imported as types only: they are erased from the bundle, which talks to the API over HTTP.
import type {
  Batch,
  History,
  HistoryFigures,
  Job,
  JobLinks,
  JobSummary,
  QueueStats,
  TimelineEntry,
} from "../../core/jobs/records.js";
import type { BatchStatus, JobState, JobStatus } from "../../core/jobs/states.js";
import type { JobType } from "../../core/jobs/types.js";
import type { Template } from "../../core/jobs/templates.js";

export type {
  Batch,
  BatchStatus,
  HistoryFigures,
  Job,
  JobLinks,
  JobState,
  JobStatus,
  JobSummary,
  JobType,
  QueueStats,
  Template,
  TimelineEntry,
};

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

export type StatsHistory = History;

/** GET /api/v1/jobs/{id}/events, oldest first. */
export interface JobEvents {
  events: TimelineEntry[];
}

/** The data of an `event: job` of GET /api/v1/events. */
export interface JobChange {
  id: string;
  type: JobType;
  status: JobStatus;
  batch_id?: string;
  /** A failure that is a cancellation. */
  cancelled?: boolean;
  /** pending again: why it was handed back. */
  reason?: string;
  /** The error, when the API sends it. */
  error?: string;
  at?: string;
}

/** POST /api/v1/jobs/{id}/retry: 202 with the new job, or 200 with the existing retry (no queue_position). */
export interface Submitted {
  job_id: string;
  status: JobStatus;
  message: string;
  queue_position?: number;
}
