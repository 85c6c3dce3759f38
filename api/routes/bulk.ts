import type { Static } from "../../core/typebox.js";
import { schemaBounds } from "../../core/jobs/bounds.js";
import { retrySpec } from "../../core/jobs/spec.js";
import type { JobStatus } from "../../core/jobs/types.js";
import type { Job } from "../../core/jobs/records.js";
import { CANCELLED_BY_REQUEST } from "../../core/policy.js";
import { IllegalTransitionError, NotFoundError } from "../../core/store/errors.js";
import type { Submitter, Viewer } from "../../core/store/visibility.js";
import { submitterOf, viewerOf } from "../auth.js";
import type { ApiContext, App } from "../context.js";
import { listFilter, nextCursor } from "../listing.js";
import { jobFilter } from "../search.js";
import {
  API_KEY_SECURITY,
  BODY_ERRORS,
  BULK_ACTIONS,
  BULK_ACTS_ON,
  bulkBody,
  type BulkBody,
  BulkResponse,
  errorResponses,
  type BulkAction,
} from "../schemas.js";

type Body = BulkBody;
type Outcome = Static<typeof BulkResponse>["jobs"][number];

/** A 400 whose message the client gets as is (api/errors.ts). */
class BulkRequestError extends Error {
  readonly statusCode = 400;
}

/** The statuses an action can change (the schema offers only these): the first is the default. */
const ACTS_ON: Record<BulkAction, readonly JobStatus[]> = BULK_ACTS_ON;

const DESCRIPTIONS: Record<BulkAction, string> = {
  cancel:
    "Cancels the pending (or, with filter.status processing, the processing) jobs a filter matches, or the jobs named by `ids`, each as POST /jobs/{id}/cancel does: atomically, and a job cancelled before is skipped, so a repeated or resumed call cancels no job twice.",
  retry:
    "Retries the failed jobs (cancelled ones included; filter.state failed or cancelled narrows it) a filter matches, or the jobs named by `ids`, each as POST /jobs/{id}/retry does: a new job whose record carries `retry_of`, the failed job's `retried_as` written in the same step. A job retried before is skipped (`already retried`, with its retry's id), so a repeated, resumed or concurrent call retries no job twice.",
};

/**
 * POST /jobs/bulk/cancel and /jobs/bulk/retry: an action on every job of a filter, `limit` jobs a
 * call (the next call resumes after the last with `cursor`), or on up to BULK_MAX jobs by id; with
 * dry_run, only how many match. Each job changes through its own store script, so a job is
 * changed once however often a call is repeated or resumed (docs/api.md#bulk-actions).
 */
export function bulkRoutes(app: App, ctx: ApiContext): void {
  for (const action of BULK_ACTIONS) {
    app.post(
      `/jobs/bulk/${action}`,
      {
        schema: {
          summary: `${action === "cancel" ? "Cancel" : "Retry"} many jobs: by filter or by id, with a dry run`,
          description: `${DESCRIPTIONS[action]} A filter is gone through newest first, at most \`limit\` jobs a call: \`next_cursor\` resumes after the last one. With \`dry_run\` nothing changes and \`matched\` says how many jobs match.`,
          tags: ["jobs"],
          operationId: `bulk_${action}`,
          security: API_KEY_SECURITY,
          body: bulkBody(action),
          response: { 200: BulkResponse, ...errorResponses(...BODY_ERRORS, 403) },
        },
      },
      async (request) => {
        const body = request.body;
        const call: Call = {
          ctx,
          action,
          viewer: viewerOf(request),
          by: submitterOf(request),
          requestId: request.id,
        };
        const answer = body.ids !== undefined ? await byIds(call, body) : await byFilter(call, body);
        request.log.info(
          {
            action,
            dry_run: body.dry_run,
            matched: answer.matched,
            changed: answer.changed,
            skipped: answer.skipped,
            more: answer.next_cursor !== undefined,
          },
          `bulk ${action}`,
        );
        return answer;
      },
    );
  }
}

/** One call of a bulk route: the action, who calls (what they may see, who they are), the request. */
interface Call {
  ctx: ApiContext;
  action: BulkAction;
  viewer: Viewer;
  by: Submitter | undefined;
  requestId: string;
}

async function byFilter(call: Call, body: Body): Promise<Static<typeof BulkResponse>> {
  const { ctx, action, viewer } = call;
  if (!body.filter) throw new BulkRequestError("give `filter` (the jobs to act on) or `ids`, not neither");
  const { state } = body.filter;
  // A state is a status, or (cancelled) a kind of failed.
  const stateStatus = state === "cancelled" ? "failed" : state;
  const status = body.filter.status ?? stateStatus ?? ACTS_ON[action][0]!;
  for (const [name, value] of [
    ["status", status],
    ["state", stateStatus],
  ] as const) {
    if (value !== undefined && !ACTS_ON[action].includes(value)) {
      throw new BulkRequestError(
        `filter.${name} ${name === "state" ? state : value}: ${action} acts on ${ACTS_ON[action].join(" or ")} jobs only`,
      );
    }
  }
  const filter = {
    ...listFilter({ ...body.filter, limit: body.dry_run ? 1 : body.limit, cursor: body.cursor }, viewer),
    ...jobFilter(body.filter, viewer),
    status,
  };
  const page = await ctx.store.listJobs(filter);
  if (body.dry_run) return tally(action, true, page.total, []);
  const outcomes: Outcome[] = [];
  for (const summary of page.jobs) outcomes.push(await act(call, summary.id));
  return { ...tally(action, false, page.total, outcomes), ...nextCursor(page.next) };
}

async function byIds(call: Call, body: Body): Promise<Static<typeof BulkResponse>> {
  const { ctx, action, viewer } = call;
  if (body.filter) throw new BulkRequestError("give `filter` or `ids`, not both");
  if (body.cursor !== undefined)
    throw new BulkRequestError("`cursor` goes with `filter`: `ids` are done in one call");
  const ids = body.ids!;
  if (body.dry_run) {
    const jobs = await Promise.all(ids.map((id) => ctx.store.getJob(id, viewer)));
    const matched = jobs.filter((job) => job && ACTS_ON[action].includes(job.status)).length;
    return tally(action, true, matched, []);
  }
  const outcomes: Outcome[] = [];
  for (const id of ids) outcomes.push(await act(call, id));
  const matched = outcomes.filter((o) => o.reason !== "not found").length;
  return tally(action, false, matched, outcomes);
}

/** One job's change, through the store's own script for it. */
async function act(call: Call, id: string): Promise<Outcome> {
  const { ctx, action, viewer, by, requestId } = call;
  const skipped = (reason: string, extra: Partial<Outcome> = {}): Outcome => ({
    id,
    outcome: "skipped",
    reason,
    ...extra,
  });
  const job = await ctx.store.getJob(id, viewer);
  if (!job) return skipped("not found");
  try {
    return action === "cancel"
      ? await cancelOne(ctx, job, skipped)
      : await retryOne(ctx, job, by, requestId, skipped);
  } catch (err) {
    if (err instanceof NotFoundError) return skipped("not found");
    throw err;
  }
}

async function cancelOne(ctx: ApiContext, job: Job, skipped: (reason: string) => Outcome): Promise<Outcome> {
  const outcome = await ctx.store.cancel("job", job.id, CANCELLED_BY_REQUEST);
  if (outcome === "cancelled") return { id: job.id, outcome: "cancelled" };
  return skipped(outcome === "unchanged" ? "already cancelled" : `already ${outcome}`);
}

async function retryOne(
  ctx: ApiContext,
  job: Job,
  by: Submitter | undefined,
  requestId: string,
  skipped: (reason: string, extra?: Partial<Outcome>) => Outcome,
): Promise<Outcome> {
  if (job.status !== "failed") return skipped("not failed");
  try {
    // The store's retry: the job's retried_as is written with its retry, so a job retried before
    // (by this call repeated, a concurrent one, or POST /jobs/{id}/retry) is not retried again.
    const outcome = await ctx.store.retry(retrySpec(job, requestId, schemaBounds(ctx.config)), {
      ...(by ? { by } : {}),
    });
    if ("retriedAs" in outcome) return skipped("already retried", { retry_id: outcome.retriedAs });
    return { id: job.id, outcome: "retried", retry_id: outcome.jobIds[0]! };
  } catch (err) {
    if (err instanceof IllegalTransitionError) return skipped("not failed");
    throw err;
  }
}

/** The answer's counts from the outcomes of the jobs a call went through. */
function tally(action: BulkAction, dryRun: boolean, matched: number, jobs: Outcome[]) {
  const skipped: Record<string, number> = {};
  for (const job of jobs) if (job.reason) skipped[job.reason] = (skipped[job.reason] ?? 0) + 1;
  return {
    action,
    dry_run: dryRun,
    matched,
    changed: jobs.filter((j) => j.outcome !== "skipped").length,
    skipped,
    jobs,
  };
}
