import type { JobState, JobStatus, JobType } from "../core/jobs/types.js";
import type { JobListFilter, JobSearch } from "../core/store/store.js";
import type { Viewer } from "../core/store/visibility.js";

/** The job filters GET /jobs and the bulk actions share (schemas.ts JobFilterParams). */
export interface JobFilterQuery {
  status?: JobStatus;
  state?: JobState;
  type?: JobType;
  batch_id?: string;
  client?: string;
  q?: string;
  id_prefix?: string;
  request_id?: string;
  source_prefix?: string;
  dest_prefix?: string;
}

/** A 403 whose message the client gets as is (api/errors.ts). */
class ForbiddenFilterError extends Error {
  readonly statusCode = 403;
}

/**
 * How the one search box (`q`) is read: text with a `/` is a place, `bucket/key…` (a leading s3:// is
 * dropped), matched as a prefix of a job's source or output, or a request id (request ids may hold
 * a `/`); other text is a job id prefix or a request id. A job matching one of them is found.
 */
export function searchBox(q: string): JobSearch["any"] {
  const text = q.trim();
  if (text.includes("/")) {
    const place = text.replace(/^s3:\/\//i, "");
    return { sourcePrefix: place, destPrefix: place, requestId: text };
  }
  return { idPrefix: text, requestId: text };
}

/**
 * The store's filter for the job filters of a request: its search, and `client`, which only a viewer
 * who sees every client's jobs may give (a client sees its own jobs only; naming itself is allowed).
 */
export function jobFilter(query: JobFilterQuery, viewer: Viewer): Omit<JobListFilter, "limit"> {
  if (query.client !== undefined && "client" in viewer && query.client !== viewer.client) {
    throw new ForbiddenFilterError(
      `the client filter is for admin keys: the client ${viewer.client} lists its own jobs only, not ${query.client}'s`,
    );
  }
  const search: JobSearch = {
    ...(query.id_prefix !== undefined ? { idPrefix: query.id_prefix } : {}),
    ...(query.request_id !== undefined ? { requestId: query.request_id } : {}),
    ...(query.source_prefix !== undefined ? { sourcePrefix: query.source_prefix } : {}),
    ...(query.dest_prefix !== undefined ? { destPrefix: query.dest_prefix } : {}),
    ...(query.q !== undefined && query.q.trim() !== "" ? { any: searchBox(query.q) } : {}),
  };
  return {
    viewer,
    ...(query.status ? { status: query.status } : {}),
    ...(query.state ? { state: query.state } : {}),
    ...(query.type ? { type: query.type } : {}),
    ...(query.batch_id !== undefined ? { batchId: query.batch_id } : {}),
    ...(query.client !== undefined ? { client: query.client } : {}),
    ...(Object.keys(search).length > 0 ? { search } : {}),
  };
}
