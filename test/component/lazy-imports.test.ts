// What a process loads to start: TypeBox as one bundled file once built (scripts/bundle-typebox.mjs
// replaces core/typebox.js with a bundle of the same exports), YAML's parser only when a
// configuration file is read (a runner's configuration comes from its environment), and sharp in the
// API only when it makes its first preview.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import * as source from "../../core/typebox.js";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../..", import.meta.url));

let work: string;

before(async () => {
  work = await mkdtemp(join(tmpdir(), "media-service-lazy-imports-"));
});

after(async () => {
  await rm(work, { recursive: true, force: true });
});

describe("the TypeBox bundle", () => {
  test("exports what core/typebox.ts exports, imports nothing, and validates as the package does", async () => {
    await run(process.execPath, [join(ROOT, "scripts", "bundle-typebox.mjs"), work], { cwd: ROOT });
    const file = join(work, "core", "typebox.js");
    const text = await readFile(file, "utf8");
    assert.doesNotMatch(text, /^\s*import\s|from\s+["']@sinclair/m, "the bundle imports another module");
    const bundled = (await import(pathToFileURL(file).href)) as typeof source;
    assert.deepEqual(Object.keys(bundled).sort(), Object.keys(source).sort());

    const schema = bundled.Type.Object({
      width: bundled.Type.Integer({ minimum: 1, default: 320 }),
      fit: bundled.Type.Union([bundled.Type.Literal("cover"), bundled.Type.Literal("inside")]),
    });
    assert.deepEqual(bundled.Value.Default(schema, { fit: "cover" }), { width: 320, fit: "cover" });
    const check = bundled.TypeCompiler.Compile(schema);
    assert.equal(check.Check({ width: 10, fit: "inside" }), true);
    assert.equal(check.Check({ width: 0, fit: "inside" }), false);
    // A schema from the bundle is one to the package's functions too (run from source, both meet).
    assert.equal(source.Value.Check(schema, { width: 0, fit: "cover" }), false);
  });
});

describe("YAML's parser", () => {
  /**
   * Loads the configuration in a process of its own: whether that process loaded the yaml package,
   * and the local_concurrency it read.
   */
  async function load(file?: string): Promise<{ yaml: boolean; concurrency: number }> {
    const script = [
      `import { createRequire } from "node:module";`,
      `import { loadConfig } from ${JSON.stringify(pathToFileURL(join(ROOT, "core/config/load.ts")).href)};`,
      `const config = loadConfig({ env: {}${file ? `, file: ${JSON.stringify(file)}` : ""} });`,
      `const cache = createRequire(import.meta.url).cache;`,
      `const yaml = Object.keys(cache).some((k) => k.includes("/node_modules/yaml/"));`,
      `console.log(JSON.stringify({ yaml, concurrency: config.executor.localConcurrency }));`,
    ].join("\n");
    const path = join(work, `load-${file ? "file" : "env"}.mts`);
    await writeFile(path, script);
    const { stdout } = await run(process.execPath, ["--import", "tsx", path], { cwd: ROOT });
    return JSON.parse(stdout.trim()) as { yaml: boolean; concurrency: number };
  }

  test("is not loaded for a configuration from the environment alone", async () => {
    assert.equal((await load()).yaml, false);
  });

  test("is loaded to read a configuration file, and reads it", async () => {
    const file = join(work, "config.yaml");
    await writeFile(file, "executor:\n  local_concurrency: 3\n");
    assert.deepEqual(await load(file), { yaml: true, concurrency: 3 });
  });
});

describe("sharp in the API", () => {
  /**
   * Whether a process that imports the API (and then runs `then`) has loaded sharp's native binding
   * (a CommonJS module, where sharp's own modules are ECMAScript ones).
   */
  async function loadsSharp(then = ""): Promise<boolean> {
    const script = [
      `import { createRequire } from "node:module";`,
      `await import(${JSON.stringify(pathToFileURL(join(ROOT, "api/server.ts")).href)});`,
      `const previews = await import(${JSON.stringify(pathToFileURL(join(ROOT, "api/previews.ts")).href)});`,
      then,
      `const cache = createRequire(import.meta.url).cache;`,
      `console.log(JSON.stringify(Object.keys(cache).some((k) => k.includes("/node_modules/@img/sharp-"))));`,
    ].join("\n");
    const path = join(work, `sharp-${then ? "preview" : "start"}.mts`);
    await writeFile(path, script);
    const { stdout } = await run(process.execPath, ["--import", "tsx", path], { cwd: ROOT });
    return JSON.parse(stdout.trim()) as boolean;
  }

  test("is not loaded while the API starts", async () => {
    assert.equal(await loadsSharp(), false);
  });

  test("is loaded to make a preview", async () => {
    const attempt = `await previews.renderPreview(Buffer.from("no image"), 100, "x").catch(() => {});`;
    assert.equal(await loadsSharp(attempt), true);
  });
});
