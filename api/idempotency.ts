import { createHash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { configure } from "safe-stable-stringify";
import type { IdempotencyKey, IdempotentSubmit, Submitted } from "../core/store/store.js";
import { loggableError } from "./errors.js";
import { addLogContext } from "./access-log.js";
import { submitterOf } from "./auth.js";
import type { ApiContext } from "./context.js";

/** The request header (lower case, as Node gives it) and the answer's header on a replay. */
export const IDEMPOTENCY_KEY_HEADER = "idempotency-key";
export const REPLAYED_HEADER = "Idempotent-Replayed";

/**
 * How long a key stays locked by its first request when that request never completes nor
 * releases it (its process died). A submit takes milliseconds once its body has been read (a retry
 * reads one job, a batch of 100 is one script); a minute is far beyond that, and short enough that
 * a client retrying after a crash gets its key back soon. A request still running when its lock
 * runs out cannot submit twice: submit.lua refuses when the key has been taken again meanwhile.
 */
export const IDEMPOTENCY_LOCK_MS = 60_000;

// JSON with every object's keys sorted, so that the same body sent with its fields in another
// order has the same fingerprint. Bodies come from JSON.parse: nothing circular, no bigint.
const canonical = configure({ deterministic: true, bigint: false, circularValue: Error, strict: true });

/**
 * What makes two requests the same request: SHA-256 over the method, the route (its pattern and
 * path parameters: a retry of another job is another request) and the body in canonical form, as
 * validated (defaults filled in, so leaving out a field with its default is the same request); a
 * submission that names a template, as it was sent (the same request stays the same when the
 * template has a new version since).
 */
export function fingerprintOf(request: FastifyRequest): string {
  const text = canonical({
    method: request.method,
    route: request.routeOptions.url,
    params: request.params,
    body: request.templateUse ? request.templateUse.sent : request.body,
  });
  return createHash("sha256")
    .update(text ?? "", "utf8")
    .digest("hex");
}

/** A route that submits jobs: what it answers and how it submits. */
export interface SubmitRoute<T> {
  /** The status of its answer: 202 for a job, 201 for a batch. */
  status: 201 | 202;
  /** The body of its answer, from what was submitted: the same function answers first and replays. */
  render: (submitted: Submitted) => T;
  /** What the access-log line says of the submission (job_id, batch_id, …). */
  logContext: (submitted: Submitted) => Record<string, unknown>;
  /**
   * The route's own checks and its submit, passing `idempotency` on to store.submit; undefined when
   * it refused the request itself (having sent its answer).
   */
  submit: (idempotency: IdempotentSubmit | undefined) => Promise<Submitted | undefined>;
}

/**
 * Answers a submitting route, under the request's Idempotency-Key if it carries one (the route's
 * header schema has checked it): the first request with a key locks it (lua/idempotency.lua) and
 * submits, which records the answer's data under the key in the same script; a request that comes
 * again with the same key and the same fingerprint gets the same answer, marked Idempotent-Replayed,
 * and submits nothing. A request that ends in an error or a refusal after taking the key frees it.
 */
export async function answerSubmit<T>(
  ctx: ApiContext,
  request: FastifyRequest,
  reply: FastifyReply,
  route: SubmitRoute<T>,
): Promise<FastifyReply> {
  // Node joins a header sent twice into one value ("a1, a2"): that would be a key neither request meant.
  const sent = headerCount(request, IDEMPOTENCY_KEY_HEADER);
  if (sent > 1) {
    return reply.code(400).send({
      error: `Idempotency-Key was sent ${sent} times: send one Idempotency-Key header per request`,
    });
  }
  const header = request.headers[IDEMPOTENCY_KEY_HEADER];
  if (typeof header !== "string") {
    const submitted = await route.submit(undefined);
    return submitted ? answer(request, reply, route, submitted) : reply;
  }
  const key: IdempotencyKey = {
    client: submitterOf(request)?.name,
    key: header,
    fingerprint: fingerprintOf(request),
  };
  const taken = await ctx.store.takeIdempotencyKey(key, IDEMPOTENCY_LOCK_MS);
  switch (taken.outcome) {
    case "replay": {
      addLogContext(request, { idempotent_replay: true });
      request.log.info(
        { event: "idempotent_replay", idempotency_key: header, ...route.logContext(taken.submitted) },
        "Idempotency-Key: the first answer replayed, nothing submitted",
      );
      reply.header(REPLAYED_HEADER, "true");
      return answer(request, reply, route, taken.submitted);
    }
    case "in_flight":
    case "mismatch": {
      request.log.info(
        { event: "idempotency_conflict", reason: taken.outcome, idempotency_key: header },
        "Idempotency-Key: request refused",
      );
      return taken.outcome === "in_flight"
        ? reply.code(409).send({
            error: "a request with this Idempotency-Key is still in flight: retry once it has been answered",
          })
        : reply.code(422).send({
            error:
              "this Idempotency-Key was used for a different request (method, route or body): use a new key for a new request",
          });
    }
    case "new":
      break;
  }
  const release = async () => {
    try {
      await ctx.store.releaseIdempotencyKey(key, taken.token);
    } catch (err) {
      // The lock runs out by itself (IDEMPOTENCY_LOCK_MS); the request's own error is what matters.
      request.log.warn({ err: loggableError(err) }, "Idempotency-Key not released; its lock runs out");
    }
  };
  let submitted: Submitted | undefined;
  try {
    submitted = await route.submit({ key, token: taken.token, ttlMs: ctx.config.limits.idempotencyTtlMs });
  } catch (err) {
    await release();
    throw err;
  }
  if (!submitted) {
    await release();
    return reply;
  }
  return answer(request, reply, route, submitted);
}

/** How many times the request carries header `name` (lower case). */
function headerCount(request: FastifyRequest, name: string): number {
  const raw = request.raw.rawHeaders;
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === name) count++;
  return count;
}

function answer<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  route: SubmitRoute<T>,
  submitted: Submitted,
): FastifyReply {
  addLogContext(request, route.logContext(submitted));
  return reply.code(route.status).send(route.render(submitted));
}
