// Reading jobs (one, and the list with its filter and limits) and batches over HTTP: batch create
// (201, all-or-nothing, per-entry defaults, fail_fast), batch reads and lists, and the batch
// lifecycle as the store moves its jobs (queued → processing → completed|failed|partial).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { JobSpec } from "../../core/jobs/spec.js";
import type { JobType } from "../../core/jobs/types.js";
import type { JobStore } from "../../core/store/store.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { claimJob, ISO_MS_UTC, makeSpec, sleep, UUID_V4 } from "../support/store.js";

let stack: TestStack;
let store: JobStore;

before(async () => {
  stack = await startTestStack({ apiKeys: ["jobs-batches-key"] });
  store = stack.services.store;
});
after(async () => {
  await stack?.close();
});

type Body = Record<string, unknown>;
const LEASE = 60_000;
const SOURCE = { source_bucket: "media-in", source_key: "uploads/photo.jpg" };

async function getJson(path: string, expected = 200): Promise<Body> {
  const res = await stack.request(path);
  const text = await res.text();
  assert.equal(res.status, expected, `GET ${path} → ${res.status} ${text}`);
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  return JSON.parse(text) as Body;
}

/** Asserts an error answer: the status, and a body that is exactly {error: string}. */
async function expectError(res: Response, status: number, mentions?: string): Promise<string> {
  const text = await res.text();
  assert.equal(res.status, status, text);
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  const body = JSON.parse(text) as Body;
  assert.deepEqual(Object.keys(body), ["error"], text);
  assert.equal(typeof body.error, "string");
  if (mentions)
    assert.ok((body.error as string).includes(mentions), `error should mention ${mentions}: ${text}`);
  return body.error as string;
}

async function postBatch(body: unknown): Promise<Response> {
  return stack.request("/api/v1/jobs/batch", { method: "POST", json: body });
}

interface BatchCreated {
  batch_id: string;
  total_jobs: number;
  job_ids: string[];
  status: string;
}

async function createBatch(body: Body): Promise<BatchCreated> {
  const res = await postBatch(body);
  const text = await res.text();
  assert.equal(res.status, 201, text);
  return JSON.parse(text) as BatchCreated;
}

async function getBatch(id: string, query = ""): Promise<Body> {
  return getJson(`/api/v1/jobs/batch/${encodeURIComponent(id)}${query}`);
}

async function batchOf(id: string): Promise<Body> {
  return (await getBatch(id)).batch as Body;
}

async function writtenState(): Promise<{ total: number; stats: unknown }> {
  const list = await getJson("/api/v1/jobs?limit=1");
  return { total: list.total as number, stats: await getJson("/api/v1/queue/stats") };
}

function entry(type: string, extra: Body = {}): Body {
  const writes = ["image_resize", "image_optimize", "image_watermark", "video_thumbnail", "audio_convert"];
  return {
    type,
    source_bucket: "media-in",
    source_key: `uploads/${type}-${Math.random().toString(36).slice(2)}`,
    ...(writes.includes(type) ? { dest_bucket: "media-out", dest_key: `results/${type}.out` } : {}),
    ...extra,
  };
}

/** Claims and starts a given job through the store (pending → processing). */
async function start(type: JobType, id: string): Promise<void> {
  await claimJob(store, type, id, LEASE);
  assert.equal(await store.start(id, LEASE), true, `job ${id} started`);
}

async function completeJob(type: JobType, id: string): Promise<void> {
  await start(type, id);
  assert.equal(await store.complete(id, { keywords: ["a"], confidence_scores: [0.5] }), true);
}

async function failJob(
  type: JobType,
  id: string,
  message = "boom: the source is not an image",
): Promise<void> {
  await start(type, id);
  assert.equal(await store.fail(id, message), true);
}

describe("GET /api/v1/jobs/{id}", () => {
  test("an unknown id → 404 {error}", async () => {
    await expectError(await stack.request("/api/v1/jobs/0b7e4c4a-0000-4000-8000-000000000000"), 404);
    await expectError(await stack.request("/api/v1/jobs/no-such-job"), 404);
  });

  test("a completed job shows its result and completion fields; a failed one its error", async () => {
    const { jobIds } = await store.submit([makeSpec("image_ai_keywords"), makeSpec("image_ai_keywords")]);
    const [ok, bad] = jobIds as [string, string];
    await completeJob("image_ai_keywords", ok);
    await failJob("image_ai_keywords", bad, "the model refused the image");
    const done = await getJson(`/api/v1/jobs/${ok}`);
    assert.equal(done.status, "completed");
    assert.deepEqual(done.result, { keywords: ["a"], confidence_scores: [0.5] });
    assert.match(done.completed_at as string, ISO_MS_UTC);
    assert.equal(typeof done.duration_seconds, "number");
    assert.equal(done.error, undefined);
    const failed = await getJson(`/api/v1/jobs/${bad}`);
    assert.equal(failed.status, "failed");
    assert.equal(failed.error, "the model refused the image");
    for (const field of ["id", "status", "error", "created_at", "updated_at"])
      assert.ok(field in failed, field);
    assert.equal(failed.result, undefined);
  });
});

describe("GET /api/v1/jobs", () => {
  test("shape {jobs: [{id, type, status, created_at}], total}, newest first", async () => {
    const ids: string[] = [];
    for (const path of ["/image/colors", "/image/ai/keywords", "/analyze"]) {
      const res = await stack.request(`/api/v1/jobs${path}`, { method: "POST", json: SOURCE });
      assert.equal(res.status, 202);
      ids.push(((await res.json()) as { job_id: string }).job_id);
      await sleep(5); // distinct creation times
    }
    const body = await getJson("/api/v1/jobs");
    assert.deepEqual(Object.keys(body).sort(), ["jobs", "total"]);
    assert.ok(Number.isInteger(body.total));
    const jobs = body.jobs as Body[];
    assert.ok(Array.isArray(jobs));
    for (const job of jobs) {
      assert.deepEqual(Object.keys(job).sort(), ["created_at", "id", "state", "status", "type"]);
      assert.match(job.created_at as string, ISO_MS_UTC);
    }
    assert.deepEqual(
      jobs.slice(0, 3).map((j) => j.id),
      [...ids].reverse(),
      "the newest job comes first",
    );
    assert.deepEqual(
      jobs.slice(0, 3).map((j) => [j.type, j.status]),
      [
        ["analyze", "pending"],
        ["image_ai_keywords", "pending"],
        ["image_colors", "pending"],
      ],
    );
    const times = jobs.map((j) => Date.parse(j.created_at as string));
    for (let i = 1; i < times.length; i++)
      assert.ok(times[i - 1]! >= times[i]!, "ordered by created_at, newest first");
  });

  test("status filter follows the jobs' transitions", async () => {
    const type: JobType = "video_thumbnail";
    const { jobIds } = await store.submit([makeSpec(type), makeSpec(type), makeSpec(type), makeSpec(type)]);
    const [pending, processing, completed, failed] = jobIds as [string, string, string, string];
    await start(type, processing);
    await completeJob(type, completed);
    await failJob(type, failed);

    const expected: Record<string, string> = { pending, processing, completed, failed };
    const stats = (await getJson("/api/v1/queue/stats")) as Record<string, number>;
    for (const [status, id] of Object.entries(expected)) {
      const body = await getJson(`/api/v1/jobs?status=${status}&limit=1000`);
      const jobs = body.jobs as Body[];
      assert.ok(
        jobs.every((j) => j.status === status),
        `every job listed under ${status} has that status`,
      );
      const listed = new Set(jobs.map((j) => j.id));
      assert.ok(listed.has(id), `${id} is listed as ${status}`);
      for (const other of Object.values(expected)) {
        if (other !== id) assert.equal(listed.has(other), false, `${other} is not listed as ${status}`);
      }
      assert.equal(body.total, stats[`total_${status}`], `total of ${status} agrees with the queue stats`);
      assert.equal(body.total, jobs.length);
    }
  });

  test("an unknown status → 400 {error}", async () => {
    await expectError(await stack.request("/api/v1/jobs?status=done"), 400, "status");
    await expectError(await stack.request("/api/v1/jobs?status=queued"), 400, "status");
  });

  test("limit: default 100, up to 1000; 0, 1001 and text → 400", async () => {
    const specs: JobSpec[] = Array.from({ length: 120 }, () => makeSpec("image_optimize"));
    await store.submit(specs);
    const all = await getJson("/api/v1/jobs");
    assert.ok((all.total as number) >= 120);
    assert.equal((all.jobs as Body[]).length, 100, "100 jobs by default");
    const max = await getJson("/api/v1/jobs?limit=1000");
    assert.equal((max.jobs as Body[]).length, Math.min(max.total as number, 1000));
    assert.equal(max.total, all.total);
    const some = await getJson("/api/v1/jobs?limit=7");
    assert.equal((some.jobs as Body[]).length, 7);
    assert.deepEqual(
      (some.jobs as Body[]).map((j) => j.id),
      (all.jobs as Body[]).slice(0, 7).map((j) => j.id),
    );
    assert.equal(some.total, all.total, "total counts every job, not the page");
    for (const limit of ["1001", "0", "abc", "-1", "2.5"]) {
      await expectError(await stack.request(`/api/v1/jobs?limit=${limit}`), 400, "limit");
    }
  });
});

describe("POST /api/v1/jobs/batch", () => {
  test("201 with batch_id, total_jobs, job_ids (in order) and status queued", async () => {
    const entries = [
      entry("image_resize", { parameters: { width: 100, height: 100 } }),
      entry("image_colors"),
      entry("video_thumbnail", { parameters: { timestamp: "00:00:02" } }),
    ];
    const res = await postBatch({ jobs: entries });
    assert.equal(res.status, 201);
    assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
    const body = (await res.json()) as BatchCreated;
    assert.deepEqual(Object.keys(body).sort(), ["batch_id", "job_ids", "status", "total_jobs"]);
    assert.equal(typeof body.batch_id, "string");
    assert.ok(body.batch_id.length > 0);
    assert.equal(body.total_jobs, 3);
    assert.equal(body.status, "queued");
    assert.equal(body.job_ids.length, 3);
    assert.equal(new Set(body.job_ids).size, 3);
    for (const [i, id] of body.job_ids.entries()) {
      assert.match(id, UUID_V4);
      const job = await getJson(`/api/v1/jobs/${id}`);
      assert.equal(job.type, entries[i]!.type, `job_ids[${i}] is jobs[${i}]`);
      assert.equal(job.source_key, entries[i]!.source_key);
      assert.equal(job.status, "pending");
    }
  });

  test("a custom batch_id is kept; the same id again → 409 {error} and nothing written", async () => {
    const id = `nightly-${Date.now()}`;
    const created = await createBatch({ batch_id: id, jobs: [entry("image_colors")] });
    assert.equal(created.batch_id, id);
    assert.equal(((await batchOf(id)).id as string) ?? "", id);
    const before = await writtenState();
    await expectError(
      await postBatch({ batch_id: id, jobs: [entry("image_colors"), entry("analyze")] }),
      409,
    );
    assert.deepEqual(await writtenState(), before);
    assert.equal((await batchOf(id)).total_jobs, 1, "the first batch is untouched");
  });

  test("0 jobs and 101 jobs → 400; 100 jobs → 201", async () => {
    const before = await writtenState();
    await expectError(await postBatch({ jobs: [] }), 400, "jobs");
    await expectError(
      await postBatch({ jobs: Array.from({ length: 101 }, () => entry("image_colors")) }),
      400,
      "jobs",
    );
    await expectError(await postBatch({}), 400, "jobs");
    await expectError(await postBatch({ jobs: "all" }), 400, "jobs");
    assert.deepEqual(await writtenState(), before);
    const created = await createBatch({ jobs: Array.from({ length: 100 }, () => entry("image_colors")) });
    assert.equal(created.total_jobs, 100);
    assert.equal(created.job_ids.length, 100);
    assert.equal((await batchOf(created.batch_id)).total_jobs, 100);
  });

  test("an invalid entry → 400 naming jobs[3], and nothing is written", async () => {
    const valid = () => [
      entry("image_resize", { parameters: { width: 10, height: 10 } }),
      entry("image_colors"),
      entry("audio_convert", { parameters: { format: "mp3" } }),
    ];
    const bad: Array<[string, Body]> = [
      ["width 0", entry("image_resize", { parameters: { width: 0, height: 10 } })],
      ["width missing", entry("image_resize", { parameters: { height: 10 } })],
      ["unknown type", entry("image_blur")],
      [
        "missing dest for resize",
        { ...entry("image_colors"), type: "image_resize", parameters: { width: 1, height: 1 } },
      ],
      ["missing source_key", { type: "image_colors", source_bucket: "media-in" }],
      ["bad bucket", entry("image_colors", { source_bucket: "UPPER" })],
      ["unknown entry field", entry("image_colors", { urgency: 1 })],
      ["priority out of range", entry("image_colors", { priority: 51 })],
      ["unknown parameter", entry("image_colors", { parameters: { colour_count: 4 } })],
      ["color_count 11", entry("image_colors", { parameters: { color_count: 11 } })],
      ["bitrate with flac", entry("audio_convert", { parameters: { format: "flac", bitrate: "128k" } })],
      ["watermark without text or image", entry("image_watermark")],
      ["timestamp abc", entry("video_thumbnail", { parameters: { timestamp: "abc" } })],
      ["webhook_url ftp", entry("image_colors", { webhook_url: "ftp://x" })],
      [
        "timeout_seconds over the limit",
        entry("image_colors", { timeout_seconds: stack.config.limits.maxTimeoutSeconds + 1 }),
      ],
    ];
    const before = await writtenState();
    for (const [what, invalid] of bad) {
      const id = `refused-${Math.random().toString(36).slice(2)}`;
      const res = await postBatch({ batch_id: id, jobs: [...valid(), invalid, ...valid()] });
      await expectError(res, 400, "jobs[3]").catch((err: Error) => {
        throw new Error(`${what}: ${err.message}`);
      });
      await expectError(await stack.request(`/api/v1/jobs/batch/${id}`), 404);
    }
    // Parameters an entry needs are required, as the document says: watermark's one of two.
    const res = await postBatch({ jobs: [entry("image_watermark")] });
    assert.deepEqual(await res.json(), { error: "jobs[0].parameters is required" });
    assert.deepEqual(await writtenState(), before, "no job of a refused batch was written");
    const list = await getJson("/api/v1/jobs/batch?limit=100");
    assert.ok((list.batches as Body[]).every((b) => !(b.id as string).startsWith("refused-")));
  });

  test("invalid options and batch ids → 400", async () => {
    const jobs = [entry("image_colors")];
    await expectError(await postBatch({ jobs, options: { fail_fast: "yes" } }), 400, "fail_fast");
    await expectError(await postBatch({ jobs, options: { webhook_url: "not a url" } }), 400, "webhook_url");
    await expectError(await postBatch({ jobs, options: { retries: 3 } }), 400, "retries");
    await expectError(await postBatch({ jobs, batch_id: "" }), 400, "batch_id");
    await expectError(await postBatch({ jobs, extra: 1 }), 400, "extra");
  });

  test("entries get the same parameter defaults as the single-job endpoints", async () => {
    const entries = [
      entry("image_resize", { parameters: { width: 64, height: 48 } }),
      entry("image_optimize"),
      entry("image_watermark", { parameters: { watermark_text: "hi" } }),
      entry("image_colors"),
      entry("image_ai_keywords"),
      entry("video_thumbnail"),
      entry("audio_convert", { parameters: { format: "wav" } }),
    ];
    const expected: Body[] = [
      { width: 64, height: 48, quality: 85 },
      { quality: 80, strip_metadata: false },
      { watermark_text: "hi", opacity: 100, position: "bottom-right" },
      { color_count: 5, format: "hex" },
      { keyword_count: 15, language: "en" },
      { timestamp: "00:00:01", format: "jpeg" },
      { format: "wav" },
    ];
    const created = await createBatch({ jobs: entries });
    for (const [i, id] of created.job_ids.entries()) {
      const job = await getJson(`/api/v1/jobs/${id}`);
      const parameters = job.parameters as Body;
      for (const [name, value] of Object.entries(expected[i]!)) {
        assert.deepEqual(
          parameters[name],
          value,
          `jobs[${i}] (${String(entries[i]!.type)}) parameters.${name}`,
        );
      }
    }
  });

  test("options.fail_fast defaults to false and is shown on the batch", async () => {
    const plain = await createBatch({ jobs: [entry("image_colors")] });
    assert.equal((await batchOf(plain.batch_id)).fail_fast, false);
    const emptyOptions = await createBatch({ jobs: [entry("image_colors")], options: {} });
    assert.equal((await batchOf(emptyOptions.batch_id)).fail_fast, false);
    const failFast = await createBatch({
      jobs: [entry("image_colors")],
      options: { fail_fast: true, webhook_url: "https://example.com/batch-done" },
    });
    assert.equal((await batchOf(failFast.batch_id)).fail_fast, true);
  });
});

describe("GET /api/v1/jobs/batch/{id}", () => {
  test("{batch} with the Batch fields and no jobs; include_jobs=true adds them in submission order", async () => {
    const entries = [entry("analyze"), entry("image_colors"), entry("image_ai_keywords"), entry("analyze")];
    const created = await createBatch({ jobs: entries });
    const body = await getBatch(created.batch_id);
    assert.deepEqual(Object.keys(body), ["batch"]);
    const batch = body.batch as Body;
    assert.equal(batch.id, created.batch_id);
    assert.equal(batch.status, "queued");
    assert.equal(batch.total_jobs, 4);
    assert.equal(batch.pending, 4);
    assert.equal(batch.completed, 0);
    assert.equal(batch.failed, 0);
    assert.match(batch.created_at as string, ISO_MS_UTC);
    assert.match(batch.updated_at as string, ISO_MS_UTC);
    assert.equal("jobs" in batch, false);

    const withFalse = await getBatch(created.batch_id, "?include_jobs=false");
    assert.deepEqual(Object.keys(withFalse), ["batch"]);

    const withJobs = await getBatch(created.batch_id, "?include_jobs=true");
    assert.deepEqual(Object.keys(withJobs).sort(), ["batch", "jobs"]);
    const jobs = withJobs.jobs as Body[];
    assert.deepEqual(
      jobs.map((j) => j.id),
      created.job_ids,
    );
    assert.deepEqual(
      jobs.map((j) => j.type),
      entries.map((e) => e.type),
    );
    for (const job of jobs) {
      assert.deepEqual(Object.keys(job).sort(), ["created_at", "id", "state", "status", "type"]);
      assert.equal(job.status, "pending");
      assert.match(job.created_at as string, ISO_MS_UTC);
    }
  });

  test("an unknown batch → 404 {error}; include_jobs must be a boolean", async () => {
    await expectError(await stack.request("/api/v1/jobs/batch/no-such-batch"), 404);
    await expectError(await stack.request("/api/v1/jobs/batch/no-such-batch?include_jobs=true"), 404);
    const created = await createBatch({ jobs: [entry("image_colors")] });
    await expectError(await stack.request(`/api/v1/jobs/batch/${created.batch_id}?include_jobs=maybe`), 400);
  });
});

describe("batch lifecycle (jobs moved through the store)", () => {
  const type: JobType = "analyze";
  const three = () => ({ jobs: [entry(type), entry(type), entry(type)] });

  test("queued → processing at the first start → completed when all succeed", async () => {
    const { batch_id, job_ids } = await createBatch(three());
    const [a, b, c] = job_ids as [string, string, string];
    assert.equal((await batchOf(batch_id)).status, "queued");
    await start(type, a);
    let batch = await batchOf(batch_id);
    assert.equal(batch.status, "processing");
    assert.equal(batch.pending, 2);
    await store.complete(a, { text: "ok" });
    await completeJob(type, b);
    batch = await batchOf(batch_id);
    assert.equal(batch.status, "processing");
    assert.equal(batch.completed, 2);
    assert.equal(batch.pending, 1);
    await completeJob(type, c);
    batch = await batchOf(batch_id);
    assert.deepEqual(
      [batch.status, batch.total_jobs, batch.pending, batch.completed, batch.failed],
      ["completed", 3, 0, 3, 0],
    );
    const jobs = (await getBatch(batch_id, "?include_jobs=true")).jobs as Body[];
    assert.deepEqual(
      jobs.map((j) => j.status),
      ["completed", "completed", "completed"],
    );
  });

  test("all failed → failed", async () => {
    const { batch_id, job_ids } = await createBatch(three());
    for (const id of job_ids) await failJob(type, id);
    const batch = await batchOf(batch_id);
    assert.deepEqual([batch.status, batch.pending, batch.completed, batch.failed], ["failed", 0, 0, 3]);
  });

  test("some of each → partial; without fail_fast the others keep running", async () => {
    const { batch_id, job_ids } = await createBatch(three());
    const [a, b, c] = job_ids as [string, string, string];
    await failJob(type, a);
    let batch = await batchOf(batch_id);
    assert.equal(batch.status, "processing");
    assert.equal(batch.failed, 1);
    assert.equal(batch.pending, 2, "the other jobs are still pending");
    assert.equal((await getJson(`/api/v1/jobs/${b}`)).status, "pending");
    await completeJob(type, b);
    await completeJob(type, c);
    batch = await batchOf(batch_id);
    assert.deepEqual([batch.status, batch.completed, batch.failed], ["partial", 2, 1]);
  });

  test("fail_fast: the first failure ends the others failed, naming the failing job; batch not completed", async () => {
    const queues = async () =>
      ((await getJson("/api/v1/queue/stats")) as { queues: Record<string, Body> }).queues;
    const before = (await queues())[type]!;
    const { batch_id, job_ids } = await createBatch({ ...three(), options: { fail_fast: true } });
    const [a, b, c] = job_ids as [string, string, string];
    await start(type, b); // one running, one pending when the first failure happens
    await failJob(type, a, "the source is not readable");
    for (const other of [b, c]) {
      const job = await getJson(`/api/v1/jobs/${other}`);
      assert.equal(job.status, "failed", `${other} is stopped with the batch`);
      assert.equal(typeof job.error, "string");
      assert.ok(
        (job.error as string).includes(a),
        `the error names the failing job ${a}: ${String(job.error)}`,
      );
    }
    assert.equal((await getJson(`/api/v1/jobs/${a}`)).error, "the source is not readable");
    const batch = await batchOf(batch_id);
    assert.notEqual(batch.status, "completed");
    assert.deepEqual([batch.status, batch.pending, batch.completed, batch.failed], ["failed", 0, 0, 3]);
    const now = (await queues())[type]!;
    assert.equal(now.pending, before.pending, "the cancelled jobs left the queue");
    assert.equal(now.processing, before.processing);
    assert.equal(now.failed, (before.failed as number) + 3);
  });

  test("fail_fast after a success: the batch ends partial", async () => {
    const { batch_id, job_ids } = await createBatch({ ...three(), options: { fail_fast: true } });
    const [a, b, c] = job_ids as [string, string, string];
    await completeJob(type, a);
    await failJob(type, b);
    const cancelled = await getJson(`/api/v1/jobs/${c}`);
    assert.equal(cancelled.status, "failed");
    assert.ok((cancelled.error as string).includes(b));
    const batch = await batchOf(batch_id);
    assert.deepEqual([batch.status, batch.completed, batch.failed], ["partial", 1, 2]);
  });
});

describe("GET /api/v1/jobs/batch", () => {
  test("{batches, total}, status filter", async () => {
    const done = await createBatch({ jobs: [entry("analyze")] });
    await completeJob("analyze", done.job_ids[0]!);
    await sleep(5); // distinct creation times
    const waiting = await createBatch({ jobs: [entry("analyze")] });
    const body = await getJson("/api/v1/jobs/batch");
    assert.deepEqual(Object.keys(body).sort(), ["batches", "total"]);
    assert.ok(Number.isInteger(body.total));
    const batches = body.batches as Body[];
    assert.ok(batches.length > 0);
    for (const b of batches) {
      for (const field of [
        "id",
        "status",
        "total_jobs",
        "pending",
        "completed",
        "failed",
        "created_at",
        "updated_at",
      ]) {
        assert.ok(field in b, `batch has ${field}`);
      }
    }
    assert.equal(batches[0]!.id, waiting.batch_id, "newest first");

    const completed = await getJson("/api/v1/jobs/batch?status=completed&limit=100");
    const completedIds = (completed.batches as Body[]).map((b) => b.id);
    assert.ok(completedIds.includes(done.batch_id));
    assert.ok(!completedIds.includes(waiting.batch_id));
    assert.ok((completed.batches as Body[]).every((b) => b.status === "completed"));
    assert.equal(completed.total, completedIds.length);

    const queued = await getJson("/api/v1/jobs/batch?status=queued&limit=100");
    assert.ok((queued.batches as Body[]).some((b) => b.id === waiting.batch_id));
    assert.ok((queued.batches as Body[]).every((b) => b.status === "queued"));
    await expectError(await stack.request("/api/v1/jobs/batch?status=pending"), 400, "status");
  });

  test("limit: default 50, max 100; 101 and 0 → 400", async () => {
    await Promise.all(
      Array.from({ length: 55 }, () => store.submit([makeSpec("image_colors")], { failFast: false })),
    );
    const all = await getJson("/api/v1/jobs/batch");
    assert.ok((all.total as number) >= 55);
    assert.equal((all.batches as Body[]).length, 50, "50 batches by default");
    const max = await getJson("/api/v1/jobs/batch?limit=100");
    assert.equal((max.batches as Body[]).length, Math.min(max.total as number, 100));
    assert.equal(max.total, all.total);
    for (const limit of ["101", "0", "abc"]) {
      await expectError(await stack.request(`/api/v1/jobs/batch?limit=${limit}`), 400, "limit");
    }
  });
});
