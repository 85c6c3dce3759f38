/**
 * Fair share between clients: which client's job a claim takes next from one job type's queue. It
 * is weighted round robin (deficit round robin with a job as the unit of cost), stated here as a pure
 * function; the store's claim script (core/store/lua/claim.lua, `fair_pick`) applies the same rule,
 * and test/integration/fair-share-store.test.ts holds the two to the same order.
 *
 * - Priority first: of the clients that may take a job (waiting jobs, below their `max_running`),
 *   only those whose next job has the highest priority among them contend.
 * - Within that level they take turns in the order of their names (code units, as Lua compares
 *   bytes: names are ASCII): a client's turn is `weight` jobs in a row, then the next client's
 *   turn begins. A client with no job at that level, or at its limit, is passed and loses the rest
 *   of its turn.
 * - So while a client waits, every other client is served at most its weight's jobs before it:
 *   a flood from one client delays another's job by at most the sum of the others' weights.
 *
 * Jobs submitted without a client name count as the client "-" (no client name can be "-").
 */

/** A client that may take a job now: its name, its weight, the priority of its next waiting job. */
export interface Contender {
  client: string;
  weight: number;
  priority: number;
}

/** Whose turn it is and how many jobs are left of it. Kept per job type (keys.ts fair_turn). */
export interface Turn {
  client: string;
  left: number;
}

/** The name jobs without a client count under. */
export const ANONYMOUS_CLIENT = "-";

/** A client's weight: the configured one, at least 1 and whole; 1 when unset. */
export function turnLength(weight: number | undefined): number {
  return weight === undefined || !Number.isFinite(weight) ? 1 : Math.max(1, Math.floor(weight));
}

/**
 * The client whose job is taken next and the turn after it; null when nobody contends. `turn`: the
 * state the previous pick left (null at first).
 */
export function pickClient(
  contenders: readonly Contender[],
  turn: Turn | null,
): { client: string; turn: Turn } | null {
  if (contenders.length === 0) return null;
  const top = Math.max(...contenders.map((c) => c.priority));
  const level = contenders.filter((c) => c.priority === top).sort((a, b) => compareNames(a.client, b.client));
  if (turn && turn.left > 0) {
    const current = level.find((c) => c.client === turn.client);
    if (current) return { client: current.client, turn: { client: current.client, left: turn.left - 1 } };
  }
  const next = (turn && level.find((c) => compareNames(c.client, turn.client) > 0)) || level[0]!;
  return { client: next.client, turn: { client: next.client, left: turnLength(next.weight) - 1 } };
}

/** Names in code-unit order (the same as a byte order for ASCII names, which Lua's compare uses). */
export function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
