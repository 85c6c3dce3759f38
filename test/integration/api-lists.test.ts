// Listing and paging over HTTP: GET /api/v1/jobs and GET /api/v1/jobs/batch with their filters
// (status, type, batch_id, created_after/created_before), `cursor` and `next_cursor`, and `total`.
// Each test lists as a client of its own, so what the others submit does not change its totals.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { JobType } from "../../core/jobs/types.js";
import type { JobStore } from "../../core/store/store.js";
import type { Submitter } from "../../core/store/visibility.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { claimJob, makeSpec, sleep } from "../support/store.js";

let stack: TestStack;
let store: JobStore;

const CLIENTS = ["pager", "filters", "alice", "bob", "batcher", "errors"] as const;
const keyOf = (client: string) => `${client}-key-0123456789`;
const ADMIN = "ops-key-0123456789";
const by = (name: string): Submitter => ({ name, admin: false });

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
});
after(async () => {
  await stack?.close();
});

type Body = Record<string, unknown>;
interface Listed {
  id: string;
  type?: string;
  status: string;
  created_at: string;
}

async function get(key: string, path: string): Promise<{ status: number; body: Body }> {
  const res = await stack.request(path, { key });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as Body };
}

async function page(key: string, path: string): Promise<Body> {
  const res = await get(key, path);
  assert.equal(res.status, 200, `GET ${path}: ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Every page of a list, following next_cursor: what each page held, and each page's total. */
async function pageAll(
  key: string,
  path: string,
  query: Record<string, string | number>,
  options: { between?: (pageNumber: number) => Promise<void> } = {},
): Promise<{ records: Listed[]; totals: number[]; pages: number }> {
  const field = path.endsWith("/batch") ? "batches" : "jobs";
  const records: Listed[] = [];
  const totals: number[] = [];
  let cursor: string | undefined;
  let pages = 0;
  for (;;) {
    const params = new URLSearchParams(
      Object.entries({ ...query, ...(cursor ? { cursor } : {}) }).map(([k, v]): [string, string] => [
        k,
        String(v),
      ]),
    );
    const body = await page(key, `${path}?${params.toString()}`);
    pages++;
    const list = body[field] as Listed[];
    assert.ok(list.length <= Number(query.limit), "a page holds at most limit records");
    records.push(...list);
    totals.push(body.total as number);
    if (!("next_cursor" in body)) break;
    assert.equal(typeof body.next_cursor, "string");
    assert.ok(list.length > 0, "a page with a next_cursor is not empty");
    cursor = body.next_cursor as string;
    await options.between?.(pages);
    assert.ok(pages < 1000, "paging ends");
  }
  return { records, totals, pages };
}

/** Bytewise, as Redis orders members of one score. */
const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

interface Known {
  id: string;
  ms: number;
  type: string;
  status: string;
  batch?: string;
}

/** The jobs of a client as the store holds them, in the documented order. */
async function knownJobs(client: string): Promise<Known[]> {
  const ids = await store.redis.zrange(store.keys.clientIndex(client, "jobs"), 0, -1);
  const known: Known[] = [];
  for (const id of ids) {
    const h = await store.redis.hgetall(store.keys.job(id));
    known.push({
      id,
      ms: Number(h.created_ms),
      type: h.type!,
      status: h.status!,
      ...(h.batch_id ? { batch: h.batch_id } : {}),
    });
  }
  return known.sort((a, b) => b.ms - a.ms || byteOrder(b.id, a.id));
}

/** Claims and starts a given job: pending → processing. */
async function startJob(type: JobType, id: string): Promise<void> {
  await claimJob(store, type, id);
  assert.equal(await store.start(id, 60_000), true, `job ${id} started`);
}

/** Submits as `client` `batches` batches of 100 jobs, then `singles` jobs one by one. */
async function submitMany(
  client: string,
  batches: number,
  singles: number,
  type: JobType = "image_optimize",
) {
  const ids: string[] = [];
  for (let b = 0; b < batches; b++) {
    const specs = Array.from({ length: 100 }, () => makeSpec(type));
    ids.push(...(await store.submit(specs, { failFast: false }, by(client))).jobIds);
  }
  for (let s = 0; s < singles; s++)
    ids.push(...(await store.submit([makeSpec(type)], undefined, by(client))).jobIds);
  return ids;
}

describe("paging GET /api/v1/jobs", () => {
  test("2,500 jobs (24 batches of 100, then 100 singles) page out each exactly once, newest first, ties by id descending, total 2500 on every page", async () => {
    const submitted = await submitMany("pager", 24, 100);
    assert.equal(submitted.length, 2500);
    const known = await knownJobs("pager");
    const ties = known.length - new Set(known.map((j) => j.ms)).size;
    assert.ok(ties >= 24 * 99, `jobs share creation times (${ties} ties)`);

    const { records, totals, pages } = await pageAll(keyOf("pager"), "/api/v1/jobs", { limit: 97 });
    assert.equal(pages, Math.ceil(2500 / 97));
    assert.deepEqual(
      records.map((j) => j.id),
      known.map((j) => j.id),
      "every job once, in the documented order",
    );
    assert.ok(
      totals.every((t) => t === 2500),
      `totals: ${[...new Set(totals)].join(", ")}`,
    );
    for (const [i, job] of records.entries()) {
      assert.equal(Date.parse(job.created_at), known[i]!.ms, "created_at is the time the order uses");
    }

    // The largest page at once, and the same pages again from the start: a cursor is a fixed place.
    const first = await page(keyOf("pager"), "/api/v1/jobs?limit=1000");
    assert.deepEqual(
      (first.jobs as Listed[]).map((j) => j.id),
      known.slice(0, 1000).map((j) => j.id),
    );
    const again = await page(keyOf("pager"), `/api/v1/jobs?limit=1000&cursor=${first.next_cursor as string}`);
    assert.deepEqual(
      (again.jobs as Listed[]).map((j) => j.id),
      known.slice(1000, 2000).map((j) => j.id),
    );
  });

  test("jobs submitted while paging do not shift the pages: each original job comes out once", async () => {
    const originals = new Set((await knownJobs("pager")).map((j) => j.id));
    const before = originals.size;
    assert.equal(before, 2500);
    let added = 0;
    const { records, totals } = await pageAll(
      keyOf("pager"),
      "/api/v1/jobs",
      { limit: 150 },
      {
        between: async (n) => {
          if (n % 4 !== 1) return;
          added += (await submitMany("pager", 1, 3)).length;
          await sleep(1);
        },
      },
    );
    assert.ok(added > 0);
    const ids = records.map((j) => j.id);
    assert.equal(new Set(ids).size, ids.length, "no job is listed twice");
    const seen = ids.filter((id) => originals.has(id));
    assert.equal(seen.length, before, "every original job is listed");
    assert.equal(totals[0], before);
    assert.ok(totals.at(-1)! > before, "the total counts the jobs added meanwhile");
  });

  test("each filter alone and combined, paged three at a time, against the store's own records", async () => {
    const client = "filters";
    const submit = async (types: JobType[], asBatch: boolean) => {
      const { jobIds, batchId } = await store.submit(
        types.map((t) => makeSpec(t)),
        asBatch ? { failFast: false } : undefined,
        by(client),
      );
      await sleep(3); // a distinct creation time for the next group
      return { jobIds, batchId };
    };
    const mixed: JobType[] = [
      "image_colors",
      "analyze",
      "image_colors",
      "image_ai_keywords",
      "analyze",
      "analyze",
    ];
    const b1 = await submit(mixed, true);
    const single1 = await submit(["analyze"], false);
    const b2 = await submit(mixed, true);
    const b3 = await submit([...mixed, ...mixed], true);
    await submit(["image_colors"], false);
    // Another client's jobs, which this one never lists.
    await store.submit([makeSpec("analyze"), makeSpec("image_colors")], { failFast: false }, by("bob"));

    // Statuses: some processing, some completed, some failed (mixed: 0 and 2 image_colors, 1, 4
    // and 5 analyze, 3 image_ai_keywords).
    const complete = async (type: JobType, id: string) => {
      await startJob(type, id);
      assert.equal(await store.complete(id, {}), true);
    };
    const fail = async (type: JobType, id: string) => {
      await startJob(type, id);
      assert.equal(await store.fail(id, "boom"), true);
    };
    await complete("analyze", b1.jobIds[1]!);
    await complete("analyze", single1.jobIds[0]!);
    await complete("image_colors", b3.jobIds[8]!);
    await fail("image_colors", b2.jobIds[0]!);
    await fail("analyze", b3.jobIds[4]!);
    await fail("image_colors", b3.jobIds[2]!);
    await startJob("analyze", b1.jobIds[5]!);
    await startJob("analyze", b3.jobIds[10]!);
    await startJob("image_ai_keywords", b2.jobIds[3]!);

    const known = await knownJobs(client);
    assert.ok(known.length >= 20);
    const msOf = (id: string) => known.find((j) => j.id === id)!.ms;
    const iso = (ms: number) => new Date(ms).toISOString();
    const windowFrom = iso(msOf(single1.jobIds[0]!)); // inclusive: single1 is in
    const windowTo = iso(msOf(b3.jobIds[0]!)); // exclusive: b3 is out

    const cases: Array<Record<string, string>> = [
      {},
      { status: "pending" },
      { status: "completed" },
      { type: "analyze" },
      { type: "image_ai_keywords" },
      { batch_id: b2.batchId! },
      { created_after: windowFrom },
      { created_before: windowTo },
      { created_after: windowFrom, created_before: windowTo },
      { status: "pending", type: "analyze" },
      { status: "failed", type: "image_colors" },
      { status: "pending", type: "analyze", created_after: windowFrom },
      { status: "pending", type: "analyze", created_after: windowFrom, created_before: windowTo },
      { type: "analyze", created_before: windowTo },
      { status: "pending", created_after: windowFrom, created_before: windowTo },
      { batch_id: b3.batchId!, type: "analyze" },
      { batch_id: b3.batchId!, status: "pending", type: "analyze", created_after: windowFrom },
      { batch_id: b1.batchId!, created_after: windowFrom },
      { batch_id: b1.batchId!, status: "processing" },
      { batch_id: "no-such-batch" },
      { created_after: windowTo, created_before: windowTo },
    ];
    let nonEmpty = 0;
    for (const filter of cases) {
      const expected = known
        .filter(
          (j) =>
            (!filter.status || j.status === filter.status) &&
            (!filter.type || j.type === filter.type) &&
            (!filter.batch_id || j.batch === filter.batch_id) &&
            (!filter.created_after || j.ms >= Date.parse(filter.created_after)) &&
            (!filter.created_before || j.ms < Date.parse(filter.created_before)),
        )
        .map((j) => j.id);
      if (expected.length > 0) nonEmpty++;
      const { records, totals } = await pageAll(keyOf(client), "/api/v1/jobs", { ...filter, limit: 3 });
      const what = JSON.stringify(filter);
      assert.deepEqual(
        records.map((j) => j.id),
        expected,
        what,
      );
      assert.ok(
        totals.every((t) => t === expected.length),
        `${what}: totals ${totals.join(",")} of ${expected.length}`,
      );
      for (const job of records) {
        if (filter.status) assert.equal(job.status, filter.status, what);
        if (filter.type) assert.equal(job.type, filter.type, what);
      }
    }
    assert.ok(nonEmpty >= cases.length - 3, "the cases find jobs");
  });

  test("a client pages through its own jobs only; an admin pages through everyone's", async () => {
    const alice = await submitMany("alice", 2, 5, "video_thumbnail");
    const bob = await submitMany("bob", 1, 5, "video_thumbnail");
    const aliceBatch = (await store.submit([makeSpec("video_thumbnail")], { failFast: false }, by("alice")))
      .batchId!;
    const bobBatch = (await store.submit([makeSpec("video_thumbnail")], { failFast: false }, by("bob")))
      .batchId!;

    const mine = await pageAll(keyOf("alice"), "/api/v1/jobs", { limit: 40, type: "video_thumbnail" });
    assert.equal(mine.records.length, alice.length + 1);
    assert.ok(
      mine.records.every((j) => !bob.includes(j.id)),
      "none of bob's jobs",
    );
    assert.ok(mine.totals.every((t) => t === alice.length + 1));
    assert.ok(alice.every((id) => mine.records.some((j) => j.id === id)));

    const theirs = await page(keyOf("alice"), `/api/v1/jobs?batch_id=${bobBatch}`);
    assert.deepEqual(theirs, { jobs: [], total: 0 }, "another client's batch lists nothing");
    const own = await page(keyOf("alice"), `/api/v1/jobs?batch_id=${aliceBatch}`);
    assert.equal(own.total, 1);

    // A cursor is only a place in the list: in another client's hands it shows that client's jobs.
    const bobFirst = await page(keyOf("bob"), "/api/v1/jobs?limit=1");
    const aliceFromBobs = await pageAll(keyOf("alice"), "/api/v1/jobs", {
      limit: 1000,
      cursor: bobFirst.next_cursor as string,
    });
    assert.ok(aliceFromBobs.records.every((j) => !bob.includes(j.id) && j.id !== bobBatch));

    const everyone = await pageAll(ADMIN, "/api/v1/jobs", { limit: 1000, type: "video_thumbnail" });
    const ids = new Set(everyone.records.map((j) => j.id));
    assert.ok(
      [...alice, ...bob].every((id) => ids.has(id)),
      "an admin lists both clients' jobs",
    );
    assert.equal(ids.size, everyone.records.length);
  });
});

describe("GET /api/v1/jobs and /jobs/batch: what they refuse, and the time window's edges", () => {
  test("a malformed cursor is a 400 {error} naming cursor, on both lists; a well-formed made-up one is only a place", async () => {
    const first = await store.submit([makeSpec("analyze"), makeSpec("analyze")], undefined, by("errors"));
    const given = (await page(keyOf("errors"), "/api/v1/jobs?limit=1")).next_cursor as string;
    assert.match(given, /^[0-9a-z]+\./);
    const bad = [
      "not a cursor!",
      "%00",
      "",
      ".",
      "abc",
      "1.",
      ".x",
      "1.-x",
      "1.x y",
      "1.x\u0000",
      // A stored batch id has one "<client>/" in front at most (core/store/keys.ts storedBatchId).
      "1.x/y/z",
      "1./y",
      "1.x:a/y",
      "ABC.x",
      "-1.x",
      "12345678901.x",
      `1.${"x".repeat(129)}`,
      `${given}\n`,
      Buffer.from(JSON.stringify({ s: 1, id: "x" })).toString("base64url"),
    ];
    for (const path of ["/api/v1/jobs", "/api/v1/jobs/batch"]) {
      for (const cursor of bad) {
        const res = await get(keyOf("errors"), `${path}?cursor=${encodeURIComponent(cursor)}`);
        assert.equal(
          res.status,
          400,
          `${path} cursor ${JSON.stringify(cursor)}: ${JSON.stringify(res.body)}`,
        );
        assert.deepEqual(Object.keys(res.body), ["error"]);
        assert.match(res.body.error as string, /^query parameter cursor is not a cursor of this API/);
      }
    }
    // A place the API did not give out but that is well formed shows what the reader may list after it.
    for (const [cursor, listed] of [
      ["0.zzz", 0],
      ["zzzzzzzzzz.0", 2],
      [`1${given}`, 2],
    ] as const) {
      const forged = await page(keyOf("errors"), `/api/v1/jobs?cursor=${cursor}`);
      assert.equal((forged.jobs as Listed[]).length, listed, cursor);
      assert.equal(forged.total, 2);
      assert.ok((forged.jobs as Listed[]).every((j) => first.jobIds.includes(j.id)));
    }
  });

  test("created_after is inclusive and created_before exclusive, to the millisecond (sub-millisecond digits round up); a window that ends before it starts is empty", async () => {
    const { jobIds } = await store.submit([makeSpec("analyze")], undefined, by("errors"));
    const ms = Number(await store.redis.hget(store.keys.job(jobIds[0]!), "created_ms"));
    const at = (t: number) => new Date(t).toISOString();
    // What a window lists: how many of the client's analyze jobs (`total`), and whether the new one.
    const listed = async (query: string) => {
      const body = await page(keyOf("errors"), `/api/v1/jobs?type=analyze&${query}`);
      const ids = (body.jobs as Listed[]).map((j) => j.id);
      return { total: body.total as number, it: ids.includes(jobIds[0]!) };
    };
    const it = (total: number) => ({ total, it: true });
    const without = (total: number) => ({ total, it: false });
    assert.deepEqual(await listed(`created_after=${at(ms)}`), it(1));
    assert.deepEqual(await listed(`created_before=${at(ms)}`), without(2), "only the older two");
    assert.deepEqual(await listed(`created_before=${at(ms + 1)}`), it(3));
    assert.deepEqual(await listed(`created_after=${at(ms + 1)}`), without(0));
    const justAfter = at(ms).replace("Z", "001Z"); // 1 µs after the job
    assert.deepEqual(await listed(`created_after=${justAfter}`), without(0));
    assert.deepEqual(await listed(`created_before=${justAfter}`), it(3));
    const offset = new Date(ms + 2 * 3600_000).toISOString().replace("Z", "+02:00");
    assert.deepEqual(await listed(`created_after=${encodeURIComponent(offset)}`), it(1), "the same instant");
    assert.deepEqual(await listed(`created_after=${at(ms)}&created_before=${at(ms + 1)}`), it(1));
    assert.deepEqual(await listed(`created_after=${at(ms)}&created_before=${at(ms)}`), without(0), "empty");
    assert.deepEqual(
      await listed(`created_after=${at(ms + 1)}&created_before=${at(ms)}`),
      without(0),
      "reversed",
    );
    const reversed = await page(
      keyOf("errors"),
      `/api/v1/jobs/batch?created_after=${at(ms + 1)}&created_before=${at(ms - 1)}`,
    );
    assert.deepEqual(reversed, { batches: [], total: 0 });
  });

  test("what is no time, type or batch id is a 400 naming the parameter", async () => {
    for (const path of ["/api/v1/jobs", "/api/v1/jobs/batch"]) {
      for (const value of ["yesterday", "2026-05-01", "2026-13-01T00:00:00Z", "2026-05-01T00:00:60Z"]) {
        for (const name of ["created_after", "created_before"]) {
          const res = await get(keyOf("errors"), `${path}?${name}=${encodeURIComponent(value)}`);
          assert.equal(res.status, 400, `${value}: ${JSON.stringify(res.body)}`);
          assert.equal(
            res.body.error,
            `query parameter ${name} must be an RFC 3339 date-time such as 2026-05-01T12:00:00Z, not ${value}`,
          );
        }
      }
      // A leap second is a date-time: the end of its minute.
      assert.equal((await get(keyOf("errors"), `${path}?created_after=2026-06-30T23:59:60Z`)).status, 200);
    }
    const type = await get(keyOf("errors"), "/api/v1/jobs?type=image_blur");
    assert.equal(type.status, 400);
    assert.match(type.body.error as string, /^query parameter type must be one of/);
    const batch = await get(keyOf("errors"), "/api/v1/jobs?batch_id=%20bad");
    assert.equal(batch.status, 400);
    assert.match(batch.body.error as string, /^query parameter batch_id must be a batch id/);
    const unknown = await get(keyOf("errors"), "/api/v1/jobs/batch?type=analyze");
    assert.equal(unknown.status, 400, "batches have no type filter");
  });
});

describe("paging GET /api/v1/jobs/batch", () => {
  test("batches page out each once, newest first, with status and time filters and their totals", async () => {
    const ids: string[] = [];
    const firstJobs: string[] = [];
    for (let i = 0; i < 9; i++) {
      const { batchId, jobIds } = await store.submit(
        [makeSpec("audio_convert")],
        { id: `batcher-${i}`, failFast: false },
        by("batcher"),
      );
      ids.push(batchId!);
      firstJobs.push(jobIds[0]!);
      await sleep(2);
    }
    // Batches 0, 3 and 6 complete (their one job does).
    for (const i of [0, 3, 6]) {
      await startJob("audio_convert", firstJobs[i]!);
      assert.equal(await store.complete(firstJobs[i]!, {}), true);
    }
    const newestFirst = [...ids].reverse();

    const all = await pageAll(keyOf("batcher"), "/api/v1/jobs/batch", { limit: 2 });
    assert.deepEqual(
      all.records.map((b) => b.id),
      newestFirst,
    );
    assert.ok(all.totals.every((t) => t === 9));
    assert.equal(all.pages, 5);

    const completed = await pageAll(keyOf("batcher"), "/api/v1/jobs/batch", {
      limit: 2,
      status: "completed",
    });
    assert.deepEqual(
      completed.records.map((b) => b.id),
      ["batcher-6", "batcher-3", "batcher-0"],
    );
    assert.ok(completed.totals.every((t) => t === 3));

    const created = async (id: string) =>
      (await page(keyOf("batcher"), `/api/v1/jobs/batch/${id}`)).batch as Body;
    const window = {
      created_after: (await created("batcher-2")).created_at as string,
      created_before: (await created("batcher-7")).created_at as string,
    };
    const windowed = await pageAll(keyOf("batcher"), "/api/v1/jobs/batch", { limit: 2, ...window });
    assert.deepEqual(
      windowed.records.map((b) => b.id),
      ["batcher-6", "batcher-5", "batcher-4", "batcher-3", "batcher-2"],
    );
    assert.ok(windowed.totals.every((t) => t === 5));
    const queuedInWindow = await pageAll(keyOf("batcher"), "/api/v1/jobs/batch", {
      limit: 1,
      status: "queued",
      ...window,
    });
    assert.deepEqual(
      queuedInWindow.records.map((b) => b.id),
      ["batcher-5", "batcher-4", "batcher-2"],
    );

    // The answer of a list that fits in one page is as it always was: no next_cursor.
    const whole = await page(keyOf("batcher"), "/api/v1/jobs/batch?limit=100");
    assert.deepEqual(Object.keys(whole).sort(), ["batches", "total"]);
    const others = await page(keyOf("alice"), "/api/v1/jobs/batch?limit=100");
    assert.ok(
      (others.batches as Listed[]).every((b) => !ids.includes(b.id)),
      "another client lists none of them",
    );
  });
});
