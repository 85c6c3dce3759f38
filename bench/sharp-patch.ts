// Tuning experiments without editing the runner: settings applied to sharp in a process before
// the runner's own code uses it, described by the BENCH_SHARP environment variable (JSON), so they
// reach runner processes the executor starts (they inherit the environment; bench/runner-preload.ts
// applies them there). Only benchmarks use this.
//
//   concurrency      sharp.concurrency(n), applied after the runner's own settings module has run
//   cache            false → sharp.cache(false), true → libvips' defaults
//   plainJpeg        JPEG output without mozjpeg's trellis quantisation, optimised scans and
//                    progressive mode (libjpeg-turbo's defaults), whatever the pipeline asked for
//   sequentialRead   forces the input option on every pipeline
//   fastShrinkOnLoad forces the resize option on every pipeline
import sharp from "sharp";

export interface SharpPatch {
  concurrency?: number;
  cache?: boolean;
  plainJpeg?: boolean;
  sequentialRead?: boolean;
  fastShrinkOnLoad?: boolean;
}

export const SHARP_PATCH_ENV = "BENCH_SHARP";

export function patchFromEnv(env: NodeJS.ProcessEnv = process.env): SharpPatch | undefined {
  const raw = env[SHARP_PATCH_ENV];
  return raw ? (JSON.parse(raw) as SharpPatch) : undefined;
}

type Options = Record<string, unknown> & { input?: Record<string, unknown> };
type Pipeline = (this: { options: Options }, ...args: unknown[]) => unknown;

let applied = false;

/** Applies the patch to this process's sharp (the ESM instance the runner imports). Idempotent. */
export function applySharpPatch(patch: SharpPatch): void {
  if (applied) return;
  applied = true;
  // The runner's settings module sets both when it is first imported, which comes later: the
  // patched values have the last word.
  if (patch.cache !== undefined) {
    const original = sharp.cache.bind(sharp);
    const setting = patch.cache ? { memory: 50, files: 20, items: 100 } : false;
    original(setting);
    (sharp as unknown as { cache: (o?: unknown) => unknown }).cache = (o?: unknown) =>
      o === undefined ? original() : original(setting);
  }
  if (patch.concurrency !== undefined) {
    const original = sharp.concurrency.bind(sharp);
    const n = patch.concurrency;
    original(n);
    (sharp as unknown as { concurrency: (c?: number) => number }).concurrency = (c?: number) =>
      c === undefined ? original() : original(n);
  }
  const rewrites: Array<(o: Options) => void> = [];
  if (patch.plainJpeg) {
    rewrites.push((o) => {
      o.jpegTrellisQuantisation = false;
      o.jpegOvershootDeringing = false;
      o.jpegOptimiseScans = false;
      o.jpegProgressive = false;
      o.jpegQuantisationTable = 0;
    });
  }
  if (patch.sequentialRead !== undefined) {
    const value = patch.sequentialRead;
    rewrites.push((o) => {
      if (o.input) o.input.sequentialRead = value;
    });
  }
  if (patch.fastShrinkOnLoad !== undefined) {
    const value = patch.fastShrinkOnLoad;
    rewrites.push((o) => {
      o.fastShrinkOnLoad = value;
    });
  }
  if (rewrites.length > 0) {
    const proto = sharp.prototype as unknown as { _pipeline: Pipeline };
    const pipeline = proto._pipeline;
    proto._pipeline = function (this: { options: Options }, ...args: unknown[]) {
      for (const rewrite of rewrites) rewrite(this.options);
      return pipeline.apply(this, args);
    };
  }
}
