// Where test/support/versitygw.ts finds the versitygw build, and what it says when there is none.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { versitygwBinary } from "../support/versitygw.js";

test("the binary is looked for in scripts/provision.sh's cache; missing, the error names the command", () => {
  const cache = mkdtempSync(join(tmpdir(), "media-service-vgw-cache-"));
  const saved = process.env.XDG_CACHE_HOME;
  after(() => {
    if (saved === undefined) delete process.env.XDG_CACHE_HOME;
    else process.env.XDG_CACHE_HOME = saved;
    rmSync(cache, { recursive: true, force: true });
  });
  process.env.XDG_CACHE_HOME = cache;
  const binary = join(cache, "media-service/versitygw-1.8.0/versitygw");
  assert.throws(
    () => versitygwBinary(),
    (err: Error) =>
      err.message ===
      `versitygw 1.8.0 is not built (no executable ${binary}); build it once with: bash scripts/provision.sh versitygw`,
  );
  mkdirSync(join(cache, "media-service/versitygw-1.8.0"), { recursive: true });
  writeFileSync(binary, "#!/bin/sh\n", { mode: 0o755 });
  assert.equal(versitygwBinary(), binary);
});
