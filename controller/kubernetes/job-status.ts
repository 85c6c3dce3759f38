// What a runner Job and its pods say about the media job, in words a user understands. A pure
// function of the observed objects (and the time), so the executor can apply it to any state it
// meets (level-triggered) and the tests can check every message without a cluster.
//
// Time: the runner keeps the job's own time from its start (JOB_TIMEOUT_SECONDS); a wait to start
// (a pod Pending for a node, or still being started on one, or not created) is bounded by
// kubernetes.unschedulable_timeout, and the Job's activeDeadlineSeconds is the sum of both (core/
// policy.ts). So a Job that passed its activeDeadlineSeconds without its runner having had its
// time waited too long, and says so; only a runner that had its whole time timed out. A suspended
// Job (Kueue's, until it admits it) waits for admission instead, bounded by
// kubernetes.max_waiting_admission; the Job controller starts its deadline when it is resumed.
import type { V1ContainerStatus, V1Job, V1Pod } from "@kubernetes/client-node";
import { KUEUE_LABELS } from "../../core/kubernetes-labels.js";
import {
  admissionMessage,
  evictionVerdict,
  isPermanentExit,
  permanentError,
  timeoutMessage,
  waitMessage,
  type Deadline,
} from "../../core/policy.js";
import { LABELS, RUNNER_CONTAINER } from "./job-manifest.js";

/** Why a job failed in Kubernetes: the `reason` label of media_controller_jobs_failed_total. */
export type FailureReason =
  | "oom"
  | "deadline"
  | "permanent"
  | "runner_error"
  | "no_report"
  | "evicted"
  | "disk_limit"
  | "image_pull"
  | "config"
  | "unschedulable"
  | "job_lost"
  | "node_lost"
  | "rejected"
  | "admission";

/**
 * A pod that cannot start (its image, its Secrets); the executor fails the job when it stays so for
 * kubernetes.start_failure_timeout.
 */
export type StuckReason = "image_pull" | "config";

export type JobObservation =
  | { state: "waiting" }
  /** Suspended: Kueue has not admitted its Job (yet, or again after taking it back) since `since`. */
  | { state: "admission"; since: number; queue?: string }
  | { state: "running" }
  /**
   * Its runner's node stopped reporting (see lostNode) for `nodeLostAfterMs`: the job goes back to
   * its queue, counted, and the Job is deleted.
   */
  | { state: "lost"; node: string; error: string }
  | { state: "succeeded" }
  /**
   * `attempts`: the Job's pods that failed, when it retried (the store says it gave up after them).
   * `deleteJob`: the Job is not finished (its pod waits still) and is to be deleted.
   */
  | { state: "failed"; reason: FailureReason; error: string; attempts?: number; deleteJob?: true }
  | { state: "stuck"; reason: StuckReason; error: string; pod: string };

/** What the controller knows besides the Job and its pods. */
export interface ObserveContext {
  /** The job's own time (its runner's JOB_TIMEOUT_SECONDS), and where it came from. */
  deadline: Pick<Deadline, "seconds" | "setting">;
  /** How long the job's runner may wait to start: kubernetes.unschedulable_timeout, in ms. */
  maxWaitMs: number;
  /** The time of the observation, ms since the epoch. */
  now: number;
  /** When the job's runner started (its record's started_at), if it has. */
  runnerStartedAt?: number;
  /** How long a suspended Job may wait for Kueue's admission: kubernetes.max_waiting_admission, in ms. */
  maxAdmissionWaitMs: number;
  /**
   * How long a runner whose node stopped reporting is given before its job goes back (executor.lease,
   * in ms: the runner's node is its heartbeat).
   */
  nodeLostAfterMs: number;
  /**
   * The nodes whose runner pods show them quiet (quietNodes), since when: a pod there that had not
   * started its runner yet shows nothing of it itself.
   */
  quietNodes?: ReadonlyMap<string, number>;
}

const IMAGE_PULL_REASONS = new Set([
  "ErrImagePull",
  "ImagePullBackOff",
  "InvalidImageName",
  "ErrImageNeverPull",
]);
const CONFIG_REASONS = new Set(["CreateContainerConfigError", "CreateContainerError", "RunContainerError"]);

function condition(job: V1Job, type: string) {
  return job.status?.conditions?.find((c) => c.type === type && c.status === "True");
}

export function isJobFinished(job: V1Job): boolean {
  return Boolean(condition(job, "Complete") || condition(job, "Failed"));
}

/**
 * Whether a Job waits suspended: `spec.suspend` (Kueue has not admitted it, or took its admission
 * back), or the Job controller's Suspended condition not yet cleared after Kueue unsuspended it.
 */
export function isSuspended(job: V1Job): boolean {
  return job.spec?.suspend === true || condition(job, "Suspended") !== undefined;
}

/** Since when a suspended Job waits: its Suspended condition's time, else its creation. */
function suspendedSince(job: V1Job): number | undefined {
  return time(condition(job, "Suspended")?.lastTransitionTime) ?? time(job.metadata?.creationTimestamp);
}

function runnerStatus(pod: V1Pod): V1ContainerStatus | undefined {
  const statuses = pod.status?.containerStatuses ?? [];
  return statuses.find((s) => s.name === RUNNER_CONTAINER) ?? statuses[0];
}

function finishedAt(pod: V1Pod): number {
  const t = runnerStatus(pod)?.state?.terminated?.finishedAt ?? pod.metadata?.creationTimestamp;
  return t ? new Date(t).getTime() : 0;
}

function runnerLimit(pod: V1Pod, resource: "memory" | "ephemeral-storage"): string | undefined {
  const container = pod.spec?.containers.find((c) => c.name === RUNNER_CONTAINER) ?? pod.spec?.containers[0];
  return container?.resources?.limits?.[resource];
}

/**
 * Why the kubelet evicted a runner pod, as core/policy.ts evictionVerdict reads its message: over its
 * own local disk limit the job fails at once (`disk_limit`), whether or not the Job would retry it;
 * for the node's sake it is an eviction like any other.
 */
function describeEviction(pod: V1Pod): { reason: FailureReason; error: string } {
  const verdict = evictionVerdict(
    oneLine(pod.status?.message),
    pod.metadata?.labels?.[LABELS.jobType],
    runnerLimit(pod, "ephemeral-storage"),
  );
  return verdict.action === "fail"
    ? { reason: "disk_limit", error: verdict.error }
    : { reason: "evicted", error: verdict.reason };
}

function oneLine(text: string | undefined): string {
  return (text ?? "").trim().replace(/\s+/g, " ").slice(0, 1000);
}

/** Why one runner pod failed. */
export function describePodFailure(pod: V1Pod): { reason: FailureReason; error: string } {
  if (pod.status?.reason === "Evicted") return describeEviction(pod);
  const terminated = runnerStatus(pod)?.state?.terminated;
  if (terminated?.reason === "OOMKilled") {
    const limit = runnerLimit(pod, "memory");
    return {
      reason: "oom",
      error: `out of memory: the runner was killed at its memory limit${limit ? ` of ${limit}` : ""} (give the job more with resources.memory)`,
    };
  }
  if (!terminated) {
    const message = oneLine(pod.status?.message);
    return {
      reason: "runner_error",
      error: `the runner pod failed before its container ran${message ? `: ${message}` : ""}`,
    };
  }
  const message = oneLine(terminated.message);
  if (isPermanentExit(terminated.exitCode)) {
    return { reason: "permanent", error: permanentError(message) };
  }
  const how = terminated.signal
    ? `was killed by signal ${terminated.signal}`
    : `exited with code ${terminated.exitCode}`;
  return { reason: "runner_error", error: `the runner ${how}${message ? `: ${message}` : ""}` };
}

/**
 * The node of a runner pod that stopped reporting, and since when: Kubernetes' node lifecycle
 * controller, once a node has not posted its status for its grace period (node-monitor-grace-period),
 * marks its pods not ready (the pod's Ready condition False) and leaves the kubelet's last container
 * statuses as they were: a runner container still `running` and `ready`. The kubelet itself never
 * reports a pod not ready with its only container ready (runner pods have no readiness probe or
 * gate), so that pair says the node, not the runner, went quiet. A pod the taint manager deleted
 * afterwards (a NoExecute taint for an unreachable node) keeps that pair; pods of a node that came
 * back are reported by its kubelet again. `NodeLost` is the pod reason older node controllers set.
 */
export function lostNode(pod: V1Pod): { node: string; since: number } | undefined {
  const node = pod.spec?.nodeName;
  const phase = pod.status?.phase;
  if (!node || (phase !== "Running" && phase !== "Pending")) return undefined;
  const ready = pod.status?.conditions?.find((c) => c.type === "Ready");
  const container = runnerStatus(pod);
  const quiet = ready?.status === "False" && container?.ready === true && container.state?.running;
  if (!quiet && pod.status?.reason !== "NodeLost") return undefined;
  const since = time(ready?.lastTransitionTime) ?? time(pod.metadata?.deletionTimestamp);
  return since === undefined ? undefined : { node, since };
}

/** The nodes that went quiet, by what the runner pods there show (lostNode), each since its earliest. */
export function quietNodes(pods: Iterable<V1Pod>): Map<string, number> {
  const nodes = new Map<string, number>();
  for (const pod of pods) {
    const lost = lostNode(pod);
    if (lost && lost.since < (nodes.get(lost.node) ?? Infinity)) nodes.set(lost.node, lost.since);
  }
  return nodes;
}

/** The error of a job whose runner's node was lost. */
export function nodeLostMessage(node: string, seconds: number): string {
  return `the runner's node ${node} was lost: it stopped reporting to Kubernetes ${seconds} s ago (its pods were marked not ready)`;
}

function latestFailedPod(pods: V1Pod[]): V1Pod | undefined {
  return pods.filter((p) => p.status?.phase === "Failed").sort((a, b) => finishedAt(b) - finishedAt(a))[0];
}

/**
 * The state of a media job as its Kubernetes Job and pods show it at `context.now`. `pods` are the
 * Job's pods (any order).
 */
export function observeJob(job: V1Job, pods: V1Pod[], context: ObserveContext): JobObservation {
  if (condition(job, "Complete")) return { state: "succeeded" };
  const failed = condition(job, "Failed");
  if (failed) return describeJobFailure(job, failed, pods, context);

  // Over its disk limit, a pod's eviction ends the job, not one attempt of it: the Job's next pod
  // would fill the same disk (the kubelet marks no DisruptionTarget, so the pod failure policy cannot
  // tell it from a crash).
  for (const pod of pods) {
    if (pod.status?.phase !== "Failed" || pod.status.reason !== "Evicted") continue;
    const eviction = describeEviction(pod);
    if (eviction.reason === "disk_limit") return { state: "failed", ...eviction, deleteJob: true };
  }
  const live = pods.filter((p) => !p.metadata?.deletionTimestamp);
  const runs = (p: V1Pod) => p.status?.phase === "Running" || Boolean(runnerStatus(p)?.state?.running);
  // A runner pod on a node gone quiet: its own (lostNode), or one still being started there.
  const quiet = (p: V1Pod): { node: string; since: number } | undefined => {
    const own = lostNode(p);
    const node = p.spec?.nodeName;
    if (own || !node || p.status?.phase !== "Pending") return own;
    const since = context.quietNodes?.get(node);
    return since === undefined ? undefined : { node, since };
  };
  const healthy = live.filter((p) => runs(p) && !quiet(p));
  if (healthy.length > 0) return { state: "running" };
  // Deleted or not (a terminating pod there never ends, and a Job with a podFailurePolicy makes no
  // new pod until it does): running until executor.lease has passed.
  const lost = pods
    .map((p) => ({ pod: p, ...quiet(p) }))
    .filter((l): l is { pod: V1Pod; node: string; since: number } => l.since !== undefined)
    .sort((a, b) => a.since - b.since)[0];
  if (lost) {
    const quietMs = context.now - lost.since;
    if (quietMs >= context.nodeLostAfterMs) {
      return {
        state: "lost",
        node: lost.node,
        error: nodeLostMessage(lost.node, Math.round(quietMs / 1000)),
      };
    }
    // Within executor.lease a runner there is taken as running still; one being started, as waiting.
    if (runs(lost.pod)) return { state: "running" };
  }
  if (isSuspended(job)) {
    // No pod runs while suspended, and none waits for a node: the unschedulable wait does not count.
    const since = suspendedSince(job) ?? context.now;
    const queue = job.metadata?.labels?.[KUEUE_LABELS.queueName];
    if (context.now - since >= context.maxAdmissionWaitMs) {
      return {
        state: "failed",
        reason: "admission",
        error: admissionMessage(Math.round((context.now - since) / 1000), queue),
        deleteJob: true,
      };
    }
    return { state: "admission", since, ...(queue ? { queue } : {}) };
  }
  for (const pod of live) {
    if (pod.status?.phase !== "Pending") continue;
    const name = pod.metadata?.name ?? "";
    const waiting = runnerStatus(pod)?.state?.waiting;
    if (waiting?.reason && IMAGE_PULL_REASONS.has(waiting.reason)) {
      const image = pod.spec?.containers[0]?.image ?? "";
      return {
        state: "stuck",
        reason: "image_pull",
        pod: name,
        error: `the runner image "${image}" cannot be pulled (${waiting.reason})${waiting.message ? `: ${oneLine(waiting.message)}` : ""}`,
      };
    }
    if (waiting?.reason && CONFIG_REASONS.has(waiting.reason)) {
      return {
        state: "stuck",
        reason: "config",
        pod: name,
        error: `the runner pod cannot start (${waiting.reason})${waiting.message ? `: ${oneLine(waiting.message)}` : ""}`,
      };
    }
  }
  const wait = currentWait(job, pods, live);
  if (wait?.since !== undefined && context.now - wait.since >= context.maxWaitMs) {
    return {
      state: "failed",
      reason: "unschedulable",
      error: waitMessage(Math.round((context.now - wait.since) / 1000), wait.what, wait.detail),
      deleteJob: true,
    };
  }
  return { state: "waiting" };
}

/** What a job's runner waits for, and since when. */
interface Wait {
  /** ms since the epoch; undefined when the objects do not say. */
  since?: number;
  what: string;
  detail?: string;
}

/**
 * The wait of a Job whose runner has not started: its newest Pending pod's, since the pod was
 * created (unscheduled, or scheduled and being started), or, with no pod at all, the Job's since
 * it started. Undefined between two attempts (a failed pod, the next not created yet).
 */
function currentWait(job: V1Job, pods: V1Pod[], live: V1Pod[]): Wait | undefined {
  const pending = live
    .filter((p) => p.status?.phase === "Pending" && !containerStarted(p))
    .sort(
      (a, b) => (time(b.metadata?.creationTimestamp) ?? 0) - (time(a.metadata?.creationTimestamp) ?? 0),
    )[0];
  if (pending) {
    const scheduled = pending.status?.conditions?.find((c) => c.type === "PodScheduled");
    const since = time(pending.metadata?.creationTimestamp) ?? time(scheduled?.lastTransitionTime);
    return { ...(since !== undefined ? { since } : {}), ...waitingFor(pending) };
  }
  if (pods.length > 0) return undefined;
  const since = jobStart(job);
  return { ...(since !== undefined ? { since } : {}), what: "its runner pod to be created" };
}

/** What a Pending pod waits for, in words: a node (with the scheduler's reason), or its start there. */
function waitingFor(pod: V1Pod): { what: string; detail?: string } {
  const scheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled");
  const node = pod.spec?.nodeName;
  if (scheduled?.status === "False" || !node) {
    const message = oneLine(scheduled?.message);
    return { what: "a node", ...(message ? { detail: message } : {}) };
  }
  const waiting = runnerStatus(pod)?.state?.waiting;
  const detail = [waiting?.reason, oneLine(waiting?.message)].filter(Boolean).join(": ");
  return { what: `its runner to start on node ${node}`, ...(detail ? { detail } : {}) };
}

/** Whether the runner container of a pod ever started. */
function containerStarted(pod: V1Pod): boolean {
  return containerStartedAt(pod) !== undefined || Boolean(runnerStatus(pod)?.state?.running);
}

function containerStartedAt(pod: V1Pod): number | undefined {
  const state = runnerStatus(pod)?.state;
  return time(state?.running?.startedAt) ?? time(state?.terminated?.startedAt);
}

/**
 * When the Job started: the Job controller's startTime (reset when a suspended Job is resumed), else
 * its creation; a Job that was ever suspended, without a startTime yet, has not started.
 */
function jobStart(job: V1Job): number | undefined {
  const suspended = job.status?.conditions?.some((c) => c.type === "Suspended");
  return time(job.status?.startTime) ?? (suspended ? undefined : time(job.metadata?.creationTimestamp));
}

function time(value: Date | string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = new Date(value).getTime();
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * A Job past its activeDeadlineSeconds: a wait too long when its runner never started, or started
 * too late to have its whole time (within a second); a timeout when it had it.
 */
function describeDeadline(job: V1Job, at: number, pods: V1Pod[], context: ObserveContext): JobObservation {
  const starts = pods.map(containerStartedAt).filter((t): t is number => t !== undefined);
  if (context.runnerStartedAt !== undefined) starts.push(context.runnerStartedAt);
  const started = starts.length > 0 ? Math.min(...starts) : undefined;
  const ranMs = started !== undefined ? at - started : 0;
  if (started !== undefined && ranMs + 1000 >= context.deadline.seconds * 1000) {
    return { state: "failed", reason: "deadline", error: timeoutMessage(context.deadline) };
  }
  const since = jobStart(job) ?? at - (job.spec?.activeDeadlineSeconds ?? 0) * 1000;
  const waitedMs = Math.max(0, (started ?? at) - since);
  const pending = pods.find((p) => p.status?.phase === "Pending" && !containerStarted(p));
  const { what, detail } = pending ? waitingFor(pending) : { what: "a node", detail: undefined };
  return {
    state: "failed",
    reason: "unschedulable",
    error: waitMessage(Math.round(waitedMs / 1000), what, started === undefined ? detail : undefined),
  };
}

function describeJobFailure(
  job: V1Job,
  failed: { reason?: string; message?: string; lastTransitionTime?: Date },
  pods: V1Pod[],
  context: ObserveContext,
): JobObservation {
  const { reason, message } = failed;
  if (reason === "DeadlineExceeded") {
    return describeDeadline(job, time(failed.lastTransitionTime) ?? context.now, pods, context);
  }
  const pod = latestFailedPod(pods);
  if (!pod) {
    return {
      state: "failed",
      reason: "runner_error",
      error: `the Kubernetes Job failed (${reason ?? "no reason given"})${message ? `: ${oneLine(message)}` : ""}`,
    };
  }
  const { reason: why, error } = describePodFailure(pod);
  const attempts = job.status?.failed ?? 1;
  if (reason === "BackoffLimitExceeded" && attempts > 1) {
    return { state: "failed", reason: why, error, attempts };
  }
  return { state: "failed", reason: why, error };
}
