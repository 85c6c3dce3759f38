// The Kubernetes benchmark's helpers (bench/k8s.ts): its knobs, its log and the step it is in, how it
// prints durations and ratios, percentiles, and waiting for a condition.
import { loadavg } from "node:os";

export function knob(name: string, fallback: number, min = 1): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name}=${raw}: an integer >= ${min}`);
  return value;
}

export const log = (line: string) => console.error(`k8s bench: ${line}`);
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");
export const ms = (x: number) => (Number.isFinite(x) ? `${Math.round(x)} ms` : "–");
export function ratio(a: number, b: number): string {
  const r = a / b;
  if (!Number.isFinite(r) || b <= 0) return "–";
  return `${r >= 10 ? r.toFixed(0) : r >= 0.1 ? r.toFixed(2) : r.toPrecision(2)}×`;
}
export const secs = (x: number) => (Number.isFinite(x) ? `${(x / 1000).toFixed(1)} s` : "–");
/** What the run is doing: named when one step takes long (see k8sBenchmark's keep-alive). */
let stage = "starting";
let stageSince = Date.now();
export const step = (what: string) => {
  stage = what;
  stageSince = Date.now();
};
/** The step the run is in (the last `step`), and since when. */
export const currentStep = () => ({ stage, since: stageSince });
export const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

export interface Summary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentiles. */
export function summarize(values: number[]): Summary {
  const s = [...values].sort((a, b) => a - b);
  const at = (p: number) =>
    s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
  return { n: s.length, p50: at(50), p90: at(90), p99: at(99), max: s.at(-1) ?? NaN };
}

/** Polls until `check` gives a value; undefined when `limitMs` passed first. */
export async function waitUntil<T>(
  check: () => T | undefined | Promise<T | undefined>,
  limitMs: number,
  everyMs = 20,
) {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) return undefined;
    await sleep(everyMs);
  }
}

export interface Row {
  figure: string;
  kube: string;
  local: string;
  ratio: string;
  note: string;
}
