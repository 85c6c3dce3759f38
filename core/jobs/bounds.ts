import { Value } from "@sinclair/typebox/value";
import { KubernetesConfig, LimitsConfig } from "../config/schema.js";

// What the job schemas take from the configuration. The API builds its route schemas from these
// when it starts, so that validation (ajv) and the OpenAPI document say the same limits.

export interface SchemaBounds {
  /** Largest width or height a job may ask for (limits.max_output_dimension). */
  maxOutputDimension: number;
  /** Largest per-job timeout_seconds (limits.max_timeout_seconds). */
  maxTimeoutSeconds: number;
  /** Largest per-job `resources` (kubernetes.max_resources), as Kubernetes quantities. */
  maxResources: { cpu: string; memory: string };
  /** The configured AI providers by name (analyze's `provider` must name one). */
  aiProviders: readonly string[];
}

const limitDefaults = Value.Default(LimitsConfig, {}) as {
  max_output_dimension: number;
  max_timeout_seconds: number;
};
const kubernetesDefaults = Value.Default(KubernetesConfig, {}) as {
  max_resources: { cpu: string; memory: string };
};

/** The bounds of a configuration with every default: what the static schemas (and types) use. */
export const DEFAULT_BOUNDS: SchemaBounds = {
  maxOutputDimension: limitDefaults.max_output_dimension,
  maxTimeoutSeconds: limitDefaults.max_timeout_seconds,
  maxResources: { ...kubernetesDefaults.max_resources },
  aiProviders: [],
};

/** The bounds of a loaded configuration. */
export function schemaBounds(config: {
  limits: { maxOutputDimension: number; maxTimeoutSeconds: number };
  kubernetes: { maxResources: { cpu: string; memory: string } };
  ai: { providers: Record<string, unknown> };
}): SchemaBounds {
  return {
    maxOutputDimension: config.limits.maxOutputDimension,
    maxTimeoutSeconds: config.limits.maxTimeoutSeconds,
    maxResources: { ...config.kubernetes.maxResources },
    aiProviders: Object.keys(config.ai.providers).sort(),
  };
}

/**
 * A schema keyword (an OpenAPI extension, ignored by validators) holding the sentence a 400 says when
 * the schema refuses a value: one text for every keyword, or one per keyword (`maximum`, `pattern`,
 * …). `{value}` stands for the refused value. api/validation.ts reads it.
 */
export const ERROR_MESSAGE = "x-error-message";
export type ErrorMessage = string | Record<string, string>;

/**
 * A regular expression (no anchors) for the decimal integers from `min` to `max`, written without
 * leading zeros: `integerRange(8, 320)` matches 8 … 320 and nothing else. Bounds that depend on the
 * configuration or on an encoder become patterns a client (or a test generator) can read.
 */
export function integerRange(min: number, max: number): string {
  if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || min < 0 || max < min) {
    throw new RangeError(`integerRange(${min}, ${max})`);
  }
  const parts: string[] = [];
  let low = min;
  while (low <= max) {
    const digits = String(low).length;
    const high = Math.min(max, 10 ** digits - 1);
    parts.push(...sameLength(String(low), String(high)));
    low = high + 1;
  }
  return `(?:${parts.join("|")})`;
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
