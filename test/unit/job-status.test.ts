// What the controller reads from a runner Job and its pods: every failure in words a user understands.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1ContainerState, V1Job, V1Pod } from "@kubernetes/client-node";
import {
  describePodFailure,
  isJobFinished,
  lostNode,
  observeJob,
  quietNodes,
  type JobObservation,
} from "../../controller/kubernetes/job-status.js";

const deadline = { seconds: 120, setting: "executor.timeouts.image_resize" };
const T0 = Date.parse("2026-11-21T10:00:00Z");
/** kubernetes.unschedulable_timeout's default: 5 minutes; kubernetes.max_waiting_admission's: 30; executor.lease's: 30 s. */
const WAITS = { maxWaitMs: 300_000, maxAdmissionWaitMs: 1_800_000, nodeLostAfterMs: 30_000 };
const ctx = { deadline, ...WAITS, now: T0 };

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
    assert.deepEqual(observeJob(job([{ type: "Complete" }]), [], ctx), { state: "succeeded" });
    assert.deepEqual(observeJob(job(), [pod("Running", { running: {} })], ctx), { state: "running" });
    assert.deepEqual(observeJob(job(), [pod("Pending", undefined)], ctx), { state: "waiting" });
    assert.equal(isJobFinished(job([{ type: "Failed" }])), true);
    assert.equal(isJobFinished(job()), false);
  });

  test("DeadlineExceeded names the timeout and where it came from", () => {
    const o = observeJob(job([{ type: "Failed", reason: "DeadlineExceeded" }]), [], {
      ...ctx,
      deadline: { seconds: 30, setting: "timeout_seconds" },
      runnerStartedAt: T0 - 31_000,
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
      ctx,
    );
    assert.equal(o.state, "failed");
    assert.equal(o.state === "failed" && o.reason, "oom");
    assert.match(o.state === "failed" ? o.error : "", /^out of memory: .*memory limit of 256Mi/);
  });

  test("the permanent exit code carries the runner's own message", () => {
    const o = observeJob(
      job([{ type: "Failed", reason: "PodFailurePolicy" }], 1),
      [pod("Failed", terminated(2, "Error", "source s3://b/k not found"))],
      ctx,
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
      ctx,
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

  test("a pod evicted over its disk limit fails the job at once, naming the limit and the setting", () => {
    const message = 'Usage of EmptyDir volume "scratch" exceeds the limit "16Gi". ';
    const evicted = pod("Failed", terminated(143, "Error"), { reason: "Evicted", message });
    evicted.metadata!.labels = { "media-service.io/job-type": "video_transcode" };
    evicted.spec!.containers[0]!.resources = { limits: { "ephemeral-storage": "16Gi" } };
    const error =
      'disk limit exceeded: the runner wrote more than its local disk limit of 16Gi (raise kubernetes.resources.video_transcode.limits.ephemeral_storage): Usage of EmptyDir volume "scratch" exceeds the limit "16Gi".';
    assert.deepEqual(describePodFailure(evicted), { reason: "disk_limit", error });
    // The Job would retry the pod (the kubelet marks no DisruptionTarget): the job ends now, and its
    // Job is deleted, rather than each attempt filling the same disk.
    assert.deepEqual(observeJob(job([], 1), [evicted, pod("Pending", undefined)], ctx), {
      state: "failed",
      reason: "disk_limit",
      error,
      deleteJob: true,
    });
    // A Job that failed already (its retries spent) says the same.
    assert.deepEqual(
      observeJob(job([{ type: "Failed", reason: "BackoffLimitExceeded" }], 1), [evicted], ctx),
      {
        state: "failed",
        reason: "disk_limit",
        error,
      },
    );
    // Evicted for the node's sake, the pod is one attempt: its replacement is waited for.
    const pressure = pod("Failed", undefined, {
      reason: "Evicted",
      message: "The node was low on resource: ephemeral-storage.",
    });
    assert.deepEqual(observeJob(job([], 1), [pressure, pod("Pending", undefined)], ctx), {
      state: "waiting",
    });
  });

  test("an image that cannot be pulled and a missing Secret are stuck, with the kubelet's words", () => {
    const pull = observeJob(
      job(),
      [pod("Pending", { waiting: { reason: "ImagePullBackOff", message: 'Back-off pulling image "x"' } })],
      ctx,
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
      ctx,
    );
    assert.equal(config.state === "stuck" && config.reason, "config");
    assert.match(config.state === "stuck" ? config.error : "", /secret "redis" not found/);
  });

  test("a pod being deleted is not counted as running", () => {
    const p = pod("Running", { running: {} });
    p.metadata!.deletionTimestamp = new Date();
    assert.deepEqual(observeJob(job(), [p], ctx), { state: "waiting" });
  });
});

// The wait for a node and the job's time, apart. The runner has the job's time (120 s here) from its
// start; a pod may wait kubernetes.unschedulable_timeout (300 s) to start; the Job's
// activeDeadlineSeconds is their sum (420 s) from its creation (T0).
describe("observeJob: a wait to start is bounded by kubernetes.unschedulable_timeout, not the job's time", () => {
  const at = (seconds: number) => new Date(T0 + seconds * 1000);
  const INSUFFICIENT = "0/3 nodes are available: 3 Insufficient cpu.";

  function kjob(failedAt?: number): V1Job {
    return {
      metadata: { name: "media-x", creationTimestamp: at(0) },
      spec: { activeDeadlineSeconds: 420, template: { spec: { containers: [] } } },
      status: {
        startTime: at(0),
        ...(failedAt !== undefined
          ? {
              conditions: [
                {
                  type: "Failed",
                  status: "True",
                  reason: "DeadlineExceeded",
                  lastTransitionTime: at(failedAt),
                },
              ],
            }
          : {}),
      },
    };
  }

  /** A runner pod created at `created` s: unscheduled, or on `node`, its container as `state`. */
  function runnerPod(
    created: number,
    options: { node?: string; state?: V1ContainerState; phase?: string; deleting?: boolean } = {},
  ): V1Pod {
    const { node, state } = options;
    return {
      metadata: {
        name: `media-x-${created}`,
        creationTimestamp: at(created),
        ...(options.deleting ? { deletionTimestamp: at(created + 1) } : {}),
      },
      spec: { ...(node ? { nodeName: node } : {}), containers: [{ name: "runner", image: "img" }] },
      status: {
        phase: options.phase ?? "Pending",
        conditions: [
          node
            ? { type: "PodScheduled", status: "True", lastTransitionTime: at(created) }
            : {
                type: "PodScheduled",
                status: "False",
                reason: "Unschedulable",
                message: INSUFFICIENT,
                lastTransitionTime: at(created),
              },
        ],
        containerStatuses: state
          ? [{ name: "runner", image: "img", imageID: "", ready: false, restartCount: 0, state }]
          : [],
      },
    };
  }
  const ran = (from: number, to: number, exitCode = 1): V1ContainerState => ({
    terminated: { exitCode, startedAt: at(from), finishedAt: at(to) },
  });

  const waited = (seconds: number, what = "a node", detail?: string): JobObservation => ({
    state: "failed",
    reason: "unschedulable",
    error: `job waited ${seconds} s for ${what} (kubernetes.unschedulable_timeout)${detail ? `: ${detail}` : ""}`,
  });
  const waitedAndDelete = (seconds: number, what?: string, detail?: string): JobObservation =>
    ({
      ...(waited(seconds, what, detail) as object),
      deleteJob: true,
    }) as JobObservation;

  const CASES: Array<{
    name: string;
    job: V1Job;
    pods: V1Pod[];
    now: number;
    runnerStartedAt?: number;
    expect: JobObservation;
  }> = [
    {
      name: "Pending for a node longer than the job's time, within the bound: still waiting",
      job: kjob(),
      pods: [runnerPod(0)],
      now: 200,
      expect: { state: "waiting" },
    },
    {
      name: "Pending for a node just under the bound: waiting",
      job: kjob(),
      pods: [runnerPod(0)],
      now: 299,
      expect: { state: "waiting" },
    },
    {
      name: "Pending for a node for the bound: failed, naming the setting and the scheduler's reason",
      job: kjob(),
      pods: [runnerPod(0)],
      now: 300,
      expect: waitedAndDelete(300, "a node", INSUFFICIENT),
    },
    {
      name: "scheduled, its container still being created, for the bound",
      job: kjob(),
      pods: [runnerPod(0, { node: "node-1", state: { waiting: { reason: "ContainerCreating" } } })],
      now: 301,
      expect: waitedAndDelete(301, "its runner to start on node node-1", "ContainerCreating"),
    },
    {
      name: "no pod created (a quota refuses it) for the bound",
      job: kjob(),
      pods: [],
      now: 305,
      expect: waitedAndDelete(305, "its runner pod to be created"),
    },
    {
      name: "a retry's pod waits from its own creation, not the Job's",
      job: kjob(),
      pods: [runnerPod(0, { node: "node-1", phase: "Failed", state: ran(2, 50) }), runnerPod(60)],
      now: 300,
      expect: { state: "waiting" },
    },
    {
      name: "a retry's pod Pending for the bound",
      job: kjob(),
      pods: [runnerPod(0, { node: "node-1", phase: "Failed", state: ran(2, 50) }), runnerPod(60)],
      now: 360,
      expect: waitedAndDelete(300, "a node", INSUFFICIENT),
    },
    {
      name: "between two attempts (a failed pod, the next not created yet): waiting",
      job: kjob(),
      pods: [runnerPod(0, { node: "node-1", phase: "Failed", state: ran(2, 50) })],
      now: 1000,
      expect: { state: "waiting" },
    },
    {
      name: "running: no wait, whatever the time",
      job: kjob(),
      pods: [runnerPod(0, { node: "node-1", phase: "Running", state: { running: { startedAt: at(350) } } })],
      now: 400,
      expect: { state: "running" },
    },
    {
      name: "DeadlineExceeded, its runner never started: the wait, with the scheduler's reason",
      job: kjob(420),
      pods: [runnerPod(0, { deleting: true })],
      now: 425,
      expect: waited(420, "a node", INSUFFICIENT),
    },
    {
      name: "DeadlineExceeded, no pod left and no start recorded: the wait",
      job: kjob(420),
      pods: [],
      now: 500,
      expect: waited(420),
    },
    {
      name: "DeadlineExceeded, its runner started late and was cut short: the wait before it",
      job: kjob(420),
      pods: [runnerPod(0, { node: "node-1", phase: "Failed", state: ran(330, 420, 143) })],
      now: 421,
      expect: waited(330),
    },
    {
      name: "DeadlineExceeded, the record's start only (pods gone), late: the wait before it",
      job: kjob(420),
      pods: [],
      now: 430,
      runnerStartedAt: T0 + 350_000,
      expect: waited(350),
    },
    {
      name: "DeadlineExceeded after its runner had its whole time: timed out",
      job: kjob(420),
      pods: [runnerPod(0, { node: "node-1", phase: "Failed", state: ran(10, 420, 143) })],
      now: 421,
      expect: {
        state: "failed",
        reason: "deadline",
        error: "job timed out after 120 s (executor.timeouts.image_resize)",
      },
    },
    {
      name: "DeadlineExceeded, the record's start only, early: timed out",
      job: kjob(420),
      pods: [],
      now: 430,
      runnerStartedAt: T0 + 5_000,
      expect: {
        state: "failed",
        reason: "deadline",
        error: "job timed out after 120 s (executor.timeouts.image_resize)",
      },
    },
  ];

  for (const c of CASES) {
    test(c.name, () => {
      const observed = observeJob(c.job, c.pods, {
        deadline,
        ...WAITS,
        now: T0 + c.now * 1000,
        ...(c.runnerStartedAt !== undefined ? { runnerStartedAt: c.runnerStartedAt } : {}),
      });
      assert.deepEqual(observed, c.expect);
    });
  }

  test("an image that cannot be pulled stays a start failure (kubernetes.start_failure_timeout), past the bound too", () => {
    const p = runnerPod(0, { node: "node-1", state: { waiting: { reason: "ImagePullBackOff" } } });
    const o = observeJob(kjob(), [p], { deadline, ...WAITS, now: T0 + 400_000 });
    assert.equal(o.state === "stuck" && o.reason, "image_pull");
  });
});

describe("lostNode and quietNodes: a runner pod's node that stopped reporting", () => {
  const quiet = (name: string, node: string, since: number): V1Pod => ({
    metadata: { name },
    spec: { nodeName: node, containers: [{ name: "runner" }] },
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: "False", lastTransitionTime: new Date(T0 + since * 1000) }],
      containerStatuses: [
        { name: "runner", image: "x", imageID: "", ready: true, restartCount: 0, state: { running: {} } },
      ],
    },
  });

  test("a pod not ready whose container reads running and ready: its node, since it was marked", () => {
    assert.deepEqual(lostNode(quiet("a", "node-1", 20)), { node: "node-1", since: T0 + 20_000 });
  });

  test("not ready by its kubelet's word (the container not ready), or ended: no node lost", () => {
    const notReady = quiet("a", "node-1", 20);
    notReady.status!.containerStatuses![0]!.ready = false;
    assert.equal(lostNode(notReady), undefined);
    const ended = quiet("b", "node-1", 20);
    ended.status!.phase = "Failed";
    assert.equal(lostNode(ended), undefined);
  });

  test("the nodes shown quiet, each since the earliest of its pods", () => {
    const fine = quiet("c", "node-3", 5);
    fine.status!.conditions![0]!.status = "True";
    const nodes = quietNodes([
      quiet("a", "node-1", 30),
      quiet("b", "node-1", 20),
      quiet("d", "node-2", 40),
      fine,
    ]);
    assert.deepEqual([...nodes].sort(), [
      ["node-1", T0 + 20_000],
      ["node-2", T0 + 40_000],
    ]);
  });
});
