import type { ChainableCommander, Redis } from "ioredis";
import type { ClientLimits } from "../jobs/client-limits.js";
import type { Hash } from "./codec.js";
import { translateScriptError } from "./errors.js";
import { Keys } from "./keys.js";
import {
  defineScripts,
  scriptRunner,
  type ScriptArg,
  type ScriptName,
  type ScriptRunner,
} from "./scripts.js";

export interface StoreOptions {
  keyPrefix: string;
  /** How long finished jobs and batches are kept. */
  retentionMs: number;
  /** Approximate length the events stream is trimmed to. */
  eventsMaxLen: number;
  /**
   * The retry budget (executor.max_attempts): how many runs a job may be charged (one per start)
   * before a counted re-queue fails it instead. Needed by requeueJob and reap, which refuse to run
   * without it; a process that never re-queues (the runner) can leave it out.
   */
  maxAttempts?: number;
  /**
   * The clients' limits and weights (server.clients; core/jobs/client-limits.ts), by client name: what
   * submit and claim enforce. Unset: no limits, every client's weight 1.
   */
  clients?: ReadonlyMap<string, ClientLimits>;
}

/**
 * What every part of the store stands on: the connection, the keys, and the scripts, run with the
 * KEYS their headers declare and lib.lua's ARGV (the events stream's length, the retention) before
 * their own, their refusals turned into typed errors (errors.ts).
 */
export abstract class StoreBase {
  readonly keys: Keys;
  private readonly run: ScriptRunner;

  constructor(
    readonly redis: Redis,
    protected readonly options: StoreOptions,
  ) {
    this.keys = new Keys(options.keyPrefix);
    defineScripts(redis);
    this.run = scriptRunner(redis, this.keys);
  }

  /** Runs a script with the KEYS its header declares and lib.lua's ARGV before `args`. */
  protected async script(name: ScriptName, ...args: ScriptArg[]): Promise<unknown> {
    try {
      return await this.run(name, ...this.libArgs(), ...args);
    } catch (err) {
      throw translateScriptError(err);
    }
  }

  /**
   * Queues a script in a pipeline as script() runs it; its reply comes with the pipeline's, a refusal
   * as the error reply (translateScriptError makes it typed).
   */
  protected queueScript(pipeline: ChainableCommander, name: ScriptName, ...args: ScriptArg[]): void {
    this.run.queue(pipeline, name, ...this.libArgs(), ...args);
  }

  private libArgs(): ScriptArg[] {
    return [this.options.eventsMaxLen, this.options.retentionMs];
  }

  /** The counts of a hash of counters (idempotency and webhook outcomes), each 0 when absent. */
  protected async tally<N extends string>(key: string, names: readonly N[]): Promise<Record<N, number>> {
    const h = (await this.redis.hgetall(key)) as Hash;
    return Object.fromEntries(names.map((name) => [name, Number(h[name] ?? 0)])) as Record<N, number>;
  }

  /** Round-trip time of a PING, in milliseconds. */
  async ping(): Promise<number> {
    const started = performance.now();
    await this.redis.ping();
    return performance.now() - started;
  }
}

/**
 * A part of the store: a class over StoreBase that holds methods only (store.ts puts them on the
 * store's prototype): no fields, no constructor, and `private` rather than `#private` (a `#` member
 * belongs to the part's own instances, of which there are none).
 */
export type StorePart = abstract new (...args: never[]) => StoreBase;

/**
 * Puts the methods of every part on the store's prototype, so that callers hold one object. A name
 * two parts (or a part and the base) define stops the store from loading.
 */
export function composeStore(store: abstract new (...args: never[]) => StoreBase, parts: StorePart[]): void {
  for (const part of parts) {
    for (const [name, descriptor] of Object.entries(Object.getOwnPropertyDescriptors(part.prototype))) {
      if (name === "constructor") continue;
      if (name in store.prototype)
        throw new Error(`store: ${part.name}.${name} is defined by another part too`);
      Object.defineProperty(store.prototype, name, descriptor);
    }
  }
}

/**
 * A pipeline's replies, in order, once every command has answered: the first command that failed
 * throws its error (a pipeline does not), and a discarded pipeline says what it was for.
 */
export async function replies(
  pipeline: { exec(): Promise<Array<[Error | null, unknown]> | null> },
  what: string,
): Promise<unknown[]> {
  const rows = await pipeline.exec();
  if (!rows) throw new Error(`${what}: the pipeline was discarded`);
  return rows.map(([err, value]) => {
    if (err) throw err;
    return value;
  });
}
