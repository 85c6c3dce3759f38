// What the Kubernetes executor decides from what it observes (controller/kubernetes/decide.ts): every
// outcome of a runner pod the real-node tests meet (test/k8s/controller*.test.ts), as rows of tables,
// with no cluster and no store. The Jobs are the executor's own manifests with a status put on them.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1Job, V1Pod } from "@kubernetes/client-node";
import type { Job } from "../../core/jobs/records.js";
import {
  decideCancel,
  decideSync,
  goneStuckPods,
  syncedJobId,
  type Action,
} from "../../controller/kubernetes/decide.js";
import { nodeLostMessage } from "../../controller/kubernetes/job-status.js";
import {
  del,
  ended,
  exited,
  fail,
  ID,
  NAME,
  NO_NODE,
  record,
  runnerJob,
  runnerPod,
  running,
  settings,
  T0,
  at,
  waiting,
} from "../support/runner-jobs.js";

interface SyncCase {
  name: string;
  job: V1Job;
  record: Job | null;
  pods?: V1Pod[];
  /** Seconds after the Job's creation. */
  now: number;
  stuckSince?: Array<[string, number]>;
  /** The Job's wait for Kueue's admission is noted already. */
  admissionNoted?: true;
  /** Nodes the runner pods show gone quiet, since (seconds). */
  quietNodes?: Array<[string, number]>;
  expect: Action[];
}

/** A runner pod with what the Job's template gives it: its job type's label, its disk limit. */
function diskEvicted(pod: V1Pod): V1Pod {
  pod.metadata!.labels = { ...pod.metadata!.labels, "media-service.io/job-type": "image_resize" };
  pod.spec!.containers[0]!.resources = { limits: { memory: "1Gi", "ephemeral-storage": "2Gi" } };
  return pod;
}

/** A Job deleted, its job back in its queue with the node's loss, `quiet` seconds after node-1 went quiet. */
const NODE_LOST = (quiet: number): Action[] => [
  del("its runner's node node-1 was lost"),
  { kind: "requeue", id: ID, why: nodeLostMessage("node-1", quiet), lost: "node_lost" },
];
const withUid = (job: V1Job, uid: string): V1Job => ({ ...job, metadata: { ...job.metadata, uid } });
/** The pod as its kubelet reports it when the runner's container is not ready. */
function notReadyByKubelet(pod: V1Pod): V1Pod {
  const [status] = pod.status?.containerStatuses ?? [];
  if (status) status.ready = false;
  return pod;
}

const IMAGE_PULL = runnerPod("img", "Pending", waiting("ImagePullBackOff", 'Back-off pulling image "x"'));
const PULL_KEY = `${NAME}-img/image_pull`;

const SYNC: SyncCase[] = [
  // The runner's way to its start.
  {
    name: "a pod waiting for a node within unschedulable_timeout: nothing to do",
    job: runnerJob(),
    record: record("pending"),
    pods: [runnerPod("a", "Pending", undefined, { unscheduled: true })],
    now: 200,
    expect: [],
  },
  {
    name: "its runner runs and the job is pending: start it",
    job: runnerJob(),
    record: record("pending"),
    pods: [runnerPod("a", "Running", running(5))],
    now: 6,
    expect: [{ kind: "start", id: ID }],
  },
  {
    name: "its runner runs and the job is processing already (a duplicate event): nothing",
    job: runnerJob(),
    record: record("processing", { started_at: at(5).toISOString() }),
    pods: [runnerPod("a", "Running", running(5))],
    now: 7,
    expect: [],
  },
  // Success.
  {
    name: "success: the Job completed and the runner recorded the result: nothing",
    job: runnerJob(ended("Complete")),
    record: record("completed", { completed_at: at(9).toISOString() }),
    pods: [runnerPod("a", "Succeeded", exited(0, 5, 9))],
    now: 10,
    expect: [],
  },
  {
    name: "the runner exited 0 without reporting: the job fails (no_report), if still open when read again",
    job: runnerJob(ended("Complete")),
    record: record("processing"),
    pods: [runnerPod("a", "Succeeded", exited(0, 5, 9))],
    now: 10,
    expect: [fail("no_report", "the runner finished without reporting a result", { recheck: true })],
  },
  // Failures of the runner, by core/policy.ts's exit codes.
  {
    name: "OOM kill: fails naming the memory limit",
    job: runnerJob({ failed: 1, ...ended("Failed", "PodFailurePolicy", 9) }),
    record: record("processing"),
    pods: [runnerPod("a", "Failed", exited(137, 5, 9, { reason: "OOMKilled" }))],
    now: 10,
    expect: [
      fail(
        "oom",
        "out of memory: the runner was killed at its memory limit of 256Mi (give the job more with resources.memory)",
      ),
    ],
  },
  {
    name: "exit 2 (permanent): fails at once with the runner's message",
    job: runnerJob({ failed: 1, ...ended("Failed", "PodFailurePolicy", 9) }),
    record: record("processing"),
    pods: [runnerPod("a", "Failed", exited(2, 5, 9, { message: "source s3://in/photo.jpg not found" }))],
    now: 10,
    expect: [fail("permanent", "source s3://in/photo.jpg not found")],
  },
  {
    name: "SIGTERM (exit 143) with attempts left: the Job's next pod retries, nothing to do",
    job: runnerJob({ failed: 1, active: 1 }),
    record: record("processing"),
    pods: [
      runnerPod("a", "Failed", exited(143, 5, 9, { signal: 15 })),
      runnerPod("b", "Running", running(11), { created: 10 }),
    ],
    now: 12,
    expect: [],
  },
  {
    name: "a transient failure on every attempt: fails with the last pod's words and the attempts",
    job: runnerJob({ failed: 3, ...ended("Failed", "BackoffLimitExceeded", 40) }),
    record: record("processing"),
    pods: [
      runnerPod("a", "Failed", exited(1, 2, 9, { message: "storage unreachable" })),
      runnerPod("c", "Failed", exited(1, 32, 39, { message: "queue store unavailable" }), { created: 30 }),
      runnerPod("b", "Failed", exited(143, 12, 19, { signal: 15 }), { created: 10 }),
    ],
    now: 41,
    expect: [fail("runner_error", "the runner exited with code 1: queue store unavailable", { attempts: 3 })],
  },
  // Deadlines.
  {
    name: "deadline exceeded after the runner had its whole time: timed out, naming the setting",
    job: runnerJob({ failed: 1, ...ended("Failed", "DeadlineExceeded", 330) }),
    record: record("processing", { started_at: at(5).toISOString() }),
    pods: [runnerPod("a", "Failed", exited(143, 5, 330))],
    now: 331,
    expect: [fail("deadline", "job timed out after 30 s (timeout_seconds)")],
  },
  {
    name: "deadline exceeded with the runner never started: the wait for a node, not a timeout",
    job: runnerJob(ended("Failed", "DeadlineExceeded", 330)),
    record: record("pending"),
    pods: [runnerPod("a", "Pending", undefined, { unscheduled: true, deleting: true })],
    now: 331,
    expect: [
      fail("unschedulable", `job waited 330 s for a node (kubernetes.unschedulable_timeout): ${NO_NODE}`),
    ],
  },
  // Waits past their bounds.
  {
    name: "unschedulable past unschedulable_timeout: fails and its Job is deleted",
    job: runnerJob(),
    record: record("pending"),
    pods: [runnerPod("a", "Pending", undefined, { unscheduled: true })],
    now: 300,
    expect: [
      fail("unschedulable", `job waited 300 s for a node (kubernetes.unschedulable_timeout): ${NO_NODE}`),
      del("its runner waited too long to start"),
    ],
  },
  {
    name: "an image that cannot be pulled, first seen: remembered, nothing failed yet",
    job: runnerJob(),
    record: record("pending"),
    pods: [IMAGE_PULL],
    now: 20,
    expect: [{ kind: "stuck", key: PULL_KEY, since: T0 + 20_000 }],
  },
  {
    name: "an image that cannot be pulled, seen again within start_failure_timeout: nothing",
    job: runnerJob(),
    record: record("pending"),
    pods: [IMAGE_PULL],
    now: 60,
    stuckSince: [[PULL_KEY, T0 + 20_000]],
    expect: [],
  },
  {
    name: "an image that cannot be pulled past start_failure_timeout: fails naming the image, Job deleted",
    job: runnerJob(),
    record: record("pending"),
    pods: [IMAGE_PULL],
    now: 81,
    stuckSince: [[PULL_KEY, T0 + 20_000]],
    expect: [
      fail(
        "image_pull",
        'the runner image "media-service:test" cannot be pulled (ImagePullBackOff): Back-off pulling image "x" (waited 61 s)',
      ),
      del("its pod could not start"),
      { kind: "unstuck", key: PULL_KEY },
    ],
  },
  {
    name: "a Secret missing past start_failure_timeout: fails with the kubelet's words",
    job: runnerJob(),
    record: record("pending"),
    pods: [
      runnerPod("s", "Pending", waiting("CreateContainerConfigError", 'secret "media-redis" not found')),
    ],
    now: 70,
    stuckSince: [[`${NAME}-s/config`, T0]],
    expect: [
      fail(
        "config",
        'the runner pod cannot start (CreateContainerConfigError): secret "media-redis" not found (waited 70 s)',
      ),
      del("its pod could not start"),
      { kind: "unstuck", key: `${NAME}-s/config` },
    ],
  },
  // Evictions and pods that are gone.
  {
    name: "a pod evicted through the Eviction API (being deleted), its replacement pending: nothing",
    job: runnerJob({ active: 1 }),
    record: record("processing"),
    pods: [
      runnerPod("a", "Running", running(5), { deleting: true }),
      runnerPod("b", "Pending", undefined, { created: 20 }),
    ],
    now: 21,
    expect: [],
  },
  {
    name: "a pod evicted by the node (Failed, Evicted), retries spent: fails saying so",
    job: runnerJob({ failed: 1, ...ended("Failed", "BackoffLimitExceeded", 9) }),
    record: record("processing"),
    pods: [
      runnerPod("a", "Failed", undefined, {
        reason: "Evicted",
        message: "The node was low on resource: memory.",
      }),
    ],
    now: 10,
    expect: [fail("evicted", "the runner pod was evicted: The node was low on resource: memory.")],
  },
  {
    name: "a pod evicted over its disk limit, the Job about to retry: fails naming the setting, Job deleted",
    job: runnerJob({ failed: 1 }),
    record: record("processing"),
    pods: [
      diskEvicted(
        runnerPod("a", "Failed", exited(143, 5, 9), {
          reason: "Evicted",
          message: 'Usage of EmptyDir volume "scratch" exceeds the limit "2Gi". ',
        }),
      ),
      runnerPod("b", "Pending", undefined, { created: 10 }),
    ],
    now: 10,
    expect: [
      fail(
        "disk_limit",
        'disk limit exceeded: the runner wrote more than its local disk limit of 2Gi (raise kubernetes.resources.image_resize.limits.ephemeral_storage): Usage of EmptyDir volume "scratch" exceeds the limit "2Gi".',
      ),
      del("its runner was evicted over its disk limit"),
    ],
  },
  {
    name: "no pod at all (gone, or never created) within the wait: nothing",
    job: runnerJob(),
    record: record("pending"),
    pods: [],
    now: 100,
    expect: [],
  },
  {
    name: "no pod at all past the wait: fails, Job deleted",
    job: runnerJob(),
    record: record("pending"),
    pods: [],
    now: 301,
    expect: [
      fail(
        "unschedulable",
        "job waited 301 s for its runner pod to be created (kubernetes.unschedulable_timeout)",
      ),
      del("its runner waited too long to start"),
    ],
  },
  // Its runner's node lost: the node lifecycle controller marked its pod not ready at 20 s (the
  // node stopped reporting), the kubelet's last word on the container (running, ready) left as it was.
  {
    name: "its runner's node stopped reporting less than executor.lease ago: still running, nothing",
    job: runnerJob({ active: 1 }),
    record: record("processing", { started_at: at(5).toISOString() }),
    pods: [runnerPod("a", "Running", running(5), { quietSince: 20 })],
    now: 49,
    expect: [],
  },
  {
    name: "its runner's node stopped reporting executor.lease ago: the Job deleted, the job back, counted",
    job: runnerJob({ active: 1 }),
    record: record("processing", { started_at: at(5).toISOString() }),
    pods: [runnerPod("a", "Running", running(5), { quietSince: 20 })],
    now: 50,
    expect: NODE_LOST(30),
  },
  {
    name: "its runner's pod on the lost node deleted by the taint manager, never ending there: the same",
    job: runnerJob({ active: 1 }),
    record: record("processing", { started_at: at(5).toISOString() }),
    pods: [runnerPod("a", "Running", running(5), { quietSince: 20, deleting: true })],
    now: 320,
    expect: NODE_LOST(300),
  },
  {
    name: "its runner's node lost before the runner started the job (pending): the same, uncounted by the store",
    job: runnerJob({ active: 1 }),
    record: record("pending"),
    pods: [runnerPod("a", "Running", running(5), { quietSince: 20 })],
    now: 60,
    expect: NODE_LOST(40),
  },
  {
    name: "a runner pod on a lost node and its Job's next pod running elsewhere: running, nothing",
    job: runnerJob({ active: 1, failed: 1 }),
    record: record("processing", { started_at: at(5).toISOString() }),
    pods: [
      runnerPod("a", "Running", running(5), { quietSince: 20, deleting: true }),
      runnerPod("b", "Running", running(60), { created: 55 }),
    ],
    now: 100,
    expect: [],
  },
  {
    name: "the lost pod of the job's earlier Job (same name, another uid) beside this Job's pending pod: waiting",
    job: withUid(runnerJob(), "uid-2"),
    record: record("pending"),
    pods: [
      runnerPod("a", "Running", running(5), { quietSince: 20, deleting: true, jobUid: "uid-1" }),
      runnerPod("b", "Pending", undefined, { created: 55, jobUid: "uid-2" }),
    ],
    now: 100,
    expect: [],
  },
  {
    name: "its runner still being started on a node its other runner pods show quiet for executor.lease: lost",
    job: runnerJob({ active: 1 }),
    record: record("pending"),
    pods: [runnerPod("a", "Pending", waiting("ContainerCreating"), { created: 15 })],
    quietNodes: [["node-1", 20]],
    now: 50,
    expect: NODE_LOST(30),
  },
  {
    name: "its runner being started on a node shown quiet less than executor.lease ago: waiting",
    job: runnerJob({ active: 1 }),
    record: record("pending"),
    pods: [runnerPod("a", "Pending", waiting("ContainerCreating"), { created: 15 })],
    quietNodes: [["node-1", 20]],
    now: 49,
    expect: [],
  },
  {
    name: "a pod not ready by the kubelet's own word (its container not ready): not a lost node",
    job: runnerJob({ active: 1 }),
    record: record("processing", { started_at: at(5).toISOString() }),
    pods: [notReadyByKubelet(runnerPod("a", "Running", running(5), { quietSince: 20 }))],
    now: 200,
    expect: [],
  },
  // The record and the Job disagree.
  {
    name: "its job record is gone (pruned): the Job is deleted",
    job: runnerJob(),
    record: null,
    pods: [runnerPod("a", "Running", running(5))],
    now: 10,
    expect: [del("its job record no longer exists (pruned or never stored)")],
  },
  {
    name: "the job was cancelled moments ago and its runner still runs: left to stop",
    job: runnerJob(),
    record: record("failed", { error: "cancelled by request", completed_at: at(10).toISOString() }),
    pods: [runnerPod("a", "Running", running(5))],
    now: 20,
    expect: [],
  },
  {
    name: "the job ended 15 s ago and its runner still runs: the Job is deleted",
    job: runnerJob(),
    record: record("completed", { completed_at: at(10).toISOString() }),
    pods: [runnerPod("a", "Running", running(5))],
    now: 25,
    expect: [del("the job is completed but its runner pod still runs")],
  },
  {
    name: "a Job being deleted: nothing more to decide",
    job: runnerJob({}, true),
    record: null,
    pods: [],
    now: 10,
    expect: [],
  },
];

/**
 * A runner Job Kueue manages (LocalQueue media), suspended since `since` s (created so at 0 s), with
 * `status` put on it; `admitted`: Kueue unsuspended it.
 */
function kueueJob(o: { since?: number; admitted?: true; status?: NonNullable<V1Job["status"]> } = {}): V1Job {
  const j = runnerJob();
  const suspended = {
    type: "Suspended",
    status: o.admitted ? "False" : "True",
    reason: o.admitted ? "JobResumed" : "JobSuspended",
    lastTransitionTime: at(o.since ?? 0),
  };
  return {
    ...j,
    metadata: { ...j.metadata, labels: { ...j.metadata!.labels, "kueue.x-k8s.io/queue-name": "media" } },
    spec: { ...j.spec!, suspend: !o.admitted },
    status: { conditions: [suspended], ...o.status },
  };
}
const WAITS_FOR_ADMISSION: Action = {
  kind: "admission",
  id: ID,
  name: NAME,
  message: "its Kubernetes Job is suspended, waiting for Kueue to admit it (LocalQueue media)",
};

const KUEUE: SyncCase[] = [
  {
    name: "suspended, waiting for Kueue past unschedulable_timeout: not unschedulable, its wait noted",
    job: kueueJob(),
    record: record("pending"),
    now: 600,
    expect: [WAITS_FOR_ADMISSION],
  },
  {
    name: "suspended, its wait noted already: nothing",
    job: kueueJob(),
    record: record("pending"),
    now: 900,
    admissionNoted: true,
    expect: [],
  },
  {
    name: "suspended before the Job controller said so (no condition yet): waiting for admission",
    job: { ...kueueJob(), status: {} },
    record: record("pending"),
    now: 1,
    expect: [WAITS_FOR_ADMISSION],
  },
  {
    name: "suspended for max_waiting_admission: fails naming the setting and the queue, its Job deleted",
    job: kueueJob(),
    record: record("pending"),
    now: 1800,
    admissionNoted: true,
    expect: [
      { kind: "admitted", name: NAME },
      fail(
        "admission",
        "job waited 1800 s for Kueue to admit its runner Job from LocalQueue media (kubernetes.max_waiting_admission); the queue's ClusterQueue has no room for it, or the queue does not exist",
      ),
      del("Kueue did not admit it in time"),
    ],
  },
  {
    name: "admitted at 700 s and its runner runs: no longer waiting, the job starts",
    job: kueueJob({ since: 700, admitted: true, status: { startTime: at(700), active: 1 } }),
    record: record("pending"),
    pods: [runnerPod("a", "Running", running(705), { created: 700 })],
    now: 706,
    admissionNoted: true,
    expect: [
      { kind: "admitted", name: NAME },
      { kind: "start", id: ID },
    ],
  },
  {
    name: "admitted, before the Job controller set its startTime: its wait for a pod has not begun",
    job: kueueJob({ since: 700, admitted: true }),
    record: record("pending"),
    now: 1000,
    expect: [],
  },
  {
    name: "admitted at 700 s, its pod waits for a node: unschedulable_timeout counts from the pod",
    job: kueueJob({ since: 700, admitted: true, status: { startTime: at(700), active: 1 } }),
    record: record("pending"),
    pods: [runnerPod("a", "Pending", undefined, { unscheduled: true, created: 700 })],
    now: 999,
    expect: [],
  },
  {
    name: "its wait noted, admitted, and its job ended before the Job's next sync: forgotten",
    job: kueueJob({
      since: 700,
      admitted: true,
      status: { startTime: at(700), ...ended("Complete", undefined, 720) },
    }),
    record: record("completed", { completed_at: at(719).toISOString() }),
    now: 721,
    admissionNoted: true,
    expect: [{ kind: "admitted", name: NAME }],
  },
  {
    name: "Kueue took its admission back (preempted) while it ran: waiting for admission again, from then",
    job: kueueJob({ since: 900, status: { startTime: at(700) } }),
    record: record("processing", { started_at: at(705).toISOString() }),
    pods: [runnerPod("a", "Running", running(705), { created: 700, deleting: true })],
    now: 2600,
    expect: [WAITS_FOR_ADMISSION],
  },
];

function sync(c: SyncCase, pods = c.pods ?? []): Action[] {
  return decideSync({
    kjob: c.job,
    record: c.record,
    pods,
    now: T0 + c.now * 1000,
    stuckSince: new Map(c.stuckSince ?? []),
    admissionNoted: new Set(c.admissionNoted ? [NAME] : []),
    quietNodes: new Map((c.quietNodes ?? []).map(([node, since]) => [node, at(since).getTime()])),
    settings,
  });
}

describe("decideSync: a runner Job, its pods and its job's record", () => {
  for (const c of SYNC) {
    test(c.name, () => {
      assert.deepEqual(sync(c), c.expect);
    });
  }

  test("the same state observed twice, or its pods listed in another order, gives the same answer", () => {
    for (const c of SYNC) {
      assert.deepEqual(sync(c), sync(c), c.name);
      assert.deepEqual(sync(c, [...(c.pods ?? [])].reverse()), c.expect, c.name);
    }
  });

  for (const c of KUEUE) {
    test(`Kueue: ${c.name}`, () => {
      assert.deepEqual(sync(c), c.expect);
      assert.deepEqual(sync(c), sync(c), "the same answer twice");
    });
  }

  test("Kueue: cancelling a job whose Job waits suspended deletes its Job", () => {
    assert.deepEqual(decideCancel(kueueJob()), [del("its job was cancelled")]);
  });

  test("a Job without the job-id annotation is not the executor's to sync", () => {
    const job = runnerJob();
    delete job.metadata!.annotations;
    assert.equal(syncedJobId(job), undefined);
    assert.deepEqual(
      decideSync({
        kjob: job,
        record: null,
        pods: [],
        now: T0,
        stuckSince: new Map(),
        admissionNoted: new Set(),
        quietNodes: new Map(),
        settings,
      }),
      [],
    );
    assert.equal(syncedJobId(runnerJob()), ID);
  });

  test("stuck pods that are gone are no longer watched", () => {
    const keys = [PULL_KEY, `${NAME}-s/config`];
    assert.deepEqual(goneStuckPods(keys, new Set([`${NAME}-img`])), [
      { kind: "unstuck", key: `${NAME}-s/config` },
    ]);
  });
});
