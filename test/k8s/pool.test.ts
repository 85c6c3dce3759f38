// The warm runner pool on the real node: `media-service controller` with executor.pool on, and a
// Deployment of `media-service pool` workers running as containers of the project's image (the
// runner pod's hardened spec). Small image jobs go through the pool and get no Kubernetes Job; a
// 100-megapixel one, too large for the pool, still gets its own Job with its own limits; a worker pod
// killed outright in the middle of a burst loses nothing and ends every job exactly once.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { readFile } from "node:fs/promises";
import sharp from "sharp";
import type { Job } from "../../core/jobs/records.js";
import { makeAudio, removeMediaDirs } from "../support/av.js";
import { streamEvents } from "../support/store.js";
import { startTestCluster, type TestCluster } from "./support/cluster.js";
import {
  eventually,
  startClusterStack,
  type ClusterStack,
  type ControllerProcess,
} from "./support/cluster-stack.js";

let cluster: TestCluster;

before(async () => {
  cluster = await startTestCluster();
});

after(async () => {
  await cluster?.stop();
  removeMediaDirs();
});

describe("the warm runner pool on the real node", () => {
  let cs: ClusterStack;
  let pool: Awaited<ReturnType<ClusterStack["startPool"]>>;
  let controller: ControllerProcess;

  before(async () => {
    cs = await startClusterStack({
      cluster,
      executor: {
        lease: "6s",
        pool: { enabled: true, classes: { image_resize: "auto", audio_convert: "pool" }, concurrency: 2 },
      },
      kubernetes: {
        resources: {
          image_resize: { requests: { cpu: "250m", memory: "256Mi" }, limits: { cpu: "1", memory: "1Gi" } },
        },
      },
    });
    controller = await cs.startController("controller");
    pool = await cs.startPool({ replicas: 1, concurrency: 2 });
    const photo = await sharp({
      create: { width: 1200, height: 800, channels: 3, background: "#336699", noise: { type: "gaussian", mean: 120, sigma: 30 } },
    }).jpeg({ quality: 85 }).toBuffer(); // prettier-ignore
    await cs.put("in/photo.jpg", photo, "image/jpeg");
  });

  after(async () => {
    await cs?.close();
  });

  function resize(key: string, dest: string) {
    return {
      type: "image_resize",
      source_bucket: cs.stack.bucket,
      source_key: key,
      dest_bucket: cs.stack.bucket,
      dest_key: dest,
      parameters: { width: 320, height: 240, format: "jpeg" },
    };
  }

  async function batch(jobs: Array<Record<string, unknown>>): Promise<string[]> {
    const res = await cs.stack.request("/api/v1/jobs/batch", { method: "POST", json: { jobs } });
    assert.equal(res.status, 201);
    return ((await res.json()) as { job_ids: string[] }).job_ids;
  }

  async function lastClaim(id: string): Promise<string | undefined> {
    const timeline = (await cs.stack.services.store.jobTimeline(id)) ?? [];
    return timeline.filter((e) => e.event === "claimed").at(-1)?.message;
  }

  test("small resizes run in the pool with no Job; a 100-megapixel one gets its own Job and limits", async () => {
    const big = await sharp({
      create: { width: 10_000, height: 10_000, channels: 3, background: "#808080", noise: { type: "gaussian", mean: 128, sigma: 70 } },
    }).jpeg({ quality: 90 }).toBuffer(); // prettier-ignore
    assert.ok(big.length > cs.stack.config.executor.pool.autoMaxSourceBytes, "above the pool's size");
    await cs.put("in/huge.jpg", big, "image/jpeg");

    const small = await batch(
      Array.from({ length: 20 }, (_, i) => resize("in/photo.jpg", `out/small-${i}.jpg`)),
    );
    const [huge] = await batch([resize("in/huge.jpg", "out/huge.jpg")]);
    for (const id of small) {
      const job = await cs.finished(id, 240_000);
      assert.equal(job.status, "completed", job.error);
      assert.match((await lastClaim(id)) ?? "", /^pool:media-pool-/, "run by a pool pod");
      assert.deepEqual(await cs.kubeJobs(id), [], "no Kubernetes Job");
    }
    const done = await cs.finished(huge!, 300_000);
    assert.equal(done.status, "completed", done.error);
    const { metadata } = done.result as { metadata: { width: number; height: number } };
    assert.ok(
      metadata.width <= 320 && metadata.height <= 240 && metadata.height > 0,
      JSON.stringify(metadata),
    );
    const [kjob] = await cs.kubeJobs(huge!);
    assert.ok(kjob, "the large job has its own Job");
    const container = kjob.spec!.template.spec!.containers[0]!;
    assert.deepEqual(container.resources!.limits, { cpu: "1", memory: "1Gi", "ephemeral-storage": "2Gi" });
    const pooled = ((await cs.stack.services.store.jobTimeline(huge!)) ?? []).some(
      (e) => e.event === "pooled",
    );
    assert.equal(pooled, false);
    // The controller counts both classes.
    const dispatched = (cls: string) =>
      controller.metric(`media_jobs_dispatched_total{type="image_resize",class="${cls}"}`);
    assert.ok(((await dispatched("pool")) ?? 0) >= 20, "pool jobs counted");
    assert.equal(await dispatched("job"), 1, "the large one counted as its own run");
    assert.equal(await controller.metric("media_pool_queue_length"), 0);
  });

  test("a pool pod killed outright in a 200-job burst: every job ends exactly once, completed", async () => {
    // A conversion of several seconds, which the pod certainly holds when it dies.
    await cs.put(
      "in/long.wav",
      await readFile(await makeAudio({ durationSeconds: 1200, sampleRate: 8000, channels: 1 })),
    );
    const long = await cs.submit("audio/convert", {
      source_bucket: cs.stack.bucket, source_key: "in/long.wav", dest_bucket: cs.stack.bucket,
      dest_key: "out/long.aac", format: "aac",
    }); // prettier-ignore
    const ids = [
      ...(await batch(Array.from({ length: 100 }, (_, i) => resize("in/photo.jpg", `out/burst-a-${i}.jpg`)))),
      ...(await batch(Array.from({ length: 100 }, (_, i) => resize("in/photo.jpg", `out/burst-b-${i}.jpg`)))),
    ];
    const [victim] = await pool.pods();
    const name = victim?.metadata?.name;
    assert.ok(name);
    await eventually(
      "the pod to hold the conversion, processing",
      async () =>
        (await cs.stack.services.store.getJob(long))?.status === "processing" &&
        (await lastClaim(long))?.startsWith(`pool:${name}:`)
          ? true
          : undefined,
      120_000,
    );
    await cs.admin.core.deleteNamespacedPod({ name, namespace: cs.namespace, gracePeriodSeconds: 0 });
    const jobs: Job[] = [];
    for (const id of [long, ...ids]) jobs.push(await cs.finished(id, 300_000));
    assert.deepEqual(
      jobs.filter((j) => j.status !== "completed").map((j) => `${j.id}: ${j.status} ${j.error ?? ""}`),
      [],
    );
    const ended = new Map<string, number>();
    for (const e of await streamEvents(cs.stack.services.store)) {
      const id = e.fields.job_id;
      if ((e.event === "job.completed" || e.event === "job.failed") && id)
        ended.set(id, (ended.get(id) ?? 0) + 1);
    }
    assert.deepEqual(
      [long, ...ids].filter((id) => ended.get(id) !== 1),
      [],
      "each job ended exactly once",
    );
    // The conversion came back when the pod's lease ran out and ran again in its replacement.
    const timeline = (await cs.stack.services.store.jobTimeline(long)) ?? [];
    assert.ok(
      timeline.some((e) => e.event === "requeued" && /stopped renewing the lease/.test(e.message ?? "")),
      JSON.stringify(timeline),
    );
    const last = (await lastClaim(long)) ?? "";
    assert.match(last, /^pool:media-pool-/);
    assert.ok(!last.startsWith(`pool:${name}:`), `run again elsewhere (${last})`);
    for (const id of [long, ...ids]) assert.deepEqual(await cs.kubeJobs(id), []);
  });
});
