// The files a pipeline's steps wrote, through the API (GET /jobs/{id}/preview and /download with
// `step`), on the whole local stack with real runners: a step's preview and its bytes, at its
// prefix's key or its own dest_key, also of a pipeline that failed with keep_partial; and each
// refusal naming what is wrong (a job that is no pipeline, the source asked of a step, no such step,
// a step that writes no file, a step that failed).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import sharp from "sharp";
import { startTestStack, type TestStack } from "../support/api.js";
import { finished, objectBytes, putObject, submit } from "../support/jobs.js";
import { makeImage } from "../support/media.js";

let stack: TestStack;
let completed: string;
let partial: string;
let single: string;

async function get(
  path: string,
): Promise<{ status: number; body: Buffer; type: string | null; headers: Headers }> {
  const res = await stack.request(`/api/v1/jobs/${path}`);
  return {
    status: res.status,
    body: Buffer.from(await res.arrayBuffer()),
    type: res.headers.get("content-type"),
    headers: res.headers,
  };
}

/** The error an answer gives, with its status. */
async function refusal(path: string): Promise<[number, string]> {
  const answer = await get(path);
  return [answer.status, (JSON.parse(answer.body.toString()) as { error: string }).error];
}

before(async () => {
  stack = await startTestStack({ executor: true });
  const photo = await makeImage({ width: 320, height: 240, format: "jpeg", photo: true });
  await putObject(stack, "in/photo.jpg", photo, "image/jpeg");
  const where = { source_bucket: stack.bucket, source_key: "in/photo.jpg", dest_bucket: stack.bucket };
  completed = await submit(stack, "pipeline", {
    ...where,
    dest_prefix: "out/steps",
    steps: {
      small: { type: "image_resize", parameters: { width: 160, height: 120 } },
      tiny: {
        type: "image_resize",
        input: "small",
        parameters: { width: 40, height: 30, format: "webp" },
        dest_key: "out/own key/tiny.webp",
      },
      colours: { type: "image_colors" },
    },
  });
  partial = await submit(stack, "pipeline", {
    ...where,
    dest_prefix: "out/partial",
    keep_partial: true,
    steps: {
      small: { type: "image_resize", parameters: { width: 160, height: 120 } },
      marked: { type: "image_watermark", input: "small", parameters: { watermark_image: "in/no-mark.png" } },
    },
  });
  single = await submit(stack, "image/resize", {
    ...where,
    dest_key: "out/single.jpg",
    width: 80,
    height: 60,
  });
  assert.equal((await finished(stack, completed, 120_000)).status, "completed");
  assert.equal((await finished(stack, partial, 120_000)).status, "failed");
  assert.equal((await finished(stack, single, 120_000)).status, "completed");
});

after(async () => {
  await stack?.close();
});

describe("a pipeline's step's file through the API", () => {
  test("download: the bytes the step wrote, at its prefix's key or its own dest_key, named after it", async () => {
    const small = await get(`${completed}/download?step=small`);
    assert.equal(small.status, 200);
    assert.deepEqual(small.body, await objectBytes(stack, "out/steps/small.jpg"));
    assert.match(small.headers.get("content-disposition") ?? "", /filename="small\.jpg"/);
    const tiny = await get(`${completed}/download?of=output&step=tiny`);
    assert.equal(tiny.status, 200);
    assert.deepEqual(tiny.body, await objectBytes(stack, "out/own key/tiny.webp"));
  });

  test("preview: a WebP of the step's image, cached apart from the job's other previews", async () => {
    for (const [step, width] of [
      ["small", 160],
      ["tiny", 40],
    ] as const) {
      const preview = await get(`${completed}/preview?step=${step}`);
      assert.equal(preview.status, 200, preview.body.toString());
      assert.equal(preview.type, "image/webp");
      const meta = await sharp(preview.body).metadata();
      assert.deepEqual([meta.format, meta.width], ["webp", width], step);
    }
    const again = await get(`${completed}/preview?step=small`);
    assert.equal(again.headers.get("x-preview-cache"), "hit");
    assert.equal((await sharp(again.body).metadata()).width, 160, "its own, not another step's");
  });

  test("a pipeline failed with keep_partial: its completed step's file; the failed step's error", async () => {
    const small = await get(`${partial}/download?step=small`);
    assert.equal(small.status, 200);
    assert.deepEqual(small.body, await objectBytes(stack, "out/partial/small.jpg"));
    const [status, error] = await refusal(`${partial}/preview?step=marked`);
    assert.equal(status, 409);
    assert.match(
      error,
      new RegExp(`^step marked of job ${partial} has no output: .*in/no-mark\\.png not found$`),
    );
  });

  test("refusals name what is wrong", async () => {
    assert.deepEqual(await refusal(`${single}/preview?step=small`), [
      404,
      `step: job ${single} is image_resize; only a pipeline has steps`,
    ]);
    assert.deepEqual(await refusal(`${completed}/download?of=source&step=small`), [
      404,
      "step: a step's output is asked for with of=output (its steps share the job's source)",
    ]);
    assert.deepEqual(await refusal(`${completed}/preview?step=nope`), [
      404,
      `job ${completed} has no step nope`,
    ]);
    assert.deepEqual(await refusal(`${completed}/download?step=colours`), [
      404,
      `step colours of job ${completed} is image_colors, which writes no output file`,
    ]);
    const [status, error] = await refusal(`${completed}/preview?step=Not%20a%20name`);
    assert.equal(status, 400);
    assert.match(error, /step/);
  });
});
