// What a runner Job and its pods say about the media job, in words a user understands. A pure
// function of the observed objects, so the executor can apply it to any state it meets (level-
// triggered) and the tests can check every message without a cluster.
import type { V1ContainerStatus, V1Job, V1Pod } from "@kubernetes/client-node";
import { isPermanentExit, permanentError, timeoutMessage, type Deadline } from "../../core/policy.js";
import { RUNNER_CONTAINER } from "./job-manifest.js";

/** Why a job failed in Kubernetes: the `reason` label of media_controller_jobs_failed_total. */
export type FailureReason =
  | "oom"
  | "deadline"
  | "permanent"
  | "runner_error"
  | "no_report"
  | "evicted"
  | "image_pull"
  | "config"
  | "unschedulable"
  | "job_lost"
  | "rejected";

/** A pod that cannot start yet; the executor fails the job when it stays so for too long. */
export type StuckReason = "unschedulable" | "image_pull" | "config";

export type JobObservation =
  | { state: "waiting" }
  | { state: "running" }
  | { state: "succeeded" }
  /** `attempts`: the Job's pods that failed, when it retried (the store says it gave up after them). */
  | { state: "failed"; reason: FailureReason; error: string; attempts?: number }
  | { state: "stuck"; reason: StuckReason; error: string; pod: string; since?: number };

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

function runnerStatus(pod: V1Pod): V1ContainerStatus | undefined {
  const statuses = pod.status?.containerStatuses ?? [];
  return statuses.find((s) => s.name === RUNNER_CONTAINER) ?? statuses[0];
}

function finishedAt(pod: V1Pod): number {
  const t = runnerStatus(pod)?.state?.terminated?.finishedAt ?? pod.metadata?.creationTimestamp;
  return t ? new Date(t).getTime() : 0;
}

function memoryLimit(pod: V1Pod): string | undefined {
  const container = pod.spec?.containers.find((c) => c.name === RUNNER_CONTAINER) ?? pod.spec?.containers[0];
  return container?.resources?.limits?.memory;
}

function oneLine(text: string | undefined): string {
  return (text ?? "").trim().replace(/\s+/g, " ").slice(0, 1000);
}

/** Why one runner pod failed. */
export function describePodFailure(pod: V1Pod): { reason: FailureReason; error: string } {
  if (pod.status?.reason === "Evicted") {
    const message = oneLine(pod.status.message);
    return { reason: "evicted", error: `the runner pod was evicted${message ? `: ${message}` : ""}` };
  }
  const terminated = runnerStatus(pod)?.state?.terminated;
  if (terminated?.reason === "OOMKilled") {
    const limit = memoryLimit(pod);
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

function latestFailedPod(pods: V1Pod[]): V1Pod | undefined {
  return pods.filter((p) => p.status?.phase === "Failed").sort((a, b) => finishedAt(b) - finishedAt(a))[0];
}

/**
 * The state of a media job as its Kubernetes Job and pods show it. `pods` are the Job's pods (any
 * order); `deadline` is what the Job's activeDeadlineSeconds came from.
 */
export function observeJob(
  job: V1Job,
  pods: V1Pod[],
  deadline: Pick<Deadline, "seconds" | "setting">,
): JobObservation {
  if (condition(job, "Complete")) return { state: "succeeded" };
  const failed = condition(job, "Failed");
  if (failed) return describeJobFailure(job, failed.reason, failed.message, pods, deadline);

  const live = pods.filter((p) => !p.metadata?.deletionTimestamp);
  if (live.some((p) => p.status?.phase === "Running" || runnerStatus(p)?.state?.running)) {
    return { state: "running" };
  }
  for (const pod of live) {
    if (pod.status?.phase !== "Pending") continue;
    const name = pod.metadata?.name ?? "";
    const scheduled = pod.status.conditions?.find((c) => c.type === "PodScheduled");
    if (scheduled?.status === "False" && scheduled.reason === "Unschedulable") {
      return {
        state: "stuck",
        reason: "unschedulable",
        pod: name,
        error: `no node can run the job${scheduled.message ? `: ${oneLine(scheduled.message)}` : ""}`,
        ...(scheduled.lastTransitionTime ? { since: new Date(scheduled.lastTransitionTime).getTime() } : {}),
      };
    }
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
  return { state: "waiting" };
}

function describeJobFailure(
  job: V1Job,
  reason: string | undefined,
  message: string | undefined,
  pods: V1Pod[],
  deadline: Pick<Deadline, "seconds" | "setting">,
): JobObservation {
  if (reason === "DeadlineExceeded") {
    return {
      state: "failed",
      reason: "deadline",
      error: timeoutMessage(deadline),
    };
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
