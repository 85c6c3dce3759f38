// Fair share and clients' limits through the local stack (real runners, real sharp on a tiny PNG):
// client A floods its queue with 2,000 jobs, then client B submits 20, and B's 20 all start before A's
// hundredth job after them (B's wait is printed); under 200 concurrent submits a client's
// max_pending and max_running are never passed (the store sampled while they run), and the API
// answers 429 with Retry-After, or 403, naming the limit.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { CLIENT_LIMIT_RETRY_AFTER_SECONDS } from "../../core/policy.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { clientEnv, runCli, said } from "../support/cli.js";
import { makeImage } from "../support/media.js";
import { fieldsOf } from "../../core/store/events.js";

const A = "client-a-key-0123456789";
const B = "client-b-key-0123456789";
const C = "client-c-key-0123456789";
const D = "client-d-key-0123456789";
const ADMIN = "admin-key-0123456789";
const NO_RATE_LIMIT = 1_000_000;

let stack: TestStack;
before(async () => {
  stack = await startTestStack({
    executor: true,
    config: {
      executor: { local_concurrency: 2 },
      server: {
        clients: [
          { name: "a", keys: [A], rate_limit: NO_RATE_LIMIT },
          { name: "b", keys: [B], rate_limit: NO_RATE_LIMIT },
          {
            name: "c",
            keys: [C],
            rate_limit: NO_RATE_LIMIT,
            max_running: 1,
            max_pending: 30,
            job_types: ["image_colors"],
            max_priority: 0,
          },
          { name: "d", keys: [D], max_source_bytes: 1000 },
          { name: "ops", keys: [ADMIN], admin: true },
        ],
      },
    },
  });
  await stack.services.s3.send(
    new PutObjectCommand({
      Bucket: stack.bucket,
      Key: "in/tiny.png",
      Body: await makeImage({ width: 8, height: 8, format: "png", background: "#3366cc" }),
      ContentType: "image/png",
    }),
  );
  await stack.services.s3.send(
    new PutObjectCommand({
      Bucket: stack.bucket,
      Key: "in/photo.png",
      Body: await makeImage({ width: 64, height: 64, format: "png", photo: true }),
      ContentType: "image/png",
    }),
  );
});
after(async () => {
  await stack?.close();
});

const entry = () => ({ type: "image_colors", source_bucket: stack.bucket, source_key: "in/tiny.png" });

async function batch(key: string, n: number): Promise<{ batchId: string; jobIds: string[] }> {
  const res = await stack.request("/api/v1/jobs/batch", {
    method: "POST",
    key,
    json: { jobs: Array.from({ length: n }, entry) },
  });
  const body = (await res.json()) as { batch_id: string; job_ids: string[]; error?: string };
  assert.equal(res.status, 201, body.error);
  return { batchId: body.batch_id, jobIds: body.job_ids };
}

/** The ids of the jobs started after stream entry `since`, in the order they started. */
async function startedSince(since: string): Promise<string[]> {
  const entries = await stack.services.redis.xrange(stack.services.store.keys.events(), `(${since}`, "+");
  return entries
    .map(([, flat]) => fieldsOf(flat))
    .filter((f) => f.event === "job.started")
    .map((f) => f.job_id!);
}

describe("fair share through the local stack", () => {
  test("A submits 2,000 jobs, then B 20: B's 20 all start before A's 100th job after them", async () => {
    const aIds = new Set<string>();
    const aBatches: string[] = [];
    for (let i = 0; i < 20; i++) {
      const { batchId, jobIds } = await batch(A, 100);
      aBatches.push(batchId);
      for (const id of jobIds) aIds.add(id);
    }
    // The runners warm (their first job loads sharp): B's wait is measured against a flowing queue.
    const warm = Date.now() + 30_000;
    while ((await startedSince("0")).length < 10) {
      if (Date.now() > warm) assert.fail("A's jobs did not start");
      await new Promise((r) => setTimeout(r, 50));
    }
    const last = await stack.services.redis.xrevrange(
      stack.services.store.keys.events(),
      "+",
      "-",
      "COUNT",
      1,
    );
    const since = last[0]![0];
    const submittedAt = Date.now();
    const bIds = (await batch(B, 20)).jobIds;
    const deadline = Date.now() + 60_000;
    let order: string[] = [];
    for (;;) {
      order = await startedSince(since);
      if (bIds.every((id) => order.includes(id))) break;
      if (Date.now() > deadline)
        assert.fail(`B's jobs did not all start: ${bIds.filter((id) => order.includes(id)).length} of 20`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const lastB = Math.max(...bIds.map((id) => order.indexOf(id)));
    const aBefore = order.slice(0, lastB).filter((id) => aIds.has(id)).length;
    const waits: number[] = [];
    for (const id of bIds) {
      const job = await stack.services.store.getJob(id);
      waits.push(Date.parse(job!.started_at!) - Date.parse(job!.created_at));
    }
    waits.sort((x, y) => x - y);
    const aPending = Number(
      await stack.services.redis.hget(stack.services.store.keys.clientLoad(), "a|pending"),
    );
    console.log(
      `B's 20 jobs waited ${waits[0]} ms (first), ${waits[9]} ms (median), ${waits[19]} ms (last), ` +
        `${Date.now() - submittedAt} ms in all; A's jobs started meanwhile: ${aBefore}; A's still waiting: ${aPending}`,
    );
    assert.ok(aBefore < 100, `B's last job started after ${aBefore} of A's jobs (fewer than 100)`);
    assert.ok(aPending > 1000, `A's flood was still waiting (${aPending}) while B's jobs ran`);
    // The rest of A's flood is not this test's business: cancelled, so the next test runs at once.
    for (const id of aBatches) await stack.services.store.cancel("batch", id, "cancelled by request");
  });

  test("under 200 concurrent submits a client's max_pending and max_running hold; 429 with Retry-After", async () => {
    const store = stack.services.store;
    let most = { pending: 0, running: 0, processing: 0 };
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const [pending, running] = await stack.services.redis.hmget(
          store.keys.clientLoad(),
          "c|pending",
          "c|running",
        );
        const processing = await stack.services.redis.zcard(
          store.keys.clientIndex("c", "jobs", "processing"),
        );
        most = {
          pending: Math.max(most.pending, Number(pending ?? 0)),
          running: Math.max(most.running, Number(running ?? 0)),
          processing: Math.max(most.processing, processing),
        };
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    const answers = await Promise.all(
      Array.from({ length: 200 }, async () => {
        const res = await stack.request("/api/v1/jobs/image/colors", {
          method: "POST",
          key: C,
          json: { source_bucket: stack.bucket, source_key: "in/tiny.png" },
        });
        return {
          status: res.status,
          retryAfter: res.headers.get("retry-after"),
          body: (await res.json()) as { error?: string },
        };
      }),
    );
    // Until every accepted job has run.
    const deadline = Date.now() + 60_000;
    while (Number(await stack.services.redis.hget(store.keys.clientLoad(), "c|pending")) > 0) {
      if (Date.now() > deadline) assert.fail("client c's jobs did not all run");
      await new Promise((r) => setTimeout(r, 50));
    }
    sampling = false;
    await sampler;
    const accepted = answers.filter((a) => a.status === 202).length;
    const refused = answers.filter((a) => a.status === 429);
    console.log(
      `client c: ${accepted} of 200 accepted, ${refused.length} refused; at most ${most.pending} pending, ${most.running} running`,
    );
    assert.equal(
      accepted + refused.length,
      200,
      JSON.stringify(answers.find((a) => a.status !== 202 && a.status !== 429)),
    );
    assert.ok(refused.length > 0 && accepted >= 30);
    assert.ok(most.pending <= 30, `pending never above max_pending 30 (${most.pending})`);
    assert.ok(
      most.running <= 1 && most.processing <= 1,
      `running never above max_running 1 (${most.running}, ${most.processing})`,
    );
    assert.equal(refused[0]!.retryAfter, String(CLIENT_LIMIT_RETRY_AFTER_SECONDS));
    assert.match(
      refused[0]!.body.error!,
      /^client "c" has \d+ jobs pending and submits 1, over its server\.clients max_pending of 30$/,
    );
  });

  test("a job type or a priority a client may not use: 403 naming the limit", async () => {
    const res = await stack.request("/api/v1/jobs/image/resize", {
      method: "POST",
      key: C,
      json: {
        source_bucket: stack.bucket,
        source_key: "in/tiny.png",
        dest_bucket: stack.bucket,
        dest_key: "out/tiny.png",
        width: 4,
        height: 4,
      },
    });
    assert.equal(res.status, 403);
    assert.deepEqual(await res.json(), {
      error: 'client "c" may not submit image_resize jobs: its server.clients job_types are image_colors',
    });
    const high = await stack.request("/api/v1/jobs/image/colors", {
      method: "POST",
      key: C,
      json: { source_bucket: stack.bucket, source_key: "in/tiny.png", priority: 1 },
    });
    assert.equal(high.status, 403);
    assert.deepEqual(await high.json(), {
      error: 'client "c" may not submit priority 1: its server.clients max_priority is 0',
    });
  });

  test("a source over its client's max_source_bytes fails the job, naming the setting", async () => {
    const submit = async (key: string) => {
      const res = await stack.request("/api/v1/jobs/image/colors", {
        method: "POST",
        key,
        json: { source_bucket: stack.bucket, source_key: "in/photo.png" },
      });
      const body = (await res.json()) as { job_id: string; error?: string };
      assert.equal(res.status, 202, body.error);
      return body.job_id;
    };
    const [limited, other] = [await submit(D), await submit(A)];
    const done = async (id: string) => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const job = await stack.services.store.getJob(id);
        if (job && (job.status === "completed" || job.status === "failed")) return job;
        if (Date.now() > deadline) assert.fail(`job ${id} did not end`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const failed = await done(limited);
    assert.equal(failed.status, "failed");
    assert.equal(failed.max_source_bytes, 1000);
    assert.match(
      failed.error!,
      /is \d+ bytes, more than its client's server\.clients max_source_bytes \(1000\)/,
    );
    assert.equal((await done(other)).status, "completed", "another client's job reads the same source");
  });

  test("GET /queue/stats: every client's jobs and limits for an admin, its own for a client; metrics per client", async () => {
    type Stats = { clients?: Array<Record<string, unknown>> };
    const read = async (key: string) => {
      const res = await stack.request("/api/v1/queue/stats", { key });
      assert.equal(res.status, 200);
      return (await res.json()) as Stats;
    };
    const admin = await read(ADMIN);
    assert.deepEqual(
      admin.clients?.map((c) => c.name),
      ["a", "b", "c", "d", "ops"],
    );
    const c = admin.clients.find((x) => x.name === "c")!;
    assert.deepEqual(
      { ...c, refused: undefined },
      {
        name: "c",
        pending: 0,
        running: 0,
        refused: undefined,
        weight: 1,
        max_running: 1,
        max_pending: 30,
        job_types: ["image_colors"],
        max_priority: 0,
      },
    );
    assert.ok((c.refused as Record<string, number>).max_pending! > 0, "c's refusals by max_pending");
    assert.equal((c.refused as Record<string, number>).job_types, 1);
    assert.equal((c.refused as Record<string, number>).max_priority, 1);
    const own = await read(C);
    assert.deepEqual(
      own.clients?.map((x) => x.name),
      ["c"],
    );
    // The CLI's stats: a client's own row, against its limits.
    const ran = await runCli(["stats"], clientEnv(stack.baseUrl, C));
    assert.equal(ran.code, 0, said(ran));
    const row = ran.stdout.split("\n").find((line) => line.startsWith("c "));
    assert.match(row ?? "", /^c\s+0\/1\s+0\/30\s+1\s+image_colors\s+0\s+[1-9]\d*\s*$/, ran.stdout);
    assert.ok(!/^a\s/m.test(ran.stdout), "no other client's row");
    const metrics = await (await stack.request("/metrics", { key: null })).text();
    assert.match(metrics, /^media_client_jobs\{client="a",state="pending"\} \d+$/m);
    assert.match(metrics, /^media_client_refused_total\{client="c",limit="max_pending"\} [1-9]\d*$/m);
    assert.match(metrics, /^media_client_refused_total\{client="c",limit="job_types"\} 1$/m);
  });
});
