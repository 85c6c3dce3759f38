// What the schema cannot say of the configuration: the settings that must agree with each other
// (a heartbeat shorter than the write timeout, a renew deadline inside the lease), the webhooks'
// secret and hosts, and the Kubernetes quantities. Each refusal names the settings.
import { JOB_TYPES } from "../jobs/types.js";
import { isLabelValue, isReservedAnnotation, isReservedLabel, labelKeyError } from "../kubernetes-labels.js";
import { parseQuantity } from "../quantity.js";
import { parseAllowedHosts } from "../webhooks/address-policy.js";
import { decodeSigningSecret } from "../webhooks/signing.js";
import { ConfigError } from "./errors.js";
import type { Config } from "./load.js";
import type { ConfigFile } from "./schema.js";

/** Checks the resolved configuration `config` of the validated file `c`; throws a ConfigError. */
export function checkConfig(c: ConfigFile, config: Config): void {
  checkQuantities(c.kubernetes);
  checkJobMetadata(c.kubernetes);
  if (config.server.sseHeartbeatMs >= config.server.writeTimeoutMs) {
    throw new ConfigError(
      "invalid configuration: server.sse_heartbeat must be shorter than server.write_timeout, or idle SSE streams are cut",
    );
  }
  const limit = config.server.rateLimit;
  if (!(limit.windowMs >= 1000 && limit.syncIntervalMs >= 10 && limit.syncIntervalMs < limit.windowMs)) {
    throw new ConfigError(
      "invalid configuration: server.rate_limit needs a window of at least 1s and a sync_interval of at least 10ms, shorter than the window",
    );
  }
  checkWebhooks(config.webhooks);
  if (!(
    config.storage.outputLinkExpiryMs >= 1000 && config.storage.outputLinkExpiryMs <= 7 * 24 * 3600 * 1000
  )) {
    throw new ConfigError(
      "invalid configuration: storage.output_link_expiry must be between 1s and 7d (the longest a presigned S3 URL lives)",
    );
  }
  if (!(config.limits.idempotencyTtlMs >= 1000 && config.limits.idempotencyTtlMs <= 7 * 24 * 3600 * 1000)) {
    throw new ConfigError("invalid configuration: limits.idempotency_ttl must be between 1s and 7d");
  }
  const election = config.kubernetes.leaderElection;
  if (!(
    election.leaseDurationMs > election.renewDeadlineMs && election.renewDeadlineMs > election.retryPeriodMs
  )) {
    throw new ConfigError(
      "invalid configuration: kubernetes.leader_election needs lease_duration > renew_deadline > retry_period",
    );
  }
}

function checkWebhooks(w: Config["webhooks"]): void {
  if (w.signingSecret !== undefined) {
    try {
      decodeSigningSecret(w.signingSecret);
    } catch (err) {
      throw new ConfigError(
        `invalid configuration: webhooks.signing_secret (WEBHOOK_SIGNING_SECRET): ${(err as Error).message}`,
      );
    }
  }
  try {
    parseAllowedHosts(w.allowedHosts);
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${(err as Error).message}`);
  }
  if (w.retryMaxDelayMs < w.retryInitialDelayMs) {
    throw new ConfigError(
      "invalid configuration: webhooks.retry_max_delay must be at least webhooks.retry_initial_delay",
    );
  }
  if (w.timeoutMs <= 0)
    throw new ConfigError("invalid configuration: webhooks.timeout must be more than zero");
  if (w.reclaimAfterMs < 1000) {
    throw new ConfigError("invalid configuration: webhooks.reclaim_after must be at least 1s");
  }
}

// The schema's patterns let through some strings Kubernetes refuses (1K); each quantity must parse,
// and a job type's default request must fit in its limit (else the apiserver refuses every Job).
function checkQuantities(k: ConfigFile["kubernetes"]): void {
  const quantity = (field: string, value: string) => {
    try {
      return parseQuantity(value);
    } catch (err) {
      throw new ConfigError(`invalid configuration: kubernetes.${field}: ${(err as Error).message}`);
    }
  };
  if (k.scratch_size !== undefined) quantity("scratch_size", k.scratch_size);
  quantity("max_resources.cpu", k.max_resources.cpu);
  quantity("max_resources.memory", k.max_resources.memory);
  for (const type of JOB_TYPES) {
    for (const resource of ["cpu", "memory", "ephemeral_storage"] as const) {
      const { requests, limits } = k.resources[type];
      const request = quantity(`resources.${type}.requests.${resource}`, requests[resource]);
      const limit = quantity(`resources.${type}.limits.${resource}`, limits[resource]);
      if (request > limit) {
        throw new ConfigError(
          `invalid configuration: kubernetes.resources.${type}.requests.${resource} ${requests[resource]} is above its limit ${limits[resource]} (kubernetes.resources.${type}.limits.${resource})`,
        );
      }
    }
  }
}

/**
 * The runner Jobs' labels and annotations as the API server would check them at every create, and
 * none of the controller's own (it selects its Jobs by them) or Kueue's (kueue.queue_name and
 * priority_bands set those); priority bands each of their own priority.
 */
function checkJobMetadata(k: ConfigFile["kubernetes"]): void {
  type Metadata = { labels?: Record<string, string>; annotations?: Record<string, string> };
  const scopes: Array<[string, Metadata]> = [
    ["", { labels: k.job_labels, annotations: k.job_annotations }],
    ...Object.entries(k.per_type).map(([type, m]): [string, Metadata] => [`per_type.${type}.`, m ?? {}]),
    ...Object.entries(k.per_client ?? {}).map(([name, m]): [string, Metadata] => [`per_client.${name}.`, m]),
  ];
  const refuse = (path: string, key: string, why: string) => {
    throw new ConfigError(`invalid configuration: kubernetes.${path}: "${key}" ${why}`);
  };
  for (const [at, m] of scopes) {
    const labels = at ? `${at}labels` : "job_labels";
    for (const [key, value] of Object.entries(m.labels ?? {})) {
      const bad = labelKeyError(key);
      if (bad) refuse(labels, key, `is not a label key: ${bad}`);
      if (isReservedLabel(key)) {
        refuse(
          labels,
          key,
          "is set by the controller (its own labels select its Jobs; Kueue's come from kueue.queue_name and priority_bands)",
        );
      }
      if (!isLabelValue(value)) {
        refuse(
          labels,
          key,
          `has an invalid value ${JSON.stringify(value)}: at most 63 characters, alphanumerics, '-', '_' or '.', beginning and ending with an alphanumeric`,
        );
      }
    }
    const annotations = at ? `${at}annotations` : "job_annotations";
    for (const key of Object.keys(m.annotations ?? {})) {
      const bad = labelKeyError(key);
      if (bad) refuse(annotations, key, `is not an annotation key: ${bad}`);
      if (isReservedAnnotation(key)) refuse(annotations, key, "is set by the controller");
    }
  }
  const seen = new Set<number>();
  k.priority_bands.forEach((band, i) => {
    if (seen.has(band.min_priority)) {
      throw new ConfigError(
        `invalid configuration: kubernetes.priority_bands[${i}].min_priority: ${band.min_priority} begins another band too`,
      );
    }
    seen.add(band.min_priority);
  });
}
