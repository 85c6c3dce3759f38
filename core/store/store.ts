import { composeStore, StoreBase } from "./base.js";
import { Idempotency } from "./idempotency.js";
import { Lists } from "./lists.js";
import { Pool } from "./pool.js";
import { Previews } from "./previews.js";
import { Queues } from "./queues.js";
import { Stats } from "./stats.js";
import { Templates } from "./templates.js";
import { Transitions } from "./transitions.js";
import { Webhooks } from "./webhooks.js";

// What callers import of the store, from this one module.
export type { StoreOptions } from "./base.js";
export * from "./connection.js";
export * from "./idempotency.js";
export * from "./lists.js";
export * from "./queues.js";
export * from "./stats.js";
export * from "./templates.js";
export * from "./transitions.js";
export * from "./webhooks.js";

/**
 * The system of record, the one object callers hold. Every change of state is one Lua script (see
 * lua/); the store only encodes arguments, reads records, and turns refusals into typed errors. It
 * is made of parts, each a module by what it owns, whose methods are the store's own (composeStore):
 *
 * - transitions.ts: submit and retry, start, progress, complete, fail, cancel, prune;
 * - queues.ts: claims, leases, hand-backs and the reaper, within the retry budget;
 * - pool.ts: the warm runner pool's queue;
 * - lists.ts: a job, a batch, a timeline, the lists and the search;
 * - stats.ts: the queues' counters, the duration histograms, the history;
 * - idempotency.ts: Idempotency-Keys;
 * - webhooks.ts: webhook deliveries;
 * - previews.ts: the previews' cache;
 * - templates.ts: clients' templates;
 *
 * and base.ts, on which they stand: the connection, the keys, and the scripts' invocation.
 */
// The parts are interfaces of the class here and their methods are put on its prototype below.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface JobStore
  extends Transitions, Queues, Pool, Lists, Stats, Idempotency, Webhooks, Previews, Templates {}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class JobStore extends StoreBase {}
composeStore(JobStore, [Transitions, Queues, Pool, Lists, Stats, Idempotency, Webhooks, Previews, Templates]);
