// The dashboard (ui/) is built by Vite into dist/ui, which the API serves at /ui (api/ui.ts).
// `npm run dev:ui` serves it with hot reload on http://localhost:5173/ui/ and forwards /api to an API
// on localhost:8080 (`npm run dev`), or to DASHBOARD_API.
import { defineConfig, type Plugin } from "vite";
import { JOB_MEDIA, JOB_TYPES } from "./core/jobs/types.js";

/**
 * `virtual:job-types`: the job types' names and media, read from the registry (jobs/registry.ts)
 * when the dashboard is built, so the bundle has the lists without the schemas (and TypeBox) the
 * registry's definitions hold. Each type's result view is found by its folder (ui/src/result-views.ts).
 */
function jobTypes(): Plugin {
  const id = "virtual:job-types";
  return {
    name: "media-service-job-types",
    resolveId: (source) => (source === id ? `\0${id}` : undefined),
    load: (module) =>
      module === `\0${id}`
        ? `export const JOB_TYPES = ${JSON.stringify(JOB_TYPES)};\nexport const JOB_MEDIA = ${JSON.stringify(JOB_MEDIA)};\n`
        : undefined,
  };
}

export default defineConfig({
  root: "ui",
  base: "/ui/",
  publicDir: "public",
  plugins: [jobTypes()],
  // Preact's automatic JSX runtime (no framework plugin needed).
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "../dist/ui",
    emptyOutDir: true,
    target: "es2022",
    // Every browser that runs the dashboard supports module preloading: no polyfill in the bundle.
    modulePreload: { polyfill: false },
    // Nothing is inlined as a data: URL: the Content-Security-Policy allows images from 'self' only.
    assetsInlineLimit: 0,
    reportCompressedSize: true,
    // hls.js (about 580 kB, 180 kB gzipped) is its own chunk, loaded only by a video_adaptive job's
    // page: the main bundle stays small, and the size warning is for that chunk alone.
    chunkSizeWarningLimit: 640,
    sourcemap: false,
  },
  server: {
    proxy: { "/api": process.env.DASHBOARD_API ?? "http://localhost:8080" },
  },
});
