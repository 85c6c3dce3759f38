#!/usr/bin/env node
// After tsc: core/typebox.js (a re-export of @sinclair/typebox and its value and compiler modules)
// is replaced by one bundle of the same exports, so that Node loads TypeBox as one file instead of
// some 250 ES modules (core/typebox.ts says why). Usage: bundle-typebox.mjs [outDir], default dist.
import { build } from "esbuild";

const outDir = process.argv[2] ?? "dist";
await build({
  entryPoints: ["core/typebox.ts"],
  outfile: `${outDir}/core/typebox.js`,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node24",
  sourcemap: true,
  logLevel: "warning",
});
