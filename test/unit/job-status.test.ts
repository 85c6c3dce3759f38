// What the controller reads from a runner Job and its pods: every failure in words a user understands.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1ContainerState, V1Job, V1Pod } from "@kubernetes/client-node";
import { describePodFailure, isJobFinished, observeJob } from "../../controller/kubernetes/job-status.js";

const deadline = { seconds: 120, setting: "executor.timeouts.image_resize" };

function job(conditions: Array<{ type: string; reason?: string; message?: string }> = [], failed = 0): V1Job {
  return {
    metadata: { name: "media-x" },
    status: { failed, conditions: conditions.map((c) => ({ ...c, status: "True" })) },
  };
}

function pod(
  phase: string,
  state: V1ContainerState | undefined,
  extra: { reason?: string; message?: string; memory?: string; finishedAt?: string; scheduled?: object } = {},
): V1Pod {
  return {
    metadata: { name: `media-x-${Math.random().toString(36).slice(2, 7)}` },
    spec: {
      containers: [
        {
          name: "runner",
          image: "registry.example/media-service:1.0",
          ...(extra.memory ? { resources: { limits: { memory: extra.memory } } } : {}),
        },
      ],
    },
    status: {
      phase,
      ...(extra.reason ? { reason: extra.reason } : {}),
      ...(extra.message ? { message: extra.message } : {}),
      ...(extra.scheduled ? { conditions: [extra.scheduled as never] } : {}),
      containerStatuses: state
        ? [{ name: "runner", image: "x", imageID: "", ready: false, restartCount: 0, state }]
        : [],
    },
  };
}

const terminated = (
  exitCode: number,
  reason: string,
  message?: string,
  finishedAt = "2026-11-21T10:00:00Z",
) => ({
  terminated: { exitCode, reason, ...(message ? { message } : {}), finishedAt: new Date(finishedAt) },
});

describe("observeJob", () => {
  test("a Complete Job succeeded; a running container means running; nothing yet means waiting", () => {
    assert.deepEqual(observeJob(job([{ type: "Complete" }]), [], deadline), { state: "succeeded" });
    assert.deepEqual(observeJob(job(), [pod("Running", { running: {} })], deadline), { state: "running" });
    assert.deepEqual(observeJob(job(), [pod("Pending", undefined)], deadline), { state: "waiting" });
    assert.equal(isJobFinished(job([{ type: "Failed" }])), true);
    assert.equal(isJobFinished(job()), false);
  });

  test("DeadlineExceeded names the timeout and where it came from", () => {
    const o = observeJob(job([{ type: "Failed", reason: "DeadlineExceeded" }]), [], {
      seconds: 30,
      setting: "timeout_seconds",
    });
    assert.deepEqual(o, {
      state: "failed",
      reason: "deadline",
      error: "job timed out after 30 s (timeout_seconds)",
    });
  });

  test("an OOM kill names the memory limit", () => {
    const o = observeJob(
      job([{ type: "Failed", reason: "PodFailurePolicy" }], 1),
      [pod("Failed", terminated(137, "OOMKilled"), { memory: "256Mi" })],
      deadline,
    );
    assert.equal(o.state, "failed");
    assert.equal(o.state === "failed" && o.reason, "oom");
    assert.match(o.state === "failed" ? o.error : "", /^out of memory: .*memory limit of 256Mi/);
  });

  test("the permanent exit code carries the runner's own message", () => {
    const o = observeJob(
      job([{ type: "Failed", reason: "PodFailurePolicy" }], 1),
      [pod("Failed", terminated(2, "Error", "source s3://b/k not found"))],
      deadline,
    );
    assert.deepEqual(o, { state: "failed", reason: "permanent", error: "source s3://b/k not found" });
  });

  test("retries spent: the latest pod's failure, with the number of attempts", () => {
    const o = observeJob(
      job([{ type: "Failed", reason: "BackoffLimitExceeded" }], 3),
      [
        pod("Failed", terminated(1, "Error", "storage unreachable", "2026-11-21T10:00:00Z")),
        pod("Failed", terminated(1, "Error", "queue store unavailable", "2026-11-21T10:05:00Z")),
        pod("Failed", terminated(1, "Error", "storage unreachable", "2026-11-21T10:01:00Z")),
      ],
      deadline,
    );
    assert.deepEqual(o, {
      state: "failed",
      reason: "runner_error",
      error: "the runner exited with code 1: queue store unavailable",
      attempts: 3,
    });
  });

  test("an evicted pod says so", () => {
    const p = pod("Failed", undefined, {
      reason: "Evicted",
      message: "The node was low on resource: memory.",
    });
    assert.deepEqual(describePodFailure(p), {
      reason: "evicted",
      error: "the runner pod was evicted: The node was low on resource: memory.",
    });
  });

  test("a pod no node accepts is stuck, since the scheduler said so", () => {
    const o = observeJob(
      job(),
      [
        pod("Pending", undefined, {
          scheduled: {
            type: "PodScheduled",
            status: "False",
            reason: "Unschedulable",
            message: "0/3 nodes are available: 3 Insufficient cpu.",
            lastTransitionTime: new Date("2026-11-21T10:00:00Z"),
          },
        }),
      ],
      deadline,
    );
    assert.equal(o.state, "stuck");
    if (o.state !== "stuck") return;
    assert.equal(o.reason, "unschedulable");
    assert.equal(o.error, "no node can run the job: 0/3 nodes are available: 3 Insufficient cpu.");
    assert.equal(o.since, Date.parse("2026-11-21T10:00:00Z"));
  });

  test("an image that cannot be pulled and a missing Secret are stuck, with the kubelet's words", () => {
    const pull = observeJob(
      job(),
      [pod("Pending", { waiting: { reason: "ImagePullBackOff", message: 'Back-off pulling image "x"' } })],
      deadline,
    );
    assert.equal(pull.state === "stuck" && pull.reason, "image_pull");
    assert.match(
      pull.state === "stuck" ? pull.error : "",
      /^the runner image "registry.example\/media-service:1.0" cannot be pulled \(ImagePullBackOff\)/,
    );
    const config = observeJob(
      job(),
      [
        pod("Pending", {
          waiting: { reason: "CreateContainerConfigError", message: 'secret "redis" not found' },
        }),
      ],
      deadline,
    );
    assert.equal(config.state === "stuck" && config.reason, "config");
    assert.match(config.state === "stuck" ? config.error : "", /secret "redis" not found/);
  });

  test("a pod being deleted is not counted as running", () => {
    const p = pod("Running", { running: {} });
    p.metadata!.deletionTimestamp = new Date();
    assert.deepEqual(observeJob(job(), [p], deadline), { state: "waiting" });
  });
});
