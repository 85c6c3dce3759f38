// The media_probe job through the API: POST /api/v1/jobs/media/probe records a job without a
// destination and refuses what the route does not take; run as `runner --job` runs it, its result
// is the media's facts and nothing is written to the store; a file that is not media fails with a
// message that says so; the OpenAPI document has the route and the result's shape.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { after, before, describe, test } from "node:test";
import { startTestStack, type TestStack } from "../support/api.js";
import { makeVideo, removeMediaDirs } from "../support/av.js";
import { putObject, runClaimed, submitAndClaim } from "../support/runner.js";

let stack: TestStack;

before(async () => {
  stack = await startTestStack({ apiKeys: ["probe-test-key"] });
});
after(async () => {
  await stack?.close();
  removeMediaDirs();
});

const PATH = "/api/v1/jobs/media/probe";

async function post(
  body: Record<string, unknown>,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await stack.request(PATH, { method: "POST", json: body });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe("POST /api/v1/jobs/media/probe", () => {
  test("records a media_probe job without a destination", async () => {
    const { status, json } = await post({ source_bucket: stack.bucket, source_key: "in/a.mp4" });
    assert.equal(status, 202, JSON.stringify(json));
    const job = (await (await stack.request(`/api/v1/jobs/${json.job_id as string}`)).json()) as Record<
      string,
      unknown
    >;
    assert.equal(job.type, "media_probe");
    assert.deepEqual(job.parameters, {});
    assert.equal(job.dest_bucket, undefined);
  });

  test("refuses a parameter it does not take, and a missing source, naming them", async () => {
    const unknown = await post({ source_bucket: stack.bucket, source_key: "in/a.mp4", format: "mp3" });
    assert.equal(unknown.status, 400);
    assert.match(String(unknown.json.error), /format/);
    const missing = await post({ source_bucket: stack.bucket });
    assert.equal(missing.status, 400);
    assert.match(String(missing.json.error), /source_key/);
  });

  test("runs: the video's facts as its result, and nothing written to the store", async () => {
    const video = await readFile(
      await makeVideo({ durationSeconds: 1, width: 160, height: 90, audio: true }),
    );
    await putObject(stack, "in/clip.mp4", video);
    const id = await submitAndClaim(stack, "media_probe", "media/probe", {
      source_bucket: stack.bucket,
      source_key: "in/clip.mp4",
    });
    const { outcome, job } = await runClaimed(stack, id);
    assert.equal(job.status, "completed", job.error);
    assert.equal(outcome.code, 0);
    const result = job.result as { container: string; size: number; streams: Array<Record<string, unknown>> };
    assert.match(result.container, /mp4/);
    assert.equal(result.size, video.length);
    assert.deepEqual(
      result.streams.map((s) => [s.kind, s.codec]),
      [
        ["video", "h264"],
        ["audio", "aac"],
      ],
    );
    assert.equal(result.streams[0]!.width, 160);
    const listed = await stack.services.s3.send(new ListObjectsV2Command({ Bucket: stack.bucket }));
    assert.deepEqual(
      (listed.Contents ?? []).map((o) => o.Key),
      ["in/clip.mp4"],
      "the job wrote nothing",
    );
  });

  test("a text file fails permanently, saying it is not media", async () => {
    await putObject(stack, "in/notes.mp4", Buffer.from("This is not a video.\n".repeat(40)));
    const id = await submitAndClaim(stack, "media_probe", "media/probe", {
      source_bucket: stack.bucket,
      source_key: "in/notes.mp4",
    });
    const { job } = await runClaimed(stack, id);
    assert.equal(job.status, "failed");
    assert.match(
      String(job.error),
      /^source is not decodable media: .*Invalid data found when processing input/,
    );
  });

  test("the OpenAPI document has the route and its result's shape", async () => {
    const doc = (await (await stack.request("/docs/json", { key: null })).json()) as {
      paths: Record<string, { post?: { summary?: string } }>;
      components: { schemas: Record<string, { description?: string; properties?: Record<string, unknown> }> };
    };
    assert.equal(doc.paths[PATH]?.post?.summary, "Read what a video or audio file holds");
    const shape = doc.components.schemas.ProbeResult;
    assert.equal(shape?.description, "media_probe");
    assert.deepEqual(Object.keys(shape?.properties ?? {}).sort(), [
      "bit_rate",
      "container",
      "duration",
      "size",
      "streams",
    ]);
  });
});
