// Colour quantisation for the colours job: a histogram of 8-bit sRGB colours → at most N clusters,
// each with its colour and pixel count, largest first.
//
// Method: weighted k-means in OKLab (color.ts) over the histogram's distinct colours (each
// weighted by its pixel count, so the work depends on the number of distinct colours, not of
// pixels). Seeding is k-means++ (the most frequent colour first, then colours drawn with
// probability ∝ count × squared distance to the nearest seed) from a PRNG with a fixed seed, and
// ties are broken by colour value, so the same histogram always gives the same answer. Lloyd
// iterations until no colour changes cluster, at most MAX_ITERATIONS. A cluster's colour is the
// mean of its core half (coreMean), and a cluster of one distinct colour is that colour exactly.
//
// Fewer colours than asked for, by design:
// - a histogram with at most N distinct colours gives exactly those colours (no clustering);
// - clusters closer than MERGE_DISTANCE in OKLab (about the smallest difference people notice) are
//   merged: k-means splits one flat colour into near-identical halves when the image has fewer
//   real colours than N (JPEG noise around a single red, say), and returning two reds that look
//   the same as "two dominant colours" would be wrong.
// Padding to N with invented colours is never done.
import { oklabDistance, oklabToRgb, rgbToOklab, type Oklab, type Rgb } from "./color.js";

export interface ColorCluster {
  rgb: Rgb;
  /** Pixels (histogram weight) in the cluster. */
  count: number;
}

export interface QuantizeOptions {
  maxColors: number;
  /** PRNG seed of the k-means++ seeding. */
  seed?: number;
  maxIterations?: number;
  /** Clusters nearer than this in OKLab are merged. */
  mergeDistance?: number;
}

export const DEFAULT_SEED = 0x5eed_c010;
export const MAX_ITERATIONS = 50;
export const MERGE_DISTANCE = 0.02;

interface Cluster {
  lab: [number, number, number];
  count: number;
  /** The distinct colour when the cluster holds only one (it is then returned exactly). */
  only?: number;
}

/**
 * Quantises a histogram (key: 0xRRGGBB, value: pixel count) to at most `maxColors` colours,
 * sorted by count (descending), then by colour value.
 */
export function quantize(histogram: ReadonlyMap<number, number>, options: QuantizeOptions): ColorCluster[] {
  const maxColors = Math.max(1, Math.floor(options.maxColors));
  const keys = [...histogram.keys()].filter((k) => histogram.get(k)! > 0).sort((a, b) => a - b);
  const weights = keys.map((k) => histogram.get(k)!);
  const points = keys.map((k) => rgbToOklab(unpack(k)));

  let clusters: Cluster[];
  if (keys.length <= maxColors) {
    clusters = keys.map((k, i) => ({ lab: [...points[i]!], count: weights[i]!, only: k }));
  } else {
    clusters = kmeans(keys, points, weights, maxColors, options);
  }
  clusters = mergeNear(clusters, options.mergeDistance ?? MERGE_DISTANCE);

  return clusters
    .map((c) => ({ rgb: c.only !== undefined ? unpack(c.only) : oklabToRgb(c.lab), count: c.count }))
    .sort((x, y) => y.count - x.count || pack(x.rgb) - pack(y.rgb));
}

function kmeans(
  keys: number[],
  points: Oklab[],
  weights: number[],
  k: number,
  options: QuantizeOptions,
): Cluster[] {
  const n = points.length;
  const random = mulberry32(options.seed ?? DEFAULT_SEED);
  const centers = seedCenters(points, weights, k, random);
  const assignment = new Int32Array(n).fill(-1);
  const maxIterations = options.maxIterations ?? MAX_ITERATIONS;

  for (let iteration = 0; iteration < maxIterations; iteration++) {
    let changed = 0;
    for (let i = 0; i < n; i++) {
      const nearest = nearestCenter(points[i]!, centers).index;
      if (nearest !== assignment[i]) {
        assignment[i] = nearest;
        changed++;
      }
    }
    if (changed === 0) break;
    updateCenters(points, weights, assignment, centers);
  }

  const clusters: Cluster[] = centers.map((lab) => ({ lab: [...lab], count: 0 }));
  const members: number[][] = centers.map(() => []);
  for (let i = 0; i < n; i++) {
    const c = assignment[i]!;
    clusters[c]!.count += weights[i]!;
    members[c]!.push(i);
  }
  return clusters.flatMap((cluster, c) => {
    const inCluster = members[c]!;
    if (inCluster.length === 0) return [];
    if (inCluster.length === 1) return [{ ...cluster, only: keys[inCluster[0]!]! }];
    return [{ ...cluster, lab: coreMean(inCluster, points, weights, cluster.lab) }];
  });
}

/**
 * The colour of a cluster: the weighted mean of its core, the half of its pixels nearest the
 * centroid. A plain mean is pulled off by the blends along edges (JPEG's chroma subsampling and
 * ringing put a thin border of in-between colours around every flat area), so a pure green field
 * would come out a muddier green; the core is the colour people see.
 */
function coreMean(
  members: number[],
  points: Oklab[],
  weights: number[],
  centroid: Oklab,
): [number, number, number] {
  const byDistance = members
    .map((i) => ({ i, d: oklabDistance(points[i]!, centroid) }))
    .sort((x, y) => x.d - y.d || x.i - y.i);
  const total = members.reduce((sum, i) => sum + weights[i]!, 0);
  const sum = [0, 0, 0];
  let taken = 0;
  for (const { i } of byDistance) {
    const w = weights[i]!;
    const p = points[i]!;
    sum[0]! += p[0] * w;
    sum[1]! += p[1] * w;
    sum[2]! += p[2] * w;
    taken += w;
    if (taken * 2 >= total) break;
  }
  return [sum[0]! / taken, sum[1]! / taken, sum[2]! / taken];
}

/** k-means++: the heaviest colour, then draws weighted by count × squared distance. */
function seedCenters(points: Oklab[], weights: number[], k: number, random: () => number): Oklab[] {
  let first = 0;
  for (let i = 1; i < points.length; i++) if (weights[i]! > weights[first]!) first = i;
  const centers: Oklab[] = [points[first]!];
  const d2 = points.map((p) => oklabDistance(p, points[first]!) ** 2);
  while (centers.length < k) {
    let total = 0;
    for (let i = 0; i < points.length; i++) total += weights[i]! * d2[i]!;
    if (total === 0) break; // every colour is already a centre
    let target = random() * total;
    let pick = -1;
    for (let i = 0; i < points.length; i++) {
      const w = weights[i]! * d2[i]!;
      if (w === 0) continue;
      pick = i;
      target -= w;
      if (target <= 0) break;
    }
    const center = points[pick]!;
    centers.push(center);
    for (let i = 0; i < points.length; i++) d2[i] = Math.min(d2[i]!, oklabDistance(points[i]!, center) ** 2);
  }
  return centers;
}

function nearestCenter(point: Oklab, centers: Oklab[]): { index: number; distance: number } {
  let index = 0;
  let distance = Infinity;
  for (let c = 0; c < centers.length; c++) {
    const d = oklabDistance(point, centers[c]!);
    if (d < distance) {
      distance = d;
      index = c;
    }
  }
  return { index, distance };
}

/**
 * Moves each centre to the weighted mean of its colours. A centre left without colours is moved to
 * the colour that is worst served (largest count × squared distance), so k stays k.
 */
function updateCenters(points: Oklab[], weights: number[], assignment: Int32Array, centers: Oklab[]): void {
  const sums = new Float64Array(centers.length * 4);
  for (let i = 0; i < points.length; i++) {
    const at = assignment[i]! * 4;
    const w = weights[i]!;
    const p = points[i]!;
    sums[at] = sums[at]! + p[0] * w;
    sums[at + 1] = sums[at + 1]! + p[1] * w;
    sums[at + 2] = sums[at + 2]! + p[2] * w;
    sums[at + 3] = sums[at + 3]! + w;
  }
  for (let c = 0; c < centers.length; c++) {
    const w = sums[c * 4 + 3]!;
    if (w > 0) {
      centers[c] = [sums[c * 4]! / w, sums[c * 4 + 1]! / w, sums[c * 4 + 2]! / w];
      continue;
    }
    let worst = 0;
    let worstCost = -1;
    for (let i = 0; i < points.length; i++) {
      const cost = weights[i]! * oklabDistance(points[i]!, centers[assignment[i]!]!) ** 2;
      if (cost > worstCost) {
        worstCost = cost;
        worst = i;
      }
    }
    centers[c] = points[worst]!;
  }
}

/** Merges the two nearest clusters while they are nearer than `distance`. */
function mergeNear(clusters: Cluster[], distance: number): Cluster[] {
  const result = [...clusters];
  for (;;) {
    let best: [number, number] | undefined;
    let bestDistance = distance;
    for (let i = 0; i < result.length; i++) {
      for (let j = i + 1; j < result.length; j++) {
        const d = oklabDistance(result[i]!.lab, result[j]!.lab);
        if (d < bestDistance) {
          bestDistance = d;
          best = [i, j];
        }
      }
    }
    if (!best) return result;
    const [a, b] = [result[best[0]]!, result[best[1]]!];
    const count = a.count + b.count;
    const merged: Cluster = {
      lab: [0, 1, 2].map((x) => (a.lab[x]! * a.count + b.lab[x]! * b.count) / count) as [
        number,
        number,
        number,
      ],
      count,
    };
    result.splice(best[1], 1);
    result[best[0]] = merged;
  }
}

/**
 * Rounds shares of `total` to percentages with two decimals that add up to exactly 100 (largest
 * remainder method), in the order given.
 */
export function percentages(counts: readonly number[], total: number): number[] {
  if (total <= 0) return counts.map(() => 0);
  const exact = counts.map((c) => (c * 10_000) / total);
  const floors = exact.map(Math.floor);
  let left = 10_000 - floors.reduce((sum, v) => sum + v, 0);
  const order = exact.map((v, i) => [v - floors[i]!, i] as const).sort((x, y) => y[0] - x[0] || x[1] - y[1]);
  for (const [, i] of order) {
    if (left <= 0) break;
    floors[i]!++;
    left--;
  }
  return floors.map((v) => v / 100);
}

export function pack(rgb: Rgb): number {
  return (rgb[0] << 16) | (rgb[1] << 8) | rgb[2];
}

export function unpack(key: number): Rgb {
  return [(key >> 16) & 0xff, (key >> 8) & 0xff, key & 0xff];
}

/** A small, fast, seedable PRNG (mulberry32): uniform in [0, 1). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
