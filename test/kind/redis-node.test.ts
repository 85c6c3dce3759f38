// The node that holds Redis stopped (`docker stop`) after a burst was acknowledged, on the kind
// cluster of test/e2e/kind.sh: the API on the other worker says the service is unavailable (a
// submit answers 503 with an error, its readiness turns false), and once the node is back, Redis
// replays its append-only file and every acknowledged job is there and ends, once. The chart's Redis
// writes its AOF with appendfsync everysec: an acknowledged write is in the file (the kernel's page
// cache) before the answer, and on disk within a second; stopping the node's processes loses none of
// it, only the machine's own crash within that second could.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { eventually } from "../k8s/support/eventually.js";
import { answered, api, burst, endings, settle, sleep } from "./support/burst.js";
import {
  docker,
  figure,
  kindTarget,
  nodeReady,
  portForward,
  seconds,
  type KindTarget,
} from "./support/kind.js";
import { installRelease, podsOf, type Release } from "./support/release.js";

const JOBS = 100;

let t: KindTarget;
let r: Release;
let stopped = false;
let forward: { url: string; stop(): void } | undefined;

before(async () => {
  t = await kindTarget();
  r = await installRelease(t, "redisnode");
});

after(async () => {
  forward?.stop();
  if (stopped) await docker(["start", r.redisNode]).catch(() => undefined);
  await r?.close();
});

describe("the node that holds Redis stopped", () => {
  test("the API says unavailable (503, not ready); back, no acknowledged job is lost", async () => {
    const redisPod = (await podsOf(r, "redis"))[0];
    assert.equal(redisPod?.spec?.nodeName, r.redisNode, "Redis runs on its volume's node");
    // The API replica on the other worker, reached through the API server: its Service drops it once
    // it is not ready, and the answer to read is its own.
    const apiPod = (await podsOf(r, "api")).find((p) => p.spec?.nodeName === r.otherNode);
    assert.ok(apiPod, "an API replica on the other worker");
    forward = await portForward(t, r.namespace, apiPod.metadata!.name!, 8080);

    const { acked } = await burst(r, JOBS).done;
    assert.equal(acked.length, JOBS, "every job of the burst acknowledged");
    const stoppedAt = Date.now();
    stopped = true;
    await docker(["stop", r.redisNode]);

    const refusal = await eventually(
      "a submit to be refused with 503",
      async () => {
        const res = await api(r, forward!.url, "/api/v1/jobs/image/colors", {
          method: "POST",
          json: { source_bucket: "media", source_key: "in/small.png" },
        }).catch(() => undefined);
        return res?.status === 503 ? res : undefined;
      },
      120_000,
    );
    figure("time until the API answers 503", seconds(Date.now() - stoppedAt));
    assert.equal(typeof refusal.body.error, "string");
    const ready = await api(r, forward.url, "/health/ready");
    assert.equal(ready.status, 503);
    const deps = ready.body.dependencies as Record<string, { status: string }>;
    assert.equal(deps.queue_store?.status, "unhealthy");
    await eventually(
      "the API replica's readiness to be false",
      async () => {
        const pod = await t.core.readNamespacedPod({ name: apiPod.metadata!.name!, namespace: r.namespace });
        return pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "False") || undefined;
      },
      60_000,
    );
    figure("time until the API replica is not ready", seconds(Date.now() - stoppedAt));

    await sleep(5_000);
    await docker(["start", r.redisNode]);
    stopped = false;
    await eventually(
      `node ${r.redisNode} Ready`,
      async () => (await nodeReady(t, r.redisNode)) || undefined,
      300_000,
    );
    await eventually(
      "a submit to be taken again",
      async () => {
        const res = await api(r, r.apiUrl, "/api/v1/jobs/image/colors", {
          method: "POST",
          json: { source_bucket: "media", source_key: "in/small.png" },
        }).catch(() => undefined);
        return res?.status === 202 || undefined;
      },
      300_000,
    );
    figure("time to recover (Redis back, a submit taken)", seconds(Date.now() - stoppedAt));

    // Every acknowledged job is there: Redis replayed its append-only file.
    const missing: string[] = [];
    for (const id of acked) {
      const res = await answered(r, r.apiUrl, `/api/v1/jobs/${id}`);
      if (res.status === 404) missing.push(id);
    }
    figure("jobs acknowledged before the stop", acked.length);
    figure("missing after it", missing.length);
    assert.deepEqual(missing, [], "no acknowledged job lost");

    const views = await settle(r, acked, 420_000);
    const e = await endings(r, views);
    figure("completed", e.completed);
    figure("failed", e.failed);
    for (const error of e.otherErrors) figure("failed with", error);
    figure("duplicates (two endings, or two webhooks)", e.twiceEnded.length + e.twiceNotified.length);
    assert.deepEqual(e.twiceEnded, []);
    assert.deepEqual(e.twiceNotified, []);
    // A run cut off by the outage may fail (its runner could not reach Redis on every attempt); it
    // says why.
    for (const [id, job] of views) {
      if (job.status === "failed") assert.ok((job.error ?? "").length > 0, `job ${id} failed saying why`);
    }
  });
});
