// `kubectl drain` of a worker in the middle of a burst, on the kind cluster of test/e2e/kind.sh:
// its runner pods are evicted and run again without a failure counted (the runner Job's
// podFailurePolicy ignores DisruptionTarget; the job's attempt is charged once, its runner's second
// start being the same attempt), the pool worker there hands its jobs back (their attempts refunded),
// and the PodDisruptionBudgets hold the API and the controllers: with the drained worker's replicas
// not yet back, draining the other worker waits rather than take the last of either.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Watch, type V1Pod } from "@kubernetes/client-node";
import { eventually } from "../k8s/support/eventually.js";
import { answered, burst, endings, settle } from "./support/burst.js";
import { figure, kindTarget, kubectl, seconds, type KindTarget } from "./support/kind.js";
import { installRelease, podsOf, type Release } from "./support/release.js";

const JOBS = 120;

let t: KindTarget;
let r: Release;

before(async () => {
  t = await kindTarget();
  r = await installRelease(t, "drain");
});

after(async () => {
  for (const node of [r?.otherNode, r?.redisNode]) {
    if (node) await kubectl(t, ["uncordon", node]);
  }
  await r?.close();
});

const evicted = (p: V1Pod) =>
  p.status?.conditions?.some((c) => c.type === "DisruptionTarget" && c.status === "True") ?? false;

/**
 * The runner pods that get Kubernetes' DisruptionTarget condition, by pod name (their job's id),
 * watched: an evicted runner pod is deleted once it has stopped, so a list afterwards misses it.
 */
async function watchEvictions(): Promise<{ evicted: Map<string, string>; stop(): void }> {
  const seen = new Map<string, string>();
  const request = await new Watch(t.kc).watch(
    `/api/v1/namespaces/${r.namespace}/pods`,
    { labelSelector: "media-service.io/job-id" },
    (_phase: string, pod: V1Pod) => {
      if (evicted(pod)) seen.set(pod.metadata!.name!, pod.metadata!.labels!["media-service.io/job-id"]!);
    },
    () => undefined,
  );
  return { evicted: seen, stop: () => request.abort() };
}

describe("a worker drained in the middle of a burst", () => {
  test("evicted runners run again uncounted, pool jobs are handed back, the budgets hold", async () => {
    const drained = r.otherNode;
    const evictions = await watchEvictions();
    const submitted = burst(r, JOBS);
    await eventually(
      "runner pods running on the worker to drain",
      async () => {
        const there = (await podsOf(r, "runner")).filter(
          (p) => p.spec?.nodeName === drained && p.status?.phase === "Running",
        );
        return there.length >= 2 || undefined;
      },
      300_000,
    );
    const poolThere = (await podsOf(r, "pool"))
      .filter((p) => p.spec?.nodeName === drained)
      .map((p) => p.metadata!.name!);
    const started = Date.now();
    const drain = await kubectl(t, [
      "drain", drained, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=240s",
    ]); // prettier-ignore
    assert.equal(drain.code, 0, `${drain.stdout}\n${drain.stderr}`);
    figure("drain took", seconds(Date.now() - started));

    // The drained worker's API and controller replicas wait for a node (one a worker: anti-affinity),
    // so each Deployment has one available: draining the other worker may not take it.
    const held = await kubectl(t, [
      "drain", r.redisNode, "--pod-selector", "app.kubernetes.io/component in (api,controller)",
      "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=30s",
    ]); // prettier-ignore
    assert.notEqual(held.code, 0, "the second drain must wait on the budgets");
    assert.match(`${held.stdout}\n${held.stderr}`, /disruption budget/i);
    for (const component of ["api", "controller"]) {
      const live = (await podsOf(r, component)).filter(
        (p) =>
          p.spec?.nodeName === r.redisNode && p.status?.phase === "Running" && !p.metadata?.deletionTimestamp,
      );
      assert.equal(live.length, 1, `the ${component} replica on ${r.redisNode} stays`);
    }
    figure("second drain: refused by the PodDisruptionBudgets", "yes");
    await kubectl(t, ["uncordon", r.redisNode]);
    await kubectl(t, ["uncordon", drained]);

    const { acked } = await submitted.done;
    const views = await settle(r, acked, 420_000);
    const e = await endings(r, views);
    evictions.stop();
    const evictedIds = new Set(evictions.evicted.values());
    let handedBack = 0;
    for (const id of acked) {
      const { body } = await answered(r, r.apiUrl, `/api/v1/jobs/${id}/events`);
      const events = (body.events ?? []) as Array<{ event: string; message?: string }>;
      const claimedThere = events.some(
        (ev) =>
          ev.event === "claimed" && poolThere.some((pod) => (ev.message ?? "").startsWith(`pool:${pod}:`)),
      );
      if (claimedThere && events.some((ev) => ev.event === "requeued")) handedBack++;
    }
    figure("jobs acknowledged", acked.length);
    figure("completed", e.completed);
    figure("failed", e.failed);
    figure("runner pods evicted", evictions.evicted.size);
    figure("pool jobs handed back by the evicted worker", handedBack);
    figure("duplicates (two endings, or two webhooks)", e.twiceEnded.length + e.twiceNotified.length);

    assert.ok(evictions.evicted.size >= 1, "the drain evicted runner pods");
    assert.equal(e.completed, acked.length, `every job completed: ${e.otherErrors.join("; ")}`);
    assert.deepEqual(e.twiceEnded, []);
    assert.deepEqual(e.twiceNotified, []);
    // No failure counted for an eviction: not by the Job (its failed pods), not by the store.
    for (const id of evictedIds) {
      const kjob = (
        await r.batch.listNamespacedJob({
          namespace: r.namespace,
          labelSelector: `media-service.io/job-id=${id}`,
        })
      ).items;
      assert.equal(kjob.length, 1, `job ${id}: one runner Job`);
      // An evicted pod is deleted once it has stopped; a pod that failed otherwise stays (on kind a
      // container can fail to start, runc's `unable to freeze`, StartError), and only those may count.
      const failedPods = (
        await r.t.core.listNamespacedPod({
          namespace: r.namespace,
          labelSelector: `media-service.io/job-id=${id}`,
        })
      ).items.filter((p) => p.status?.phase === "Failed" && !evicted(p));
      for (const pod of failedPods) {
        const state = pod.status?.containerStatuses?.[0]?.state?.terminated;
        figure(
          "a runner pod failed otherwise",
          `${pod.metadata!.name}: ${state?.reason} ${state?.message ?? ""}`,
        );
      }
      assert.equal(
        kjob[0]!.status?.failed ?? 0,
        failedPods.length,
        `job ${id}: the eviction is not a failure of its Job`,
      );
      assert.equal(views.get(id)?.attempts, 1, `job ${id}: one attempt charged`);
    }
    for (const [id, job] of views) assert.equal(job.attempts, 1, `job ${id}: one attempt charged`);
  });
});
