import { JOB_DURATION_BUCKETS } from "../jobs/duration-buckets.js";
import type { History, HistoryFigures } from "../jobs/records.js";
import { JOB_TYPES } from "../jobs/types.js";

/** One minute's hash as the scripts write it (lib.lua note_ended, note_depth); empty when none. */
export type MinuteHash = Record<string, string>;

export const HISTORY_INTERVAL_SECONDS = 60;
/** How far back the figures go: a day (lib.lua keeps each minute's hash a little longer). */
export const HISTORY_MAX_MINUTES = 1440;

/**
 * The `q` quantile (0..1) of durations counted in cumulative buckets (`cumulative[i]` jobs took at
 * most `bounds[i]` seconds) out of `count`, interpolated linearly inside its bucket as Prometheus'
 * histogram_quantile does; the last bound when it lies beyond them; null without jobs.
 */
export function quantile(
  q: number,
  cumulative: number[],
  count: number,
  bounds: readonly number[],
): number | null {
  if (count <= 0) return null;
  const rank = q * count;
  for (let i = 0; i < bounds.length; i++) {
    const below = i === 0 ? 0 : cumulative[i - 1]!;
    const upTo = cumulative[i]!;
    if (upTo >= rank && upTo > below) {
      const lower = i === 0 ? 0 : bounds[i - 1]!;
      return lower + (bounds[i]! - lower) * ((rank - below) / (upTo - below));
    }
  }
  return bounds[bounds.length - 1] ?? null;
}

function figures(
  hash: MinuteHash,
  types: readonly string[],
  depth: Map<string, number>,
): HistoryFigures & { by_type: Record<string, HistoryFigures> } {
  const n = (field: string) => Number(hash[field] ?? 0) || 0;
  const total = { completed: 0, failed: 0, cancelled: 0, pending: 0 };
  const cumulative = JOB_DURATION_BUCKETS.map(() => 0);
  const byType: Record<string, HistoryFigures> = {};
  for (const type of types) {
    const completed = n(`${type}:completed`);
    const failed = n(`${type}:failed`);
    const cancelled = n(`${type}:cancelled`);
    if (hash[`${type}:pending`] !== undefined) depth.set(type, n(`${type}:pending`));
    const pending = depth.get(type) ?? 0;
    const buckets = JOB_DURATION_BUCKETS.map((_, i) => n(`${type}:b${i + 1}`));
    buckets.forEach((c, i) => (cumulative[i]! += c));
    total.completed += completed;
    total.failed += failed;
    total.cancelled += cancelled;
    total.pending += pending;
    byType[type] = {
      completed,
      failed,
      cancelled,
      p50_seconds: quantile(0.5, buckets, completed, JOB_DURATION_BUCKETS),
      p95_seconds: quantile(0.95, buckets, completed, JOB_DURATION_BUCKETS),
      pending,
    };
  }
  return {
    ...total,
    p50_seconds: quantile(0.5, cumulative, total.completed, JOB_DURATION_BUCKETS),
    p95_seconds: quantile(0.95, cumulative, total.completed, JOB_DURATION_BUCKETS),
    by_type: byType,
  };
}

/**
 * The figures of consecutive minutes as one minute's hash: the jobs ended and the duration buckets
 * summed, each queue's depth as last noted, and the depth its first change in them started from.
 */
export function mergeMinutes(hashes: MinuteHash[]): MinuteHash {
  if (hashes.length === 1) return hashes[0]!;
  const merged: MinuteHash = {};
  for (const hash of hashes) {
    for (const [field, value] of Object.entries(hash)) {
      if (field.endsWith(":pending_before")) merged[field] ??= value;
      else if (field.endsWith(":pending")) merged[field] = value;
      else merged[field] = String((Number(merged[field] ?? 0) || 0) + (Number(value) || 0));
    }
  }
  return merged;
}

/** The most minutes one point of the history covers (`step`). */
export const HISTORY_MAX_STEP_MINUTES = 60;

/**
 * The points of the last minutes, oldest first, the current minute last, from their hashes
 * (`hashes[i]` is minute `firstMinute + i`; `before`, the hashes of the minutes before the window,
 * oldest first). A queue's depth at a minute is the last one noted at or before it (each change of
 * a queue notes it); before its first note in sight, the depth that first change started from; when
 * the queue did not change in sight at all, its depth now (`current`).
 *
 * With a `step` above 1, a point covers the minutes of one step-long stretch of time, aligned on
 * multiples of `step` minutes since the epoch (so a stretch keeps its bounds as time goes on): the
 * jobs ended in them, the quantiles of their durations, the depth as the last of them ended. The
 * first and the last point may cover fewer minutes (the window starts or ends inside a stretch); a
 * point's `at` is the start of its first minute in the window.
 */
export function historyPoints(
  firstMinute: number,
  hashes: MinuteHash[],
  before: MinuteHash[],
  current: Readonly<Record<string, number>>,
  step = 1,
): History["points"] {
  const depth = new Map<string, number>();
  for (const hash of before) figures(hash, JOB_TYPES, depth);
  for (const type of JOB_TYPES) {
    if (depth.has(type)) continue;
    const first = hashes.find((hash) => hash[`${type}:pending`] !== undefined);
    const start = first?.[`${type}:pending_before`] ?? first?.[`${type}:pending`];
    depth.set(type, start !== undefined ? Number(start) || 0 : (current[type] ?? 0));
  }
  const groups: Array<{ minute: number; hashes: MinuteHash[] }> = [];
  hashes.forEach((hash, i) => {
    const minute = firstMinute + i;
    const last = groups.at(-1);
    if (last && Math.floor(last.minute / step) === Math.floor(minute / step)) last.hashes.push(hash);
    else groups.push({ minute, hashes: [hash] });
  });
  return groups.map((group) => ({
    at: new Date(group.minute * HISTORY_INTERVAL_SECONDS * 1000).toISOString(),
    ...figures(mergeMinutes(group.hashes), JOB_TYPES, depth),
  }));
}
