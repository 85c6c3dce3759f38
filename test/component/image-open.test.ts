// Opening images the safe way (runner/image/open.ts) when several decode at once in one process:
// libvips' one error buffer is shared by every thread, so a failure's message can be cleared by
// another's; a corrupt image must still be blamed, every time, and a sound one still decode.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { PermanentError } from "../../runner/errors.js";
import { openImage } from "../../runner/image/open.js";
import { makeImage, truncated } from "../support/media.js";

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "image-open-"));
});
after(() => rm(dir, { recursive: true, force: true }));

describe("decodes failing at the same time", () => {
  test("a truncated JPEG decoded by four pipelines at once is blamed on the image by each, every round", async () => {
    const cut = join(dir, "cut.jpg");
    await writeFile(
      cut,
      truncated(await makeImage({ width: 320, height: 240, format: "jpeg", photo: true })),
    );
    const sound = join(dir, "sound.jpg");
    await writeFile(sound, await makeImage({ width: 320, height: 240, format: "jpeg", photo: true }));
    const failures = new Map<string, number>();
    for (let round = 0; round < 40; round++) {
      await Promise.all(
        [32, 64, 96, 128].map(async (width, i) => {
          const image = await openImage(cut, { maxInputPixels: 100_000_000 });
          const out = join(dir, `out-${i}.jpg`);
          const err = await image
            .run(() =>
              image
                .pipeline()
                .resize(width, (width * 3) / 4)
                .jpeg()
                .toFile(out),
            )
            .then(
              () => undefined,
              (e: unknown) => e,
            );
          assert.ok(err instanceof PermanentError, `round ${round}: ${String(err)}`);
          const reason = err.message.replace(/^source image is truncated or corrupt: /, "");
          assert.notEqual(reason, err.message, `round ${round}: ${err.message}`);
          failures.set(reason, (failures.get(reason) ?? 0) + 1);
        }),
      );
      const good = await openImage(sound, { maxInputPixels: 100_000_000 });
      const info = await good.run(() =>
        good.pipeline().resize(32, 24).raw().toBuffer({ resolveWithObject: true }),
      );
      assert.equal(info.info.width, 32);
    }
    console.log("reasons given:", Object.fromEntries(failures));
    assert.equal(
      [...failures.values()].reduce((a, b) => a + b),
      160,
    );
  });
});
