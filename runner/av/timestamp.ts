// Formatting of timestamps; their parsing is core's (core/jobs/timestamp.ts), shared with the API.
import { timestampSeconds } from "../../core/jobs/timestamp.js";
import { PermanentError } from "../errors.js";

/** Seconds from a timestamp; PermanentError for anything the schema would not have accepted. */
export function parseTimestamp(value: string | number): number {
  const seconds = timestampSeconds(value);
  if (seconds !== undefined) return seconds;
  throw new PermanentError(
    typeof value === "number"
      ? `invalid timestamp ${String(value)}: expected a number of seconds ≥ 0`
      : `invalid timestamp "${value}": expected HH:MM:SS, MM:SS or a number of seconds`,
  );
}

/**
 * `HH:MM:SS`, with `.mmm` only when the value has a fractional part (rounded to milliseconds).
 * Hours are not wrapped: 100 hours is `100:00:00`.
 */
export function formatTimestamp(seconds: number): string {
  const totalMs = Math.round(Math.max(0, seconds) * 1000);
  const ms = totalMs % 1000;
  const totalSeconds = (totalMs - ms) / 1000;
  const h = Math.floor(totalSeconds / 3600);
  const m = Math.floor((totalSeconds % 3600) / 60);
  const s = totalSeconds % 60;
  const clock = `${pad(h)}:${pad(m)}:${pad(s)}`;
  return ms === 0 ? clock : `${clock}.${String(ms).padStart(3, "0")}`;
}

/** `HH:MM:SS.mmm` always: for durations in messages, where the precision is the point. */
export function formatDuration(seconds: number): string {
  const text = formatTimestamp(seconds);
  return text.includes(".") ? text : `${text}.000`;
}

const pad = (n: number) => String(n).padStart(2, "0");
