// The image_metadata job through the API: POST /api/v1/jobs/image/metadata records a job without a
// destination and refuses what the route does not take; run as `runner --job` runs it, its result
// is the image's facts and nothing is written to the store; the OpenAPI document has the route and
// the result's shape.
import assert from "node:assert/strict";
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { after, before, describe, test } from "node:test";
import sharp from "sharp";
import { startTestStack, type TestStack } from "../support/api.js";
import { putObject, runClaimed, submitAndClaim } from "../support/runner.js";

let stack: TestStack;

before(async () => {
  stack = await startTestStack({ apiKeys: ["metadata-test-key"] });
});
after(async () => {
  await stack?.close();
});

const PATH = "/api/v1/jobs/image/metadata";

async function post(
  body: Record<string, unknown>,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await stack.request(PATH, { method: "POST", json: body });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe("POST /api/v1/jobs/image/metadata", () => {
  test("records an image_metadata job without a destination", async () => {
    const { status, json } = await post({ source_bucket: stack.bucket, source_key: "in/a.jpg" });
    assert.equal(status, 202, JSON.stringify(json));
    assert.equal(json.status, "pending");
    const job = (await (await stack.request(`/api/v1/jobs/${json.job_id as string}`)).json()) as Record<
      string,
      unknown
    >;
    assert.equal(job.type, "image_metadata");
    assert.deepEqual(job.parameters, {});
    assert.equal(job.dest_bucket, undefined);
  });

  test("refuses a parameter it does not take, and a missing source, naming them", async () => {
    const unknown = await post({ source_bucket: stack.bucket, source_key: "in/a.jpg", color_count: 3 });
    assert.equal(unknown.status, 400);
    assert.match(String(unknown.json.error), /color_count/);
    const missing = await post({ source_bucket: stack.bucket });
    assert.equal(missing.status, 400);
    assert.match(String(missing.json.error), /source_key/);
  });

  test("runs: the image's facts as its result, and nothing written to the store", async () => {
    const photo = await sharp({ create: { width: 40, height: 30, channels: 3, background: "#336699" } })
      .withIccProfile("srgb")
      .withExif({ IFD0: { Make: "Testcam", Model: "T-1000" } })
      .jpeg()
      .toBuffer();
    await putObject(stack, "in/photo.jpg", photo);
    const id = await submitAndClaim(stack, "image_metadata", "image/metadata", {
      source_bucket: stack.bucket,
      source_key: "in/photo.jpg",
    });
    const { outcome, job } = await runClaimed(stack, id);
    assert.equal(job.status, "completed", job.error);
    assert.equal(outcome.code, 0);
    const result = job.result as Record<string, unknown>;
    assert.equal(result.width, 40);
    assert.equal(result.height, 30);
    assert.equal(result.format, "jpeg");
    assert.equal(result.size, photo.length);
    assert.equal(result.has_alpha, false);
    assert.deepEqual(result.exif, { make: "Testcam", model: "T-1000", gps: false });
    assert.match(String((result.icc_profile as { description?: string }).description), /sRGB/);
    const listed = await stack.services.s3.send(new ListObjectsV2Command({ Bucket: stack.bucket }));
    assert.deepEqual(
      (listed.Contents ?? []).map((o) => o.Key),
      ["in/photo.jpg"],
      "the job wrote nothing",
    );
  });

  test("the OpenAPI document has the route and its result's shape", async () => {
    const doc = (await (await stack.request("/docs/json", { key: null })).json()) as {
      paths: Record<string, { post?: { summary?: string } }>;
      components: { schemas: Record<string, { description?: string; properties?: Record<string, unknown> }> };
    };
    assert.equal(doc.paths["/api/v1/jobs/image/metadata"]?.post?.summary, "Read an image's metadata");
    const shape = doc.components.schemas.MetadataResult;
    assert.equal(shape?.description, "image_metadata");
    assert.deepEqual(
      Object.keys(shape?.properties ?? {}).sort(),
      [
        "color_space",
        "exif",
        "format",
        "has_alpha",
        "height",
        "icc_profile",
        "size",
        "width",
        "orientation",
      ].sort(),
    );
  });
});
