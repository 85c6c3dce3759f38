/** How much of a value a client's error message or a log line repeats. */
export const SHOWN_VALUE_CHARS = 200;

/**
 * `text` cut to at most `max` characters, saying how long it was: a refused 1 MB value must not
 * become a 1 MB error body or log line. Never ends on half of a surrogate pair.
 */
export function clip(text: string, max = SHOWN_VALUE_CHARS): string {
  if (text.length <= max) return text;
  let end = max;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}… (${text.length} characters)`;
}

/** A value as JSON for a message, cut as `clip` does. */
export function shown(value: unknown, max = SHOWN_VALUE_CHARS): string {
  return clip(JSON.stringify(value) ?? String(value), max);
}
