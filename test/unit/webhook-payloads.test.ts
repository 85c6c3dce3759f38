// The webhook bodies, field by field, as docs/webhooks.md documents them: a job's completion in the
// default and chat styles and a batch's completion.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Job } from "../../core/jobs/records.js";
import { batchPayload, chatPayload, jobPayload } from "../../controller/webhooks/payloads.js";

const completed: Job = {
  id: "6f1c1d9e-3d1a-4c55-9e51-0f2f7d0a8b11",
  type: "image_resize",
  status: "completed",
  source_bucket: "media",
  source_key: "in.jpg",
  dest_bucket: "media",
  dest_key: "out.jpg",
  parameters: { width: 320, height: 240 },
  result: {
    output_url: "https://cdn.example.com/media/out.jpg",
    file_size: 1234,
    duration: 0.05,
    metadata: { width: 320, height: 240, format: "jpeg" },
  },
  request_id: "req-42",
  webhook_url: "https://hooks.example.com/secret-token",
  created_at: "2026-11-21T10:00:00.000Z",
  updated_at: "2026-11-21T10:00:01.500Z",
  started_at: "2026-11-21T10:00:00.250Z",
  completed_at: "2026-11-21T10:00:01.500Z",
  duration_seconds: 1.25,
};

const failed: Job = {
  ...completed,
  status: "failed",
  result: undefined,
  error: "source s3://media/in.jpg not found",
  batch_id: "nightly",
  request_id: undefined,
};
delete (failed as Partial<Job>).result;
delete (failed as Partial<Job>).request_id;

describe("default style", () => {
  test("a completed job: exactly the documented fields, with its result", () => {
    assert.deepEqual(jobPayload(completed, "2026-11-21T10:00:01.500Z"), {
      event: "job.completed",
      timestamp: "2026-11-21T10:00:01.500Z",
      job: {
        id: completed.id,
        type: "image_resize",
        status: "completed",
        state: "completed",
        result: completed.result,
        request_id: "req-42",
        created_at: "2026-11-21T10:00:00.000Z",
        completed_at: "2026-11-21T10:00:01.500Z",
        duration_seconds: 1.25,
      },
    });
  });

  test("a failed job carries its error, no result, and its batch", () => {
    assert.deepEqual(jobPayload(failed, "2026-11-21T10:00:01.500Z"), {
      event: "job.failed",
      timestamp: "2026-11-21T10:00:01.500Z",
      job: {
        id: failed.id,
        type: "image_resize",
        status: "failed",
        state: "failed",
        error: "source s3://media/in.jpg not found",
        batch_id: "nightly",
        created_at: "2026-11-21T10:00:00.000Z",
        completed_at: "2026-11-21T10:00:01.500Z",
        duration_seconds: 1.25,
      },
    });
  });

  test("a cancelled job is a job.failed whose state says cancelled", () => {
    const cancelled: Job = {
      ...failed,
      state: "cancelled",
      error: "cancelled by request",
      cancelled_at: failed.completed_at!,
    };
    const payload = jobPayload(cancelled, "2026-11-21T10:00:01.500Z");
    assert.equal(payload.event, "job.failed");
    assert.equal(payload.job.status, "failed");
    assert.equal(payload.job.state, "cancelled");
    const chat = chatPayload(cancelled);
    assert.match(
      chat.text,
      /^:no_entry_sign: image_resize job \S+ cancelled in 1\.25 s: cancelled by request$/,
    );
    assert.ok(JSON.stringify(chat.blocks).includes("*Status*\\ncancelled"));
  });

  test("a job that never started has no duration", () => {
    const never: Job = { ...failed };
    delete (never as Partial<Job>).duration_seconds;
    assert.equal("duration_seconds" in jobPayload(never, "t").job, false);
  });
});

describe("batch", () => {
  test("exactly the documented fields", () => {
    const body = batchPayload(
      { id: "b1", status: "partial", total_jobs: 3, completed: 2, failed: 1, extra: "x" } as never,
      "2026-11-21T10:00:05.000Z",
    );
    assert.deepEqual(body, {
      event: "batch.completed",
      timestamp: "2026-11-21T10:00:05.000Z",
      batch: { id: "b1", status: "partial", total_jobs: 3, completed: 2, failed: 1 },
    });
  });
});

describe("chat style (Slack-compatible)", () => {
  const texts = (body: ReturnType<typeof chatPayload>) =>
    body.blocks.flatMap((b) => (b.type === "context" ? b.elements : [b.text, ...(b.fields ?? [])]));

  test("a completed job: fallback text, a section with the job's fields, a link to the output, context", () => {
    const body = chatPayload(completed);
    assert.deepEqual(Object.keys(body).sort(), ["blocks", "text"]);
    assert.match(body.text, /image_resize job 6f1c1d9e-3d1a-4c55-9e51-0f2f7d0a8b11 completed in 1\.25 s/);
    assert.deepEqual(
      body.blocks.map((b) => b.type),
      ["section", "section", "context"],
    );
    const all = texts(body)
      .map((t) => t.text)
      .join("\n");
    assert.match(all, /<https:\/\/cdn\.example\.com\/media\/out\.jpg>/);
    assert.match(all, /320×240 jpeg/);
    assert.match(all, /request_id `req-42`/);
    for (const t of texts(body)) assert.equal(t.type, "mrkdwn");
    assert.ok(!all.includes("secret-token"), "the webhook URL is not echoed");
  });

  test("a failed job shows its error, escaped for mrkdwn", () => {
    const body = chatPayload({ ...failed, error: "bad <input> & worse" });
    assert.match(body.text, /failed/);
    const all = texts(body)
      .map((t) => t.text)
      .join("\n");
    assert.match(all, /bad &lt;input&gt; &amp; worse/);
    assert.match(all, /batch `nightly`/);
  });

  test("Slack's limits hold for a huge error: section text ≤ 3000, fields ≤ 2000, code block closed", () => {
    const body = chatPayload({ ...failed, error: "x".repeat(10_000) });
    for (const block of body.blocks) {
      if (block.type === "section") {
        assert.ok(block.text.text.length <= 3000);
        for (const f of block.fields ?? []) assert.ok(f.text.length <= 2000);
        assert.ok((block.fields ?? []).length <= 10);
      }
    }
    const error = body.blocks[1];
    assert.ok(error?.type === "section" && error.text.text.endsWith("```"));
    assert.ok(body.text.length <= 3000);
  });

  test("colors and keywords results are listed", () => {
    const colors = chatPayload({
      ...completed,
      type: "image_colors",
      result: { colors: ["#ff0000", "#00ff00"], percentages: [60, 40] },
    });
    assert.match(
      texts(colors)
        .map((t) => t.text)
        .join("\n"),
      /#ff0000, #00ff00/,
    );
  });
});
