// Retry schedules shared by the webhook notifier and the AI provider client.

/**
 * Delay before the next attempt after `attempts` failed ones: exponential from `initialMs`, capped
 * at `maxMs`, with equal jitter (half fixed, half random) so receivers that come back are not hit by
 * every sender at once, while the schedule keeps at least half its nominal length. With the
 * defaults (30 s doubling to 1 h, 8 attempts) the seven waits add up to 32–64 minutes.
 */
export function retryDelay(attempts: number, initialMs: number, maxMs: number, random = Math.random): number {
  const nominal = Math.min(maxMs, initialMs * 2 ** Math.max(0, attempts - 1));
  return Math.round(nominal / 2 + (random() * nominal) / 2);
}

/** A receiver's Retry-After is honoured as given, but never beyond the longest configured wait. */
export function nextAttemptDelay(
  attempts: number,
  retryAfterMs: number | undefined,
  initialMs: number,
  maxMs: number,
  random = Math.random,
): number {
  if (retryAfterMs !== undefined) return Math.min(maxMs, Math.max(0, retryAfterMs));
  return retryDelay(attempts, initialMs, maxMs, random);
}

/** `Retry-After` as delta-seconds or an HTTP-date, in ms from now (≥ 0); undefined if absent or garbage. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) {
    const seconds = Number(text);
    return Number.isSafeInteger(seconds * 1000) ? seconds * 1000 : undefined;
  }
  // IMF-fixdate and the obsolete RFC 850 form both end in GMT; Date.parse alone accepts too much ("1").
  if (!/ GMT$/.test(text)) return undefined;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
