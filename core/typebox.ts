// TypeBox as this project uses it, in one module: every file of api/, controller/, runner/, core/,
// local/ and client/ imports it from here (a lint rule says so). Run from source, this re-exports
// the package. `npm run build` replaces its compiled file with one bundle of the same exports
// (scripts/bundle-typebox.mjs): Node loads the package as some 250 ES modules, which cost every
// process (API, controller, each runner) ~45 ms of its start and up to ~10 MiB of memory, and one
// file costs neither (docs/performance.md, "Lazy and bundled imports").
export * from "@sinclair/typebox";
export { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
export { Value } from "@sinclair/typebox/value";
