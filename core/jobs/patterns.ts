// Pure pieces of the schemas' patterns and error keyword: no import of the configuration, so the
// job type definitions (jobs/) can use them while core/config/schema.ts reads the definitions.
import { parseQuantity } from "../quantity.js";

/**
 * A schema keyword (an OpenAPI extension, ignored by validators) holding the sentence a 400 says when
 * the schema refuses a value: one text for every keyword, or one per keyword (`maximum`, `pattern`,
 * …). `{value}` stands for the refused value. api/validation.ts reads it.
 */
export const ERROR_MESSAGE = "x-error-message";
export type ErrorMessage = string | Record<string, string>;

// S3's naming rules: 3-63 lowercase letters, digits, dots and hyphens, starting and ending with a
// letter or digit; no two adjacent dots; not shaped like an IP address; no reserved prefix (xn--,
// sthree-) or suffix (-s3alias, --ol-s3).
export const BUCKET_PATTERN =
  "^(?![0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+$)(?!xn--|sthree-)(?!.*\\.\\.)(?!.*(?:-s3alias|--ol-s3)$)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$";
// Object keys and caller ids are text: no control characters, C0 (NUL, CR, LF, …), DEL or C1 (U+0080
// to U+009F: NEL U+0085 is a line break to some log readers and terminals), which would reach object
// names and log lines. Exactly Unicode's category Cc (test/unit/schema-patterns.test.ts).
export const NO_CONTROL_PATTERN = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$";
/**
 * Marks an `if`/`then` rule across a type's fields (an OpenAPI extension, ignored by validators):
 * the API validates it; the OpenAPI document carries it in `x-rules` (api/openapi30.ts).
 */
export const CROSS_FIELD_RULE = "x-cross-field-rule";

/**
 * A regular expression (no anchors) for the decimal integers from `min` to `max`, written without
 * leading zeros: `integerRange(8, 320)` matches 8 … 320 and nothing else. Bounds that depend on the
 * configuration or on an encoder become patterns a client (or a test generator) can read.
 */
export function integerRange(min: number | bigint, max: number | bigint): string {
  if (typeof min === "number" && !Number.isSafeInteger(min))
    throw new RangeError(`integerRange(${min}, ${max})`);
  if (typeof max === "number" && !Number.isSafeInteger(max))
    throw new RangeError(`integerRange(${min}, ${max})`);
  const [lo, hi] = [BigInt(min), BigInt(max)];
  if (lo < 0n || hi < lo) throw new RangeError(`integerRange(${min}, ${max})`);
  const parts: string[] = [];
  let low = lo;
  while (low <= hi) {
    const digits = String(low).length;
    const high = hi < 10n ** BigInt(digits) - 1n ? hi : 10n ** BigInt(digits) - 1n;
    parts.push(...sameLength(String(low), String(high)));
    low = high + 1n;
  }
  return `(?:${parts.join("|")})`;
}

/** The numbers from `min` to `max` written with exactly `width` digits (leading zeros): 007 … 120. */
function paddedRange(min: bigint, max: bigint, width: number): string {
  return `(?:${sameLength(String(min).padStart(width, "0"), String(max).padStart(width, "0")).join("|")})`;
}

/**
 * A regular expression (no anchors) for the decimals above zero and at most `scaled` / 10^`digits`,
 * with up to `digits` digits after the point and no leading zeros: `decimalAtMost(1500n, 3)` matches
 * 1, 0.5, 1.5, 1.500 and 0.001, not 0, 1.501 or 2.
 */
export function decimalAtMost(scaled: bigint, digits: number): string {
  const parts: string[] = [];
  for (let f = 0; f <= digits; f++) {
    // The number's digits without the point, as an integer, must be at most limit.
    const limit = scaled / 10n ** BigInt(digits - f);
    if (f === 0) {
      if (limit >= 1n) parts.push(integerRange(1n, limit));
      continue;
    }
    const unit = 10n ** BigInt(f);
    const [whole, rest] = [limit / unit, limit % unit];
    const any = `[0-9]{${f}}`;
    if (whole >= 2n) parts.push(`${integerRange(1n, whole - 1n)}\\.${any}`);
    if (whole >= 1n) {
      parts.push(`0\\.${paddedRange(1n, unit - 1n, f)}`, `${whole}\\.${paddedRange(0n, rest, f)}`);
    } else if (rest >= 1n) {
      parts.push(`0\\.${paddedRange(1n, rest, f)}`);
    }
  }
  return parts.length > 0 ? `(?:${parts.join("|")})` : "(?!)";
}

/** What a suffix multiplies by, in the resource's smallest unit (millicores, bytes). */
const CPU_UNITS: ReadonlyArray<[string, bigint, number]> = [
  // suffix, unit, digits after the point
  ["m", 1n, 0],
  ["", 1000n, 3],
];
const MEMORY_UNITS: ReadonlyArray<[string, bigint, number]> = [
  ["", 1n, 0],
  ...(["k", "M", "G", "T", "P", "E"] as const).map((s, i): [string, bigint, number] => [
    s,
    1000n ** BigInt(i + 1),
    3,
  ]),
  ...(["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"] as const).map((s, i): [string, bigint, number] => [
    s,
    1024n ** BigInt(i + 1),
    3,
  ]),
];

/**
 * The Kubernetes quantities a job may ask for, above zero and at most `max` (itself a quantity), as
 * one anchored regular expression: CPU as millicores (`500m`) or cores with up to three decimals
 * (`2`, `0.5`); memory as bytes or with a decimal (k, M, G, …) or binary (Ki, Mi, Gi, …) suffix and
 * up to three decimals (`512Mi`, `1.5Gi`). The schema and the document then say the maximum
 * itself, and every value the pattern takes is one Kubernetes takes (core/quantity.ts reads it).
 */
export function quantityPattern(resource: "cpu" | "memory", max: string): string {
  // In millicores or bytes; 0.3 cores is 299.99999999999994 millicores as a double, hence the nudge.
  const most = BigInt(
    resource === "cpu" ? Math.floor(parseQuantity(max) * 1000 + 1e-6) : Math.floor(parseQuantity(max)),
  );
  const units = resource === "cpu" ? CPU_UNITS : MEMORY_UNITS;
  const parts = units.flatMap(([suffix, unit, digits]) => {
    const scaled = (most * 10n ** BigInt(digits)) / unit;
    return scaled >= 1n ? [`${decimalAtMost(scaled, digits)}${suffix}`] : [];
  });
  return `^(?:${parts.join("|")})$`;
}
// Alternatives for the numbers from lo to hi, both of the same number of digits.
function sameLength(lo: string, hi: string): string[] {
  if (lo === hi) return [lo];
  const rest = lo.length - 1;
  const [a, b] = [Number(lo[0]), Number(hi[0])];
  const digit = (from: number, to: number) => (from === to ? String(from) : `[${from}-${to}]`);
  if (rest === 0) return [digit(a, b)];
  const any = rest === 1 ? "[0-9]" : `[0-9]{${rest}}`;
  if (a === b) return sameLength(lo.slice(1), hi.slice(1)).map((p) => `${a}${p}`);
  const lowFull = /^0*$/.test(lo.slice(1));
  const highFull = /^9*$/.test(hi.slice(1));
  const parts: string[] = [];
  const first = lowFull ? a : a + 1;
  const last = highFull ? b : b - 1;
  if (!lowFull) parts.push(...sameLength(lo.slice(1), "9".repeat(rest)).map((p) => `${a}${p}`));
  if (first <= last) parts.push(`${digit(first, last)}${any}`);
  if (!highFull) parts.push(...sameLength("0".repeat(rest), hi.slice(1)).map((p) => `${b}${p}`));
  return parts;
}
