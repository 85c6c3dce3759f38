// Submitting video_adaptive through the API: its destination is a bucket and a prefix (recorded as
// the key of its entry object: the master playlist, or the MPD of a DASH-only ladder), and what its
// schema cannot say (distinct heights) is refused with a 400 like the rest, on its route and in a batch.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startTestStack, type TestStack } from "../support/api.js";

let stack: TestStack;

before(async () => {
  stack = await startTestStack({ apiKeys: ["adaptive-test-key"] });
});
after(() => stack.close());

const PATH = "/api/v1/jobs/video/adaptive";
const base = { source_bucket: "media", source_key: "in/clip.mp4", dest_bucket: "media" };

async function submit(body: Record<string, unknown>, path = PATH) {
  const res = await stack.request(path, { method: "POST", json: body });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function recorded(id: unknown) {
  const res = await stack.request(`/api/v1/jobs/${String(id)}`);
  return (await res.json()) as Record<string, unknown>;
}

describe("POST /jobs/video/adaptive", () => {
  test("dest_prefix is recorded as the master playlist's key, defaults filled in", async () => {
    const { status, body } = await submit({ ...base, dest_prefix: "ladders/clip/" });
    assert.equal(status, 202, JSON.stringify(body));
    const job = await recorded(body.job_id);
    assert.equal(job.dest_bucket, "media");
    assert.equal(job.dest_key, "ladders/clip/master.m3u8");
    assert.deepEqual(job.parameters, {
      video_codec: "h264",
      preset: "veryfast",
      segment_seconds: 4,
      formats: ["hls"],
      audio_only_rendition: false,
    });
  });

  test("a DASH-only ladder is recorded with its MPD", async () => {
    const { status, body } = await submit({ ...base, dest_prefix: "ladders/dash", formats: ["dash"] });
    assert.equal(status, 202, JSON.stringify(body));
    assert.equal((await recorded(body.job_id)).dest_key, "ladders/dash/manifest.mpd");
  });

  test("refusals name the field", async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...base }, /dest_prefix/],
      [{ ...base, dest_prefix: "a", dest_key: "a/b.m3u8" }, /dest_key/],
      [{ ...base, dest_prefix: "///" }, /dest_prefix/],
      [{ ...base, dest_prefix: "a", renditions: [] }, /renditions/],
      [{ ...base, dest_prefix: "a", renditions: [{ height: 721, video_bitrate: "1000k" }] }, /height/],
      [{ ...base, dest_prefix: "a", renditions: [{ height: 720, video_bitrate: "20k" }] }, /video_bitrate/],
      [
        {
          ...base,
          dest_prefix: "a",
          renditions: [
            { height: 720, video_bitrate: "2000k" },
            { height: 720, video_bitrate: "1000k" },
          ],
        },
        /renditions: heights must be distinct; 720 is given twice/,
      ],
      [{ ...base, dest_prefix: "a", formats: ["hls", "hls"] }, /formats/],
      [{ ...base, dest_prefix: "a", video_codec: "vp9" }, /video_codec/],
    ];
    for (const [body, message] of cases) {
      const answer = await submit(body);
      assert.equal(answer.status, 400, JSON.stringify(body));
      assert.match(String(answer.body.error), message, JSON.stringify(body));
    }
  });

  test("in a batch: dest_prefix, and the rule across fields names the entry", async () => {
    const entry = { type: "video_adaptive", ...base, dest_prefix: "ladders/b", parameters: {} };
    const ok = await submit({ jobs: [entry] }, "/api/v1/jobs/batch");
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    const id = (ok.body.job_ids as string[])[0];
    assert.equal((await recorded(id)).dest_key, "ladders/b/master.m3u8");
    const twice = {
      ...entry,
      parameters: {
        renditions: [
          { height: 360, video_bitrate: "800k" },
          { height: 360, video_bitrate: "600k" },
        ],
      },
    };
    const refused = await submit({ jobs: [entry, twice] }, "/api/v1/jobs/batch");
    assert.equal(refused.status, 400);
    assert.match(String(refused.body.error), /^jobs\[1\]: renditions: heights must be distinct/);
  });

  test("GET /jobs/{id}/ladder/{path}: refused before the job completes, for another type, for a path that climbs", async () => {
    const { body } = await submit({ ...base, dest_prefix: "ladders/pending" });
    const pending = await stack.request(`/api/v1/jobs/${String(body.job_id)}/ladder/master.m3u8`);
    assert.equal(pending.status, 409);
    assert.match(
      ((await pending.json()) as { error: string }).error,
      /is pending; its ladder exists once it has completed/,
    );
    const climbing = await stack.request(`/api/v1/jobs/${String(body.job_id)}/ladder/..%2F..%2Fsecret`);
    assert.equal(climbing.status, 400);
    const missing = await stack.request("/api/v1/jobs/no-such-job/ladder/master.m3u8");
    assert.equal(missing.status, 404);
    const other = await stack.request("/api/v1/jobs/image/colors", {
      method: "POST",
      json: { source_bucket: "media", source_key: "in/a.jpg" },
    });
    const otherId = ((await other.json()) as { job_id: string }).job_id;
    const notLadder = await stack.request(`/api/v1/jobs/${otherId}/ladder/master.m3u8`);
    assert.equal(notLadder.status, 404);
    assert.match(
      ((await notLadder.json()) as { error: string }).error,
      /image_colors, which writes no ladder/,
    );
  });
});
