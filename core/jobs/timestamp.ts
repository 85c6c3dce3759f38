// Timestamps of the video_thumbnail job: `HH:MM:SS`, `MM:SS` (each with an optional fraction) or a
// number of seconds (a JSON number or a numeric string), as TIMESTAMP_PATTERN of the parameter
// schema accepts them.

const CLOCK = /^(?:(\d+):)?([0-5]?\d):([0-5]?\d(?:\.\d+)?)$/;
const SECONDS = /^\d+(?:\.\d+)?$/;

/** The latest timestamp a job may ask for: far beyond any real recording, far below 1e308. */
export const MAX_TIMESTAMP_SECONDS = 1000 * 3600;

/** Seconds from a timestamp, or undefined for anything the schema would not have accepted. */
export function timestampSeconds(value: string | number): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) && value >= 0 ? value : undefined;
  const text = value.trim();
  if (SECONDS.test(text)) return Number(text);
  const clock = CLOCK.exec(text);
  if (!clock) return undefined;
  const [, hours, minutes, seconds] = clock;
  return Number(hours ?? 0) * 3600 + Number(minutes) * 60 + Number(seconds);
}
