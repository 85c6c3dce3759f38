// What the Kubernetes executor does, decided from what it observes. Every function here is pure: it
// takes the runner Jobs, their pods, the job records, the claims and the time, and answers with the
// actions the executor's shell (executor.ts, actions.ts) carries out against the cluster and the
// store. Because the answer depends on the state alone, never on the events that led to it, a
// duplicate or missed event, or a restart anywhere, changes nothing (level-triggered), and every case
// the real-node tests meet is a row of a table in test/unit/kubernetes-decide.test.ts.
import { ApiException, type V1Job, type V1Pod } from "@kubernetes/client-node";
import { RUNNER_ENV } from "../../core/config/runner-env.js";
import type { Job } from "../../core/jobs/records.js";
import { JOB_TYPES, type JobType } from "../../core/jobs/types.js";
import { admissionWait, jobDeadline, type Deadline } from "../../core/policy.js";
import type { Room } from "../executor.js";
import {
  ANNOTATIONS,
  buildJobManifest,
  LABELS,
  runnerTimeoutSeconds,
  type KubernetesSettings,
} from "./job-manifest.js";
import { bodyMessage, describeError } from "./api-errors.js";
import { isJobFinished, observeJob, type FailureReason, type JobObservation } from "./job-status.js";
import { jobName } from "./names.js";

/** The Job controller's label on its pods: the uid of their Job. */
const CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid";

/** A finished job whose runner pod still runs after this long has its Job deleted. */
export const TERMINAL_GRACE_MS = 15_000;
/** No claims for this long after the API server failed a create. */
export const CREATE_FAILURE_PAUSE_MS = 1000;
/** Job creates in flight at once, at the most. */
export const MAX_CONCURRENT_CREATES = 32;

export type Action =
  /** Create the runner Job of a claimed job. */
  | { kind: "create"; id: string; type: JobType; manifest: V1Job }
  /** Its Job exists already (created before a restart): the claim is this Job's. */
  | { kind: "adopt"; id: string }
  /** A claim that gets no Job: it no longer counts against the caps. */
  | { kind: "drop"; id: string; why: string }
  /** Its runner runs: the job becomes processing (start.lua; a duplicate is a no-op). */
  | { kind: "start"; id: string }
  /** Fail the job. `recheck`: read its record first, and fail it only if it is still open. */
  | { kind: "fail"; id: string; reason: FailureReason; error: string; attempts?: number; recheck?: true }
  /** Delete a runner Job (and, in the background, its pods). */
  | { kind: "delete"; name: string; why: string }
  /**
   * Give the job back to its queue (requeue.lua, which fails it when its attempts are spent; then
   * `lost` is the reason counted). `handback`: the run was interrupted, its attempt is refunded.
   */
  | { kind: "requeue"; id: string; why: string; handback?: true; lost?: FailureReason }
  /** Renew the job's lease. */
  | { kind: "renew"; id: string }
  /** Ask the API server whether the Job exists (the cache may lag behind a create), then decide again. */
  | { kind: "lookup"; name: string }
  /** Claim nothing for `ms`. */
  | { kind: "pause"; ms: number }
  /** A pod that cannot start, first seen so at `since` (kubernetes.start_failure_timeout counts from it). */
  | { kind: "stuck"; key: string; since: number }
  /** A stuck pod no longer watched. */
  | { kind: "unstuck"; key: string }
  /** Its Job waits suspended for Kueue's admission: noted on the job's timeline, once. */
  | { kind: "admission"; id: string; name: string; message: string }
  /** A Job whose wait was noted no longer waits. */
  | { kind: "admitted"; name: string };

/** What the decisions take of the configuration. */
export interface DecideSettings {
  kubernetes: KubernetesSettings;
  /** executor.timeouts, in ms. */
  timeoutsMs: Record<JobType, number>;
  /** kubernetes.unschedulable_timeout, in ms. */
  unschedulableTimeoutMs: number;
  /** kubernetes.start_failure_timeout, in ms. */
  startFailureTimeoutMs: number;
  /** Claims of pool workers begin with this: their leases are theirs to renew. */
  poolOwnerPrefix: string;
  /** executor.lease, in ms: how long a runner whose node stopped reporting is given (lostNode). */
  leaseMs: number;
}

/** The job's own time: the one its Job gave the runner (JOB_TIMEOUT_SECONDS), else the policy's. */
export function runDeadline(job: Job, timeoutsMs: Record<JobType, number>, kjob?: V1Job): Deadline {
  const given = kjob && runnerTimeoutSeconds(kjob);
  return jobDeadline(
    job,
    timeoutsMs,
    given !== undefined ? { seconds: given, setting: RUNNER_ENV.jobTimeoutSeconds } : undefined,
  );
}

/** The media job a runner Job runs, unless the Job is being deleted (nothing more to decide). */
export function syncedJobId(kjob: V1Job | undefined): string | undefined {
  if (!kjob || kjob.metadata?.deletionTimestamp) return undefined;
  return kjob.metadata?.annotations?.[ANNOTATIONS.jobId] || undefined;
}

// ---------------------------------------------------------------------------------------------
// A claimed job: its Job created, or the claim given back

/** A claimed job's Job: created from its record while it is still pending. */
export function decideLaunch(
  id: string,
  type: JobType,
  record: Job | null,
  settings: DecideSettings,
  client?: string,
): Action[] {
  if (!record || record.status !== "pending") {
    return [{ kind: "drop", id, why: `the claimed job is no longer pending (${record?.status ?? "gone"})` }];
  }
  const deadline = runDeadline(record, settings.timeoutsMs);
  return [
    {
      kind: "create",
      id,
      type,
      manifest: buildJobManifest(record, settings.kubernetes, deadline.seconds, client),
    },
  ];
}

/**
 * A create that failed, by what the API server answered: the Job exists already (a create retried
 * after a restart), the API server refuses the Job for good (the job fails, saying why), or it is
 * failing or refusing the controller (RBAC), or it did not answer: the job goes back, its attempt
 * refunded, and nothing is claimed for a moment.
 */
export function decideCreateFailure(id: string, err: unknown): Action[] {
  const status = err instanceof ApiException ? err.code : undefined;
  if (status === 409) return [{ kind: "adopt", id }];
  if (err instanceof ApiException && (status === 400 || status === 422)) {
    return [
      { kind: "drop", id, why: "its runner Job was refused" },
      {
        kind: "fail",
        id,
        reason: "rejected",
        error: `Kubernetes refused the runner Job: ${bodyMessage(err.body)}`,
      },
    ];
  }
  const why = `creating its Kubernetes Job failed: ${describeError(err)}`;
  return [
    { kind: "drop", id, why },
    { kind: "pause", ms: CREATE_FAILURE_PAUSE_MS },
    { kind: "requeue", id, why, handback: true },
  ];
}

/** A job cancelled in the store: its Job, while it runs, is deleted, which stops its pod. */
export function decideCancel(kjob: V1Job | undefined): Action[] {
  const name = kjob?.metadata?.name;
  if (!kjob || !name || isJobFinished(kjob)) return [];
  return [{ kind: "delete", name, why: "its job was cancelled" }];
}

// ---------------------------------------------------------------------------------------------
// A runner Job and its pods, mirrored into its job's record

export interface SyncInput {
  /** The runner Job, as the cache has it (see syncedJobId). */
  kjob: V1Job;
  /** Its job's record; null when there is none. */
  record: Job | null;
  /** The Job's pods, any order. */
  pods: V1Pod[];
  /** The time of the observation, ms since the epoch. */
  now: number;
  /** When each stuck pod (`<pod>/<reason>`) was first seen so. */
  stuckSince: ReadonlyMap<string, number>;
  /** The Jobs whose wait for Kueue's admission is noted on their job's timeline. */
  admissionNoted: ReadonlySet<string>;
  /** The nodes every runner pod shows gone quiet, since when (job-status.ts quietNodes). */
  quietNodes: ReadonlyMap<string, number>;
  settings: DecideSettings;
}

/**
 * What one runner Job, its pods and its job's record call for. A Job waiting for Kueue's admission
 * has its wait noted once; a Job whose wait was noted and that no longer waits (admitted, finished,
 * or its job ended) is forgotten.
 */
export function decideSync(input: SyncInput): Action[] {
  const name = input.kjob.metadata?.name ?? "";
  const id = syncedJobId(input.kjob);
  if (!id) return [];
  const observed = observeSynced(input);
  const noted = input.admissionNoted.has(name);
  if (observed.state === "admission") {
    return noted ? [] : [{ kind: "admission", id, name, message: admissionWait(observed.queue) }];
  }
  const actions = observed.state === "decided" ? observed.actions : observedActions(input, id, observed);
  return noted ? [{ kind: "admitted", name }, ...actions] : actions;
}

/** The Job as observed for an open job, or what a Job whose record is gone or ended calls for. */
function observeSynced(input: SyncInput): JobObservation | { state: "decided"; actions: Action[] } {
  const { kjob, record, now, settings } = input;
  const name = kjob.metadata?.name ?? "";
  if (!record) {
    return {
      state: "decided",
      actions: [{ kind: "delete", name, why: "its job record no longer exists (pruned or never stored)" }],
    };
  }
  if (record.status === "completed" || record.status === "failed") {
    const endedAt = Date.parse(record.completed_at ?? record.updated_at ?? "");
    const grace = Number.isFinite(endedAt) && now - endedAt < TERMINAL_GRACE_MS;
    if (isJobFinished(kjob) || grace) return { state: "decided", actions: [] };
    return {
      state: "decided",
      actions: [{ kind: "delete", name, why: `the job is ${record.status} but its runner pod still runs` }],
    };
  }
  const startedAt = Date.parse(record.started_at ?? "");
  return observeJob(kjob, ownPods(kjob, input.pods), {
    deadline: runDeadline(record, settings.timeoutsMs, kjob),
    maxWaitMs: settings.unschedulableTimeoutMs,
    maxAdmissionWaitMs: settings.kubernetes.maxWaitingAdmissionMs,
    nodeLostAfterMs: settings.leaseMs,
    quietNodes: input.quietNodes,
    now,
    ...(Number.isFinite(startedAt) ? { runnerStartedAt: startedAt } : {}),
  });
}

/**
 * The pods of this Job, not of an earlier Job of the same name (the pods are found by their
 * job-name label): a Job deleted when its runner's node was lost leaves its pod terminating there
 * until the node returns, while its job's next Job, of the same name, runs elsewhere.
 */
export function ownPods(kjob: V1Job, pods: readonly V1Pod[]): V1Pod[] {
  const uid = kjob.metadata?.uid;
  if (!uid) return [...pods];
  return pods.filter((pod) => {
    const owner = pod.metadata?.ownerReferences?.find((o) => o.controller)?.uid;
    const label = pod.metadata?.labels?.[CONTROLLER_UID_LABEL];
    return (owner ?? label ?? uid) === uid;
  });
}

/** What an observation of a Job that does not wait for admission calls for. */
function observedActions(
  input: SyncInput,
  id: string,
  observed: Exclude<JobObservation, { state: "admission" }>,
): Action[] {
  const { kjob, record, now, settings } = input;
  const name = kjob.metadata?.name ?? "";
  switch (observed.state) {
    case "waiting":
      return [];
    case "running":
      return record?.status === "pending" ? [{ kind: "start", id }] : [];
    case "lost":
      // The Job goes first, so the job's next Job (same name) is not met by this one; the job goes
      // back counted (a job that keeps losing its node fails with the reason once its attempts are
      // spent). A runner that was only cut off and still reports is harmless: the store's scripts
      // take one ending of a job and refuse the rest.
      return [
        { kind: "delete", name, why: `its runner's node ${observed.node} was lost` },
        { kind: "requeue", id, why: observed.error, lost: "node_lost" },
      ];
    case "succeeded":
      // The runner reports before it exits 0, so an open record here means it never reported.
      return [
        {
          kind: "fail",
          id,
          reason: "no_report",
          error: "the runner finished without reporting a result",
          recheck: true,
        },
      ];
    case "failed": {
      const { reason, error, attempts } = observed;
      const fail: Action = {
        kind: "fail",
        id,
        reason,
        error,
        ...(attempts !== undefined ? { attempts } : {}),
      };
      // Its pod, still waiting, would start a runner for a job that has ended.
      if (!observed.deleteJob) return [fail];
      const why =
        reason === "admission"
          ? "Kueue did not admit it in time"
          : reason === "disk_limit"
            ? "its runner was evicted over its disk limit"
            : "its runner waited too long to start";
      return [fail, { kind: "delete", name, why }];
    }
    case "stuck": {
      const key = `${observed.pod}/${observed.reason}`;
      const first = input.stuckSince.get(key);
      const since = first ?? now;
      if (now - since < settings.startFailureTimeoutMs) {
        return first === undefined ? [{ kind: "stuck", key, since }] : [];
      }
      const waited = Math.round((now - since) / 1000);
      return [
        { kind: "fail", id, reason: observed.reason, error: `${observed.error} (waited ${waited} s)` },
        { kind: "delete", name, why: "its pod could not start" },
        { kind: "unstuck", key },
      ];
    }
  }
}

/** Stuck pods that are gone: no longer watched. `keys` are `<pod>/<reason>`. */
export function goneStuckPods(keys: Iterable<string>, livePods: ReadonlySet<string>): Action[] {
  const gone: Action[] = [];
  for (const key of keys) {
    if (!livePods.has(key.slice(0, key.indexOf("/")))) gone.push({ kind: "unstuck", key });
  }
  return gone;
}

// ---------------------------------------------------------------------------------------------
// Claims without a Job

export interface ClaimedInput {
  /** A claimed or processing job of the store: who holds it and until when. */
  entry: { id: string; owner?: string; leaseUntil: number };
  /** Its Job is in the cache, or being created. */
  known: boolean;
  now: number;
  /** Whether the API server has its Job; undefined until asked. */
  exists?: boolean;
  /** Its record, read once the API server said there is no Job; null: none. */
  record?: Pick<Job, "status"> | null;
}

/**
 * A claimed or processing job that has no Job in the cluster: a controller died between its claim
 * and its create, or the Job was deleted. Once its lease has run out (no leader renewed it, so no Job
 * was seen for it), and the API server confirms there is no Job, it goes back to its queue, or fails
 * when its attempts are spent. A pool worker's claim is not the executor's to judge.
 */
export function decideClaimed(c: ClaimedInput, settings: Pick<DecideSettings, "poolOwnerPrefix">): Action[] {
  const { id, owner, leaseUntil } = c.entry;
  if (owner?.startsWith(settings.poolOwnerPrefix) || c.known || leaseUntil > c.now) return [];
  if (c.exists === undefined) return [{ kind: "lookup", name: jobName(id) }];
  if (c.exists) return [{ kind: "renew", id }];
  if (c.record?.status === "pending") {
    return [{ kind: "requeue", id, why: "claimed, but its Kubernetes Job was never created" }];
  }
  if (c.record?.status === "processing") {
    return [
      { kind: "requeue", id, why: "its Kubernetes Job disappeared before the job ended", lost: "job_lost" },
    ];
  }
  return [];
}

// ---------------------------------------------------------------------------------------------
// Ownership and room

/** A claim whose Job is being created: its job and type. */
export interface InFlight {
  id: string;
  type: JobType;
}

/** Jobs whose Job is created and not finished, or being created, by type. */
export function activeByType(
  kjobs: readonly V1Job[],
  inflight: ReadonlyMap<string, InFlight>,
): Map<JobType, number> {
  const counts = new Map<JobType, number>();
  const add = (type: JobType) => counts.set(type, (counts.get(type) ?? 0) + 1);
  const names = new Set<string>();
  for (const kjob of kjobs) {
    if (kjob.metadata?.name) names.add(kjob.metadata.name);
    if (isJobFinished(kjob)) continue;
    const type = kjob.metadata?.labels?.[LABELS.jobType] as JobType | undefined;
    if (type && JOB_TYPES.includes(type)) add(type);
  }
  for (const [name, entry] of inflight) if (!names.has(name)) add(entry.type);
  return counts;
}

/** The jobs whose leases the leader renews: those of its unfinished Jobs and of its creates. */
export function leasedJobIds(kjobs: readonly V1Job[], inflight: ReadonlyMap<string, InFlight>): Set<string> {
  const ids = new Set<string>();
  for (const kjob of kjobs) {
    const id = kjob.metadata?.annotations?.[ANNOTATIONS.jobId];
    if (id && !isJobFinished(kjob)) ids.add(id);
  }
  for (const entry of inflight.values()) ids.add(entry.id);
  return ids;
}

/**
 * Room for claims: kubernetes.max_running_jobs and the per-type caps less the active Jobs (created
 * and not finished, and creates in flight), none while MAX_CONCURRENT_CREATES creates run, and none
 * while claims are paused (after the API server failed a create).
 */
export function claimRoom(
  active: ReadonlyMap<JobType, number>,
  caps: { total: number; perType: Partial<Record<JobType, number>> },
  creates: number,
  paused: boolean,
): Room {
  if (paused || creates >= MAX_CONCURRENT_CREATES) return { total: 0 };
  let running = 0;
  for (const n of active.values()) running += n;
  const full = new Set<JobType>();
  for (const [type, cap] of Object.entries(caps.perType) as Array<[JobType, number | undefined]>) {
    if (cap !== undefined && (active.get(type) ?? 0) >= cap) full.add(type);
  }
  return { total: caps.total - running, full };
}
