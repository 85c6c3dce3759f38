// The dashboard (ui/) is built by Vite into dist/ui, which the API serves at /ui (api/ui.ts).
// `npm run dev:ui` serves it with hot reload on http://localhost:5173/ui/ and forwards /api to an API
// on localhost:8080 (`npm run dev`), or to DASHBOARD_API.
import { defineConfig } from "vite";

export default defineConfig({
  root: "ui",
  base: "/ui/",
  publicDir: "public",
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
    sourcemap: false,
  },
  server: {
    proxy: { "/api": process.env.DASHBOARD_API ?? "http://localhost:8080" },
  },
});
