// Runner Jobs admitted by Kueue itself on the real node: Kueue's manager (built from its Go module),
// its CRDs and webhooks, a ResourceFlavor, a ClusterQueue of 2 CPU and a LocalQueue in the stack's
// namespace. Ten jobs asking 1 CPU each carry the queue's label, are created suspended, are admitted
// by Kueue two at a time (a watch on the Jobs and a sample of the pods never see more), and all
// complete, none failing as unschedulable though most wait for admission longer than
// unschedulable_timeout. A job whose queue's ClusterQueue has no quota waits suspended past that
// timeout too; cancelling it deletes its Job, and the garbage collector its Workload.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CustomObjectsApi, Watch, type V1Job } from "@kubernetes/client-node";
import { makeImage } from "../support/media.js";
import { startTestCluster, type TestCluster } from "../k8s/support/cluster.js";
import {
  eventually,
  kubeConfigFrom,
  startClusterStack,
  type ClusterStack,
  type ControllerProcess,
} from "../k8s/support/cluster-stack.js";
import { KUEUE_GROUP, KUEUE_VERSION, startKueue, type Kueue } from "../k8s/support/kueue.js";

const QUEUE_LABEL = "kueue.x-k8s.io/queue-name";
const JOBS = 10;
const QUOTA_CPUS = 2;

let cluster: TestCluster;
let kueue: Kueue;

before(async () => {
  cluster = await startTestCluster();
  kueue = await startKueue(cluster.cp, (m) => process.stderr.write(`${m}\n`));
});

after(async () => {
  await kueue?.stop();
  await cluster?.stop();
});

interface Workload {
  metadata: { name: string; ownerReferences?: Array<{ uid: string; kind: string }> };
  status?: { conditions?: Array<{ type: string; status: string }> };
}

/** Finished as Kueue counts it (its quota given back): Complete or Failed. */
const finished = (job: V1Job) =>
  job.status?.conditions?.some(
    (c) => c.status === "True" && (c.type === "Complete" || c.type === "Failed"),
  ) ?? false;

describe("runner Jobs admitted by Kueue", () => {
  let cs: ClusterStack;
  let controller: ControllerProcess;
  let custom: CustomObjectsApi;

  const create = (plural: string, body: object, namespace?: string) =>
    namespace
      ? custom.createNamespacedCustomObject({
          group: KUEUE_GROUP,
          version: KUEUE_VERSION,
          namespace,
          plural,
          body,
        })
      : custom.createClusterCustomObject({ group: KUEUE_GROUP, version: KUEUE_VERSION, plural, body });

  async function workloads(): Promise<Workload[]> {
    const list = (await custom.listNamespacedCustomObject({
      group: KUEUE_GROUP,
      version: KUEUE_VERSION,
      namespace: cs.namespace,
      plural: "workloads",
    })) as { items: Workload[] };
    return list.items;
  }

  /** A ClusterQueue of `cpus` CPUs (and memory enough) and its LocalQueue `name` in the namespace. */
  async function queue(name: string, cpus: number): Promise<void> {
    await create("clusterqueues", {
      apiVersion: `${KUEUE_GROUP}/${KUEUE_VERSION}`,
      kind: "ClusterQueue",
      metadata: { name: `${cs.namespace}-${name}` },
      spec: {
        namespaceSelector: {},
        resourceGroups: [
          {
            // Every resource a runner pod requests: a ClusterQueue that does not cover one (runner
            // pods request ephemeral-storage) admits none of them.
            coveredResources: ["cpu", "memory", "ephemeral-storage"],
            flavors: [
              {
                name: "default-flavor",
                resources: [
                  { name: "cpu", nominalQuota: String(cpus) },
                  { name: "memory", nominalQuota: "64Gi" },
                  { name: "ephemeral-storage", nominalQuota: "64Gi" },
                ],
              },
            ],
          },
        ],
      },
    });
    await create(
      "localqueues",
      {
        apiVersion: `${KUEUE_GROUP}/${KUEUE_VERSION}`,
        kind: "LocalQueue",
        metadata: { name, namespace: cs.namespace },
        spec: { clusterQueue: `${cs.namespace}-${name}` },
      },
      cs.namespace,
    );
  }

  before(async () => {
    cs = await startClusterStack({
      cluster,
      kubernetes: {
        kueue: { queue_name: "media" },
        job_labels: { team: "media" },
        // The held job's queue has no quota: it waits for admission until cancelled.
        per_type: { image_resize: { queue_name: "held" } },
        max_running_jobs: 20,
        // Most jobs wait for admission far longer: no wait for admission counts as one for a node.
        unschedulable_timeout: "10s",
      },
    });
    custom = kubeConfigFrom(cluster.cp.kubeconfigPath).makeApiClient(CustomObjectsApi);
    await create("resourceflavors", {
      apiVersion: `${KUEUE_GROUP}/${KUEUE_VERSION}`,
      kind: "ResourceFlavor",
      metadata: { name: "default-flavor" },
    });
    await queue("media", QUOTA_CPUS);
    await queue("held", 0);
    await cs.put("in/small.png", await makeImage({ width: 96, height: 64, format: "png", photo: true }));
    controller = await cs.startController("controller");
  });

  after(async () => {
    await cs?.close();
  });

  test(`${JOBS} jobs of 1 CPU: created suspended, admitted ${QUOTA_CPUS} at a time, all complete; a waiting job cancelled takes its Job and Workload along`, async () => {
    // Every Job as the API server records it, from its creation on.
    const created = new Map<string, V1Job>();
    const admitted = new Set<string>();
    let peakAdmitted = 0;
    const watch = await new Watch(kubeConfigFrom(cluster.cp.kubeconfigPath)).watch(
      `/apis/batch/v1/namespaces/${cs.namespace}/jobs`,
      {},
      (phase: string, job: V1Job) => {
        const name = job.metadata!.name!;
        if (phase === "ADDED" && !created.has(name)) created.set(name, job);
        if (phase !== "DELETED" && job.spec?.suspend === false && !finished(job)) admitted.add(name);
        else admitted.delete(name);
        peakAdmitted = Math.max(peakAdmitted, admitted.size);
      },
      () => undefined,
    );
    let peakRunning = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const pods = await cs.admin.core.listNamespacedPod({ namespace: cs.namespace });
        const running = pods.items.filter((p) => p.status?.phase === "Running").length;
        peakRunning = Math.max(peakRunning, running);
        await new Promise((r) => setTimeout(r, 250));
      }
    })();

    try {
      const held = await cs.submit("image/resize", {
        source_bucket: cs.stack.bucket,
        source_key: "in/small.png",
        dest_bucket: cs.stack.bucket,
        dest_key: "out/held.png",
        width: 32,
        height: 24,
      });
      const res = await cs.stack.request("/api/v1/jobs/batch", {
        method: "POST",
        json: {
          jobs: Array.from({ length: JOBS }, () => ({
            type: "image_colors",
            source_bucket: cs.stack.bucket,
            source_key: "in/small.png",
            parameters: { color_count: 3 },
            resources: { cpu: "1" },
          })),
        },
      });
      const body = (await res.json()) as { job_ids: string[]; error?: string };
      assert.equal(res.status, 201, body.error);
      const ids = body.job_ids;

      const ended = await Promise.all(ids.map((id) => cs.finished(id, 300_000)));
      for (const job of ended) assert.equal(job.status, "completed", `${job.id}: ${job.error}`);
      assert.ok(
        peakAdmitted <= QUOTA_CPUS,
        `at most ${QUOTA_CPUS} Jobs admitted at once (saw ${peakAdmitted})`,
      );
      assert.ok(
        peakRunning <= QUOTA_CPUS,
        `at most ${QUOTA_CPUS} runner pods ran at a sample (saw ${peakRunning})`,
      );
      assert.ok(peakAdmitted >= 2, `Kueue admitted jobs side by side (peak ${peakAdmitted})`);
      assert.equal(
        (await controller.metric('media_controller_jobs_failed_total{reason="unschedulable"}')) ?? 0,
        0,
      );

      // Every Job carried the labels and was created suspended; Kueue made a Workload for each and
      // admitted it.
      const kjobs = [...created.values()];
      const colors = kjobs.filter((j) => j.metadata?.labels?.[QUEUE_LABEL] === "media");
      assert.equal(colors.length, JOBS, "one Job in the LocalQueue media per job");
      for (const job of colors) {
        assert.equal(job.spec?.suspend, true, `${job.metadata?.name} created suspended`);
        assert.equal(job.metadata?.labels?.team, "media");
      }
      const owned = (await workloads()).filter((w) =>
        w.metadata.ownerReferences?.some((o) => colors.some((j) => j.metadata?.uid === o.uid)),
      );
      assert.equal(owned.length, JOBS, "a Workload per Job");
      for (const w of owned) {
        assert.ok(
          w.status?.conditions?.some((c) => c.type === "Admitted" && c.status === "True"),
          `${w.metadata.name} admitted`,
        );
      }
      // The jobs that waited say so on their timelines, before they started.
      let waited = 0;
      for (const id of ids) {
        const events = ((await cs.stack.services.store.jobTimeline(id)) ?? []).map((e) => e.event);
        const at = events.indexOf("waiting");
        if (at >= 0) {
          waited++;
          assert.ok(at < events.indexOf("started"), `${id}: ${events.join(",")}`);
        }
      }
      assert.ok(
        waited >= JOBS - QUOTA_CPUS,
        `${waited} of ${JOBS} timelines say the job waited for admission`,
      );
      process.stderr.write(
        `kueue: ${waited} of ${JOBS} jobs waited for admission; peak admitted ${peakAdmitted}, running ${peakRunning}\n`,
      );

      // The held job: suspended all along (longer than unschedulable_timeout), still pending.
      const [heldJob] = await cs.kubeJobs(held);
      assert.ok(heldJob, "the held job has its Job");
      assert.equal(heldJob.metadata?.labels?.[QUEUE_LABEL], "held");
      assert.equal(heldJob.spec?.suspend, true);
      assert.equal((await cs.stack.services.store.getJob(held))?.status, "pending");
      const timeline = (await cs.stack.services.store.jobTimeline(held)) ?? [];
      const waiting = timeline.filter((e) => e.event === "waiting");
      assert.equal(waiting.length, 1, "one timeline entry for the wait");
      assert.match(waiting[0]!.message ?? "", /waiting for Kueue to admit it \(LocalQueue held\)/);
      const heldUid = heldJob.metadata.uid!;
      const heldWorkload = await eventually("the held Job's Workload", async () =>
        (await workloads()).find((w) => w.metadata.ownerReferences?.some((o) => o.uid === heldUid)),
      );

      const waitingGauge = () => controller.metric("media_controller_jobs_waiting_admission");
      await eventually(
        "the gauge counting the held Job alone",
        async () => (await waitingGauge()) === 1 || undefined,
      );

      const cancel = await cs.stack.request(`/api/v1/jobs/${held}/cancel`, { method: "POST" });
      assert.equal(cancel.status, 200);
      await eventually(
        "the held Job deleted",
        async () => (await cs.kubeJobs(held)).length === 0 || undefined,
      );
      await eventually(
        "its Workload garbage-collected",
        async () =>
          !(await workloads()).some((w) => w.metadata.name === heldWorkload.metadata.name) || undefined,
      );
      assert.equal((await cs.stack.services.store.getJob(held))?.state, "cancelled");
      await eventually("no Job waiting for admission", async () => (await waitingGauge()) === 0 || undefined);
    } finally {
      sampling = false;
      await sampler;
      watch.abort();
    }
  });
});
