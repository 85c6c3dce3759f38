import { inspect } from "node:util";

// Polls until a check returns a value (not undefined), failing with what was awaited and the last
// error when the time is up. Bounded waits, not timing assertions.
export async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs = 60_000,
  debug?: () => Promise<string>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const extra = debug ? `\n${await debug().catch(() => "")}` : "";
      const error = last instanceof Error ? String(last) : inspect(last);
      throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${error})` : ""}${extra}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
