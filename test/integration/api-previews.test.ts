// A job's objects through the API (GET /jobs/{id}/preview, GET /jobs/{id}/download) on the real
// stack: a 24 MP photo's preview is small and cached, the output's bytes come through whole or by
// range, and each job's objects are seen only by those who may see the job.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import sharp from "sharp";
import { startTestStack, type TestStack } from "../support/api.js";
import { finished } from "../support/jobs.js";
import { makeImage } from "../support/media.js";
import { closeStores, createStore } from "../support/store.js";

const ALICE = "alice-key-0123456789";
const BOB = "bob-key-0123456789";

let stack: TestStack;
let photo: Buffer;

async function put(key: string, body: Buffer, contentType: string): Promise<void> {
  await stack.services.s3.send(
    new PutObjectCommand({ Bucket: stack.bucket, Key: key, Body: body, ContentType: contentType }),
  );
}

before(async () => {
  stack = await startTestStack({
    executor: true,
    config: {
      server: {
        clients: [
          { name: "alice", keys: [ALICE] },
          { name: "bob", keys: [BOB] },
        ],
      },
    },
  });
  // 6000 × 4000: a phone's 24 MP photo.
  photo = await makeImage({ width: 6000, height: 4000, format: "jpeg", photo: true });
  await put("in/photo.jpg", photo, "image/jpeg");
  await put("in/junk.jpg", randomBytes(4096), "image/jpeg");
});
after(async () => {
  await closeStores();
  await stack?.close();
});

async function submit(key: string, path: string, body: Record<string, unknown>): Promise<string> {
  const res = await stack.request(`/api/v1/jobs/${path}`, { method: "POST", json: body, key });
  const json = (await res.json()) as { job_id: string; error?: string };
  assert.equal(res.status, 202, json.error);
  return json.job_id;
}

const where = (source: string, dest: string) => ({
  source_bucket: stack.bucket,
  source_key: source,
  dest_bucket: stack.bucket,
  dest_key: dest,
});

let resized: string | undefined;
/** Alice's completed resize of the 24 MP photo to 1200 px (made once). */
async function resizedJob(): Promise<string> {
  if (resized) return resized;
  const id = await submit(ALICE, "image/resize", {
    ...where("in/photo.jpg", "out/photo 1200.jpg"),
    width: 1200,
    height: 800,
    format: "jpeg",
  });
  const job = await finished(stack, id);
  assert.equal(job.status, "completed", job.error);
  return (resized = id);
}

async function errorOf(res: Response): Promise<string> {
  return ((await res.json()) as { error: string }).error;
}

describe("GET /jobs/{id}/preview", () => {
  test("a 24 MP JPEG source: a WebP of at most 640 px under 100 KB, cached in Redis and by ETag", async () => {
    const id = await resizedJob();
    const first = await stack.request(`/api/v1/jobs/${id}/preview?of=source`, { key: ALICE });
    assert.equal(first.status, 200, first.status === 200 ? "" : await errorOf(first));
    assert.equal(first.headers.get("content-type"), "image/webp");
    assert.equal(first.headers.get("x-preview-cache"), "miss");
    assert.match(first.headers.get("cache-control") ?? "", /^private, max-age=\d+$/);
    const bytes = Buffer.from(await first.arrayBuffer());
    assert.ok(bytes.length < 100_000, `the preview is ${bytes.length} bytes`);
    assert.ok(photo.length > 20 * bytes.length, `the source is ${photo.length} bytes`);
    const meta = await sharp(bytes).metadata();
    assert.equal(meta.format, "webp");
    assert.deepEqual([meta.width, meta.height], [640, 427]);

    const second = await stack.request(`/api/v1/jobs/${id}/preview?of=source`, { key: ALICE });
    assert.equal(second.status, 200);
    assert.equal(second.headers.get("x-preview-cache"), "hit");
    assert.equal(second.headers.get("etag"), first.headers.get("etag"));
    assert.deepEqual(Buffer.from(await second.arrayBuffer()), bytes);
    assert.deepEqual(await stack.services.store.cachedPreview(id, "source"), bytes);

    const revalidated = await stack.request(`/api/v1/jobs/${id}/preview?of=source`, {
      key: ALICE,
      headers: { "if-none-match": first.headers.get("etag")! },
    });
    assert.equal(revalidated.status, 304);
    assert.equal((await revalidated.arrayBuffer()).byteLength, 0);
  });

  test("the output of a completed job (the default), at its own size when it is smaller", async () => {
    const id = await resizedJob();
    const res = await stack.request(`/api/v1/jobs/${id}/preview`, { key: ALICE });
    assert.equal(res.status, 200, res.status === 200 ? "" : await errorOf(res));
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ["webp", 640, 427]);
  });

  test("another client's job is not found, and neither is its preview in any form", async () => {
    const id = await resizedJob();
    for (const path of [`preview?of=source`, `preview?of=output`, `download`, `download?of=source`]) {
      const res = await stack.request(`/api/v1/jobs/${id}/${path}`, { key: BOB });
      assert.equal(res.status, 404, path);
      assert.equal(await errorOf(res), `job ${id} not found`);
    }
    const none = await stack.request(`/api/v1/jobs/no-such-job/preview`, { key: ALICE });
    assert.equal(none.status, 404);
  });

  test("audio and video have no preview; a job that did not complete has no output yet", async () => {
    const audio = await submit(ALICE, "audio/convert", {
      ...where("in/missing.wav", "out/missing.mp3"),
      format: "mp3",
    });
    const res = await stack.request(`/api/v1/jobs/${audio}/preview?of=source`, { key: ALICE });
    assert.equal(res.status, 404);
    assert.equal(await errorOf(res), "the source of a audio_convert job is audio, which has no preview");
    const video = await submit(ALICE, "video/thumbnail", {
      ...where("in/missing.mp4", "out/missing.jpg"),
      timestamp: "00:00:01",
    });
    const videoSource = await stack.request(`/api/v1/jobs/${video}/preview?of=source`, { key: ALICE });
    assert.equal(videoSource.status, 404);
    assert.match(
      await errorOf(videoSource),
      /is a video, which has no preview; the output \(the frame\) has one/,
    );
    const job = await finished(stack, video);
    assert.equal(job.status, "failed");
    const output = await stack.request(`/api/v1/jobs/${video}/preview?of=output`, { key: ALICE });
    assert.equal(output.status, 409);
    assert.equal(await errorOf(output), `job ${video} is failed; its output exists once it has completed`);
  });

  test("a source that is no image is a 422 saying so; a missing one a 404 naming it", async () => {
    const junk = await submit(ALICE, "image/colors", {
      source_bucket: stack.bucket,
      source_key: "in/junk.jpg",
    });
    const res = await stack.request(`/api/v1/jobs/${junk}/preview?of=source`, { key: ALICE });
    assert.equal(res.status, 422);
    assert.match(
      await errorOf(res),
      new RegExp(`^source s3://${stack.bucket}/in/junk.jpg could not be decoded as an image: `),
    );
    const missing = await submit(ALICE, "image/colors", {
      source_bucket: stack.bucket,
      source_key: "in/nothing.jpg",
    });
    const gone = await stack.request(`/api/v1/jobs/${missing}/preview?of=source`, { key: ALICE });
    assert.equal(gone.status, 404);
    assert.equal(await errorOf(gone), `source s3://${stack.bucket}/in/nothing.jpg not found`);
  });

  test("an unknown `of` is a 400 naming the parameter", async () => {
    const id = await resizedJob();
    const res = await stack.request(`/api/v1/jobs/${id}/preview?of=thumbnail`, { key: ALICE });
    assert.equal(res.status, 400);
    assert.match(await errorOf(res), /of/);
  });
});

describe("the preview cache in Redis", () => {
  test("keeps at most its number of previews, deleting the oldest", async () => {
    // A store of its own (key prefix), so that the previews of the other tests are not counted.
    const store = createStore(stack.redis.url);
    const bytes = (n: number) => Buffer.from([n, 0, 255, n]);
    assert.equal(await store.cachePreview("c1", "source", bytes(1), 60_000, 2), 0);
    assert.equal(await store.cachePreview("c2", "output", bytes(2), 60_000, 2), 0);
    assert.equal(await store.cachePreview("c:3", "source", bytes(3), 60_000, 2), 1);
    assert.equal(await store.cachedPreview("c1", "source"), null);
    assert.deepEqual(await store.cachedPreview("c2", "output"), bytes(2));
    assert.deepEqual(await store.cachedPreview("c:3", "source"), bytes(3));
    assert.equal(await store.cachePreview("c:4", "output", bytes(4), 60_000, 2), 1);
    assert.equal(await store.cachedPreview("c2", "output"), null);
  });
});

describe("GET /jobs/{id}/download", () => {
  test("streams the output as the store has it, with its type, length and file name", async () => {
    const id = await resizedJob();
    const res = await stack.request(`/api/v1/jobs/${id}/download`, { key: ALICE });
    assert.equal(res.status, 200, res.status === 200 ? "" : await errorOf(res));
    const body = Buffer.from(await res.arrayBuffer());
    const stored = await stack.services.s3.send(
      new GetObjectCommand({ Bucket: stack.bucket, Key: "out/photo 1200.jpg" }),
    );
    const object = Buffer.from(await stored.Body!.transformToByteArray());
    assert.deepEqual(body, object);
    assert.equal(res.headers.get("content-type"), "image/jpeg");
    assert.equal(res.headers.get("content-length"), String(object.length));
    assert.equal(
      res.headers.get("content-disposition"),
      `attachment; filename="photo 1200.jpg"; filename*=UTF-8''photo%201200.jpg`,
    );
    assert.equal(res.headers.get("accept-ranges"), "bytes");
  });

  test("the source, and one byte range of it", async () => {
    const id = await resizedJob();
    const whole = await stack.request(`/api/v1/jobs/${id}/download?of=source`, { key: ALICE });
    assert.equal(whole.status, 200);
    assert.deepEqual(Buffer.from(await whole.arrayBuffer()), photo);
    const part = await stack.request(`/api/v1/jobs/${id}/download?of=source`, {
      key: ALICE,
      headers: { range: "bytes=100-1099" },
    });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get("content-range"), `bytes 100-1099/${photo.length}`);
    assert.deepEqual(Buffer.from(await part.arrayBuffer()), photo.subarray(100, 1100));
    const beyond = await stack.request(`/api/v1/jobs/${id}/download?of=source`, {
      key: ALICE,
      headers: { range: `bytes=${photo.length + 10}-` },
    });
    assert.equal(beyond.status, 416);
    assert.equal(
      await errorOf(beyond),
      `the Range asked for lies outside source s3://${stack.bucket}/in/photo.jpg`,
    );
  });

  test("no output before completion (409) nor for a type that writes none (404)", async () => {
    const colors = await submit(ALICE, "image/colors", {
      source_bucket: stack.bucket,
      source_key: "in/photo.jpg",
    });
    const res = await stack.request(`/api/v1/jobs/${colors}/download`, { key: ALICE });
    assert.equal(res.status, 404);
    assert.equal(await errorOf(res), `job ${colors} is image_colors, which writes no output file`);
    const failing = await submit(ALICE, "image/resize", {
      ...where("in/nothing.jpg", "out/nothing.jpg"),
      width: 10,
      height: 10,
    });
    await finished(stack, failing);
    const early = await stack.request(`/api/v1/jobs/${failing}/download`, { key: ALICE });
    assert.equal(early.status, 409);
    const source = await stack.request(`/api/v1/jobs/${failing}/download?of=source`, { key: ALICE });
    assert.equal(source.status, 404);
    assert.equal(await errorOf(source), `source s3://${stack.bucket}/in/nothing.jpg not found`);
  });
});

test("the OpenAPI document describes both routes: the `of` parameter, the image and the file", async () => {
  const res = await stack.request("/docs/json", { key: null });
  assert.equal(res.status, 200);
  type Operation = {
    parameters: Array<{ name: string; in: string; schema: Record<string, unknown> }>;
    responses: Record<string, { content?: Record<string, unknown> }>;
  };
  const paths = ((await res.json()) as { paths: Record<string, { get?: Operation }> }).paths;
  const preview = paths["/api/v1/jobs/{id}/preview"]?.get;
  const download = paths["/api/v1/jobs/{id}/download"]?.get;
  assert.ok(preview && download, `documented paths: ${Object.keys(paths).join(", ")}`);
  for (const operation of [preview, download]) {
    const of = operation.parameters.find((p) => p.name === "of" && p.in === "query");
    assert.equal(of?.schema.default, "output");
  }
  assert.ok(preview.responses["200"]?.content?.["image/webp"]);
  assert.ok(preview.responses["503"] && preview.responses["422"] && preview.responses["304"]);
  assert.ok(download.responses["200"]?.content?.["application/octet-stream"]);
  assert.ok(download.responses["206"] && download.responses["416"]);
});

describe("GET /stats/history with a step (the overview's 6 h and 24 h charts)", () => {
  type Points = {
    interval_seconds: number;
    points: Array<{ at: string; completed: number; failed: number }>;
  };
  test("a day in stretches of 20 minutes aligned on them, the jobs ended counted in them", async () => {
    const minutes = await (await stack.request("/api/v1/stats/history?minutes=1440", { key: ALICE })).json();
    const res = await stack.request("/api/v1/stats/history?minutes=1440&step=20", { key: ALICE });
    assert.equal(res.status, 200);
    const day = (await res.json()) as Points;
    assert.equal(day.interval_seconds, 1200);
    assert.ok(day.points.length === 72 || day.points.length === 73, `${day.points.length} points`);
    for (const point of day.points.slice(1)) assert.equal(new Date(point.at).getTime() % 1_200_000, 0);
    const sum = (h: Points, field: "completed" | "failed") => h.points.reduce((n, p) => n + p[field], 0);
    // Read twice: a job that ended between the two reads is in the second only.
    const perMinute = minutes as Points;
    assert.ok(sum(day, "completed") >= sum(perMinute, "completed"));
    assert.ok(sum(day, "completed") + sum(day, "failed") > 0, "the jobs of the tests above are counted");
  });

  test("a step beyond an hour is a 400 naming it", async () => {
    const res = await stack.request("/api/v1/stats/history?minutes=60&step=61", { key: ALICE });
    assert.equal(res.status, 400);
    assert.match(await errorOf(res), /step/);
  });
});
