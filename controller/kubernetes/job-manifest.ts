// The batch/v1 Job that runs one media job: `media-service runner --job <id>` in a hardened pod.
// A pure function of the job record and the settings; only types come from @kubernetes/client-node,
// so building a manifest loads nothing of the client.
import type { V1EnvVar, V1Job, V1ResourceRequirements } from "@kubernetes/client-node";
import { AI_JOB_TYPES, chooseProvider } from "../../core/ai/providers.js";
import type { AiProvider, Config } from "../../core/config/load.js";
import type { Job } from "../../core/jobs/records.js";
import { RUNNER_ENV, RUNNER_NODE_FLAGS, RUNNER_PROCESS_ENV } from "../../core/config/runner-env.js";
import { activeDeadlineSeconds, EXIT, pipelineResources, podRetries } from "../../core/policy.js";
import { ANNOTATIONS, KUEUE_LABELS, LABELS } from "../../core/kubernetes-labels.js";
import { jobMetadata } from "./job-metadata.js";
import { jobName, labelValue } from "./names.js";

/** The container's name; the pod failure policy's exit-code rule is bound to it. */
export const RUNNER_CONTAINER = "runner";
/** 128 + SIGKILL: what a container killed by the kernel at its memory limit exits with. */
export const OOM_KILLED_EXIT_CODE = 137;
/** The runner container's command, before its `--job <id>`. */
export const RUNNER_COMMAND = ["tini", "--", "media-service", "runner"] as const;
export const SCRATCH_MOUNT = "/scratch";
export const RUNNER_UID = 10001;
export const TERMINATION_MESSAGE_PATH = "/dev/termination-log";

export { ANNOTATIONS, LABELS };

/** Non-secret settings the runner pods receive inline. */
export interface RunnerEnvSettings {
  redisKeyPrefix: string;
  s3Endpoint?: string;
  s3Region: string;
  s3ForcePathStyle: boolean;
  s3PublicBaseUrl?: string;
  /** The AI providers without their keys; a pod of an AI job gets its own provider's settings. */
  ai: Omit<Config["ai"], "providers"> & { providers: Record<string, Omit<AiProvider, "apiKey">> };
  logLevel: string;
  maxSourceBytes: number;
  inMemorySourceBytes: number;
  maxInputPixels: number;
  maxOutputDimension: number;
}

/** What a manifest is built from: the `kubernetes` section plus the runner's non-secret settings. */
type KubernetesSection = Config["kubernetes"];
export interface KubernetesSettings extends KubernetesSection {
  /** Pod retries of a Job: the job's attempts after the first (executor.max_attempts). */
  backoffLimit: number;
  runner: RunnerEnvSettings;
}

/**
 * The settings of the Kubernetes executor from the configuration. Secret values (Redis URL, S3 and
 * AI keys) are deliberately not copied: the pods read them from the configured Secrets.
 */
export function kubernetesSettings(config: Config): KubernetesSettings {
  if (!config.kubernetes.redisSecret) {
    throw new Error(
      "kubernetes.redis_secret is required by the kubernetes executor: runner pods read REDIS_URL from that Secret",
    );
  }
  return {
    ...config.kubernetes,
    backoffLimit: podRetries(config.executor.maxAttempts),
    runner: {
      redisKeyPrefix: config.redis.keyPrefix,
      s3Endpoint: config.storage.endpoint,
      s3Region: config.storage.region,
      s3ForcePathStyle: config.storage.forcePathStyle,
      s3PublicBaseUrl: config.storage.publicBaseUrl,
      ai: {
        ...config.ai,
        providers: Object.fromEntries(
          Object.entries(config.ai.providers).map(([name, { apiKey: _key, ...provider }]) => [
            name,
            provider,
          ]),
        ),
      },
      logLevel: config.logLevel,
      maxSourceBytes: config.limits.maxSourceBytes,
      inMemorySourceBytes: config.limits.inMemorySourceBytes,
      maxInputPixels: config.limits.maxInputPixels,
      maxOutputDimension: config.limits.maxOutputDimension,
    },
  };
}

/** The labels that select every runner Job (and pod) of one controller installation. */
export function selectorLabels(instance: string): Record<string, string> {
  return {
    [LABELS.name]: "media-service",
    [LABELS.component]: "runner",
    [LABELS.managedBy]: "media-service-controller",
    [LABELS.instance]: labelValue(instance),
  };
}

function jobLabels(job: Job, settings: KubernetesSettings): Record<string, string> {
  return {
    ...selectorLabels(settings.instance),
    [LABELS.jobId]: labelValue(job.id),
    [LABELS.jobType]: labelValue(job.type),
    ...(job.batch_id ? { [LABELS.batchId]: labelValue(job.batch_id) } : {}),
  };
}

/** A resource list of the configuration as Kubernetes spells it (`ephemeral-storage`). */
function resourceList(r: { cpu: string; memory: string; ephemeralStorage: string }): Record<string, string> {
  return { cpu: r.cpu, memory: r.memory, "ephemeral-storage": r.ephemeralStorage };
}

/**
 * Per-type defaults (a pipeline's from its steps: core/policy.ts pipelineResources), then the job's
 * own `resources` (each given value is both request and limit; a job asks for CPU and memory only).
 */
export function containerResources(job: Job, settings: KubernetesSettings): V1ResourceRequirements {
  const defaults =
    job.type === "pipeline"
      ? pipelineResources(
          job.parameters,
          settings.resources,
          settings.resources[job.type],
          settings.maxResources,
        )
      : settings.resources[job.type];
  const requests = resourceList(defaults.requests);
  const limits = resourceList(defaults.limits);
  if (job.resources?.cpu) requests.cpu = limits.cpu = job.resources.cpu;
  if (job.resources?.memory) requests.memory = limits.memory = job.resources.memory;
  return { requests, limits };
}

function runnerEnv(job: Job, settings: KubernetesSettings, timeoutSeconds: number): V1EnvVar[] {
  const r = settings.runner;
  const env: V1EnvVar[] = [];
  const inline = (name: string, value: string | undefined) => {
    if (value !== undefined && value !== "") env.push({ name, value });
  };
  const secret = (name: string, ref: { name: string; key: string } | undefined) => {
    if (ref) env.push({ name, valueFrom: { secretKeyRef: { name: ref.name, key: ref.key } } });
  };
  secret(RUNNER_ENV.redisUrl, settings.redisSecret);
  inline(RUNNER_ENV.redisKeyPrefix, r.redisKeyPrefix);
  inline(RUNNER_ENV.s3Endpoint, r.s3Endpoint);
  inline(RUNNER_ENV.s3Region, r.s3Region);
  inline(RUNNER_ENV.s3ForcePathStyle, String(r.s3ForcePathStyle));
  inline(RUNNER_ENV.s3PublicBaseUrl, r.s3PublicBaseUrl);
  if (settings.s3Secret) {
    const { name, accessKeyKey, secretKeyKey } = settings.s3Secret;
    secret(RUNNER_ENV.s3AccessKeyId, { name, key: accessKeyKey });
    secret(RUNNER_ENV.s3SecretAccessKey, { name, key: secretKeyKey });
  }
  if (AI_JOB_TYPES.has(job.type)) {
    // Only the job's own provider, and only for AI jobs: no other pod sees an AI key. Without a
    // provider the pod gets none, and the runner fails the job saying so.
    const choice = chooseProvider(r.ai, (job.parameters as { provider?: string }).provider);
    if (choice.ok) {
      const p = choice.provider;
      inline(RUNNER_ENV.aiProvider, p.name);
      inline(RUNNER_ENV.aiBaseUrl, p.baseUrl);
      inline(RUNNER_ENV.aiModel, p.model);
      inline(RUNNER_ENV.aiTranscriptionModel, p.transcriptionModel);
      inline(RUNNER_ENV.aiStructuredOutput, p.structuredOutput);
      secret(RUNNER_ENV.aiApiKey, p.apiKeySecret);
      inline(RUNNER_ENV.aiTimeout, `${r.ai.timeoutMs}ms`);
      inline(RUNNER_ENV.aiMaxAttempts, String(r.ai.maxAttempts));
      inline(RUNNER_ENV.aiRetryInitialDelay, `${r.ai.retryInitialDelayMs}ms`);
      inline(RUNNER_ENV.aiRetryMaxDelay, `${r.ai.retryMaxDelayMs}ms`);
      inline(RUNNER_ENV.aiMaxImageSide, String(r.ai.maxImageSide));
      inline(RUNNER_ENV.aiTranscriptionSegment, `${r.ai.transcriptionSegmentMs}ms`);
    }
  }
  inline(RUNNER_ENV.logLevel, r.logLevel);
  inline(RUNNER_ENV.maxSourceBytes, String(r.maxSourceBytes));
  inline(RUNNER_ENV.inMemorySourceBytes, String(r.inMemorySourceBytes));
  inline(RUNNER_ENV.maxInputPixels, String(r.maxInputPixels));
  inline(RUNNER_ENV.maxOutputDimension, String(r.maxOutputDimension));
  inline(RUNNER_ENV.jobTimeoutSeconds, String(timeoutSeconds));
  inline(RUNNER_ENV.scratchDir, SCRATCH_MOUNT);
  inline(RUNNER_ENV.tmpdir, SCRATCH_MOUNT);
  inline(RUNNER_ENV.terminationMessagePath, TERMINATION_MESSAGE_PATH);
  for (const [name, value] of Object.entries(RUNNER_PROCESS_ENV)) inline(name, value);
  inline(RUNNER_ENV.nodeFlags, RUNNER_NODE_FLAGS.join(" "));
  return env;
}

/**
 * The job's own time a runner Job was given (its runner's JOB_TIMEOUT_SECONDS), in seconds; undefined
 * for a Job that does not say.
 */
export function runnerTimeoutSeconds(kjob: V1Job): number | undefined {
  const containers = kjob.spec?.template.spec?.containers ?? [];
  const runner = containers.find((c) => c.name === RUNNER_CONTAINER);
  const value = runner?.env?.find((e) => e.name === RUNNER_ENV.jobTimeoutSeconds)?.value;
  const seconds = value !== undefined ? Number(value) : NaN;
  return Number.isInteger(seconds) && seconds > 0 ? seconds : undefined;
}

/**
 * One batch/v1 Job running `media-service runner --job <id>`: deterministic name, per-type resources
 * overridden by the job's, the job's time (`timeoutSeconds`) for the runner (JOB_TIMEOUT_SECONDS,
 * counted from its start) and `activeDeadlineSeconds` that time plus the longest wait for a node
 * (policy's activeDeadlineSeconds), a pod failure policy that fails the Job at once on the runner's
 * permanent exit code and ignores disruptions, and a pod with no privileges, no service-account
 * token and credentials only by Secret reference.
 */
export function buildJobManifest(
  job: Job,
  settings: KubernetesSettings,
  timeoutSeconds: number,
  client?: string,
): V1Job {
  if (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 1) {
    throw new RangeError(`timeoutSeconds must be a positive integer (got ${timeoutSeconds})`);
  }
  const resources = containerResources(job, settings);
  // The scratch space is the disk the pod may use: a runner that fills it is evicted, and its job
  // fails naming the setting (core/policy.ts evictionVerdict).
  const scratchSize = settings.scratchSize ?? resources.limits!["ephemeral-storage"];
  const meta = jobMetadata(job, client, settings);
  // The controller's own labels last (the configuration cannot name them anyway); Kueue's only on
  // the Job: Kueue admits the Job, its pod is no Workload of its own.
  const labels = { ...meta.labels, ...jobLabels(job, settings) };
  const podLabels = Object.fromEntries(
    Object.entries(labels).filter(([key]) => !(Object.values(KUEUE_LABELS) as string[]).includes(key)),
  );
  const annotations: Record<string, string> = {
    ...meta.annotations,
    [ANNOTATIONS.jobId]: job.id,
    ...(job.batch_id ? { [ANNOTATIONS.batchId]: job.batch_id } : {}),
  };
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name: jobName(job.id), namespace: settings.namespace, labels, annotations },
    spec: {
      // Kueue unsuspends the Job when it admits it (the Job controller then counts its
      // activeDeadlineSeconds from there).
      ...(meta.queueName ? { suspend: true } : {}),
      completions: 1,
      parallelism: 1,
      backoffLimit: settings.backoffLimit,
      // From the Job's creation, a wait for a node included (the runner keeps timeoutSeconds).
      activeDeadlineSeconds: activeDeadlineSeconds(
        { seconds: timeoutSeconds },
        settings.unschedulableTimeoutMs,
      ),
      ttlSecondsAfterFinished: settings.ttlSecondsAfterFinished,
      podFailurePolicy: {
        // In order: a pod stopped by a disruption (eviction, preemption, node drain) is retried without
        // counting; the runner's permanent exit code and the kernel's OOM kill at the memory limit
        // (the same input needs the same memory again) fail the Job at once.
        rules: [
          { action: "Ignore", onPodConditions: [{ type: "DisruptionTarget", status: "True" }] },
          {
            action: "FailJob",
            onExitCodes: {
              containerName: RUNNER_CONTAINER,
              operator: "In",
              values: [EXIT.permanent, OOM_KILLED_EXIT_CODE],
            },
          },
        ],
      },
      template: {
        metadata: { labels: podLabels, annotations },
        spec: {
          restartPolicy: "Never",
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          ...(settings.serviceAccount ? { serviceAccountName: settings.serviceAccount } : {}),
          ...(meta.priorityClassName ? { priorityClassName: meta.priorityClassName } : {}),
          ...(settings.nodeSelector && Object.keys(settings.nodeSelector).length > 0
            ? { nodeSelector: { ...settings.nodeSelector } }
            : {}),
          ...(settings.tolerations && settings.tolerations.length > 0
            ? { tolerations: settings.tolerations.map((t) => ({ ...t })) }
            : {}),
          ...(settings.affinity && Object.keys(settings.affinity).length > 0
            ? { affinity: structuredClone(settings.affinity) }
            : {}),
          ...(settings.imagePullSecrets.length > 0
            ? { imagePullSecrets: settings.imagePullSecrets.map((name) => ({ name })) }
            : {}),
          securityContext: {
            runAsNonRoot: true,
            runAsUser: RUNNER_UID,
            runAsGroup: RUNNER_UID,
            fsGroup: RUNNER_UID,
            seccompProfile: { type: "RuntimeDefault" },
          },
          containers: [
            {
              name: RUNNER_CONTAINER,
              image: settings.image,
              imagePullPolicy: settings.imagePullPolicy,
              // Under tini, as the image's entrypoint runs everything: the runner is not PID 1, so a
              // SIGTERM (deletion, eviction, a cancel) stops it even before it installs its handler,
              // and the processes it starts (ffmpeg) are reaped.
              command: [...RUNNER_COMMAND, "--job", job.id],
              env: runnerEnv(job, settings, timeoutSeconds),
              resources,
              volumeMounts: [{ name: "scratch", mountPath: SCRATCH_MOUNT }],
              terminationMessagePath: TERMINATION_MESSAGE_PATH,
              terminationMessagePolicy: "FallbackToLogsOnError",
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                runAsNonRoot: true,
                privileged: false,
                capabilities: { drop: ["ALL"] },
              },
            },
          ],
          volumes: [{ name: "scratch", emptyDir: { sizeLimit: scratchSize } }],
        },
      },
    },
  };
}
