// The project compiled to plain JavaScript for the runner benchmarks, as production runs it (dist/
// of `npm run build`), but into node_modules/.cache/media-service-bench/dist so the benchmarks
// never touch the real dist/, and with bench/ included (the workspace packages are built into their
// own dist/, as `npm run build` builds them). Under tsx a process carries tsx's loader
// thread and compiler (~45 MB more RSS, and a slower start), which production never pays.
import { execFile } from "node:child_process";
import { cp, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const COMPILED_DIR = join(ROOT, "node_modules", ".cache", "media-service-bench", "dist");

let compiled: Promise<string> | undefined;

/** Compiles once per benchmark run; resolves to the output directory (mirrors the repository). */
export function compileProject(): Promise<string> {
  compiled ??= (async () => {
    await rm(COMPILED_DIR, { recursive: true, force: true });
    const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
    // The workspace packages first, into their own dist/: the compiled code imports them by name, and
    // node resolves that name to their built output (as in production).
    await run(process.execPath, [tsc, "-b", join(ROOT, "packages", "s3-server", "tsconfig.build.json")], {
      cwd: ROOT,
      maxBuffer: 16 * 1024 * 1024,
    });
    const args = ["-p", join(ROOT, "tsconfig.json"), "--outDir", COMPILED_DIR, "--noEmit", "false"];
    args.push("--incremental", "false", "--sourceMap", "false");
    try {
      await run(process.execPath, [tsc, ...args], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
    } catch (err) {
      // Type errors (files being edited elsewhere) do not stop tsc from writing JavaScript.
      const out = (err as { stdout?: string }).stdout ?? "";
      if (!existsSync(join(COMPILED_DIR, "cli.js"))) throw new Error(`tsc failed:\n${out}`);
      console.error(`tsc reported errors (compiled anyway):\n${out.split("\n").slice(0, 5).join("\n")}`);
    }
    // As scripts/copy-assets.mjs and scripts/bundle-typebox.mjs do for dist/.
    await cp(join(ROOT, "core", "store", "lua"), join(COMPILED_DIR, "core", "store", "lua"), {
      recursive: true,
    });
    await run(process.execPath, [join(ROOT, "scripts", "bundle-typebox.mjs"), COMPILED_DIR], { cwd: ROOT });
    return COMPILED_DIR;
  })();
  return compiled;
}
