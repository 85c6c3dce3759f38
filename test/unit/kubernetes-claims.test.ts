// What the Kubernetes executor decides about its claims (controller/kubernetes/decide.ts): the Job of
// a claimed job and what a failed create means, a cancellation, a claim with no Job in the cluster,
// the leases it renews and the room it has to claim more. Tables, with no cluster and no store.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ApiException } from "@kubernetes/client-node";
import {
  activeByType,
  claimRoom,
  decideCancel,
  decideClaimed,
  decideCreateFailure,
  decideLaunch,
  leasedJobIds,
  type Action,
} from "../../controller/kubernetes/decide.js";
import { jobName } from "../../controller/kubernetes/names.js";
import {
  config,
  del,
  ended,
  fail,
  ID,
  NAME,
  record,
  runnerJob,
  settings,
  T0,
} from "../support/runner-jobs.js";

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
