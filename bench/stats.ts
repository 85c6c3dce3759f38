// The statistics every benchmark prints: per target the median of its rounds and their spread, and
// each comparison as the median of the per-round ratios, each round running both targets back to
// back (alternating), with the spread of those ratios. A figure is read as "median [min–max] over n
// rounds"; a claim holds when the whole spread of the ratio is on its side of the target, and a
// difference smaller than the spread is not a difference. No best-of: the best round of each target
// comes from different moments of the machine and flatters whichever had the quieter one. Tables
// are printed as Markdown (printTable), without console.table's quotes around every figure.

/** A figure over the rounds of one run. */
export interface Summary {
  /** How many rounds. */
  n: number;
  median: number;
  min: number;
  max: number;
  /** First and third quartiles (linear interpolation between the sorted rounds). */
  q1: number;
  q3: number;
  /** The rounds, in the order measured. */
  values: number[];
}

function sorted(values: readonly number[]): number[] {
  return [...values].sort((a, b) => a - b);
}

/** The value at quantile p (0..1) of sorted values, interpolated linearly between neighbours. */
function quantile(s: readonly number[], p: number): number {
  const at = (s.length - 1) * p;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return s[lo]! + (s[hi]! - s[lo]!) * (at - lo);
}

export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error("median of no values");
  return quantile(sorted(values), 0.5);
}

export function summarize(values: readonly number[]): Summary {
  if (values.length === 0) throw new Error("a summary needs at least one round");
  if (values.some((v) => !Number.isFinite(v))) {
    throw new Error(`a summary of non-finite values: ${values.join(", ")}`);
  }
  const s = sorted(values);
  return {
    n: s.length,
    median: quantile(s, 0.5),
    min: s[0]!,
    max: s.at(-1)!,
    q1: quantile(s, 0.25),
    q3: quantile(s, 0.75),
    values: [...values],
  };
}

/**
 * numerator / denominator as the median of the per-round ratios: round i of each was measured
 * back to back, so its ratio is the least disturbed by what else the machine did.
 */
export function ratio(numerator: readonly number[], denominator: readonly number[]): Summary {
  if (numerator.length !== denominator.length) {
    throw new Error(`a ratio of ${numerator.length} rounds to ${denominator.length}: not paired`);
  }
  return summarize(numerator.map((value, i) => value / denominator[i]!));
}

/** (max − min) / median: the spread relative to the figure. */
export function relativeSpread(summary: Summary): number {
  return (summary.max - summary.min) / Math.abs(summary.median);
}

/** "33.7 [32.1–34.5]": the median and, over more than one round, the min–max spread. */
export function formatSummary(summary: Summary, digits = 2): string {
  const f = (x: number) => x.toFixed(digits);
  return summary.n > 1 ? `${f(summary.median)} [${f(summary.min)}–${f(summary.max)}]` : f(summary.median);
}

/**
 * A ratio's line: its median and spread over n rounds, and whether the whole spread is on the
 * target's side (`>= 0.90`, `<= 2.00`), not on it, or straddles it (undecided at this spread).
 */
export function formatRatio(summary: Summary, target?: { atLeast?: number; atMost?: number }): string {
  const base = `${formatSummary(summary)} over ${summary.n} round${summary.n === 1 ? "" : "s"}`;
  if (!target) return `${base} (information)`;
  const [op, bound] =
    target.atLeast !== undefined ? [">=", target.atLeast] : ["<=", target.atMost ?? Number.NaN];
  const holds = (x: number) => (op === ">=" ? x >= bound : x <= bound);
  const verdict =
    holds(summary.min) && holds(summary.max)
      ? "met by every round"
      : !holds(summary.min) && !holds(summary.max)
        ? "missed by every round"
        : "the spread straddles it";
  return `${base} (target ${op} ${bound.toFixed(2)}: ${verdict})`;
}

/** A Markdown table laid out as Prettier lays it out: every column as wide as its widest cell. */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const width = (text: string) => [...text].length;
  const widths = header.map((h, c) => Math.max(3, width(h), ...rows.map((r) => width(r[c] ?? ""))));
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell, c) => cell + " ".repeat(widths[c]! - width(cell))).join(" | ")} |`;
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

const cell = (value: unknown): string =>
  value === undefined || value === null
    ? ""
    : typeof value === "string"
      ? value
      : typeof value === "number" || typeof value === "boolean"
        ? String(value)
        : JSON.stringify(value);

/**
 * Prints rows of named figures as a Markdown table (console.table quotes every string, and the
 * figures here are strings: "33.7 [32.9–34.4]"): the row names first, then every column any row has.
 */
export function printTable(rows: Record<string, Record<string, unknown>>): void {
  const columns = [...new Set(Object.values(rows).flatMap((row) => Object.keys(row)))];
  console.log(
    markdownTable(
      ["", ...columns],
      Object.entries(rows).map(([name, row]) => [name, ...columns.map((c) => cell(row[c]))]),
    ),
  );
}
