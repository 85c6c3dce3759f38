// A burst of image jobs against a release on kind, what each became, and the figures a scenario
// prints: jobs acknowledged (202 answered), completed, failed (and why), endings counted twice.
// Submits carry an Idempotency-Key, so one repeated after a lost answer (an API pod on a lost node)
// is the same job, not a second one; a job counts only once its 202 came back.
import { randomUUID } from "node:crypto";
import { definitionOf } from "../../../core/jobs/types.js";
import { EVERY_TYPE_SOURCES, submission } from "../../support/submission.js";
import { eventually } from "../../k8s/support/eventually.js";
import { BUCKET, type Release } from "./release.js";

/** Each request gives up after this long (an API pod on a lost node answers nothing). */
const REQUEST_TIMEOUT_MS = 10_000;
const SUBMITS_AT_ONCE = 8;

export interface JobView {
  id: string;
  status: string;
  error?: string;
  attempts?: number;
}

export async function api(
  r: Pick<Release, "apiKey">,
  base: string,
  path: string,
  init: { method?: string; json?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}${path}`, {
    method: init.method ?? "GET",
    headers: {
      "x-api-key": r.apiKey,
      ...(init.json !== undefined ? { "content-type": "application/json" } : {}),
      ...init.headers,
    },
    ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { text };
  }
  return { status: res.status, body };
}

/**
 * `api`, asked again while the request gets no answer at all (a refused or dropped connection: the
 * Service without a ready API pod for a moment, as after a node comes back), `limitMs` at most.
 */
export async function answered(
  r: Pick<Release, "apiKey">,
  base: string,
  path: string,
  limitMs = 60_000,
): Promise<{ status: number; body: Record<string, unknown> }> {
  return eventually(`an answer to GET ${path}`, () => api(r, base, path).catch(() => undefined), limitMs);
}

/** The n-th job of a burst: a resize in a runner Job, or a colour count in the warm pool. */
function jobOf(r: Release, n: number): { path: string; body: Record<string, unknown> } {
  const type = n % 2 === 0 ? "image_resize" : "image_colors";
  const { path, body } = submission(definitionOf(type), {
    bucket: BUCKET,
    sources: EVERY_TYPE_SOURCES,
    dest: `out/${type}/${n}-${randomUUID()}`,
  });
  return { path, body: { ...body, webhook_url: r.webhookUrl } };
}

/**
 * Submits `count` jobs, SUBMITS_AT_ONCE at a time, each until it is acknowledged or refused for good
 * (a 4xx), or `giveUpMs` after its first try (then it is not acknowledged and not counted).
 * `acked` grows as the answers come, so a scenario can act in the middle of the burst.
 */
export function burst(
  r: Release,
  count: number,
  giveUpMs = 180_000,
): { acked: string[]; done: Promise<{ acked: string[]; unanswered: number }> } {
  const acked: string[] = [];
  let unanswered = 0;
  let next = 0;
  const one = async (n: number) => {
    const { path, body } = jobOf(r, n);
    const key = randomUUID();
    const until = Date.now() + giveUpMs;
    while (Date.now() < until) {
      const res = await api(r, r.apiUrl, `/api/v1/jobs/${path}`, {
        method: "POST",
        json: body,
        headers: { "idempotency-key": key },
      }).catch(() => undefined);
      if (res?.status === 202) {
        acked.push(res.body.job_id as string);
        return;
      }
      // 409: the same key's first request is still in flight (its answer lost): asked again later.
      if (res && res.status >= 400 && res.status < 500 && res.status !== 429 && res.status !== 409) {
        throw new Error(`submit refused: ${res.status} ${JSON.stringify(res.body)}`);
      }
      await sleep(500);
    }
    unanswered++;
  };
  const lane = async () => {
    while (next < count) await one(next++);
  };
  const done = Promise.all(Array.from({ length: SUBMITS_AT_ONCE }, lane)).then(() => ({ acked, unanswered }));
  return { acked, done };
}

/** Waits until every job has ended (completed or failed), `limitMs` at most; their last views. */
export async function settle(
  r: Release,
  ids: readonly string[],
  limitMs: number,
): Promise<Map<string, JobView>> {
  const ended = new Map<string, JobView>();
  const open = new Set(ids);
  await eventually(
    `${ids.length} jobs to end`,
    async () => {
      for (const id of [...open].slice(0, 40)) {
        const res = await api(r, r.apiUrl, `/api/v1/jobs/${id}`).catch(() => undefined);
        const job = res?.body as JobView | undefined;
        if (job && (job.status === "completed" || job.status === "failed")) {
          ended.set(id, job);
          open.delete(id);
        }
      }
      return open.size === 0 || undefined;
    },
    limitMs,
    async () => {
      const views = await Promise.all(
        [...open]
          .slice(0, 10)
          .map((id) => api(r, r.apiUrl, `/api/v1/jobs/${id}`).catch((e: Error) => e.message)),
      );
      return `still open (${open.size}): ${JSON.stringify(views)}`;
    },
  );
  return ended;
}

export interface Endings {
  completed: number;
  failed: number;
  /** Failed jobs whose error says their node was lost. */
  nodeLost: number;
  /** The other failures' errors. */
  otherErrors: string[];
  /** Jobs whose timeline has more than one ending (completed or failed). */
  twiceEnded: string[];
  /** Jobs with more than one distinct webhook (webhook-id) of their ending. */
  twiceNotified: string[];
}

/** What the jobs became, from their records, their timelines and the webhooks received. */
export async function endings(r: Release, views: Map<string, JobView>): Promise<Endings> {
  const out: Endings = {
    completed: 0,
    failed: 0,
    nodeLost: 0,
    otherErrors: [],
    twiceEnded: [],
    twiceNotified: [],
  };
  for (const [id, job] of views) {
    if (job.status === "completed") out.completed++;
    else {
      out.failed++;
      if (/node .* was lost/.test(job.error ?? "")) out.nodeLost++;
      else out.otherErrors.push(`${id}: ${job.error}`);
    }
    const { body } = await answered(r, r.apiUrl, `/api/v1/jobs/${id}/events`);
    const events = (body.events ?? []) as Array<{ event: string }>;
    if (events.filter((e) => e.event === "completed" || e.event === "failed").length !== 1) {
      out.twiceEnded.push(id);
    }
  }
  // Every job's webhook arrives (at least once: a retried delivery keeps its webhook-id).
  await eventually(
    "a webhook of every job",
    async () => {
      const seen = new Set(notified(r).keys());
      return [...views.keys()].every((id) => seen.has(id)) || undefined;
    },
    120_000,
  );
  for (const [id, ids] of notified(r)) if (views.has(id) && ids.size > 1) out.twiceNotified.push(id);
  return out;
}

/** The distinct webhook-ids of each job's ending webhooks. */
function notified(r: Release): Map<string, Set<string>> {
  const byJob = new Map<string, Set<string>>();
  for (const hook of r.receiver.received) {
    const json = hook.json as { event?: string; job?: { id?: string } } | undefined;
    const id = json?.job?.id;
    if (!id || (json.event !== "job.completed" && json.event !== "job.failed")) continue;
    const set = byJob.get(id) ?? new Set<string>();
    set.add(String(hook.headers["webhook-id"]));
    byJob.set(id, set);
  }
  return byJob;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
