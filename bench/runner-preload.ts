// Loaded into runner processes with `--import` (NODE_OPTIONS) by the benchmarks: applies the sharp
// settings of BENCH_SHARP (bench/sharp-patch.ts) before the runner's code runs.
import { applySharpPatch, patchFromEnv } from "./sharp-patch.js";

const patch = patchFromEnv();
if (patch) applySharpPatch(patch);
