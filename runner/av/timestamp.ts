// Timestamps of the video_thumbnail job: `HH:MM:SS`, `MM:SS` (each with an optional fraction) or a
// number of seconds (a JSON number or a numeric string), as TIMESTAMP_PATTERN of the parameter
// schema accepts them.
import { PermanentError } from "../errors.js";

const CLOCK = /^(?:(\d+):)?([0-5]?\d):([0-5]?\d(?:\.\d+)?)$/;
const SECONDS = /^\d+(?:\.\d+)?$/;

/** Seconds from a timestamp; PermanentError for anything the schema would not have accepted. */
export function parseTimestamp(value: string | number): number {
  if (typeof value === "number") {
    if (Number.isFinite(value) && value >= 0) return value;
    throw new PermanentError(`invalid timestamp ${String(value)}: expected a number of seconds ≥ 0`);
  }
  const text = value.trim();
  if (SECONDS.test(text)) return Number(text);
  const clock = CLOCK.exec(text);
  if (clock) {
    const [, hours, minutes, seconds] = clock;
    return Number(hours ?? 0) * 3600 + Number(minutes) * 60 + Number(seconds);
  }
  throw new PermanentError(`invalid timestamp "${value}": expected HH:MM:SS, MM:SS or a number of seconds`);
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
