// A node lost in the middle of a burst, on a kind cluster of one control plane and two workers
// (test/e2e/kind.sh): 200 image jobs in flight (resizes in runner Jobs, colour counts in the
// warm pool), then `docker stop` of the worker that holds the leading controller, with an API pod,
// a pool worker and runner pods. Every acknowledged job ends exactly once, completed or failed saying
// its node was lost; the controller on the other worker takes over; the runners on the lost node are
// given up one executor.lease after Kubernetes marks their pods not ready, not kept for ever.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { eventually } from "../k8s/support/eventually.js";
import { answered, burst, endings, settle } from "./support/burst.js";
import { docker, figure, kindTarget, nodeReady, seconds, type KindTarget } from "./support/kind.js";
import { installRelease, leader, podsOf, type Release } from "./support/release.js";

const JOBS = 200;

let t: KindTarget;
let r: Release;
let lost = "";

before(async () => {
  t = await kindTarget();
  r = await installRelease(t, "nodeloss");
});

after(async () => {
  if (lost) {
    await docker(["start", lost]).catch(() => undefined);
    await eventually(
      `node ${lost} to be Ready again`,
      async () => (await nodeReady(t, lost)) || undefined,
      300_000,
    );
  }
  await r?.close();
});

describe("a worker lost in the middle of a burst", () => {
  test("every acknowledged job ends once; the other controller leads; nothing stays processing", async () => {
    // The scenario loses the leader's node, not Redis's (that is redis-node.test.ts): a leader on
    // the Redis node is moved by deleting its pod (a stopping leader releases the Lease).
    let lead = await leader(r);
    if (lead.node === r.redisNode) {
      await t.core.deleteNamespacedPod({ name: lead.pod, namespace: r.namespace });
      lead = await eventually(
        "the controller on the other worker to lead",
        async () => {
          const now = await leader(r);
          return now.node === r.otherNode ? now : undefined;
        },
        120_000,
      );
    }
    lost = lead.node;
    assert.equal(lost, r.otherNode);

    const submitted = burst(r, JOBS);
    // Some jobs running on the node before it goes: runner pods there, a pool worker there.
    const onLost = await eventually(
      "runner pods running on the leader's node",
      async () => {
        const runners = (await podsOf(r, "runner")).filter(
          (p) => p.spec?.nodeName === lost && p.status?.phase === "Running",
        );
        return runners.length >= 2 && submitted.acked.length >= 40 ? runners : undefined;
      },
      300_000,
    );
    const poolThere = (await podsOf(r, "pool")).filter((p) => p.spec?.nodeName === lost).length;
    const stoppedAt = Date.now();
    await docker(["stop", lost]);
    // Nothing of the node runs from here (docker stop gives its processes 10 s, then kills them).
    const gone = Date.now();
    figure("runner pods running on the lost node when it stopped", onLost.length);
    figure("pool workers on the lost node", poolThere);

    const newLeader = await eventually(
      "another controller to lead",
      async () => {
        const now = await leader(r);
        return now.pod !== lead.pod && now.node && now.node !== lost ? now : undefined;
      },
      180_000,
    );
    figure("time until the other controller leads", seconds(Date.now() - stoppedAt));
    assert.equal(newLeader.node, r.redisNode);

    const { acked, unanswered } = await submitted.done;
    // Kubernetes marks the node's pods not ready after its node-monitor-grace-period, the executor
    // gives their runners executor.lease more; a runner kept for ever (a lease renewed because its
    // pod still says Running) would hold its job past this wait.
    const views = await settle(r, acked, 420_000);
    const recovered = Date.now() - stoppedAt;
    const e = await endings(r, views);
    figure("jobs acknowledged", acked.length);
    figure("submits never answered (not acknowledged, not counted)", unanswered);
    figure("completed", e.completed);
    figure("failed, node lost", e.nodeLost);
    figure("duplicates (two endings, or two webhooks)", e.twiceEnded.length + e.twiceNotified.length);
    figure("time to recover (every acknowledged job ended)", seconds(recovered));

    assert.equal(views.size, acked.length, "every acknowledged job ended");
    assert.deepEqual(e.otherErrors, [], "a failure says the node was lost");
    assert.deepEqual(e.twiceEnded, [], "no job ended twice");
    assert.deepEqual(e.twiceNotified, [], "no job notified twice");
    // The runners that were on the lost node: their jobs went back to their queue saying so,
    // unless they had ended before it stopped.
    const fates = await Promise.all(
      onLost.map(async (pod) => {
        const id = pod.metadata!.labels!["media-service.io/job-id"]!;
        const { body } = await answered(r, r.apiUrl, `/api/v1/jobs/${id}/events`);
        const events = (body.events ?? []) as Array<{ event: string; message?: string; at: string }>;
        const ending = events.find((ev) => ev.event === "completed" || ev.event === "failed");
        if (ending && Date.parse(ending.at) <= gone) return "ended before";
        const back = events.some(
          (ev) => ev.event === "requeued" && /node .* was lost/.test(ev.message ?? ""),
        );
        return back ? "given back" : `neither: ${JSON.stringify(events)}`;
      }),
    );
    const givenBack = fates.filter((f) => f === "given back").length;
    figure("jobs of the lost runner pods given back saying the node was lost", givenBack);
    assert.deepEqual(
      fates.filter((f) => f !== "given back" && f !== "ended before"),
      [],
      "each job running on the lost node was given back, naming it",
    );
  });
});
