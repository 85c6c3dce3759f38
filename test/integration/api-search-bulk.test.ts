// Search and bulk actions over HTTP: GET /api/v1/jobs with q, id_prefix, request_id, source_prefix,
// dest_prefix and client among 20,000 jobs of two clients (submitted through the store's batch
// path), and POST /api/v1/jobs/bulk/{cancel,retry} on 1,000 jobs: the dry run's count, calls bounded
// by `limit` and resumed by cursor, repeated and concurrent calls, each job changed once.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { JobStore } from "../../core/store/store.js";
import type { Submitter } from "../../core/store/visibility.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { makeSpec } from "../support/store.js";

let stack: TestStack;
let store: JobStore;

const CLIENTS = ["alice", "bob", "bulker", "picker"] as const;
const keyOf = (client: string) => `${client}-key-0123456789`;
const ADMIN = "ops-key-0123456789";
const by = (name: string): Submitter => ({ name, admin: false });

const PER_CLIENT = 10_000;
/** The ids of alice's and bob's jobs, in submission order: job i has source in/<client>/<i % 100>/<i>.jpg. */
const ids: Record<string, string[]> = { alice: [], bob: [] };
const BUCKET = "test-bucket";

before(async () => {
  stack = await startTestStack({
    apiKeys: [],
    config: {
      server: {
        clients: [
          ...CLIENTS.map((name) => ({ name, keys: [keyOf(name)] })),
          { name: "ops", keys: [ADMIN], admin: true },
        ],
      },
    },
  });
  store = stack.services.store;
  for (const client of ["alice", "bob"] as const) {
    for (let from = 0; from < PER_CLIENT; from += 1000) {
      const specs = Array.from({ length: 1000 }, (_, k) => {
        const i = from + k;
        return makeSpec("image_resize", {
          source_key: `in/${client}/${i % 100}/${i}.jpg`,
          dest_key: `out/${client}/${i}.webp`,
          request_id: `${client}-req-${Math.floor(i / 10)}`,
        });
      });
      ids[client]!.push(...(await store.submit(specs, undefined, by(client))).jobIds);
    }
  }
});
after(async () => {
  await stack?.close();
});

type Body = Record<string, unknown>;
interface Listed {
  id: string;
  status: string;
  source?: string;
  output?: string;
  error?: string;
  duration_seconds?: number;
}

async function call(key: string, path: string, json?: unknown): Promise<{ status: number; body: Body }> {
  const res = await stack.request(path, { key, ...(json !== undefined ? { method: "POST", json } : {}) });
  return { status: res.status, body: (await res.json()) as Body };
}

/** Every page of GET /jobs with `params`: the ids, in order, and the totals. */
async function search(key: string, params: Record<string, string>, limit = 1000) {
  const found: Listed[] = [];
  const totals = new Set<number>();
  let cursor: string | undefined;
  for (;;) {
    const qs = new URLSearchParams({
      ...params,
      limit: String(limit),
      ...(cursor ? { cursor } : {}),
    }).toString();
    const { status, body } = await call(key, `/api/v1/jobs?${qs}`);
    assert.equal(status, 200, JSON.stringify(body));
    found.push(...(body.jobs as Listed[]));
    totals.add(body.total as number);
    cursor = body.next_cursor as string | undefined;
    if (!cursor) return { found, ids: found.map((j) => j.id), totals };
  }
}

const sorted = (list: string[]) => [...list].sort();

describe("search among 20,000 jobs", () => {
  test("by id prefix and whole id: the owner and an admin find it, another client does not", async () => {
    const id = ids.alice![4321]!;
    const variants: Array<Record<string, string>> = [
      { id_prefix: id.slice(0, 8) },
      { q: id.slice(0, 8) },
      { id_prefix: id },
      { q: id },
    ];
    for (const params of variants) {
      assert.deepEqual((await search(keyOf("alice"), params)).ids, [id], JSON.stringify(params));
      assert.deepEqual((await search(ADMIN, params)).ids, [id]);
      assert.deepEqual((await search(keyOf("bob"), params)).ids, [], "bob does not find alice's job");
    }
  });

  test("by request id: the ten jobs submitted with it, matched whole", async () => {
    const expected = ids.bob!.slice(420, 430);
    for (const params of [{ request_id: "bob-req-42" }, { q: "bob-req-42" }] as Array<
      Record<string, string>
    >) {
      const { ids: got, totals } = await search(keyOf("bob"), params);
      assert.deepEqual(sorted(got), sorted(expected));
      assert.deepEqual([...totals], [10]);
    }
    assert.deepEqual((await search(keyOf("alice"), { request_id: "bob-req-42" })).ids, []);
    const tenth = await search(ADMIN, { request_id: "bob-req-10" });
    assert.deepEqual(
      sorted(tenth.ids),
      sorted(ids.bob!.slice(100, 110)),
      "matched whole, not as a prefix of bob-req-100…",
    );
    assert.deepEqual((await search(ADMIN, { request_id: "bob-req-" })).ids, []);
  });

  test("by source and output prefix: newest first, paged by cursor, each job once", async () => {
    const expected = ids.alice!.filter((_, i) => i % 100 === 7);
    const full = await search(keyOf("alice"), { source_prefix: `${BUCKET}/in/alice/7/` }, 30);
    assert.equal(full.ids.length, 100);
    assert.deepEqual(sorted(full.ids), sorted(expected));
    assert.deepEqual([...full.totals], [100], "the total is the same on every page");
    assert.equal(new Set(full.ids).size, 100, "no job twice");
    const unfiltered = (await search(keyOf("alice"), {})).ids;
    assert.deepEqual(
      full.ids,
      unfiltered.filter((id) => expected.includes(id)),
      "in the list's order",
    );
    const byBox = await search(keyOf("alice"), { q: `s3://${BUCKET}/in/alice/7/` });
    assert.deepEqual(sorted(byBox.ids), sorted(expected), "q with a / is a source or output prefix");
    const out = await search(ADMIN, { dest_prefix: `${BUCKET}/out/bob/999` });
    assert.deepEqual(
      sorted(out.ids),
      sorted([999, 9990, 9991, 9992, 9993, 9994, 9995, 9996, 9997, 9998, 9999].map((i) => ids.bob![i]!)),
    );
    const row = out.found[0]!;
    assert.match(row.source!, /^test-bucket\/in\/bob\/\d+\/\d+\.jpg$/, "a list row names its source");
    assert.match(row.output!, /^test-bucket\/out\/bob\/\d+\.webp$/, "and its output");
  });

  test("client: an admin lists one client's jobs; a client may not name another (403), nor find its jobs", async () => {
    const q = { client: "bob", source_prefix: `${BUCKET}/in/bob/3/` };
    const got = await search(ADMIN, q);
    assert.deepEqual(sorted(got.ids), sorted(ids.bob!.filter((_, i) => i % 100 === 3)));
    const refused = await call(keyOf("alice"), `/api/v1/jobs?${new URLSearchParams(q).toString()}`);
    assert.equal(refused.status, 403);
    assert.match(String(refused.body.error), /client filter is for admin keys.*alice.*bob/);
    assert.equal(
      (await search(keyOf("alice"), { client: "alice", request_id: "alice-req-1" })).ids.length,
      10,
    );
    assert.deepEqual((await search(keyOf("alice"), { source_prefix: `${BUCKET}/in/bob/` })).ids, []);
  });

  test("a search broader than 10,000 index entries is refused with what to give instead", async () => {
    const { status, body } = await call(ADMIN, `/api/v1/jobs?q=${BUCKET}/in/`);
    assert.equal(status, 400);
    assert.match(String(body.error), /more than 10000 jobs.*longer prefix/);
    const { status: bad, body: badBody } = await call(ADMIN, `/api/v1/jobs?id_prefix=%01`);
    assert.equal(bad, 400);
    assert.match(String(badBody.error), /id_prefix/);
  });
});

/** Calls a bulk action until it has gone through every job (next_cursor), `limit` a call. */
async function bulkAll(key: string, action: string, body: Body) {
  const calls: Body[] = [];
  let cursor: string | undefined;
  for (;;) {
    const { status, body: answer } = await call(key, `/api/v1/jobs/bulk/${action}`, {
      ...body,
      ...(cursor ? { cursor } : {}),
    });
    assert.equal(status, 200, JSON.stringify(answer));
    calls.push(answer);
    cursor = answer.next_cursor as string | undefined;
    if (!cursor) return calls;
  }
}

const changedIds = (calls: Body[]) =>
  calls.flatMap((c) =>
    (c.jobs as Array<{ id: string; outcome: string }>)
      .filter((j) => j.outcome !== "skipped")
      .map((j) => j.id),
  );

describe("bulk actions on 1,000 jobs", () => {
  test("retry every failed job of a type, then cancel every pending one: dry run, bounded calls, each job once", async () => {
    const key = keyOf("bulker");
    const specs = Array.from({ length: 1000 }, (_, i) =>
      makeSpec(i % 2 === 0 ? "image_resize" : "image_colors", { source_key: `bulk/${i}.jpg` }),
    );
    const { jobIds } = await store.submit(specs, undefined, by("bulker"));
    const failed = jobIds.filter((_, i) => i % 5 !== 0); // 800 failed, 200 pending
    for (const id of failed) await store.fail(id, "source s3://test-bucket/bulk/x.jpg not found");
    const failedResizes = failed.filter((id) => specs[jobIds.indexOf(id)]!.type === "image_resize");

    const filter = { type: "image_resize" };
    const dry = await call(key, "/api/v1/jobs/bulk/retry", { filter, dry_run: true });
    assert.equal(dry.status, 200);
    assert.equal(dry.body.matched, failedResizes.length, "the dry run counts the failed resizes");
    assert.equal(dry.body.changed, 0);
    assert.equal((await search(key, { status: "pending" })).ids.length, 200, "the dry run changed nothing");

    const calls = await bulkAll(key, "retry", { filter, limit: 150 });
    assert.ok(calls.length >= Math.ceil(failedResizes.length / 150), "bounded: at most limit jobs a call");
    for (const c of calls) assert.ok((c.jobs as unknown[]).length <= 150);
    const retried = changedIds(calls);
    assert.deepEqual(sorted(retried), sorted(failedResizes), "every failed resize retried, each once");
    // Repeated: every job was retried before, so none is retried again (retried_as).
    const repeated = await bulkAll(key, "retry", { filter, limit: 500 });
    assert.deepEqual(changedIds(repeated), [], "a repeated run retries nothing");
    assert.deepEqual(repeated[0]!.skipped, { "already retried": failedResizes.length });
    const retries = calls.flatMap((c) => (c.jobs as Array<{ retry_id?: string }>).map((j) => j.retry_id!));
    for (const id of retries.slice(0, 20)) {
      const job = (await call(key, `/api/v1/jobs/${id}`)).body;
      assert.equal(job.status, "pending");
      assert.ok(failedResizes.includes(String(job.retry_of)));
    }

    // Every pending job of the client: the 200 never failed and the retries.
    const pending = 200 + failedResizes.length;
    const dryCancel = await call(key, "/api/v1/jobs/bulk/cancel", { filter: {}, dry_run: true });
    assert.equal(dryCancel.body.matched, pending);
    // Two runs at once: each job is cancelled by one of them.
    const [a, b] = await Promise.all([
      bulkAll(key, "cancel", { filter: {}, limit: 200 }),
      bulkAll(key, "cancel", { filter: {}, limit: 200 }),
    ]);
    const cancelled = [...changedIds(a), ...changedIds(b)];
    assert.equal(cancelled.length, pending, "each pending job cancelled once, by one of the two runs");
    assert.equal(new Set(cancelled).size, pending);
    const again = await bulkAll(key, "cancel", { filter: {}, limit: 500 });
    assert.deepEqual(changedIds(again), [], "a repeated run cancels nothing");
    assert.equal(again[0]!.matched, 0);
    for (const id of cancelled.slice(0, 50)) {
      const timeline = (await call(key, `/api/v1/jobs/${id}/events`)).body as unknown as {
        events: Array<{ event: string }>;
      };
      assert.equal(timeline.events.filter((e) => e.event === "cancelled").length, 1);
    }
    const row = (await search(key, { status: "failed", type: "image_colors" }, 1)).found[0]!;
    assert.match(row.error!, /not found|cancelled by request/, "a list row carries the job's error");
  });

  test("by ids: the rows chosen, another client's ids not found; bad requests name what is wrong", async () => {
    const key = keyOf("picker");
    const { jobIds } = await store.submit(
      [makeSpec("image_colors"), makeSpec("image_colors"), makeSpec("image_colors")],
      undefined,
      by("picker"),
    );
    const foreign = ids.alice![0]!;
    const dry = await call(key, "/api/v1/jobs/bulk/cancel", { ids: [...jobIds, foreign], dry_run: true });
    assert.equal(dry.body.matched, 3);
    const done = await call(key, "/api/v1/jobs/bulk/cancel", { ids: [jobIds[0], jobIds[1], foreign] });
    assert.equal(done.body.changed, 2);
    assert.deepEqual(done.body.skipped, { "not found": 1 });
    const retry = await call(key, "/api/v1/jobs/bulk/retry", { ids: jobIds });
    assert.equal(retry.body.changed, 2, "the two cancelled jobs are retried");
    assert.deepEqual(retry.body.skipped, { "not failed": 1 });

    const both = await call(key, "/api/v1/jobs/bulk/cancel", { ids: jobIds, filter: {} });
    assert.equal(both.status, 400);
    assert.match(String(both.body.error), /give `filter` .* or `ids`, one of them/);
    const wrong = await call(key, "/api/v1/jobs/bulk/retry", { filter: { status: "pending" } });
    assert.equal(wrong.status, 400);
    assert.match(String(wrong.body.error), /filter\.status must be failed\b/);
    const tooMany = await call(key, "/api/v1/jobs/bulk/cancel", { filter: {}, limit: 501 });
    assert.equal(tooMany.status, 400);
    assert.match(String(tooMany.body.error), /limit/);
    const other = await call(key, "/api/v1/jobs/bulk/cancel", { filter: { client: "alice" }, dry_run: true });
    assert.equal(other.status, 403);
  });
});
