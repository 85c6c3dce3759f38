// Runner Jobs, pods and job records as the Kubernetes executor sees them, for the tables of its
// decisions (test/unit/kubernetes-*.test.ts): the Jobs are the executor's own manifests with a status
// put on them; times count in seconds from T0, the Job's creation.
import assert from "node:assert/strict";
import type { V1ContainerState, V1Job, V1Pod } from "@kubernetes/client-node";
import { loadConfig } from "../../core/config/load.js";
import type { Job } from "../../core/jobs/records.js";
import { decideLaunch, type Action, type DecideSettings } from "../../controller/kubernetes/decide.js";
import { kubernetesSettings } from "../../controller/kubernetes/job-manifest.js";
import { jobName } from "../../controller/kubernetes/names.js";

export const ID = "0b7a3c1e-8a44-4f0e-9d7e-1c2b3a4d5e6f";
export const NAME = jobName(ID);
export const T0 = Date.parse("2026-11-28T10:00:00Z");
export const at = (seconds: number) => new Date(T0 + seconds * 1000);
export const NO_NODE = "0/1 nodes are available: 1 Insufficient cpu.";

export const config = loadConfig({
  env: {},
  file: "/dev/null",
  overrides: {
    redis: { url: "redis://redis:6379/0" },
    kubernetes: { namespace: "media", image: "media-service:test", redis_secret: { name: "media-redis" } },
  },
});
export const settings: DecideSettings = {
  kubernetes: kubernetesSettings(config),
  timeoutsMs: config.executor.timeoutsMs,
  unschedulableTimeoutMs: 300_000,
  startFailureTimeoutMs: 60_000,
  poolOwnerPrefix: "pool:",
  leaseMs: 30_000,
};

export function record(status: Job["status"], extra: Partial<Job> = {}): Job {
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
export function runnerJob(status: NonNullable<V1Job["status"]> = {}, deleting = false): V1Job {
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

export const ended = (type: "Complete" | "Failed", reason?: string, seconds = 0) => ({
  conditions: [{ type, status: "True", lastTransitionTime: at(seconds), ...(reason ? { reason } : {}) }],
});

/**
 * A runner pod of the Job, created at `created` s: on node-1 unless `unscheduled`. `quietSince`: its
 * node stopped reporting, and the node lifecycle controller marked it not ready at that second (its
 * container's last status, ready, left as the kubelet reported it). `jobUid`: the uid of the Job it
 * belongs to (its controller-uid label and owner).
 */
export function runnerPod(
  name: string,
  phase: string,
  state: V1ContainerState | undefined,
  o: {
    created?: number;
    unscheduled?: boolean;
    reason?: string;
    message?: string;
    deleting?: boolean;
    quietSince?: number;
    jobUid?: string;
  } = {},
): V1Pod {
  const created = o.created ?? 0;
  const quiet = o.quietSince !== undefined;
  return {
    metadata: {
      name: `${NAME}-${name}`,
      labels: {
        "batch.kubernetes.io/job-name": NAME,
        ...(o.jobUid ? { "batch.kubernetes.io/controller-uid": o.jobUid } : {}),
      },
      ...(o.jobUid
        ? {
            ownerReferences: [
              { apiVersion: "batch/v1", kind: "Job", name: NAME, uid: o.jobUid, controller: true },
            ],
          }
        : {}),
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
        ...(o.quietSince !== undefined
          ? [{ type: "Ready", status: "False", lastTransitionTime: at(o.quietSince) }]
          : []),
      ],
      containerStatuses: state
        ? [{ name: "runner", image: "media-service:test", imageID: "", ready: quiet, restartCount: 0, state }]
        : [],
    },
  };
}

export const running = (from: number): V1ContainerState => ({ running: { startedAt: at(from) } });
export const exited = (code: number, from: number, to: number, extra: object = {}): V1ContainerState => ({
  terminated: { exitCode: code, startedAt: at(from), finishedAt: at(to), ...extra },
});
export const waiting = (reason: string, message?: string): V1ContainerState => ({
  waiting: { reason, ...(message ? { message } : {}) },
});

export const fail = (reason: string, error: string, extra: object = {}): Action =>
  ({ kind: "fail", id: ID, reason, error, ...extra }) as Action;
export const del = (why: string): Action => ({ kind: "delete", name: NAME, why });
