// Cancelled apart from failed over HTTP, on a stack with no executor (jobs stay where the test puts
// them): records and list summaries carry `state`, GET /jobs filters on it (a client sees its own),
// the queue statistics count the cancelled among the failed, an SSE stream's complete says
// cancelled, and the OpenAPI document says all of it. `status` stays failed.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Job, JobSummary, QueueStats } from "../../core/jobs/records.js";
import { startTestStack, type TestStack } from "../support/api.js";

let stack: TestStack;
const KEYS = { alice: "alice-key-0123456789abcdef", bob: "bob-key-0123456789abcdef" };
before(async () => {
  stack = await startTestStack({
    config: {
      server: {
        clients: [
          { name: "alice", keys: [KEYS.alice] },
          { name: "bob", keys: [KEYS.bob] },
        ],
      },
    },
  });
});
after(async () => {
  await stack?.close();
});

const as = (who: keyof typeof KEYS) => ({ headers: { "x-api-key": KEYS[who] } });
const body = {
  source_bucket: "media",
  source_key: "in/none.mp4",
  dest_bucket: "media",
  dest_key: "out/x.jpg",
};

async function thumbnail(who: keyof typeof KEYS): Promise<string> {
  const res = await stack.request("/api/v1/jobs/video/thumbnail", { method: "POST", json: body, ...as(who) });
  assert.equal(res.status, 202);
  return ((await res.json()) as { job_id: string }).job_id;
}

async function list(who: keyof typeof KEYS, query: string) {
  const res = await stack.request(`/api/v1/jobs?type=video_thumbnail&${query}`, as(who));
  return {
    status: res.status,
    body: (await res.json()) as { jobs: JobSummary[]; total: number; error?: string },
  };
}

describe("state", () => {
  test("a cancelled job: status failed, state cancelled, in its record and in lists; the state filter tells it apart", async () => {
    const [cancelled, failed, pending] = [
      await thumbnail("alice"),
      await thumbnail("alice"),
      await thumbnail("alice"),
    ];
    const theirs = await thumbnail("bob");
    const cancel = await stack.request(`/api/v1/jobs/${cancelled}/cancel`, {
      method: "POST",
      ...as("alice"),
    });
    const answer = (await cancel.json()) as Job;
    assert.deepEqual([answer.status, answer.state], ["failed", "cancelled"], "the cancel answer says it");
    await stack.request(`/api/v1/jobs/${theirs}/cancel`, { method: "POST", ...as("bob") });
    await stack.services.store.fail(failed, "source s3://media/in/none.mp4 not found");

    const record = (await (await stack.request(`/api/v1/jobs/${failed}`, as("alice"))).json()) as Job;
    assert.deepEqual([record.status, record.state], ["failed", "failed"]);

    const byState = await list("alice", "state=cancelled");
    assert.deepEqual(
      byState.body.jobs.map((j) => [j.id, j.status, j.state]),
      [[cancelled, "failed", "cancelled"]],
      "alice's cancelled job only, not bob's",
    );
    assert.equal(byState.body.total, 1);
    assert.deepEqual(
      (await list("alice", "state=failed")).body.jobs.map((j) => j.id),
      [failed],
    );
    assert.deepEqual(
      (await list("alice", "status=failed")).body.jobs.map((j) => j.id).sort(),
      [cancelled, failed].sort(),
      "status=failed keeps its meaning: every failed job",
    );
    assert.deepEqual(
      (await list("alice", "state=pending")).body.jobs.map((j) => j.id),
      [pending],
    );
    assert.deepEqual(
      (await list("bob", "state=cancelled")).body.jobs.map((j) => j.id),
      [theirs],
    );
    const wrong = await list("alice", "state=stopped");
    assert.equal(wrong.status, 400);
    assert.match(wrong.body.error ?? "", /state/);
  });

  test("queue stats count the cancelled among the failed, per queue and in total", async () => {
    const before = (await (await stack.request("/api/v1/queue/stats", as("alice"))).json()) as QueueStats;
    const [a, b] = [await thumbnail("alice"), await thumbnail("alice")];
    await stack.request(`/api/v1/jobs/${a}/cancel`, { method: "POST", ...as("alice") });
    await stack.services.store.fail(b, "undecodable source");
    const now = (await (await stack.request("/api/v1/queue/stats", as("alice"))).json()) as QueueStats;
    const q0 = before.queues.video_thumbnail!;
    const q1 = now.queues.video_thumbnail!;
    assert.deepEqual([q1.failed - q0.failed, q1.cancelled - q0.cancelled], [2, 1]);
    assert.deepEqual(
      [now.total_failed - before.total_failed, now.total_cancelled - before.total_cancelled],
      [2, 1],
    );
  });

  test("an SSE stream of a cancelled job completes with state cancelled", async () => {
    const id = await thumbnail("alice");
    await stack.request(`/api/v1/jobs/${id}/cancel`, { method: "POST", ...as("alice") });
    const res = await stack.request(`/api/v1/jobs/${id}/stream`, {
      headers: { ...as("alice").headers, accept: "text/event-stream" },
    });
    const text = await res.text();
    const complete = /event: complete\ndata: (.*)\n/.exec(text)?.[1];
    assert.ok(complete, text);
    const data = JSON.parse(complete) as { status: string; state: string; error: string };
    assert.deepEqual([data.status, data.state, data.error], ["failed", "cancelled", "cancelled by request"]);
  });

  test("the OpenAPI document: state on records and summaries, the state filter, retried_as and the retry's answers", async () => {
    const doc = (await (await stack.request("/docs/json")).json()) as Schema;
    const schemas = (doc.components as Schema).schemas as Record<string, Schema>;
    const STATES = ["pending", "processing", "completed", "failed", "cancelled"];
    /** The values an Enum() schema allows (an anyOf of one-value enums). */
    const values = (schema: Schema | undefined) =>
      ((schema?.anyOf ?? []) as Schema[]).flatMap((s) => (s.enum ?? []) as string[]);
    const props = (name: string) => schemas[name]!.properties as Record<string, Schema>;
    assert.deepEqual(values(props("Job").state), STATES);
    assert.deepEqual(values(props("JobSummary").state), STATES);
    assert.ok(props("Job").retried_as, "Job.retried_as");
    assert.ok(props("RetriedAlreadyResponse").job_id, "the 200 answer's schema is named");
    const paths = doc.paths as Record<string, Record<string, Schema>>;
    const parameters = paths["/api/v1/jobs"]!.get!.parameters as Schema[];
    assert.deepEqual(values(parameters.find((p) => p.name === "state")?.schema as Schema), STATES);
    const retry = paths["/api/v1/jobs/{id}/retry"]!.post!;
    const responses = retry.responses as Record<string, unknown>;
    assert.ok(responses["200"] && responses["202"], "200 (retried already) and 202");
    assert.ok(retry.requestBody, "the optional {force} body");
  });
});

type Schema = Record<string, unknown> & { anyOf?: unknown[]; enum?: unknown[] };
