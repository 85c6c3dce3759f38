// Named clients in the store: what a client submits carries its name, each client has its own
// copies of the job and batch indexes (an admin has none), every transition keeps them in step with the shared ones,
// prune removes them, and a reader sees only what its viewer allows.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { JobStore } from "../../core/store/store.js";
import { EVERYONE, type Submitter, type Viewer } from "../../core/store/visibility.js";
import { claimAndStart, claimJob, makeSpec, rawJob, sleep, storeKeys, storeSuite } from "../support/store.js";

let store: JobStore;
storeSuite((s) => (store = s), { retentionMs: 50 });

const A = "image_resize";
const ALICE: Viewer = { client: "alice" };
const BOB: Viewer = { client: "bob" };
const BY_ALICE: Submitter = { name: "alice", admin: false };
const BY_BOB: Submitter = { name: "bob", admin: false };
const BY_ROOT: Submitter = { name: "root", admin: true };

/** Claims a given job (claimJob) and starts it. */
async function startJob(id: string): Promise<void> {
  await claimJob(store, A, id);
  assert.ok(await store.start(id, 60_000), `job ${id} started`);
}

async function ids(viewer: Viewer, status?: "pending" | "processing" | "completed" | "failed") {
  const list = await store.listJobs({ limit: 100, viewer, ...(status ? { status } : {}) });
  return { ids: list.jobs.map((j) => j.id).sort(), total: list.total };
}

describe("named clients in the store", () => {
  test("a submission records its client; reads by another client find nothing, an admin finds all", async () => {
    const mine = (await store.submit([makeSpec(A)], undefined, BY_ALICE)).jobIds[0]!;
    const theirs = (await store.submit([makeSpec(A)], undefined, BY_BOB)).jobIds[0]!;
    const nobody = (await store.submit([makeSpec(A)])).jobIds[0]!;

    assert.equal((await rawJob(store, mine)).client, "alice");
    assert.equal((await rawJob(store, nobody)).client, undefined);
    assert.equal((await store.getJob(mine, ALICE))?.id, mine);
    assert.equal(await store.getJob(mine, BOB), undefined);
    assert.equal(await store.getJobWithSeq(mine, BOB), undefined);
    assert.equal(await store.getJob(nobody, ALICE), undefined, "a job without a client is an admin's");
    assert.equal((await store.getJob(mine, EVERYONE))?.id, mine);
    assert.equal((await store.getJob(mine))?.id, mine, "internal readers see everything");
    assert.equal("client" in (await store.getJob(mine))!, false, "the client is not part of the record");

    assert.deepEqual(await ids(ALICE), { ids: [mine], total: 1 });
    assert.deepEqual(await ids(BOB), { ids: [theirs], total: 1 });
    assert.deepEqual(await ids(EVERYONE), { ids: [mine, theirs, nobody].sort(), total: 3 });
  });

  test("every transition moves the job in its client's status index as in the shared one", async () => {
    const [done, failed, requeued, waiting] = (
      await store.submit([makeSpec(A), makeSpec(A), makeSpec(A), makeSpec(A)], undefined, BY_ALICE)
    ).jobIds as [string, string, string, string];
    await store.submit([makeSpec(A)], undefined, BY_BOB);
    assert.deepEqual(await ids(ALICE, "pending"), {
      ids: [done, failed, requeued, waiting].sort(),
      total: 4,
    });

    // Alice and bob take turns in the queue (fair share): each of alice's jobs is claimed by its id.
    await startJob(done);
    assert.deepEqual(await ids(ALICE, "processing"), { ids: [done], total: 1 });
    await store.complete(done, { ok: true });
    await startJob(failed);
    await store.fail(failed, "boom");
    await startJob(requeued);
    await store.requeueJob(requeued, "node drained");

    assert.deepEqual(await ids(ALICE, "completed"), { ids: [done], total: 1 });
    assert.deepEqual(await ids(ALICE, "failed"), { ids: [failed], total: 1 });
    assert.deepEqual(await ids(ALICE, "processing"), { ids: [], total: 0 });
    assert.deepEqual(await ids(ALICE, "pending"), { ids: [requeued, waiting].sort(), total: 2 });
    assert.equal((await ids(BOB, "pending")).total, 1);
    assert.deepEqual(await ids(BOB, "completed"), { ids: [], total: 0 });
  });

  test("batches: recorded, listed and moved per client; prune leaves no client index entry behind", async () => {
    const batch = await store.submit([makeSpec(A), makeSpec(A)], { failFast: false }, BY_ALICE);
    const other = await store.submit([makeSpec(A)], { failFast: false }, BY_BOB);
    assert.equal((await store.getBatch(batch.batchId!, ALICE))?.id, batch.batchId);
    assert.equal(await store.getBatch(batch.batchId!, BOB), undefined);
    assert.equal((await store.getBatch(batch.batchId!, EVERYONE))?.id, batch.batchId);
    for (const id of batch.jobIds) assert.equal((await rawJob(store, id)).client, "alice");

    const list = (viewer: Viewer, status?: "queued" | "processing" | "completed") =>
      store
        .listBatches({ limit: 10, viewer, ...(status ? { status } : {}) })
        .then((l) => ({ ids: l.batches.map((b) => b.id), total: l.total }));
    assert.deepEqual(await list(ALICE), { ids: [batch.batchId], total: 1 });
    assert.deepEqual(await list(BOB, "queued"), { ids: [other.batchId], total: 1 });
    assert.equal((await list(EVERYONE)).total, 2);

    for (const id of batch.jobIds) {
      await startJob(id);
      await store.complete(id, {});
    }
    assert.deepEqual(await list(ALICE, "completed"), { ids: [batch.batchId], total: 1 });
    assert.deepEqual(await list(ALICE, "queued"), { ids: [], total: 0 });
    assert.deepEqual(await list(ALICE, "processing"), { ids: [], total: 0 });

    await sleep(80);
    assert.equal(await store.prune(), 3, "alice's two jobs and her batch");
    assert.deepEqual(await list(ALICE), { ids: [], total: 0 });
    assert.deepEqual(await ids(ALICE), { ids: [], total: 0 });
    // Her counters stay (their totals count on, as the shared ones do), with nothing finished in them.
    const left = (await storeKeys(store)).filter(
      (k) => k.includes(":client:alice:") && !k.includes(":stats:"),
    );
    assert.deepEqual(left, [], "no empty or stale index of alice's remains");
    const counts = (await store.counters(ALICE))[A];
    assert.deepEqual([counts.pending, counts.processing, counts.completed, counts.failed], [0, 0, 0, 0]);
    assert.deepEqual(await list(BOB), { ids: [other.batchId], total: 1 });
  });

  test("an admin's records carry its name and stay out of per-client indexes through every transition", async () => {
    const [done, waiting] = (await store.submit([makeSpec(A), makeSpec(A)], undefined, BY_ROOT)).jobIds as [
      string,
      string,
    ];
    const batch = await store.submit([makeSpec(A)], { failFast: false }, BY_ROOT);
    assert.equal((await rawJob(store, done)).client, "root");
    assert.equal(await claimAndStart(store, A), done);
    await store.complete(done, {});
    assert.deepEqual(
      (await storeKeys(store)).filter((k) => k.includes(":client:")),
      [],
      "no index of root's is written",
    );
    assert.deepEqual(await ids(EVERYONE, "completed"), { ids: [done], total: 1 });
    assert.equal((await ids(EVERYONE, "pending")).total, 2, "the other job and the batch's");

    // Made a plain client later: what it submitted as an admin is still its own by id, and its
    // lists hold what it submits from then on.
    const ROOT: Viewer = { client: "root" };
    assert.equal((await store.getJob(waiting, ROOT))?.id, waiting);
    assert.equal((await store.getBatch(batch.batchId!, ROOT))?.id, batch.batchId);
    assert.equal(await store.getJob(waiting, ALICE), undefined);
    const later = (await store.submit([makeSpec(A)], undefined, { name: "root", admin: false })).jobIds[0]!;
    assert.deepEqual(await ids(ROOT), { ids: [later], total: 1 });
  });
});

describe("a client's own queue counters", () => {
  const figures = async (viewer: Viewer) => {
    const q = (await store.queueStats(viewer)).queues[A]!;
    return { pending: q.pending, processing: q.processing, completed: q.completed, failed: q.failed };
  };

  test("every transition counts the job in its client's counters as in the shared ones; an admin's only in those", async () => {
    const [done, failed, requeued, cancelled, waiting] = (
      await store.submit(
        [makeSpec(A), makeSpec(A), makeSpec(A), makeSpec(A), makeSpec(A)],
        undefined,
        BY_ALICE,
      )
    ).jobIds as [string, string, string, string, string];
    const bobs = (await store.submit([makeSpec(A), makeSpec(A)], undefined, BY_BOB)).jobIds as [
      string,
      string,
    ];
    await store.submit([makeSpec(A)], undefined, BY_ROOT);
    assert.deepEqual(await figures(ALICE), { pending: 5, processing: 0, completed: 0, failed: 0 });
    assert.deepEqual(await figures(BOB), { pending: 2, processing: 0, completed: 0, failed: 0 });
    assert.deepEqual(await figures(EVERYONE), { pending: 8, processing: 0, completed: 0, failed: 0 });

    for (const id of [done, failed, requeued, bobs[0]]) {
      await claimJob(store, A, id);
      assert.equal(await store.start(id, 60_000), true);
    }
    await store.complete(done, { ok: true });
    await store.fail(failed, "boom");
    await store.requeueJob(requeued, "node drained");
    assert.equal(await store.cancel("job", cancelled, "cancelled by request"), "cancelled");
    await store.complete(bobs[0], {});
    assert.deepEqual(await figures(ALICE), { pending: 2, processing: 0, completed: 1, failed: 2 });
    assert.deepEqual(await figures(BOB), { pending: 1, processing: 0, completed: 1, failed: 0 });
    assert.deepEqual(await figures(EVERYONE), { pending: 4, processing: 0, completed: 2, failed: 2 });
    const counters = (await store.counters(ALICE))[A];
    assert.equal(counters.submittedTotal, 5);
    assert.equal(counters.completedTotal, 1);
    assert.equal(counters.failedTotal, 2);
    assert.ok(waiting);

    // Prune takes the finished jobs out of both.
    await sleep(80);
    await store.prune();
    assert.deepEqual(await figures(ALICE), { pending: 2, processing: 0, completed: 0, failed: 0 });
    assert.deepEqual(await figures(BOB), { pending: 1, processing: 0, completed: 0, failed: 0 });
    assert.deepEqual(await figures(EVERYONE), { pending: 4, processing: 0, completed: 0, failed: 0 });
    // A client that has submitted nothing has nothing counted.
    assert.deepEqual(await figures({ client: "carol" }), {
      pending: 0,
      processing: 0,
      completed: 0,
      failed: 0,
    });
  });
});
