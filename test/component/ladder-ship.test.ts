// The ladder's shipper on a real directory: files that appear under the segments' name (renamed
// there whole, as ffmpeg's dash muxer does) are shipped and then removed while the writer goes on;
// files still being written (`.tmp`) and other names are left; stop() waits for the uploads under
// way and ships nothing after; the first failure is told once and ends the shipping.
import assert from "node:assert/strict";
import { mkdtemp, readdir, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";
import { shipAsWritten } from "../../jobs/video_adaptive/ship.js";

const SEGMENT = /^chunk-.*\.m4s$/;
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "media-service-ship-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes a file as the muxer does: under `<name>.tmp`, then renamed to its name. */
async function writeWhole(name: string, bytes = "segment") {
  await writeFile(join(dir, `${name}.tmp`), bytes);
  await rename(join(dir, `${name}.tmp`), join(dir, name));
}

/** Waits (bounded) until `check` holds. */
async function until(what: string, check: () => boolean | Promise<boolean>) {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `waited for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("shipAsWritten", () => {
  test("ships each whole segment as it appears, then removes it; leaves .tmp and other files", async () => {
    const shipped: string[] = [];
    const shipper = shipAsWritten({
      dir,
      pattern: SEGMENT,
      ship: async (name) => {
        shipped.push(name);
      },
      concurrency: 2,
      intervalMs: 20,
      onError: (err) => assert.fail(String(err)),
    });
    await writeWhole("chunk-0-00001.m4s");
    await writeWhole("init-0.m4s");
    await writeFile(join(dir, "chunk-0-00002.m4s.tmp"), "half a segment");
    await until("the first segment shipped", () => shipped.includes("chunk-0-00001.m4s"));
    await until("its file removed", async () => !(await readdir(dir)).includes("chunk-0-00001.m4s"));

    // The writer goes on: the next segment completes and is shipped in its turn.
    await rename(join(dir, "chunk-0-00002.m4s.tmp"), join(dir, "chunk-0-00002.m4s"));
    await until("the second segment shipped", () => shipped.includes("chunk-0-00002.m4s"));
    await shipper.stop();

    assert.deepEqual(shipped, ["chunk-0-00001.m4s", "chunk-0-00002.m4s"]);
    assert.deepEqual(shipper.taken, shipped);
    assert.deepEqual(await readdir(dir), ["init-0.m4s"], "the init segment is the caller's");
  });

  test("stop() waits for the uploads under way, and nothing appearing after it is shipped", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const started: string[] = [];
    const finished: string[] = [];
    const shipper = shipAsWritten({
      dir,
      pattern: SEGMENT,
      ship: async (name) => {
        started.push(name);
        await held;
        finished.push(name);
      },
      concurrency: 1,
      intervalMs: 20,
      onError: (err) => assert.fail(String(err)),
    });
    await writeWhole("chunk-0-00001.m4s");
    await until("the upload started", () => started.length === 1);
    let stopped = false;
    const stopping = shipper.stop().then(() => (stopped = true));
    await writeWhole("chunk-0-00002.m4s");
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(stopped, false, "stop() waits for the upload under way");
    release();
    await stopping;
    assert.deepEqual(finished, ["chunk-0-00001.m4s"]);
    assert.deepEqual(started, ["chunk-0-00001.m4s"], "nothing shipped after stop()");
    assert.deepEqual(await readdir(dir), ["chunk-0-00002.m4s"], "left for the caller");
  });

  test("the first failure is told once, and nothing more is shipped", async () => {
    const errors: unknown[] = [];
    const tried: string[] = [];
    const shipper = shipAsWritten({
      dir,
      pattern: SEGMENT,
      ship: async (name) => {
        tried.push(name);
        throw new Error(`upload of ${name} refused`);
      },
      concurrency: 1,
      intervalMs: 20,
      onError: (err) => errors.push(err),
    });
    await writeWhole("chunk-0-00001.m4s");
    await until("the failure told", () => errors.length === 1);
    await writeWhole("chunk-0-00002.m4s");
    await new Promise((r) => setTimeout(r, 100));
    await shipper.stop();
    assert.deepEqual(tried, ["chunk-0-00001.m4s"]);
    assert.match(String(errors[0]), /upload of chunk-0-00001\.m4s refused/);
    assert.deepEqual(
      (await readdir(dir)).sort(),
      ["chunk-0-00001.m4s", "chunk-0-00002.m4s"],
      "a file not shipped stays",
    );
  });
});
