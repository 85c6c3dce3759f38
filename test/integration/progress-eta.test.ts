// An ffmpeg job's progress carries the runner's estimate of its seconds left: an audio_convert of a
// source long enough to take seconds, run by the local executor, records eta_seconds in the job's
// record and sends it in the job's SSE progress events while it runs; none is left once it ends.
// Nothing here depends on how long the conversion takes, only on what the reports say.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { startTestStack, type TestStack } from "../support/api.js";
import { makeAudio, removeMediaDirs } from "../support/av.js";
import { finished, submit } from "../support/jobs.js";
import { putObject } from "../support/runner.js";
import { openStream } from "../support/sse.js";

const KEY = "eta-test-key-0123456789";
let stack: TestStack;

before(async () => {
  stack = await startTestStack({ executor: true, apiKeys: [KEY] });
  // 10 minutes of 8 kHz mono: several seconds of AAC encoding (about 8 s of CPU here), well past the
  // estimator's first 2 s.
  const long = await makeAudio({ durationSeconds: 600, sampleRate: 8000, channels: 1 });
  await putObject(stack, "in/long.wav", await readFile(long));
});
after(async () => {
  await stack?.close();
  removeMediaDirs();
});

describe("progress with an estimate of the time left", () => {
  test("an audio_convert records eta_seconds with its progress and streams it", async () => {
    const id = await submit(stack, "audio/convert", {
      source_bucket: stack.bucket,
      source_key: "in/long.wav",
      dest_bucket: stack.bucket,
      dest_key: "out/long.aac",
      format: "aac",
    });
    const stream = await openStream(`${stack.baseUrl}/api/v1/jobs/${id}/stream`, { "x-api-key": KEY });

    // The record, read while the job runs.
    const recorded: Array<{ progress?: number; eta_seconds?: number }> = [];
    let job = await stack.services.store.getJob(id);
    const deadline = Date.now() + 180_000;
    while (job && job.status !== "completed" && job.status !== "failed" && Date.now() < deadline) {
      if (job.status === "processing")
        recorded.push({ progress: job.progress, eta_seconds: job.eta_seconds });
      await new Promise((r) => setTimeout(r, 100));
      job = await stack.services.store.getJob(id);
    }
    job = await finished(stack, id, 10_000);
    assert.equal(job.status, "completed", job.error);
    assert.equal(job.eta_seconds, undefined, "no estimate on a finished job");
    assert.equal(job.progress, undefined);

    const withEta = recorded.filter((r) => r.eta_seconds !== undefined);
    assert.ok(withEta.length > 0, `the record had an estimate while running: ${JSON.stringify(recorded)}`);
    for (const r of withEta) {
      assert.ok(Number.isInteger(r.eta_seconds) && r.eta_seconds! >= 0, JSON.stringify(r));
    }

    await stream.waitFor((e) => e.event === "complete", 10_000);
    const progress = stream.events
      .filter((e) => e.event === "progress")
      .map((e) => e.json as { percent: number; eta_seconds?: number });
    assert.ok(progress.length > 0);
    for (let i = 1; i < progress.length; i++) {
      assert.ok(
        progress[i]!.percent >= progress[i - 1]!.percent,
        `percent never goes back: ${JSON.stringify(progress)}`,
      );
    }
    const streamed = progress.filter((p) => p.eta_seconds !== undefined);
    assert.ok(streamed.length > 0, `a progress event carried an estimate: ${JSON.stringify(progress)}`);
    for (const p of streamed)
      assert.ok(Number.isInteger(p.eta_seconds) && p.eta_seconds! >= 0, JSON.stringify(p));
    stream.close();
  });
});
