import { randomUUID } from "node:crypto";
import type { JobType } from "../jobs/types.js";
import { StoreBase } from "./base.js";
import { idempotencyClient, idempotencyKeyId } from "./keys.js";
import type { Submitted } from "./transitions.js";

/** A client's Idempotency-Key and the request that carries it (lua/idempotency.lua). */
export interface IdempotencyKey {
  /** The client's name; undefined without authentication. */
  client: string | undefined;
  /** The key as the client sent it (the store keeps its SHA-256). */
  key: string;
  /** The SHA-256 of the request's method, route and canonical body (api/idempotency.ts). */
  fingerprint: string;
}

/**
 * What taking an Idempotency-Key found: nothing (the key is now locked for this request, under
 * `token`), its completed submission to replay, its first request still in flight, or a request
 * with another fingerprint under the same key.
 */
export type KeyTaken =
  | { outcome: "new"; token: string }
  | { outcome: "replay"; submitted: Submitted }
  | { outcome: "in_flight" }
  | { outcome: "mismatch" };

/** A submission under an Idempotency-Key this request holds: kept as done for `ttlMs`. */
export interface IdempotentSubmit {
  key: IdempotencyKey;
  token: string;
  ttlMs: number;
}

/** Idempotency-Keys that were not new, by what became of their request. */
export const IDEMPOTENCY_OUTCOMES = ["replayed", "in_flight", "mismatch"] as const;
export type IdempotencyOutcome = (typeof IDEMPOTENCY_OUTCOMES)[number];

/**
 * Idempotency-Keys (api/idempotency.ts): a request takes its key before it submits, and submit()
 * (transitions.ts) turns the lock into the key's completed record in the same script.
 */
export abstract class Idempotency extends StoreBase {
  /**
   * Takes a client's Idempotency-Key for a request (lua/idempotency.lua): locks it for `lockMs`
   * when it is new (submit() with the token then completes it, releaseIdempotencyKey() frees it),
   * or tells what the key already stands for.
   */
  async takeIdempotencyKey(key: IdempotencyKey, lockMs: number): Promise<KeyTaken> {
    const token = randomUUID();
    const [outcome, result] = (await this.script(
      "idempotency",
      "take",
      ...idempotencyArgs(key),
      token,
      key.fingerprint,
      lockMs,
    )) as [string, string?];
    switch (outcome) {
      case "new":
        return { outcome, token };
      case "replay":
        return { outcome, submitted: decodeSubmitted(result!) };
      case "in_flight":
      case "mismatch":
        return { outcome };
      default:
        throw new Error(`idempotency.lua answered ${outcome}`);
    }
  }

  /** Frees a key this request locked and did not complete; false when it is not (or no longer) its lock. */
  async releaseIdempotencyKey(key: IdempotencyKey, token: string): Promise<boolean> {
    return (await this.script("idempotency", "release", ...idempotencyArgs(key), token)) === 1;
  }

  /** Idempotency-Keys that were not new, by outcome, since the store was created. */
  async idempotencyOutcomes(): Promise<Record<IdempotencyOutcome, number>> {
    return this.tally(this.keys.idempotencyStats(), IDEMPOTENCY_OUTCOMES);
  }
}

/** The client and key id a key's record is under (keys.ts). */
function idempotencyArgs(key: IdempotencyKey): [string, string] {
  return [idempotencyClient(key.client), idempotencyKeyId(key.key)];
}

/** A completed key's result, as submit.lua recorded it. */
function decodeSubmitted(json: string): Submitted {
  const r = JSON.parse(json) as {
    job_ids: string[];
    types: JobType[];
    queue_positions: number[];
    batch_id?: string;
  };
  return {
    jobIds: r.job_ids,
    types: r.types,
    queuePositions: r.queue_positions,
    ...(r.batch_id ? { batchId: r.batch_id } : {}),
  };
}
