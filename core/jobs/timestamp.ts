import { integerRange } from "./patterns.js";

// Timestamps of the video_thumbnail job: `HH:MM:SS`, `MM:SS` (each with an optional fraction) or a
// number of seconds (a JSON number or a numeric string), as TIMESTAMP_PATTERN of the parameter
// schema accepts them.

const CLOCK = /^(?:(\d+):)?([0-5]?\d):([0-5]?\d(?:\.\d+)?)$/;
const SECONDS = /^\d+(?:\.\d+)?$/;

/**
 * The latest timestamp a job may ask for: far beyond any real recording (ffmpeg itself seeks as far as
 * 2^63 microseconds, some 292,000 years), far below 1e308. A whole number of hours.
 */
export const MAX_TIMESTAMP_SECONDS = 1000 * 3600;

const MAX_HOURS = MAX_TIMESTAMP_SECONDS / 3600;
const FRACTION = "(?:\\.[0-9]+)?";
const ZERO_FRACTION = "(?:\\.0+)?";
const SIXTY = "[0-5]?[0-9]";

/**
 * The string forms CLOCK and SECONDS read, up to MAX_TIMESTAMP_SECONDS: hours 0 to 999 with any
 * minutes and seconds or 1000:00:00 exactly (a zero fraction allowed); MM:SS with minutes below 60;
 * seconds up to 3600000. Leading zeros are allowed (`0001:00:00`, `007`).
 */
export const TIMESTAMP_PATTERN =
  "^(?:" +
  [
    `0*${integerRange(0, MAX_HOURS - 1)}:${SIXTY}:${SIXTY}${FRACTION}`,
    `0*${MAX_HOURS}:0?0:0?0${ZERO_FRACTION}`,
    `${SIXTY}:${SIXTY}${FRACTION}`,
    `0*${integerRange(0, MAX_TIMESTAMP_SECONDS - 1)}${FRACTION}`,
    `0*${MAX_TIMESTAMP_SECONDS}${ZERO_FRACTION}`,
  ].join("|") +
  ")$";

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
