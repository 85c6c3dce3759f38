// The Kubernetes executor under stress, on a real control plane: a controller SIGKILLed in the middle
// of a burst, two replicas with leader election, and a burst far larger than the running-Jobs cap.
// Every job must end exactly once, and the cluster must never hold more running Jobs than allowed.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Watch, type V1Job } from "@kubernetes/client-node";
import { TEST_BUCKET } from "../support/api.js";
import { makeAudio } from "../support/av.js";
import { makeImage } from "../support/media.js";
import { readFile } from "node:fs/promises";
import { startTestCluster, type TestCluster } from "./support/cluster.js";
import {
  eventually,
  kubeConfigFrom,
  startClusterStack,
  type ClusterStack,
  type ControllerProcess,
} from "./support/cluster-stack.js";

/** The cluster stack's bucket (its own on an outside S3 server), set when it starts. */
let B = TEST_BUCKET;
let cluster: TestCluster;

before(async () => {
  cluster = await startTestCluster();
});

after(async () => {
  await cluster?.stop();
});

async function submitColors(cs: ClusterStack, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let offset = 0; offset < count; offset += 100) {
    const jobs = Array.from({ length: Math.min(100, count - offset) }, () => ({
      type: "image_colors",
      source_bucket: B,
      source_key: "in/small.png",
      parameters: { color_count: 3 },
    }));
    const res = await cs.stack.request("/api/v1/jobs/batch", { method: "POST", json: { jobs } });
    const body = (await res.json()) as { job_ids: string[]; error?: string };
    assert.equal(res.status, 201, body.error);
    ids.push(...body.job_ids);
  }
  return ids;
}

/** Events of one type in the store's events stream, counted per job id. */
async function eventCounts(cs: ClusterStack, event: string): Promise<Map<string, number>> {
  const redis = cs.stack.services.redis;
  const entries = (await redis.xrange(cs.stack.services.store.keys.events(), "-", "+")) as Array<
    [string, string[]]
  >;
  const counts = new Map<string, number>();
  for (const [, fields] of entries) {
    const f = new Map<string, string>();
    for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i]!, fields[i + 1]!);
    if (f.get("event") === event) counts.set(f.get("job_id")!, (counts.get(f.get("job_id")!) ?? 0) + 1);
  }
  return counts;
}

/** Watches the namespace's Jobs and records the most that were ever unfinished at once. */
async function watchRunningJobs(
  namespace: string,
): Promise<{ peak(): number; created(): number; stop(): void }> {
  const watch = new Watch(kubeConfigFrom(cluster.cp.kubeconfigPath));
  const unfinished = new Set<string>();
  const seen = new Set<string>();
  let peak = 0;
  const finished = (job: V1Job) =>
    job.status?.conditions?.some(
      (c) => c.status === "True" && (c.type === "Complete" || c.type === "Failed"),
    );
  const request = await watch.watch(
    `/apis/batch/v1/namespaces/${namespace}/jobs`,
    {},
    (phase: string, job: V1Job) => {
      const name = job.metadata!.name!;
      seen.add(name);
      if (phase === "DELETED" || finished(job)) unfinished.delete(name);
      else unfinished.add(name);
      peak = Math.max(peak, unfinished.size);
    },
    () => undefined,
  );
  return { peak: () => peak, created: () => seen.size, stop: () => request.abort() };
}

describe("a controller killed in the middle of a burst", () => {
  let cs: ClusterStack;
  before(async () => {
    cs = await startClusterStack({
      cluster,
      kubernetes: { max_running_jobs: 4 },
      executor: { lease: "5s" },
    });
    B = cs.stack.bucket;
    await cs.put("in/small.png", await makeImage({ width: 96, height: 64, format: "png", photo: true }));
  });
  after(async () => {
    await cs?.close();
  });

  test("every job still ends exactly once, in exactly one Kubernetes Job and one pod", async () => {
    const first = await cs.startController("controller-a");
    const ids = await submitColors(cs, 30);
    await eventually("a few Jobs to be created", async () => {
      const list = await cs.admin.batch.listNamespacedJob({ namespace: cs.namespace });
      return list.items.length >= 6 ? true : undefined;
    });
    await first.kill("SIGKILL");
    const second = await cs.startController("controller-b");

    for (const id of ids) {
      const job = await cs.finished(id, 240_000);
      assert.equal(job.status, "completed", `${id}: ${job.error}`);
      assert.equal(job.attempts, 1, `${id} ran once`);
    }
    const completed = await eventCounts(cs, "job.completed");
    const started = await eventCounts(cs, "job.started");
    for (const id of ids) {
      assert.equal(completed.get(id), 1, `${id}: one job.completed event`);
      assert.equal(started.get(id), 1, `${id}: one job.started event`);
    }
    const jobs = (await cs.admin.batch.listNamespacedJob({ namespace: cs.namespace })).items;
    const pods = (await cs.admin.core.listNamespacedPod({ namespace: cs.namespace })).items;
    for (const id of ids) {
      const own = jobs.filter((j) => j.metadata?.annotations?.["media-service.io/job-id"] === id);
      assert.equal(own.length, 1, `${id}: one Kubernetes Job`);
      const ownPods = pods.filter(
        (p) => p.metadata?.labels?.["batch.kubernetes.io/job-name"] === own[0]!.metadata!.name,
      );
      assert.equal(ownPods.length, 1, `${id}: one pod (never run twice)`);
    }
    assert.equal(await second.metric("media_controller_leader"), 1);
  });
});

describe("two controller replicas", () => {
  let cs: ClusterStack;
  before(async () => {
    cs = await startClusterStack({ cluster });
    B = cs.stack.bucket;
    await cs.put("in/small.png", await makeImage({ width: 96, height: 64, format: "png", photo: true }));
  });
  after(async () => {
    await cs?.close();
  });

  const leaders = async (controllers: ControllerProcess[]) => {
    const flags = await Promise.all(
      controllers.map(async (c) => ((await c.metric("media_controller_leader").catch(() => 0)) ?? 0) === 1),
    );
    return controllers.filter((_, i) => flags[i]);
  };

  test("exactly one leads; when it dies the standby takes over and jobs keep completing", async () => {
    const a = await cs.startController("replica-a");
    const b = await cs.startController("replica-b");
    const leader = await eventually("one leader", async () => {
      const l = await leaders([a, b]);
      return l.length === 1 ? l[0] : undefined;
    });
    const standby = leader === a ? b : a;
    // Only the leader creates Jobs; the standby stays ready (it reaches the API server).
    assert.equal((await standby.get("/readyz")).status, 200);
    const lease = await cs.admin.coordination.readNamespacedLease({
      name: "media-service-controller",
      namespace: cs.namespace,
    });
    assert.ok(lease.spec?.holderIdentity, "the Lease has a holder");

    const [before] = await submitColors(cs, 1);
    assert.equal((await cs.finished(before!)).status, "completed");

    await leader.kill("SIGKILL");
    await eventually(
      "the standby to lead",
      async () => ((await leaders([standby])).length === 1 ? true : undefined),
      30_000,
    );
    const after = await cs.admin.coordination.readNamespacedLease({
      name: "media-service-controller",
      namespace: cs.namespace,
    });
    assert.notEqual(after.spec!.holderIdentity, lease.spec.holderIdentity, "the Lease changed hands");
    assert.ok((after.spec!.leaseTransitions ?? 0) >= 1);

    const [later] = await submitColors(cs, 1);
    assert.equal((await cs.finished(later!)).status, "completed");

    // A leader that stops cleanly gives the Lease up: holder cleared for the next candidate.
    await standby.kill("SIGTERM");
    const released = await cs.admin.coordination.readNamespacedLease({
      name: "media-service-controller",
      namespace: cs.namespace,
    });
    assert.equal(released.spec!.holderIdentity ?? "", "");
  });
});

const CAP = 5;
const BURST = 60;

describe("a burst larger than the running-Jobs cap", () => {
  let cs: ClusterStack;
  before(async () => {
    // The cap below what the node fits (8 runner pods at 250m on its 2 CPUs), so the cap is what holds.
    cs = await startClusterStack({ cluster, kubernetes: { max_running_jobs: CAP } });
    B = cs.stack.bucket;
    await cs.put("in/small.png", await makeImage({ width: 96, height: 64, format: "png", photo: true }));
  });
  after(async () => {
    await cs?.close();
  });

  test(`${BURST} jobs with a cap of ${CAP} never have more than ${CAP} Jobs running, and all complete`, async () => {
    const watcher = await watchRunningJobs(cs.namespace);
    const controller = await cs.startController("controller");
    try {
      const ids = await submitColors(cs, BURST);
      for (const id of ids) {
        const job = await cs.finished(id, 600_000);
        assert.equal(job.status, "completed", `${id}: ${job.error}`);
      }
      assert.ok(watcher.peak() <= CAP, `at most ${CAP} Jobs ran at once (saw ${watcher.peak()})`);
      assert.ok(watcher.peak() >= 2, `jobs ran in parallel (peak ${watcher.peak()})`);
      assert.equal(watcher.created(), BURST, "one Kubernetes Job per job");
      assert.equal(
        await controller.metric('media_controller_jobs_created_total{type="image_colors"}'),
        BURST,
      );
    } finally {
      watcher.stop();
    }
  });
});

describe("reconcile: the store and the cluster made to agree", () => {
  let cs: ClusterStack;
  before(async () => {
    cs = await startClusterStack({ cluster, executor: { lease: "4s" } });
    B = cs.stack.bucket;
    await cs.put(
      "in/long.wav",
      // An hour of audio (about 8 s to convert): the Job is deleted long before it could finish.
      await readFile(await makeAudio({ durationSeconds: 3600, sampleRate: 8000, channels: 1 })),
    );
  });
  after(async () => {
    await cs?.close();
  });

  test("a Job whose job record does not exist is deleted", async () => {
    await cs.startController("controller");
    const orphan = "0b9c3a52-5a0e-4f57-9d5e-1c2b3a4d5e6f";
    const name = `media-${orphan}`;
    await cs.admin.batch.createNamespacedJob({
      namespace: cs.namespace,
      body: {
        metadata: {
          name,
          labels: {
            "app.kubernetes.io/name": "media-service",
            "app.kubernetes.io/component": "runner",
            "app.kubernetes.io/managed-by": "media-service-controller",
            "app.kubernetes.io/instance": "media-service",
            "media-service.io/job-id": orphan,
          },
          annotations: { "media-service.io/job-id": orphan },
        },
        spec: {
          backoffLimit: 0,
          template: {
            spec: {
              restartPolicy: "Never",
              containers: [
                { name: "runner", image: cluster.image, imagePullPolicy: "Never", command: ["sleep", "600"] },
              ],
            },
          },
        },
      },
    });
    await eventually("the orphan Job to be deleted", async () => {
      const list = await cs.admin.batch.listNamespacedJob({ namespace: cs.namespace });
      return list.items.some((j) => j.metadata?.name === name) ? undefined : true;
    });
  });

  test("a processing job whose Job was deleted behind the controller's back runs again and completes", async () => {
    const id = await cs.submit("audio/convert", {
      source_bucket: B, source_key: "in/long.wav", dest_bucket: B, dest_key: "out/again.mp3", format: "mp3",
    }); // prettier-ignore
    await eventually("the job to be processing", async () =>
      (await cs.stack.services.store.getJob(id))?.status === "processing" ? true : undefined,
    );
    await cs.admin.batch.deleteNamespacedJob({
      name: `media-${id}`,
      namespace: cs.namespace,
      propagationPolicy: "Background",
    });
    const job = await cs.finished(id, 240_000);
    assert.equal(job.status, "completed", job.error);
    assert.equal(job.attempts, 2, "re-queued once, ran a second time");
    const requeued = await eventCounts(cs, "job.requeued");
    assert.equal(requeued.get(id), 1);
  });
});
