// The pipeline's promise on a camera-sized photo, through the whole stack (API, local executor,
// runner, the object store behind a proxy that counts its requests): ten outputs of one 24-megapixel
// JPEG (6000×4000) in one job — four widths as AVIF and as WebP, a watermark on the widest, and
// the dominant colours — from exactly one GET of the source. Every output is read back (size and
// format), the watermark is where it should be and nowhere else, and each step's result is in the
// job's record and in its webhook.
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { after, before, test } from "node:test";
import sharp from "sharp";
import { startTestStack, type TestStack } from "../support/api.js";
import { countingProxy, getsOf, type CountingProxy } from "../support/counting-proxy.js";
import { finished, submit } from "../support/jobs.js";
import { makeImage, meanDifference } from "../support/media.js";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.js";

const SOURCE = { width: 6000, height: 4000 };
const SOURCE_KEY = "in/camera.jpg";
/** The widths, each at the source's 3:2 (rounded), as AVIF and as WebP. */
const WIDTHS = [320, 640, 1280, 1920];
const heightOf = (width: number) => Math.round((width * SOURCE.height) / SOURCE.width);

let stack: TestStack;
let proxy: CountingProxy;
let hooks: WebhookReceiver;
let dir: string;

/** The 24 MP photo-like JPEG, made once per run into this test's temporary directory. */
async function cameraJpeg(): Promise<Buffer> {
  const path = join(dir, `camera-${SOURCE.width}x${SOURCE.height}.jpg`);
  const made = await stat(path).then(
    (s) => s.size > 0,
    () => false,
  );
  if (!made) await writeFile(path, await makeImage({ ...SOURCE, format: "jpeg", photo: true, quality: 90 }));
  return readFile(path);
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "pipeline-photo-"));
  proxy = await countingProxy();
  hooks = await startWebhookReceiver();
  stack = await startTestStack({
    executor: true,
    notifier: true,
    config: { storage: { endpoint: proxy.url }, webhooks: { allow_private: true } },
  });
  proxy.to(stack.s3.url);
  await stack.services.s3.send(
    new PutObjectCommand({
      Bucket: stack.bucket,
      Key: SOURCE_KEY,
      Body: await cameraJpeg(),
      ContentType: "image/jpeg",
    }),
  );
});

after(async () => {
  await stack?.close();
  await hooks?.close();
  proxy?.server.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function get(key: string): Promise<Buffer> {
  const res = await stack.services.s3.send(new GetObjectCommand({ Bucket: stack.bucket, Key: key }));
  return Buffer.from(await res.Body!.transformToByteArray());
}

type Steps = Record<string, Record<string, unknown>>;

test("a 24 MP JPEG: 4 widths × AVIF and WebP, a watermarked 1920 and its colours, in one job from one GET", async () => {
  const steps: Steps = {};
  for (const width of WIDTHS) {
    for (const format of ["avif", "webp"]) {
      // AVIF at its default effort: what a user gets without asking for more.
      steps[`w${width}_${format}`] = {
        type: "image_resize",
        parameters: { width, height: heightOf(width), format },
      };
    }
  }
  steps.marked = {
    type: "image_watermark",
    input: "w1920_webp",
    parameters: { watermark_text: "MARK", position: "bottom-right", font_size: 160 },
  };
  steps.colours = { type: "image_colors", parameters: { color_count: 5 } };
  assert.equal(Object.keys(steps).length, 10);

  const gets = getsOf(proxy, stack.bucket, SOURCE_KEY);
  const id = await submit(stack, "pipeline", {
    source_bucket: stack.bucket,
    source_key: SOURCE_KEY,
    dest_bucket: stack.bucket,
    dest_prefix: "out/camera",
    webhook_url: `${hooks.url}/camera`,
    steps,
  });
  const job = await finished(stack, id, 300_000);
  assert.equal(job.status, "completed", job.error);
  assert.equal(getsOf(proxy, stack.bucket, SOURCE_KEY) - gets, 1, "the source is fetched once");

  // Every output as asked: its size and format read back, its result in the record.
  const results = (job.result as { steps: Steps }).steps;
  assert.deepEqual(Object.keys(results).sort(), Object.keys(steps).sort());
  type Output = [name: string, key: string, width: number, height: number, format: string];
  const outputs: Output[] = WIDTHS.flatMap((width): Output[] => [
    [`w${width}_avif`, `out/camera/w${width}_avif.avif`, width, heightOf(width), "heif"],
    [`w${width}_webp`, `out/camera/w${width}_webp.webp`, width, heightOf(width), "webp"],
  ]);
  outputs.push(["marked", "out/camera/marked.webp", 1920, heightOf(1920), "webp"]);
  for (const [name, key, width, height, format] of outputs) {
    const bytes = await get(key);
    const meta = await sharp(bytes).metadata();
    assert.deepEqual([meta.width, meta.height, meta.format], [width, height, format], name);
    if (format === "heif") assert.equal(meta.compression, "av1", `${name} is AV1 in HEIF (AVIF)`);
    assert.equal(results[name]!.file_size, bytes.length, name);
    assert.match(String(results[name]!.output_url), new RegExp(`/${key.replace(/\./g, "\\.")}$`), name);
  }
  const colours = results.colours as { colors: string[]; percentages: number[]; output_url?: string };
  assert.equal(colours.colors.length, 5);
  for (const colour of colours.colors) assert.match(colour, /^#[0-9a-f]{6}$/i);
  assert.equal(colours.output_url, undefined, "the colours write no file");

  // The mark: the bottom-right corner differs from the plain 1920 it was put on; the top-left,
  // far from it, does not (beyond WebP's re-encoding).
  const [plain, marked] = await Promise.all([
    get("out/camera/w1920_webp.webp"),
    get("out/camera/marked.webp"),
  ]);
  const corner = await meanDifference(plain, marked, [1420, 1080, 470, 170]);
  const elsewhere = await meanDifference(plain, marked, [0, 0, 1200, 800]);
  assert.ok(corner > 10, `the mark is drawn (mean difference ${corner.toFixed(2)})`);
  assert.ok(elsewhere < 4, `the rest is the resize (mean difference ${elsewhere.toFixed(2)})`);

  // The webhook carries the same steps' results.
  const [hook] = (await hooks.waitFor(1)).filter((h) => h.path === "/camera");
  const body = hook!.json as { job: { id: string; status: string; result: { steps: Steps } } };
  assert.equal(body.job.id, id);
  assert.equal(body.job.status, "completed");
  assert.deepEqual(body.job.result.steps, results);
});
