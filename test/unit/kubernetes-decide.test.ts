// What the Kubernetes executor decides from what it observes (controller/kubernetes/decide.ts): every
// outcome of a runner pod the real-node tests meet (test/k8s/controller*.test.ts), as rows of tables,
// with no cluster and no store. The Jobs are the executor's own manifests with a status put on them.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ApiException, type V1ContainerState, type V1Job, type V1Pod } from "@kubernetes/client-node";
import { loadConfig } from "../../core/config/load.js";
import type { Job } from "../../core/jobs/records.js";
import {
  activeByType,
  claimRoom,
  decideCancel,
  decideClaimed,
  decideCreateFailure,
  decideLaunch,
  decideSync,
  goneStuckPods,
  leasedJobIds,
  syncedJobId,
  type Action,
  type DecideSettings,
} from "../../controller/kubernetes/decide.js";
import { kubernetesSettings } from "../../controller/kubernetes/job-manifest.js";
import { jobName } from "../../controller/kubernetes/names.js";

const ID = "0b7a3c1e-8a44-4f0e-9d7e-1c2b3a4d5e6f";
const NAME = jobName(ID);
const T0 = Date.parse("2026-11-28T10:00:00Z");
const at = (seconds: number) => new Date(T0 + seconds * 1000);
const NO_NODE = "0/1 nodes are available: 1 Insufficient cpu.";

const config = loadConfig({
  env: {},
  file: "/dev/null",
  overrides: {
    redis: { url: "redis://redis:6379/0" },
    kubernetes: { namespace: "media", image: "media-service:test", redis_secret: { name: "media-redis" } },
  },
});
const settings: DecideSettings = {
  kubernetes: kubernetesSettings(config),
  timeoutsMs: config.executor.timeoutsMs,
  unschedulableTimeoutMs: 300_000,
  startFailureTimeoutMs: 60_000,
  poolOwnerPrefix: "pool:",
};

function record(status: Job["status"], extra: Partial<Job> = {}): Job {
  return {
    id: ID,
    type: "image_resize",
    status,
    source_bucket: "in",
    source_key: "photo.jpg",
    dest_bucket: "out",
    dest_key: "small.jpg",
    parameters: { width: 64 },
    timeout_seconds: 30,
    created_at: at(0).toISOString(),
    updated_at: at(0).toISOString(),
    ...extra,
  };
}

/** The runner Job the executor creates for the record, created at 0 s, with `status` put on it. */
function runnerJob(status: NonNullable<V1Job["status"]> = {}, deleting = false): V1Job {
  const [create] = decideLaunch(ID, "image_resize", record("pending"), settings);
  assert.equal(create?.kind, "create");
  const manifest = create.manifest;
  return {
    ...manifest,
    metadata: {
      ...manifest.metadata,
      creationTimestamp: at(0),
      ...(deleting ? { deletionTimestamp: at(1) } : {}),
    },
    status: { startTime: at(0), ...status },
  };
}

const ended = (type: "Complete" | "Failed", reason?: string, seconds = 0) => ({
  conditions: [{ type, status: "True", lastTransitionTime: at(seconds), ...(reason ? { reason } : {}) }],
});

/** A runner pod of the Job, created at `created` s: on node-1 unless `unscheduled`. */
function runnerPod(
  name: string,
  phase: string,
  state: V1ContainerState | undefined,
  o: { created?: number; unscheduled?: boolean; reason?: string; message?: string; deleting?: boolean } = {},
): V1Pod {
  const created = o.created ?? 0;
  return {
    metadata: {
      name: `${NAME}-${name}`,
      labels: { "batch.kubernetes.io/job-name": NAME },
      creationTimestamp: at(created),
      ...(o.deleting ? { deletionTimestamp: at(created + 1) } : {}),
    },
    spec: {
      ...(o.unscheduled ? {} : { nodeName: "node-1" }),
      containers: [
        { name: "runner", image: "media-service:test", resources: { limits: { memory: "256Mi" } } },
      ],
    },
    status: {
      phase,
      ...(o.reason ? { reason: o.reason } : {}),
      ...(o.message ? { message: o.message } : {}),
      conditions: [
        o.unscheduled
          ? { type: "PodScheduled", status: "False", reason: "Unschedulable", message: NO_NODE }
          : { type: "PodScheduled", status: "True", lastTransitionTime: at(created) },
      ],
      containerStatuses: state
        ? [{ name: "runner", image: "media-service:test", imageID: "", ready: false, restartCount: 0, state }]
        : [],
    },
  };
}

const running = (from: number): V1ContainerState => ({ running: { startedAt: at(from) } });
const exited = (code: number, from: number, to: number, extra: object = {}): V1ContainerState => ({
  terminated: { exitCode: code, startedAt: at(from), finishedAt: at(to), ...extra },
});
const waiting = (reason: string, message?: string): V1ContainerState => ({
  waiting: { reason, ...(message ? { message } : {}) },
});

const fail = (reason: string, error: string, extra: object = {}): Action =>
  ({ kind: "fail", id: ID, reason, error, ...extra }) as Action;
const del = (why: string): Action => ({ kind: "delete", name: NAME, why });

interface SyncCase {
  name: string;
  job: V1Job;
  record: Job | null;
  pods?: V1Pod[];
  /** Seconds after the Job's creation. */
  now: number;
  stuckSince?: Array<[string, number]>;
  expect: Action[];
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

function sync(c: SyncCase, pods = c.pods ?? []): Action[] {
  return decideSync({
    kjob: c.job,
    record: c.record,
    pods,
    now: T0 + c.now * 1000,
    stuckSince: new Map(c.stuckSince ?? []),
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

  test("a Job without the job-id annotation is not the executor's to sync", () => {
    const job = runnerJob();
    delete job.metadata!.annotations;
    assert.equal(syncedJobId(job), undefined);
    assert.deepEqual(
      decideSync({ kjob: job, record: null, pods: [], now: T0, stuckSince: new Map(), settings }),
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

describe("decideLaunch and decideCreateFailure: a claimed job gets its Job", () => {
  test("a pending job: its Job, named after its id, with the job's time and the longest wait", () => {
    const [action, ...rest] = decideLaunch(ID, "image_resize", record("pending"), settings);
    assert.deepEqual(rest, []);
    assert.equal(action?.kind, "create");
    const { manifest, type } = action;
    assert.equal(type, "image_resize");
    assert.equal(manifest.metadata?.name, NAME);
    assert.equal(manifest.spec?.activeDeadlineSeconds, 30 + config.kubernetes.unschedulableTimeoutMs / 1000);
  });

  const dropped = (status?: string): Action[] => [
    { kind: "drop", id: ID, why: `the claimed job is no longer pending (${status ?? "gone"})` },
  ];
  test("a job no longer pending (cancelled after its claim) or gone: no Job, the claim dropped", () => {
    assert.deepEqual(decideLaunch(ID, "image_resize", record("failed"), settings), dropped("failed"));
    assert.deepEqual(decideLaunch(ID, "image_resize", null, settings), dropped());
  });

  const requeued = (why: string): Action[] => [
    { kind: "drop", id: ID, why },
    { kind: "pause", ms: 1000 },
    { kind: "requeue", id: ID, why, handback: true },
  ];
  const body = JSON.stringify({
    kind: "Status",
    message: 'Job.batch "x" is invalid: spec.template: Invalid value',
  });
  const CREATE_FAILURES: Array<{ name: string; err: unknown; expect: Action[] }> = [
    {
      name: "409 AlreadyExists (a create retried after a restart): the Job is adopted",
      err: new ApiException(409, "Conflict", "{}", {}),
      expect: [{ kind: "adopt", id: ID }],
    },
    {
      name: "422 Invalid: the job fails with the API server's words",
      err: new ApiException(422, "Unprocessable", body, {}),
      expect: [
        { kind: "drop", id: ID, why: "its runner Job was refused" },
        fail(
          "rejected",
          'Kubernetes refused the runner Job: Job.batch "x" is invalid: spec.template: Invalid value',
        ),
      ],
    },
    {
      name: "403 Forbidden (RBAC): back to its queue, attempt refunded, claims paused",
      err: new ApiException(403, "Forbidden", JSON.stringify({ message: "jobs.batch is forbidden" }), {}),
      expect: requeued(
        "creating its Kubernetes Job failed: Kubernetes API answered 403: jobs.batch is forbidden",
      ),
    },
    {
      name: "no answer (connection refused): back to its queue, claims paused",
      err: new Error("connect ECONNREFUSED 10.0.0.1:443"),
      expect: requeued("creating its Kubernetes Job failed: connect ECONNREFUSED 10.0.0.1:443"),
    },
  ];
  for (const c of CREATE_FAILURES) {
    test(c.name, () => assert.deepEqual(decideCreateFailure(ID, c.err), c.expect));
  }
});

describe("decideCancel: a job cancelled in the store", () => {
  test("its running Job is deleted; a finished or absent Job is left alone", () => {
    assert.deepEqual(decideCancel(runnerJob({ active: 1 })), [del("its job was cancelled")]);
    assert.deepEqual(decideCancel(runnerJob(ended("Complete"))), []);
    assert.deepEqual(decideCancel(undefined), []);
  });
});

describe("decideClaimed: a claimed or processing job with no Job in the cache", () => {
  const entry = (extra: object = {}) => ({
    id: ID,
    owner: "kubernetes:media/media-service",
    leaseUntil: T0,
    ...extra,
  });
  const CLAIMED: Array<{ name: string; input: Parameters<typeof decideClaimed>[0]; expect: Action[] }> = [
    {
      name: "a pool worker's claim: its own to renew",
      input: { entry: entry({ owner: "pool:worker-1" }), known: false, now: T0 + 1 },
      expect: [],
    },
    {
      name: "its Job is in the cache or being created",
      input: { entry: entry(), known: true, now: T0 + 1 },
      expect: [],
    },
    { name: "its lease still runs", input: { entry: entry(), known: false, now: T0 - 1 }, expect: [] },
    {
      name: "its lease ran out: ask the API server first (the cache may lag behind a create)",
      input: { entry: entry(), known: false, now: T0 + 1 },
      expect: [{ kind: "lookup", name: NAME }],
    },
    {
      name: "the API server has its Job: the lease is renewed",
      input: { entry: entry(), known: false, now: T0 + 1, exists: true },
      expect: [{ kind: "renew", id: ID }],
    },
    {
      name: "claimed, its Job never created (its controller died): back to its queue",
      input: { entry: entry(), known: false, now: T0 + 1, exists: false, record: { status: "pending" } },
      expect: [{ kind: "requeue", id: ID, why: "claimed, but its Kubernetes Job was never created" }],
    },
    {
      name: "processing, its Job deleted behind the controller's back: back to its queue, lost when spent",
      input: { entry: entry(), known: false, now: T0 + 1, exists: false, record: { status: "processing" } },
      expect: [
        {
          kind: "requeue",
          id: ID,
          why: "its Kubernetes Job disappeared before the job ended",
          lost: "job_lost",
        },
      ],
    },
    {
      name: "ended meanwhile, or its record gone: nothing",
      input: { entry: entry(), known: false, now: T0 + 1, exists: false, record: { status: "completed" } },
      expect: [],
    },
    {
      name: "no record",
      input: { entry: entry(), known: false, now: T0 + 1, exists: false, record: null },
      expect: [],
    },
  ];
  for (const c of CLAIMED) {
    test(c.name, () => assert.deepEqual(decideClaimed(c.input, settings), c.expect));
  }
});

describe("ownership and room", () => {
  const other = "5c3f9d2a-1b2c-4d5e-8f90-123456789abc";
  const inflight = new Map([[jobName(other), { id: other, type: "video_thumbnail" as const }]]);

  test("active Jobs by type count unfinished Jobs and creates in flight; leases follow them", () => {
    const jobs = [runnerJob({ active: 1 })];
    assert.deepEqual(
      [...activeByType(jobs, inflight)],
      [
        ["image_resize", 1],
        ["video_thumbnail", 1],
      ],
    );
    assert.deepEqual([...activeByType([runnerJob(ended("Complete"))], new Map())], []);
    assert.deepEqual([...leasedJobIds(jobs, inflight)], [ID, other]);
    assert.deepEqual([...leasedJobIds([runnerJob(ended("Failed"))], new Map())], []);
  });

  test("room: the caps less the active Jobs; none while paused or at the create limit", () => {
    const active = new Map([["image_resize" as const, 2]]);
    const caps = { total: 5, perType: { image_resize: 2, video_thumbnail: 4 } };
    assert.deepEqual(claimRoom(active, caps, 0, false), { total: 3, full: new Set(["image_resize"]) });
    assert.deepEqual(claimRoom(active, caps, 0, true), { total: 0 });
    assert.deepEqual(claimRoom(active, caps, 32, false), { total: 0 });
  });
});
