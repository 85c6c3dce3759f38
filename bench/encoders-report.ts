// The encoder benchmark's tables (bench/encoders.ts): its points per setting and quality, sizes at
// equal score against each format's baseline setting, the Pareto-efficient points, the photos' summary.
import type { OutputFormat } from "../runner/image/encode.js";

export interface Point {
  case: string;
  format: OutputFormat;
  setting: string;
  quality: number;
  bytes: number;
  ssim: number;
  ssimY: number;
  /** SSIMULACRA 2 (SSIMULACRA2_BIN). */
  s2?: number;
  cpuMs: number;
  perSecond: number;
  images: number;
  /** The case is a file of BENCH_ENC_PHOTOS. */
  photo?: true;
}

export const kib = (bytes: number) => (bytes / 1024).toFixed(1);
const dB = (s: number) => -10 * Math.log10(Math.max(1 - s, 1e-9));

export type Score = "ssim" | "ssimY" | "s2";

/** The size columns: each score, its column's name, and the scale log size is interpolated over. */
const SCORES: [Score, string, (s: number) => number][] = [
  ["ssim", "SSIM", dB],
  ["ssimY", "SSIM-Y", dB],
  ["s2", "SSIMULACRA 2", (s) => s],
];

const geomean = (values: number[]) => Math.exp(values.reduce((s, v) => s + Math.log(v), 0) / values.length);
const percent = (ratio: number) => {
  const pct = Math.round((ratio - 1) * 1000) / 10; // rounded first: no "-0.0 %"
  return `${pct >= 0 ? "+" : ""}${pct.toFixed(1)} %`;
};

/** Size of `points` (one setting, several qualities) at `target` of `score`, or undefined outside their range. */
export function bytesAt(
  points: Array<Pick<Point, "bytes" | Score>>,
  score: Score,
  target: number,
): number | undefined {
  const scale = SCORES.find(([s]) => s === score)![2];
  const sorted = points.filter((p) => p[score] !== undefined).sort((a, b) => a[score]! - b[score]!);
  for (let i = 0; i + 1 < sorted.length; i++) {
    const a = sorted[i]!;
    const b = sorted[i + 1]!;
    if (target >= a[score]! && target <= b[score]!) {
      const span = scale(b[score]!) - scale(a[score]!);
      const t = span === 0 ? 0 : (scale(target) - scale(a[score]!)) / span;
      return Math.exp(Math.log(a.bytes) + t * (Math.log(b.bytes) - Math.log(a.bytes)));
    }
  }
  return undefined;
}

/**
 * Mean size ratio (geometric) of `points` to `baseline` at the baseline's scores that `points`
 * covers, with how many of the baseline's qualities it covered; undefined when it covers none.
 */
function sizeRatio(
  points: Point[],
  baseline: Point[],
  score: Score,
): { ratio: number; covered: number } | undefined {
  const ratios = baseline
    .map((b) => {
      const at = b[score] === undefined ? undefined : bytesAt(points, score, b[score]);
      return at === undefined ? undefined : at / b.bytes;
    })
    .filter((r): r is number => r !== undefined);
  return ratios.length === 0 ? undefined : { ratio: geomean(ratios), covered: ratios.length };
}

/** sizeRatio as a signed percentage with how many of the baseline's qualities it covered. */
function sizeAtEqual(points: Point[], baseline: Point[], score: Score): string {
  const r = sizeRatio(points, baseline, score);
  return r ? `${percent(r.ratio)} (${r.covered}/${baseline.length})` : "n/a";
}

/** The scores the points have (s2 only with SSIMULACRA2_BIN). */
const scoresOf = (points: Point[]) => SCORES.filter(([score]) => points.some((p) => p[score] !== undefined));

function pareto(points: Point[]): Point[] {
  return points
    .filter(
      (p) =>
        !points.some(
          (q) =>
            q !== p &&
            q.bytes <= p.bytes &&
            q.ssim >= p.ssim &&
            q.cpuMs <= p.cpuMs &&
            (q.bytes < p.bytes || q.ssim > p.ssim || q.cpuMs < p.cpuMs),
        ),
    )
    .sort((a, b) => a.bytes - b.bytes);
}

/** The settings each format's size-at-equal-SSIM column compares with. */
const BASELINES: Partial<Record<OutputFormat, string>> = {
  // imgproxy's default AVIF speed 8 is libvips effort 1 (libvips passes libheif speed = 9 - effort),
  // with libvips' own chroma default below quality 90: 4:2:0; and libaom tuned for SSIM, the default
  // of the libheif it is built with (a libheif of 1.22 or later on libaom 3.13 or later picks the
  // IQ tune instead, and maps quality to the quantizer by another table).
  avif: "e1 4:2:0 ssim",
  // libwebp's default method (4), as sharp sets it.
  webp: "e4",
  // libjpeg-turbo's defaults, against mozjpeg's trellis and scans.
  jpeg: "runner standard",
};

export function report(
  name: string,
  title: string,
  format: OutputFormat,
  labels: string[],
  qualities: number[],
  points: Point[],
) {
  const baselineLabel = BASELINES[format];
  const baseline = points.filter((p) => p.setting === baselineLabel);
  const scores = scoresOf(points);
  const s2 = scores.some(([score]) => score === "s2");
  console.log(
    `\n${format.toUpperCase()}, ${title}; per quality: KiB, SSIM (Y:Cb:Cr 6:1:1), SSIM-Y, ` +
      `${s2 ? "SSIMULACRA 2, " : ""}CPU ms/image, images/s at concurrency 2`,
  );
  const rows = labels.map((label) => {
    const mine = points.filter((p) => p.setting === label);
    const row: Record<string, string> = {};
    for (const q of qualities) {
      const p = mine.find((x) => x.quality === q);
      if (p)
        row[`q${q}`] =
          `${kib(p.bytes)} ${p.ssim.toFixed(4)} ${p.ssimY.toFixed(4)}${p.s2 === undefined ? "" : ` ${p.s2.toFixed(2)}`} ` +
          `${p.cpuMs.toFixed(0)}ms ${p.perSecond.toFixed(1)}/s`;
    }
    if (baseline.length > 1 && mine.length > 1)
      for (const [i, [score, name]] of scores.entries())
        row[i === 0 ? `size at equal ${name} vs ${baselineLabel}` : `at equal ${name}`] = sizeAtEqual(
          mine,
          baseline,
          score,
        );
    return [label, row] as const;
  });
  console.table(Object.fromEntries(rows));
  const grid = points.filter((p) => !p.setting.startsWith("runner"));
  if (grid.length > 2) {
    console.log(
      `Pareto-efficient (${format}, ${name}): none of the others is smaller, closer and cheaper at once`,
    );
    for (const p of pareto(grid))
      console.log(
        `  ${p.setting.padEnd(9)} q${String(p.quality).padEnd(3)} ${kib(p.bytes).padStart(7)} KiB  SSIM ${p.ssim.toFixed(4)}  ` +
          `${p.s2 === undefined ? "" : `s2 ${p.s2.toFixed(2)}  `}${p.cpuMs.toFixed(0).padStart(5)} ms  ${p.perSecond.toFixed(1)}/s`,
      );
  }
}

/**
 * With more than one photo (BENCH_ENC_PHOTOS), per format: each setting's size at equal score
 * against the baseline, the geometric mean over the photos of each photo's mean ratio (sizeRatio;
 * with how many photos had one), and its CPU time against the baseline's.
 */
export function photoSummary(points: Point[]) {
  const photos = points.filter((p) => p.photo);
  for (const format of new Set(photos.map((p) => p.format))) {
    const ours = photos.filter((p) => p.format === format);
    const names = [...new Set(ours.map((p) => p.case))];
    const baselineLabel = BASELINES[format];
    if (names.length < 2 || !ours.some((p) => p.setting === baselineLabel)) continue;
    const of = (name: string, label: string) => ours.filter((p) => p.case === name && p.setting === label);
    const scores = scoresOf(ours);
    console.log(
      `\n${format.toUpperCase()}, ${names.length} photos: size at equal score vs ${baselineLabel} (geometric mean ` +
        `over the photos of each photo's mean; photos with one), CPU ms/image vs ${baselineLabel}`,
    );
    const rows = [...new Set(ours.map((p) => p.setting))].map((label) => {
      const row: Record<string, string> = {};
      for (const [i, [score, name]] of scores.entries()) {
        const ratios = names
          .map((n) => sizeRatio(of(n, label), of(n, baselineLabel!), score)?.ratio)
          .filter((r): r is number => r !== undefined);
        row[i === 0 ? `size at equal ${name}` : `at equal ${name}`] =
          ratios.length === 0 ? "n/a" : `${percent(geomean(ratios))} (${ratios.length}/${names.length})`;
      }
      const cpu = names
        .map((n) => {
          const base = of(n, baselineLabel!);
          const ratios = of(n, label)
            .map((p) => [p, base.find((b) => b.quality === p.quality)] as const)
            .filter(([, b]) => b !== undefined)
            .map(([p, b]) => p.cpuMs / b!.cpuMs);
          return ratios.length === 0 ? undefined : geomean(ratios);
        })
        .filter((r): r is number => r !== undefined);
      row["CPU"] = cpu.length === 0 ? "n/a" : `${geomean(cpu).toFixed(2)}x`;
      return [label, row] as const;
    });
    console.table(Object.fromEntries(rows));
  }
}
