// The job filters the `jobs` and `bulk` commands share (GET /jobs, POST /jobs/bulk/…), and `bulk
// cancel|retry`: an action on every job of a filter, one bounded call after another (each resumes
// with the cursor of the last), or on the ids given; --dry-run only counts.
import { parseDuration } from "../core/duration.js";
import { parseJobType, parseS3Url } from "./args.js";
import type { ApiClient } from "./api.js";
import { EXIT, UsageError } from "./errors.js";
import type { Output } from "./output.js";

/** The filter options of `jobs` and `bulk` (program.ts adds them). */
export interface FilterOptions {
  status?: string;
  state?: string;
  type?: string;
  batch?: string;
  client?: string;
  since?: string;
  createdAfter?: string;
  createdBefore?: string;
  search?: string;
  idPrefix?: string;
  requestId?: string;
  source?: string;
  dest?: string;
}

/** An s3://bucket/key prefix (or bucket/key) as the API's source_prefix and dest_prefix take it. */
function placePrefix(raw: string, what: string): string {
  if (!/^s3:\/\//i.test(raw)) return raw;
  const { bucket, key } = parseS3Url(raw, what, { keyOptional: true });
  return `${bucket}/${key}`;
}

/** The API's job filters from the options; --since 1h is a created_after an hour ago. */
export function filterQuery(options: FilterOptions, now = Date.now()): Record<string, string | undefined> {
  if (options.since !== undefined && options.createdAfter !== undefined) {
    throw new UsageError("give --since or --created-after, not both");
  }
  let since: string | undefined;
  if (options.since !== undefined) {
    try {
      since = new Date(now - parseDuration(options.since)).toISOString();
    } catch (err) {
      throw new UsageError(`--since: ${(err as Error).message}`);
    }
  }
  return {
    status: options.status,
    state: options.state,
    // A type is given as on the command line of submit (image/resize or image_resize).
    type: options.type !== undefined ? parseJobType(options.type) : undefined,
    batch_id: options.batch,
    client: options.client,
    created_after: since ?? options.createdAfter,
    created_before: options.createdBefore,
    q: options.search,
    id_prefix: options.idPrefix,
    request_id: options.requestId,
    source_prefix: options.source !== undefined ? placePrefix(options.source, "--source") : undefined,
    dest_prefix: options.dest !== undefined ? placePrefix(options.dest, "--dest") : undefined,
  };
}

export interface BulkOptions extends FilterOptions {
  ids?: string[];
  dryRun?: boolean;
  limit?: number;
}

interface BulkAnswer {
  action: "cancel" | "retry";
  dry_run: boolean;
  matched: number;
  changed: number;
  skipped: Record<string, number>;
  jobs: Array<{ id: string; outcome: string; reason?: string; retry_id?: string }>;
  next_cursor?: string;
}

/** The most calls one command makes: 2,000 calls of 500 jobs, a million jobs. */
const MAX_CALLS = 2000;

export async function bulk(
  api: ApiClient,
  out: Output,
  action: "cancel" | "retry",
  options: BulkOptions,
): Promise<number> {
  const filter = Object.fromEntries(
    Object.entries(filterQuery(options)).filter(([, value]) => value !== undefined),
  );
  const ids = options.ids ?? [];
  if (ids.length > 0 && Object.keys(filter).length > 0) {
    throw new UsageError("give job ids or filter options, not both");
  }
  const target = ids.length > 0 ? { ids } : { filter };
  const path = `/jobs/bulk/${action}`;
  if (options.dryRun) {
    const answer = await api.json<BulkAnswer>("POST", path, { body: { ...target, dry_run: true } });
    if (out.json) out.printJson(answer);
    else
      out.print(
        `${answer.matched} job${answer.matched === 1 ? "" : "s"} would be ${action === "cancel" ? "cancelled" : "retried"} (dry run)`,
      );
    return EXIT.ok;
  }
  let matched: number | undefined;
  let changed = 0;
  const skipped: Record<string, number> = {};
  const jobs: BulkAnswer["jobs"] = [];
  let cursor: string | undefined;
  for (let calls = 0; calls < MAX_CALLS; calls++) {
    const answer: BulkAnswer = await api.json<BulkAnswer>("POST", path, {
      body: {
        ...target,
        ...(options.limit !== undefined ? { limit: options.limit } : {}),
        ...(cursor ? { cursor } : {}),
      },
    });
    matched ??= answer.matched;
    changed += answer.changed;
    for (const [reason, n] of Object.entries(answer.skipped)) skipped[reason] = (skipped[reason] ?? 0) + n;
    jobs.push(...answer.jobs);
    if (out.interactive && !out.json && answer.next_cursor) {
      out.note(out.err.dim(`${jobs.length} of ${matched} jobs gone through…`));
    }
    cursor = answer.next_cursor;
    if (!cursor) break;
  }
  if (out.json) {
    out.printJson({ action, matched, changed, skipped, jobs });
    return EXIT.ok;
  }
  const verb = action === "cancel" ? "cancelled" : "retried";
  const reasons = Object.entries(skipped).map(([reason, n]) => `${n} ${reason}`);
  out.print(
    `${verb} ${changed} of ${matched ?? 0} matching job${matched === 1 ? "" : "s"}` +
      (reasons.length > 0 ? `; skipped: ${reasons.join(", ")}` : ""),
  );
  return EXIT.ok;
}
