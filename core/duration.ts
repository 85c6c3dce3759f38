// Go-style durations ("30s", "1m30s", "250ms", "7d") or plain seconds as a number. Written here rather
// than taken from `ms`: the configuration (config.example.yaml, the Helm chart's values) uses Go's
// notation, which `ms` cannot parse in its compound form ("1h30m").
const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;

export function parseDuration(value: string | number): number {
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0) throw new Error(`invalid duration ${value}`);
    return Math.round(value * 1000);
  }
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  PART.lastIndex = 0;
  let total = 0;
  let consumed = 0;
  for (let match = PART.exec(text); match; match = PART.exec(text)) {
    total += Number(match[1]) * UNIT_MS[match[2]!]!;
    consumed = PART.lastIndex;
  }
  if (consumed === 0 || consumed !== text.length) {
    throw new Error(
      `invalid duration "${value}" (expected e.g. 30s, 1m30s, 250ms, 7d or a number of seconds)`,
    );
  }
  return Math.round(total);
}
