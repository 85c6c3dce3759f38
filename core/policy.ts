// How a job's run ends, decided once for every executor: the runner's exit-code contract, the
// deadline a run gets and the words of its timeout (and, on Kubernetes, of a wait for a node), and
// the retry rule. The local executor, the
// Kubernetes executor (its Job manifest and the reading of its pods) and the runner all take their
// answers from here. The attempt budget itself is enforced by the store's scripts wherever a job is
// re-queued (a lease that ran out included): a processing job given back after its
// `executor.max_attempts`-th attempt fails instead of running again.
import type { ResourceClass } from "../jobs/define.js";
import { stepTypeWaves, type PipelineStep } from "../jobs/pipeline/graph.js";
import type { Job } from "./jobs/records.js";
import type { ExecutionClass, JobType } from "./jobs/types.js";
import { parseQuantity } from "./quantity.js";

/** The error of a job a client cancelled (POST /jobs/{id}/cancel, or its batch's cancel). */
export const CANCELLED_BY_REQUEST = "cancelled by request";

/**
 * The reason of a job handed back to its queue because the executor running it stopped first (its
 * attempt refunded: the run was interrupted, not failed).
 */
export const STOPPED_BEFORE_END = "the executor stopped before the job ended";

/** The runner's exit codes, a contract between the runner and both executors. */
export const EXIT = {
  /** The job is done: the runner recorded its result (or found it already ended). */
  done: 0,
  /** Anything but done or permanent: retried while the job has attempts left. */
  transient: 1,
  /** The same input will always fail (bad media, missing source, invalid parameters): never retried. */
  permanent: 2,
} as const;

/** What an executor does with a job whose runner ended without the job having ended. */
export type RunVerdict =
  | { action: "fail"; error: string }
  /** Back to its queue, or failed by the store when its attempts are spent. */
  | { action: "retry"; reason: string };

/**
 * The exit-code contract applied to a run that ended while its job was still pending or processing.
 * `error` is what the runner reported (its termination message), if anything.
 */
export function runVerdict(code: number, error?: string): RunVerdict {
  if (code === EXIT.done) return { action: "fail", error: "the runner finished without reporting a result" };
  if (code === EXIT.permanent) return { action: "fail", error: permanentError(error) };
  return { action: "retry", reason: error || `the runner exited with code ${code}` };
}

/** The error of a job whose runner exited with the permanent code, reporting `error` or nothing. */
export function permanentError(error?: string): string {
  return error || "the runner reported a permanent failure";
}

/** Whether a runner's exit code says the job failed for good. */
export function isPermanentExit(code: number | undefined): boolean {
  return code === EXIT.permanent;
}

/**
 * Pod retries a Kubernetes Job may make after transient failures, so that a job gets
 * `executor.max_attempts` attempts in all, as it does on the local executor.
 */
export function podRetries(maxAttempts: number): number {
  return Math.max(0, maxAttempts - 1);
}

/** The time a run may take, and the setting it comes from (named in the timeout's message). */
export interface Deadline {
  ms: number;
  /** Whole seconds, rounded up (a Kubernetes Job's activeDeadlineSeconds). */
  seconds: number;
  setting: string;
}

/**
 * The deadline rule: the job's own `timeout_seconds`, else its type's `executor.timeouts.<type>`; a
 * pipeline's, else the time its waves of steps take at most (pipelineTimeoutMs).
 * `given` is a deadline an executor handed the run (a Kubernetes Job's activeDeadlineSeconds, seen
 * by the runner as `givenSetting`): it wins, and is named only where it differs from the job's own.
 */
export function jobDeadline(
  job: Pick<Job, "type" | "timeout_seconds"> & { parameters?: Record<string, unknown> },
  timeoutsMs: Record<JobType, number>,
  given?: { seconds: number; setting: string },
): Deadline {
  const own =
    job.timeout_seconds !== undefined
      ? deadline(job.timeout_seconds * 1000, "timeout_seconds")
      : job.type === "pipeline"
        ? pipelineDeadline(job.parameters ?? {}, timeoutsMs)
        : deadline(timeoutsMs[job.type], `executor.timeouts.${job.type}`);
  if (!given || given.seconds === own.seconds) return own;
  return deadline(given.seconds * 1000, job.timeout_seconds !== undefined ? given.setting : own.setting);
}

/**
 * A pipeline's time: its waves' in turn, a wave's the longest executor.timeouts.<type> of its steps
 * (they run at once), and at least executor.timeouts.pipeline.
 */
function pipelineDeadline(
  parameters: Record<string, unknown>,
  timeoutsMs: Record<JobType, number>,
): Deadline {
  const waves = stepTypeWaves((parameters.steps ?? {}) as Record<string, PipelineStep>);
  const ms = waves.reduce(
    (total, wave) => total + Math.max(...wave.map((type) => timeoutsMs[type as JobType] ?? 0)),
    0,
  );
  return ms > timeoutsMs.pipeline
    ? deadline(ms, "executor.timeouts of its steps, the longest of each wave in turn")
    : deadline(timeoutsMs.pipeline, "executor.timeouts.pipeline");
}

function deadline(ms: number, setting: string): Deadline {
  return { ms, seconds: Math.ceil(ms / 1000), setting };
}

/** The error of a job that ran out of its time. */
export function timeoutMessage(deadline: Pick<Deadline, "seconds" | "setting">): string {
  return `job timed out after ${deadline.seconds} s (${deadline.setting})`;
}

/**
 * The setting that bounds how long a job's runner may wait to start on Kubernetes: its pod Pending
 * for a node (no room), being started on one, or not even created. A wait is not the job's time.
 */
export const WAIT_SETTING = "kubernetes.unschedulable_timeout";

/**
 * A Kubernetes Job's activeDeadlineSeconds. It counts from the Job's creation, so the time its pod
 * waits for a node counts against it: it is the job's own time plus the longest wait allowed
 * (WAIT_SETTING, `maxWaitMs`). The job's own time is the runner's, counted from its start
 * (JOB_TIMEOUT_SECONDS); the controller fails a job that waits longer, with waitMessage(). So the
 * Job's deadline is a backstop that neither cuts a run short nor names a wait a timeout.
 */
export function activeDeadlineSeconds(deadline: Pick<Deadline, "seconds">, maxWaitMs: number): number {
  return deadline.seconds + Math.ceil(maxWaitMs / 1000);
}

/**
 * The error of a job whose runner waited too long to start: "job waited 300 s for a node
 * (kubernetes.unschedulable_timeout)". `what` it waited for; `detail` what Kubernetes said.
 */
export function waitMessage(seconds: number, what = "a node", detail?: string): string {
  return `job waited ${seconds} s for ${what} (${WAIT_SETTING})${detail ? `: ${detail}` : ""}`;
}

/**
 * The kubelet's words when it evicts a pod for using more local disk than the pod itself may (its
 * emptyDir's sizeLimit, its containers' ephemeral-storage limits): the job's own doing, unlike an
 * eviction for the node's want of room (node pressure), which another node may not repeat.
 */
const DISK_LIMIT_EVICTIONS = [
  /^Usage of EmptyDir volume "[^"]*" exceeds the limit/,
  /^Pod ephemeral local storage usage exceeds the total limit of containers/,
  /^Container \S+ exceeded its local ephemeral storage limit/,
];

/** The setting that bounds a job type's local disk on Kubernetes (and its scratch emptyDir). */
export function diskLimitSetting(type: string): string {
  return `kubernetes.resources.${type}.limits.ephemeral_storage`;
}

/**
 * What becomes of a job whose runner pod the kubelet evicted with `message`: over its own disk limit,
 * it fails at once (the same input fills the same disk again; retried, it would only be evicted again),
 * naming the limit and the setting to raise; evicted for the node's sake, the Job's retries apply.
 */
export function evictionVerdict(
  message: string,
  type: string | undefined,
  limit: string | undefined,
): RunVerdict {
  if (DISK_LIMIT_EVICTIONS.some((pattern) => pattern.test(message))) {
    const setting = type ? diskLimitSetting(type) : diskLimitSetting("<type>");
    return {
      action: "fail",
      error: `disk limit exceeded: the runner wrote more than its local disk limit${limit ? ` of ${limit}` : ""} (raise ${setting}): ${message}`,
    };
  }
  return { action: "retry", reason: `the runner pod was evicted${message ? `: ${message}` : ""}` };
}

export const ADMISSION_SETTING = "kubernetes.max_waiting_admission";

/** What a job's timeline says while Kueue has not admitted its runner Job. */
export function admissionWait(queue: string | undefined): string {
  return `its Kubernetes Job is suspended, waiting for Kueue to admit it${queue ? ` (LocalQueue ${queue})` : ""}`;
}

/**
 * The error of a job whose runner Job waited too long for Kueue's admission: "job waited 1800 s for
 * Kueue to admit its runner Job from LocalQueue media (kubernetes.max_waiting_admission)".
 */
export function admissionMessage(seconds: number, queue: string | undefined): string {
  const from = queue ? ` from LocalQueue ${queue}` : "";
  return `job waited ${seconds} s for Kueue to admit its runner Job${from} (${ADMISSION_SETTING}); the queue's ClusterQueue has no room for it, or the queue does not exist`;
}

/** What the dispatcher needs of the pool's settings (executor.pool). */
export interface PoolPolicy {
  enabled: boolean;
  classes: Record<JobType, ExecutionClass>;
  autoMaxSourceBytes: number;
  jobResources: { cpu: string; memory: string };
}

/**
 * Where a claimed job runs, and why (the words go to its timeline): `job` (the executor's own run),
 * `pool` (a warm pool worker), or `auto` when the answer depends on its source's size, which the
 * caller then looks up (a HEAD) and passes as `sourceBytes`. The rule: a job runs in the pool only
 * when the pool is on, its type may use it (executor.pool.classes not `job`), it asks for no more
 * than a pooled job gets (executor.pool.job_resources) and, for `auto`, its source is at most
 * executor.pool.auto_max_source_bytes. A job's own execution_class wins over its type's.
 * `sourceBytes` null: the source could not be sized (it then gets its own run).
 */
export function executionClass(
  job: Pick<Job, "type" | "execution_class" | "resources">,
  pool: PoolPolicy,
  sourceBytes?: number | null,
): { class: ExecutionClass; why: string } {
  if (!pool.enabled) return { class: "job", why: "the pool is off (executor.pool.enabled)" };
  const typeClass = pool.classes[job.type];
  if (typeClass === "job") {
    return { class: "job", why: `${job.type} does not use the pool (executor.pool.classes.${job.type})` };
  }
  const asked = job.execution_class ?? typeClass;
  const whose = job.execution_class ? "execution_class" : `executor.pool.classes.${job.type}`;
  if (asked === "job") return { class: "job", why: `${whose} job` };
  for (const resource of ["cpu", "memory"] as const) {
    const wanted = job.resources?.[resource];
    if (wanted !== undefined && parseQuantity(wanted) > parseQuantity(pool.jobResources[resource])) {
      return {
        class: "job",
        why: `it asks for resources.${resource} ${wanted}, more than a pooled job gets (executor.pool.job_resources.${resource} ${pool.jobResources[resource]})`,
      };
    }
  }
  if (asked === "pool") return { class: "pool", why: `${whose} pool` };
  if (sourceBytes === undefined) return { class: "auto", why: `${whose} auto: its source's size decides` };
  if (sourceBytes === null) return { class: "job", why: `${whose} auto: its source could not be sized` };
  const limit = pool.autoMaxSourceBytes;
  return sourceBytes <= limit
    ? { class: "pool", why: `${whose} auto: its source (${sourceBytes} bytes) is at most ${limit}` }
    : {
        class: "job",
        why: `${whose} auto: its source (${sourceBytes} bytes) is larger than executor.pool.auto_max_source_bytes (${limit})`,
      };
}

/**
 * A runner process that dies before it is ready (a Node that refuses the runner's flags, a broken
 * install) is started again after a growing delay (core/retry.ts's schedule): from 1 s, doubling, up
 * to a minute; a runner that starts resets it.
 */
export const RUNNER_RESTART = { initialMs: 1000, maxMs: 60_000 } as const;

/**
 * How much a step of each resource class weighs in a pipeline's overall percent: about what a step
 * of the class costs beside an image step (a video encode many times one, reading a little of a
 * video or audio twice).
 */
export const PIPELINE_STEP_WEIGHT: Readonly<Record<ResourceClass, number>> = {
  image: 1,
  ai: 1,
  media: 2,
  video: 8,
};

/**
 * A pipeline's overall percent: its steps' percents, each weighted by its type's resource class
 * (PIPELINE_STEP_WEIGHT), rounded to a tenth.
 */
export function pipelineProgress(
  percents: Readonly<Record<string, number>>,
  classOf: (step: string) => ResourceClass,
): number {
  let done = 0;
  let total = 0;
  for (const [step, percent] of Object.entries(percents)) {
    const weight = PIPELINE_STEP_WEIGHT[classOf(step)];
    done += weight * Math.min(100, Math.max(0, percent));
    total += weight;
  }
  return total === 0 ? 0 : Math.round((done / total) * 10) / 10;
}

type Resources = { cpu: string; memory: string; ephemeralStorage: string };

/**
 * What a pipeline's runner gets on Kubernetes, before its own `resources` (which win, as for every
 * type): per resource, the most any of its waves asks for, at least kubernetes.resources.pipeline, at
 * most kubernetes.max_resources (which bounds CPU and memory only). A wave's limits are the sum of its
 * steps' (each step its type's kubernetes.resources.<type>). Its requests are the sum of those of the
 * steps that can run at once: the runner runs as many of a wave's steps at once as it has CPUs
 * (runner/cpus.ts: its CPU limit, whole CPUs, at least 1), so the heaviest that many. A request for
 * every step of a wide wave would ask a node for more than the runner uses: ten image steps, 2.5 CPUs,
 * more than a 2-CPU node has.
 */
export function pipelineResources(
  parameters: Record<string, unknown>,
  perType: Readonly<Record<string, { requests: Resources; limits: Resources }>>,
  floor: { requests: Resources; limits: Resources },
  max: Pick<Resources, "cpu" | "memory">,
): { requests: Resources; limits: Resources } {
  const waves = stepTypeWaves((parameters.steps ?? {}) as Record<string, PipelineStep>);
  const side = (which: "requests" | "limits", atOnce: number): Resources => {
    // The quantity as configured where it is the answer (the floor, the maximum), else reckoned.
    const pick = (resource: keyof Resources, format: (value: number) => string) => {
      let most = { value: parseQuantity(floor[which][resource]), text: floor[which][resource] };
      for (const wave of waves) {
        const sum = wave
          .map((type) => parseQuantity(perType[type]?.[which][resource] ?? "0"))
          .sort((a, b) => b - a)
          .slice(0, atOnce)
          .reduce((total, value) => total + value, 0);
        const one = wave.length === 1 ? perType[wave[0]!]?.[which][resource] : undefined;
        if (sum > most.value) most = { value: sum, text: one ?? format(sum) };
      }
      const bound = resource === "ephemeralStorage" ? undefined : max[resource];
      return bound !== undefined && most.value > parseQuantity(bound) ? bound : most.text;
    };
    const mebibytes = (bytes: number) => `${Math.ceil(bytes / 2 ** 20)}Mi`;
    return {
      cpu: pick("cpu", (cores) => `${Math.ceil(cores * 1000)}m`),
      memory: pick("memory", mebibytes),
      ephemeralStorage: pick("ephemeralStorage", mebibytes),
    };
  };
  const limits = side("limits", Number.POSITIVE_INFINITY);
  const cpus = Math.max(1, Math.floor(parseQuantity(limits.cpu)));
  return { requests: side("requests", cpus), limits };
}

/**
 * What Retry-After says to a submission its client's max_pending refuses (429), in seconds: its
 * jobs leave the queue as runners take them, at a pace the API cannot know; a few seconds is a
 * short enough wait to be fair and long enough not to be a busy loop.
 */
export const CLIENT_LIMIT_RETRY_AFTER_SECONDS = 10;

/**
 * The largest source a job may read and the setting that says so: `limits.max_source_bytes`, or its
 * client's `max_source_bytes` (server.clients, recorded on the job at submit) when that is smaller.
 */
export function sourceLimit(
  jobLimit: number | undefined,
  maxSourceBytes: number,
): { maxBytes: number; limitName: string } {
  return jobLimit !== undefined && jobLimit < maxSourceBytes
    ? { maxBytes: jobLimit, limitName: "its client's server.clients max_source_bytes" }
    : { maxBytes: maxSourceBytes, limitName: "limits.max_source_bytes" };
}
