// The store's search (lua/list.lua `search`): the search indexes submit keeps and prune removes
// (shared and a client's own copies), each term (id prefix, request id, source and output prefix,
// and `any`, the one search box), combined with the other filters, paged newest first by the lists'
// cursor, isolated per client, and refused when it would read more than SEARCH_MAX index entries.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { SearchTooBroadError } from "../../core/store/errors.js";
import { SEARCH_MAX, type JobListFilter, type JobStore, type ListPosition } from "../../core/store/store.js";
import type { Submitter, Viewer } from "../../core/store/visibility.js";
import { makeSpec, sleep, storeKeys, storeSuite } from "../support/store.js";

let store: JobStore;
storeSuite((s) => (store = s), { retentionMs: 50 });

const BY_ALICE: Submitter = { name: "alice", admin: false };
const BY_BOB: Submitter = { name: "bob", admin: false };
const ALICE: Viewer = { client: "alice" };

/** Every page of a list from the first on: the ids in order and the totals. */
async function pages(filter: Omit<JobListFilter, "after">) {
  const ids: string[] = [];
  const totals: number[] = [];
  let after: ListPosition | undefined;
  for (let n = 0; ; n++) {
    assert.ok(n < 1000, "paging ends");
    const page = await store.listJobs({ ...filter, ...(after ? { after } : {}) });
    assert.ok(page.jobs.length <= filter.limit);
    ids.push(...page.jobs.map((j) => j.id));
    totals.push(page.total);
    if (!page.next) break;
    after = page.next;
  }
  return { ids, totals };
}

async function found(filter: Omit<JobListFilter, "limit">): Promise<string[]> {
  return (await pages({ limit: 1000, ...filter })).ids.sort();
}

describe("search", () => {
  test("each term finds what it names, and only that", async () => {
    const a = await store.submit([
      makeSpec("image_resize", {
        source_key: "in/2026/cat.jpg",
        dest_key: "out/cat.webp",
        request_id: "req-1",
      }),
      makeSpec("image_resize", {
        source_key: "in/2026/dog.jpg",
        dest_key: "out/dog.webp",
        request_id: "req-10",
      }),
      // A fixed key: the one makeSpec would make up (out/<random uuid>) starts with out/d one time
      // in sixteen, and the output prefix below would find it.
      makeSpec("image_colors", {
        source_key: "in/2025/cat.jpg",
        dest_key: "out/x-colors",
        request_id: "req-1",
      }),
    ]);
    const [cat, dog, colors] = a.jobIds as [string, string, string];
    assert.deepEqual(await found({ search: { idPrefix: cat } }), [cat], "a whole id");
    assert.deepEqual(
      await found({ search: { idPrefix: dog.slice(0, 8) } }),
      [dog],
      "an id's first 8 characters",
    );
    assert.deepEqual(
      await found({ search: { requestId: "req-1" } }),
      [cat, colors].sort(),
      "a request id is matched whole: req-10 is not req-1",
    );
    assert.deepEqual(await found({ search: { requestId: "req" } }), []);
    assert.deepEqual(await found({ search: { sourcePrefix: "test-bucket/in/2026/" } }), [cat, dog].sort());
    assert.deepEqual(await found({ search: { sourcePrefix: "test-bucket/in/2025/cat.jpg" } }), [colors]);
    assert.deepEqual(await found({ search: { sourcePrefix: "other-bucket/in/" } }), []);
    assert.deepEqual(await found({ search: { destPrefix: "test-bucket/out/d" } }), [dog]);
    assert.deepEqual(
      await found({ search: { sourcePrefix: "test-bucket/in/", requestId: "req-1" } }),
      [cat, colors].sort(),
      "terms together: all of them",
    );
    assert.deepEqual(
      await found({
        search: { any: { sourcePrefix: "test-bucket/out/cat", destPrefix: "test-bucket/out/cat" } },
      }),
      [cat],
      "any: one of them is enough",
    );
    assert.deepEqual(
      await found({ search: { any: { idPrefix: "req-1", requestId: "req-1" } } }),
      [cat, colors].sort(),
    );
    assert.deepEqual(
      await found({ search: { requestId: "req-1" }, type: "image_colors" }),
      [colors],
      "with the type filter",
    );
    await store.fail(cat, "boom");
    assert.deepEqual(await found({ search: { requestId: "req-1" }, status: "failed" }), [cat], "with status");
    assert.deepEqual(await found({ search: { requestId: "req-1" }, status: "pending" }), [colors]);
  });

  test("a search pages newest first with the lists' cursor, its total the same on every page", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const { jobIds } = await store.submit(
        Array.from({ length: 5 }, (_, j) =>
          makeSpec("image_resize", { source_key: `in/batch-${i}-${j}.jpg` }),
        ),
      );
      ids.push(...jobIds);
      await sleep(2);
    }
    await store.submit([makeSpec("image_resize", { source_key: "elsewhere/x.jpg" })]);
    const all = await pages({ limit: 1000 });
    const expected = all.ids.filter((id) => ids.includes(id));
    const paged = await pages({ limit: 7, search: { sourcePrefix: "test-bucket/in/batch-" } });
    assert.deepEqual(paged.ids, expected, "the order of the unfiltered list, each job once");
    assert.deepEqual(new Set(paged.totals), new Set([30]));
    const windowed = await found({
      search: { sourcePrefix: "test-bucket/in/batch-" },
      createdAfter: Date.parse((await store.getJob(ids[25]!))!.created_at),
    });
    assert.deepEqual(windowed, ids.slice(25).sort(), "with created_after");
  });

  test("a client finds its own jobs only; an admin finds everyone's, or one client's with `client`", async () => {
    const mine = await store.submit(
      [makeSpec("image_resize", { source_key: "in/shared.jpg", request_id: "r" })],
      undefined,
      BY_ALICE,
    );
    const theirs = await store.submit(
      [makeSpec("image_resize", { source_key: "in/shared.jpg", request_id: "r" })],
      undefined,
      BY_BOB,
    );
    const [m, t] = [mine.jobIds[0]!, theirs.jobIds[0]!];
    assert.deepEqual(await found({ viewer: ALICE, search: { sourcePrefix: "test-bucket/in/" } }), [m]);
    assert.deepEqual(await found({ viewer: ALICE, search: { idPrefix: t } }), [], "another client's id");
    assert.deepEqual(await found({ viewer: ALICE, search: { requestId: "r" } }), [m]);
    assert.deepEqual(await found({ search: { requestId: "r" } }), [m, t].sort(), "an admin: everyone's");
    assert.deepEqual(
      await found({ client: "bob", search: { requestId: "r" } }),
      [t],
      "an admin asking for bob's",
    );
    assert.deepEqual(await found({ client: "bob" }), [t], "client alone");
    assert.deepEqual(
      await found({ viewer: ALICE, client: "bob" }),
      [m],
      "a client viewer lists its own whatever `client` says",
    );
  });

  test("prune removes a job's entries from every search index, the client's copies included", async () => {
    const { jobIds } = await store.submit(
      [makeSpec("image_resize", { request_id: "gone" }), makeSpec("image_colors", { request_id: "gone" })],
      undefined,
      BY_ALICE,
    );
    const k = store.keys;
    assert.equal(await store.redis.zcard(k.families.jobs_by_source), 2);
    assert.equal(await store.redis.zcard(`${k.prefix}client:alice:jobs:requests`), 2);
    for (const id of jobIds) await store.fail(id, "boom");
    await sleep(80);
    assert.equal(await store.prune(), 2);
    const left = (await storeKeys(store)).filter((key) => /jobs:(ids|sources|dests|requests)$/.test(key));
    assert.deepEqual(left, [], "no search index entry outlives its job");
    assert.deepEqual(await found({ search: { requestId: "gone" } }), []);
  });

  test("a job writing under a dest_prefix (a pipeline) is found by its output as bucket/prefix/, and pruned", async () => {
    const { dest_key: _unused, ...spec } = makeSpec("pipeline", {
      parameters: { dest_prefix: "out/site/42//", steps: { a: { type: "image_colors" } } },
    });
    const { jobIds } = await store.submit([spec], undefined, BY_ALICE);
    const [pipeline] = jobIds as [string];
    for (const prefix of ["test-bucket/out/site/", "test-bucket/out/site/42", "test-bucket/out/site/42/"])
      assert.deepEqual(await found({ search: { destPrefix: prefix } }), [pipeline], prefix);
    assert.deepEqual(await found({ search: { destPrefix: "test-bucket/out/site/42//" } }), []);
    assert.deepEqual(await found({ viewer: ALICE, search: { destPrefix: "test-bucket/out/site" } }), [
      pipeline,
    ]);
    await store.fail(pipeline, "boom");
    await sleep(80);
    assert.equal(await store.prune(), 1);
    const left = (await storeKeys(store)).filter((key) => /jobs:dests$/.test(key));
    assert.deepEqual(left, [], "no output index entry outlives its job");
  });

  test("a search that would read more than SEARCH_MAX index entries is refused, saying what to give instead", async () => {
    const key = store.keys.families.jobs_by_id;
    const pipeline = store.redis.pipeline();
    for (let i = 0; i <= SEARCH_MAX; i += 1000) {
      const members: Array<string | number> = [];
      for (let j = i; j < Math.min(i + 1000, SEARCH_MAX + 1); j++)
        members.push(0, `f${String(j).padStart(6, "0")}`);
      pipeline.zadd(key, ...members);
    }
    await pipeline.exec();
    await assert.rejects(
      store.listJobs({ limit: 10, search: { idPrefix: "f" } }),
      (err: Error) =>
        err instanceof SearchTooBroadError && /more than 10000 jobs.*longer prefix/.test(err.message),
    );
    const narrow = await store.listJobs({ limit: 10, search: { idPrefix: "f00001" } });
    assert.equal(narrow.total, 0, "ids in the index without a job in the reader's list are not found");
  });
});
