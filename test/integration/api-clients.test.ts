// Named clients over HTTP: each client sees only the jobs and batches it submitted (a job of another
// client is a 404, the same answer as a job that does not exist), an admin sees all of them, every
// key of a client (rotation) is the same client, and server.api_keys beside named clients are the
// client "default".
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startTestStack, type TestStack } from "../support/api.js";

let stack: TestStack;
const ALICE = "alice-key-0123456789";
const ALICE_NEXT = "alice-key-rotated-abcdef";
const BOB = "bob-key-0123456789";
const ADMIN = "admin-key-0123456789";
const PLAIN = "plain-key-0123456789";

before(async () => {
  stack = await startTestStack({
    apiKeys: [PLAIN],
    config: {
      server: {
        clients: [
          { name: "alice", keys: [ALICE, ALICE_NEXT] },
          { name: "bob", keys: [BOB] },
          { name: "ops", keys: [ADMIN], admin: true },
        ],
      },
    },
  });
});
after(async () => {
  await stack?.close();
});

type Body = Record<string, unknown>;
const SOURCE = { source_bucket: "media-in", source_key: "uploads/photo.jpg" };

async function call(key: string, path: string, init: { method?: string; json?: unknown } = {}) {
  const res = await stack.request(path, { ...init, key });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Body, text };
}

async function submit(key: string): Promise<string> {
  const res = await call(key, "/api/v1/jobs/image/colors", { method: "POST", json: SOURCE });
  assert.equal(res.status, 202, res.text);
  return res.body.job_id as string;
}

async function listed(key: string, query = ""): Promise<{ ids: string[]; total: number }> {
  const res = await call(key, `/api/v1/jobs?limit=100${query}`);
  assert.equal(res.status, 200, res.text);
  const jobs = res.body.jobs as Array<{ id: string }>;
  return { ids: jobs.map((j) => j.id).sort(), total: res.body.total as number };
}

describe("named clients", () => {
  test("a job of client A is 404 for client B, visible to A with either of its keys and to an admin", async () => {
    const job = await submit(ALICE);
    const mine = await call(ALICE, `/api/v1/jobs/${job}`);
    assert.equal(mine.status, 200, mine.text);
    assert.equal(mine.body.id, job);
    assert.equal("client" in mine.body, false);
    assert.equal(
      (await call(ALICE_NEXT, `/api/v1/jobs/${job}`)).status,
      200,
      "a rotated key is the same client",
    );
    assert.equal((await call(ADMIN, `/api/v1/jobs/${job}`)).status, 200);

    const refused = await call(BOB, `/api/v1/jobs/${job}`);
    assert.equal(refused.status, 404);
    assert.deepEqual(
      refused.body,
      { error: `job ${job} not found` },
      "the same answer as a job that does not exist",
    );
    assert.equal((await call(PLAIN, `/api/v1/jobs/${job}`)).status, 404, "api_keys are the client default");

    const stream = await stack.request(`/api/v1/jobs/${job}/stream`, { key: BOB });
    assert.equal(stream.status, 404);
    assert.deepEqual(await stream.json(), { error: `job ${job} not found` });
  });

  test("lists and their totals hold a client's own jobs; an admin's hold everyone's", async () => {
    const before = { alice: await listed(ALICE), bob: await listed(BOB), all: await listed(ADMIN) };
    const a = await submit(ALICE_NEXT);
    const b = await submit(BOB);
    const d = await submit(PLAIN);
    const alice = await listed(ALICE);
    assert.equal(alice.total, before.alice.total + 1);
    assert.ok(alice.ids.includes(a) && !alice.ids.includes(b) && !alice.ids.includes(d));
    const bob = await listed(BOB, "&status=pending");
    assert.ok(bob.ids.includes(b) && !bob.ids.includes(a));
    assert.deepEqual(await listed(PLAIN), { ids: [d], total: 1 });
    const all = await listed(ADMIN);
    assert.equal(all.total, before.all.total + 3);
    for (const id of [a, b, d]) assert.ok(all.ids.includes(id));
  });

  test("batches: 404 for another client, listed for their own, all for an admin", async () => {
    const created = await call(ALICE, "/api/v1/jobs/batch", {
      method: "POST",
      json: { jobs: [{ type: "image_colors", ...SOURCE }] },
    });
    assert.equal(created.status, 201, created.text);
    const batch = created.body.batch_id as string;
    const [jobId] = created.body.job_ids as [string];

    assert.equal((await call(ALICE, `/api/v1/jobs/batch/${batch}?include_jobs=true`)).status, 200);
    const refused = await call(BOB, `/api/v1/jobs/batch/${batch}`);
    assert.equal(refused.status, 404);
    assert.deepEqual(refused.body, { error: `batch ${batch} not found` });
    assert.equal((await call(BOB, `/api/v1/jobs/${jobId}`)).status, 404, "a batch's jobs are its client's");
    assert.equal((await call(ADMIN, `/api/v1/jobs/batch/${batch}`)).status, 200);

    const batchIds = async (key: string) =>
      ((await call(key, "/api/v1/jobs/batch?limit=100")).body.batches as Array<{ id: string }>).map(
        (b) => b.id,
      );
    assert.ok((await batchIds(ALICE)).includes(batch));
    assert.ok(!(await batchIds(BOB)).includes(batch));
    assert.ok((await batchIds(ADMIN)).includes(batch));
  });

  test("a batch id a client chooses is its own: another client's taken id is no 409, tells nothing, and each reads its own", async () => {
    const create = (key: string) =>
      call(key, "/api/v1/jobs/batch", {
        method: "POST",
        json: { batch_id: "nightly-2026-11-28", jobs: [{ type: "image_colors", ...SOURCE }] },
      });
    const bobs = await create(BOB);
    assert.equal(bobs.status, 201, bobs.text);
    assert.equal(bobs.body.batch_id, "nightly-2026-11-28");
    const alices = await create(ALICE);
    assert.equal(alices.status, 201, alices.text);
    assert.equal(alices.body.batch_id, "nightly-2026-11-28");
    // Taken among one's own ids is still a 409.
    const again = await create(ALICE_NEXT);
    assert.equal(again.status, 409, again.text);
    assert.deepEqual(again.body, { error: "batch nightly-2026-11-28 already exists" });

    const [alicesJob] = alices.body.job_ids as [string];
    const [bobsJob] = bobs.body.job_ids as [string];
    for (const [key, job, other] of [
      [ALICE, alicesJob, bobsJob],
      [BOB, bobsJob, alicesJob],
    ] as const) {
      const got = await call(key, "/api/v1/jobs/batch/nightly-2026-11-28?include_jobs=true");
      assert.equal(got.status, 200, got.text);
      assert.equal((got.body.batch as Body).id, "nightly-2026-11-28");
      assert.deepEqual(
        (got.body.jobs as Array<{ id: string }>).map((j) => j.id),
        [job],
      );
      const viaJob = await call(key, `/api/v1/jobs/${job}`);
      assert.equal(viaJob.body.batch_id, "nightly-2026-11-28");
      const { ids } = await listed(key, "&batch_id=nightly-2026-11-28");
      assert.deepEqual(ids, [job]);
      assert.ok(!ids.includes(other));
      const listedBatches = (await call(key, "/api/v1/jobs/batch?limit=100")).body.batches as Array<{
        id: string;
      }>;
      assert.equal(listedBatches.filter((b) => b.id === "nightly-2026-11-28").length, 1);
    }
    // Cancelling one's own batch leaves the other client's alone.
    const cancelled = await call(BOB, "/api/v1/jobs/batch/nightly-2026-11-28/cancel", { method: "POST" });
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(
      ((await call(ALICE, `/api/v1/jobs/${alicesJob}`)).body as { status: string }).status,
      "pending",
    );
    // An admin sees both, each under its client's name.
    const admins = (
      (await call(ADMIN, "/api/v1/jobs/batch?limit=100")).body.batches as Array<{ id: string }>
    ).map((b) => b.id);
    assert.ok(
      admins.includes("alice/nightly-2026-11-28") && admins.includes("bob/nightly-2026-11-28"),
      admins.join(),
    );
    const adminGets = await call(
      ADMIN,
      `/api/v1/jobs/batch/${encodeURIComponent("alice/nightly-2026-11-28")}`,
    );
    assert.equal(adminGets.status, 200, adminGets.text);
    // Another client's id is not reachable in its stored form.
    assert.equal(
      (await call(ALICE, `/api/v1/jobs/batch/${encodeURIComponent("bob/nightly-2026-11-28")}`)).status,
      404,
    );
  });

  test("queue statistics: a client counts its own jobs, an admin everyone's", async () => {
    const stats = async (key: string) => {
      const res = await call(key, "/api/v1/queue/stats");
      assert.equal(res.status, 200, res.text);
      return res.body as {
        total_jobs: number;
        total_pending: number;
        queues: Record<string, { pending: number }>;
      };
    };
    const [alice, bob, admin] = [await stats(ALICE), await stats(BOB), await stats(ADMIN)];
    await submit(ALICE);
    await submit(ALICE);
    await submit(BOB);
    const after = { alice: await stats(ALICE), bob: await stats(BOB), admin: await stats(ADMIN) };
    assert.equal(after.alice.total_pending - alice.total_pending, 2);
    assert.equal(after.alice.queues.image_colors!.pending - alice.queues.image_colors!.pending, 2);
    assert.equal(after.bob.total_pending - bob.total_pending, 1);
    assert.equal(after.admin.total_pending - admin.total_pending, 3);
    // Nobody but an admin is told the totals.
    assert.ok(after.alice.total_jobs < after.admin.total_jobs);
    assert.equal(after.alice.total_jobs + after.bob.total_jobs <= after.admin.total_jobs, true);
    assert.equal(
      (await stats(ALICE_NEXT)).total_jobs,
      after.alice.total_jobs,
      "a rotated key is the same client",
    );
    // The figures per minute likewise: the depth of the queues is of one's own jobs.
    const depth = async (key: string) => {
      const res = await call(key, "/api/v1/stats/history?minutes=1");
      assert.equal(res.status, 200, res.text);
      return (res.body.points as Array<{ pending: number }>).at(-1)!.pending;
    };
    assert.equal(await depth(ALICE), after.alice.total_pending);
    assert.equal(await depth(BOB), after.bob.total_pending);
    assert.equal(await depth(ADMIN), after.admin.total_pending);
  });

  test("a key that belongs to no client is 401, told in lines that carry the request id and no key", async () => {
    const res = await stack.request("/api/v1/jobs", {
      key: "nobody-0123456789",
      headers: { "x-request-id": "clients-401" },
    });
    assert.equal(res.status, 401);
    assert.deepEqual(await res.json(), { error: "invalid API key" });
    const lines = stack.logs.filter((l) => l.request_id === "clients-401");
    assert.deepEqual(
      lines.map((l) => [l.event ?? l.msg, l.level]),
      [
        ["auth_failed", 40],
        ["request", 30],
      ],
      "the handler's line (through request.log) and the access line, each with the request id",
    );
    assert.ok(!JSON.stringify(lines).includes("nobody-0123456789"));
    const access = lines[1]!;
    assert.equal(access.status, 401);
    assert.equal(access.method, "GET");
  });

  test("the access line names the client", async () => {
    await stack.request("/api/v1/jobs", { key: ALICE, headers: { "x-request-id": "clients-named" } });
    const line = stack.logs.find((l) => l.request_id === "clients-named" && l.msg === "request");
    assert.equal(line?.client, "alice");
  });
});
