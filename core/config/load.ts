import { existsSync, readFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { Value } from "@sinclair/typebox/value";
import { parse as parseYaml } from "yaml";
import { parseDuration } from "../duration.js";
import { JOB_TYPES, type JobType } from "../jobs/types.js";
import { parseQuantity } from "../quantity.js";
import { parseAllowedHosts } from "../webhooks/address-policy.js";
import { decodeSigningSecret } from "../webhooks/signing.js";
import { RUNNER_ENV } from "./runner-env.js";
import { AI_PROVIDER_NAME, ConfigFile } from "./schema.js";

export class ConfigError extends Error {
  override name = "ConfigError";
}

type Env = Record<string, string | undefined>;

// Environment variables that override the file, as the README lists them: [variable, path, kind].
// An "integer" is read as a number is in the file (1e9 is 1000000000) and must be a whole one:
// 5.5, 0x10 or 12abc are refused rather than cut short to 5, 16 or 12.
const ENV_OVERRIDES: Array<[string, string[], "string" | "integer" | "list"]> = [
  ["HOST", ["server", "host"], "string"],
  ["PORT", ["server", "port"], "integer"],
  ["API_KEYS", ["server", "api_keys"], "list"],
  ["ALLOW_UNAUTHENTICATED", ["server", "allow_unauthenticated"], "string"],
  [RUNNER_ENV.redisUrl, ["redis", "url"], "string"],
  [RUNNER_ENV.redisKeyPrefix, ["redis", "key_prefix"], "string"],
  [RUNNER_ENV.scratchDir, ["executor", "scratch_dir"], "string"],
  [RUNNER_ENV.s3Endpoint, ["storage", "endpoint"], "string"],
  [RUNNER_ENV.s3Region, ["storage", "region"], "string"],
  [RUNNER_ENV.s3AccessKeyId, ["storage", "access_key_id"], "string"],
  [RUNNER_ENV.s3SecretAccessKey, ["storage", "secret_access_key"], "string"],
  [RUNNER_ENV.s3ForcePathStyle, ["storage", "force_path_style"], "string"],
  [RUNNER_ENV.s3PublicBaseUrl, ["storage", "public_base_url"], "string"],
  ["EXECUTOR", ["executor", "kind"], "string"],
  ["LOCAL_CONCURRENCY", ["executor", "local_concurrency"], "integer"],
  ["DATA_DIR", ["data_dir"], "string"],
  ["EMBEDDED_S3_PORT", ["storage", "embedded_port"], "integer"],
  ["EMBEDDED_S3_HOST", ["storage", "embedded_host"], "string"],
  [RUNNER_ENV.logLevel, ["log_level"], "string"],
  ["LOG_FORMAT", ["log_format"], "string"],
  [RUNNER_ENV.aiBaseUrl, ["ai", "base_url"], "string"],
  [RUNNER_ENV.aiApiKey, ["ai", "api_key"], "string"],
  [RUNNER_ENV.aiModel, ["ai", "model"], "string"],
  [RUNNER_ENV.aiProvider, ["ai", "name"], "string"],
  [RUNNER_ENV.aiTranscriptionModel, ["ai", "transcription_model"], "string"],
  [RUNNER_ENV.aiStructuredOutput, ["ai", "structured_output"], "string"],
  [RUNNER_ENV.aiTimeout, ["ai", "timeout"], "string"],
  [RUNNER_ENV.aiMaxAttempts, ["ai", "max_attempts"], "integer"],
  [RUNNER_ENV.aiRetryInitialDelay, ["ai", "retry_initial_delay"], "string"],
  [RUNNER_ENV.aiRetryMaxDelay, ["ai", "retry_max_delay"], "string"],
  [RUNNER_ENV.aiMaxImageSide, ["ai", "max_image_side"], "integer"],
  [RUNNER_ENV.aiTranscriptionSegment, ["ai", "transcription_segment"], "string"],
  ["WEBHOOK_SIGNING_SECRET", ["webhooks", "signing_secret"], "string"],
  [RUNNER_ENV.maxSourceBytes, ["limits", "max_source_bytes"], "integer"],
  [RUNNER_ENV.maxInputPixels, ["limits", "max_input_pixels"], "integer"],
  [RUNNER_ENV.maxOutputDimension, ["limits", "max_output_dimension"], "integer"],
];

const NUMBER = /^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$/;

/** A caller of the API: its name, the keys it presents, whether it sees every client's jobs. */
export interface ApiClient {
  name: string;
  keys: string[];
  admin: boolean;
  /** Requests per server.rate_limit.window; unset: the per_client default. */
  rateLimit?: number;
}

/** The client server.api_keys stand for when named clients are configured beside them. */
export const DEFAULT_CLIENT = "default";

/** One OpenAI-compatible provider. */
export interface AiProvider {
  name: string;
  /** Without a trailing slash, e.g. https://api.openai.com/v1. */
  baseUrl: string;
  apiKey?: string;
  model: string;
  transcriptionModel: string;
  structuredOutput: "prompt" | "json_object" | "json_schema";
  /** Kubernetes executor: where runner pods read the key from. */
  apiKeySecret?: { name: string; key: string };
  /** Where the key is set, for messages such as "check AI_API_KEY". */
  apiKeySetting: string;
}

export interface Config {
  server: {
    /** Unset: see listenHost() (core/config/exposure.ts). */
    host?: string;
    port: number;
    mode: "debug" | "release" | "test";
    readTimeoutMs: number;
    writeTimeoutMs: number;
    /**
     * Who may call the API: server.clients, and server.api_keys as one more client ("default").
     * Empty: authentication is off.
     */
    clients: ApiClient[];
    docsPath: string;
    sseHeartbeatMs: number;
    shutdownTimeoutMs: number;
    trustProxy: boolean;
    allowUnauthenticated: boolean;
    rateLimit: {
      enabled: boolean;
      windowMs: number;
      perClient: number;
      perAddress: number;
      syncIntervalMs: number;
    };
  };
  redis: { url?: string; keyPrefix: string; connectTimeoutMs: number };
  storage: {
    endpoint?: string;
    region: string;
    accessKeyId?: string;
    secretAccessKey?: string;
    forcePathStyle: boolean;
    publicBaseUrl?: string;
    healthBucket?: string;
    embeddedPort: number;
    embeddedHost: string;
  };
  executor: {
    kind: "local" | "kubernetes";
    localConcurrency: number;
    localRunnerMaxJobs: number;
    timeoutsMs: Record<JobType, number>;
    maxAttempts: number;
    leaseMs: number;
    scratchDir: string;
  };
  kubernetes: {
    namespace: string;
    instance: string;
    image: string;
    imagePullPolicy: "Always" | "IfNotPresent" | "Never";
    imagePullSecrets: string[];
    serviceAccount?: string;
    nodeSelector?: Record<string, string>;
    tolerations?: KubernetesToleration[];
    affinity?: Record<string, unknown>;
    priorityClassName?: string;
    backoffLimit: number;
    ttlSecondsAfterFinished: number;
    scratchSize: string;
    resources: Record<JobType, KubernetesResources>;
    maxResources: { cpu: string; memory: string };
    maxRunningJobs: number;
    maxRunningJobsPerType: Partial<Record<JobType, number>>;
    unschedulableTimeoutMs: number;
    startFailureTimeoutMs: number;
    reconcileIntervalMs: number;
    leaderElection: {
      enabled: boolean;
      leaseName: string;
      leaseDurationMs: number;
      renewDeadlineMs: number;
      retryPeriodMs: number;
    };
    redisSecret?: { name: string; key: string };
    s3Secret?: { name: string; accessKeyKey: string; secretKeyKey: string };
  };
  webhooks: {
    signingSecret?: string;
    /** Unset: the local stack (`start`) allows private targets, every other command refuses them. */
    allowPrivate?: boolean;
    allowedHosts: string[];
    timeoutMs: number;
    maxAttempts: number;
    retryInitialDelayMs: number;
    retryMaxDelayMs: number;
    concurrency: number;
    perHostConcurrency: number;
    reclaimAfterMs: number;
  };
  ai: {
    /** Every configured provider by name, the env-defined one included. */
    providers: Record<string, AiProvider>;
    /** The provider of jobs that name none; unset when no provider is configured. */
    defaultProvider?: string;
    timeoutMs: number;
    maxAttempts: number;
    retryInitialDelayMs: number;
    retryMaxDelayMs: number;
    maxImageSide: number;
    transcriptionSegmentMs: number;
  };
  limits: {
    maxBodyBytes: number;
    retentionMs: number;
    pruneIntervalMs: number;
    eventsMaxLen: number;
    maxTimeoutSeconds: number;
    healthCheckTimeoutMs: number;
    maxInputPixels: number;
    maxSourceBytes: number;
    maxOutputDimension: number;
  };
  dataDir: string;
  logLevel: string;
  logFormat: "auto" | "json" | "pretty";
}

export interface KubernetesResources {
  requests: { cpu: string; memory: string };
  limits: { cpu: string; memory: string };
}

export interface KubernetesToleration {
  key?: string;
  operator?: "Exists" | "Equal";
  value?: string;
  effect?: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
  tolerationSeconds?: number;
}

/** Where a pod finds its own namespace (the projected ServiceAccount volume). */
export const POD_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

function ownNamespace(): string {
  try {
    return readFileSync(POD_NAMESPACE_FILE, "utf8").trim() || "default";
  } catch {
    return "default";
  }
}

export interface LoadOptions {
  env?: Env;
  /** Path of the YAML file; default CONFIG_FILE, else ./config.yaml when it exists. */
  file?: string;
  /** Values applied over the file and the environment (tests, CLI flags). */
  overrides?: Record<string, unknown>;
}

/** A process started by ours (a local runner) receives the parent's configuration as it resolved it. */
export const RESOLVED_CONFIG_ENV = "MEDIA_SERVICE_RESOLVED_CONFIG";

export function loadConfig(options: LoadOptions = {}): Config {
  const env = options.env ?? process.env;
  const inherited = env[RESOLVED_CONFIG_ENV];
  if (inherited) return JSON.parse(inherited) as Config;
  const file = options.file ?? env.CONFIG_FILE ?? (existsSync("config.yaml") ? "config.yaml" : undefined);
  let raw: unknown = {};
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      throw new ConfigError(`cannot read config file ${file}: ${(err as Error).message}`);
    }
    try {
      raw = parseYaml(text) ?? {};
    } catch (err) {
      throw new ConfigError(`config file ${file} is not valid YAML: ${(err as Error).message}`);
    }
    if (typeof raw !== "object" || Array.isArray(raw)) {
      throw new ConfigError(`config file ${file} must hold a mapping of sections (server, redis, ...)`);
    }
    raw = dropEmpty(substituteEnv(raw, env, []));
  }
  const tree = raw as Record<string, unknown>;
  const fromEnv: EnvSources = [];
  for (const [name, path, kind] of ENV_OVERRIDES) {
    const value = env[name];
    if (value === undefined || value === "") continue;
    if (kind === "integer" && !(NUMBER.test(value) && Number.isInteger(Number(value)))) {
      throw new ConfigError(
        `invalid configuration: ${formatPath(path)}: expected integer (got ${JSON.stringify(value)} from ${name})`,
      );
    }
    const setting =
      kind === "list"
        ? value
            .split(",")
            .map((v) => v.trim())
            .filter(Boolean)
        : kind === "integer"
          ? Number(value)
          : value;
    setPath(tree, path, setting);
    fromEnv.push({ name, path, value: setting });
  }
  if (options.overrides) mergeInto(tree, options.overrides);
  // Settings the overrides replaced did not come from the environment after all.
  const sources = fromEnv.filter((s) => getPath(tree, s.path) === s.value);
  return resolve(validate(tree, file, sources));
}

/**
 * JOB_TIMEOUT_SECONDS: the deadline, in seconds, the executor gave this runner (a Kubernetes Job's
 * activeDeadlineSeconds), or undefined when it is not set. It wins over the job's timeout_seconds
 * and executor.timeouts.<type>. Anything but a positive integer is a ConfigError naming it.
 */
export function jobTimeoutFromEnv(env: Env = process.env): number | undefined {
  const name = RUNNER_ENV.jobTimeoutSeconds;
  const value = env[name];
  if (value === undefined || value === "") return undefined;
  const seconds = /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(seconds) || seconds < 1) {
    throw new ConfigError(
      `invalid configuration: ${name} must be a positive integer number of seconds (got ${JSON.stringify(value)})`,
    );
  }
  return seconds;
}

/**
 * server.clients and server.api_keys as one list. Without named clients the api_keys are one client
 * that sees everything (admin); beside named clients they are the client "default". A name or a key
 * given twice is refused: a key must say who is calling.
 */
function apiClients(apiKeys: string[], named: ConfigFile["server"]["clients"]): ApiClient[] {
  const plain = apiKeys.filter((k) => k.length > 0);
  const clients: ApiClient[] = named.map((c, i) => {
    const keys = c.keys.filter((k) => k.length > 0);
    if (keys.length === 0) {
      throw new ConfigError(
        `invalid configuration: server.clients[${i}].keys: client "${c.name}" has no key`,
      );
    }
    return {
      name: c.name,
      keys,
      admin: c.admin,
      ...(c.rate_limit !== undefined ? { rateLimit: c.rate_limit } : {}),
    };
  });
  if (plain.length > 0) {
    if (clients.some((c) => c.name === DEFAULT_CLIENT)) {
      throw new ConfigError(
        `invalid configuration: server.api_keys are the client "${DEFAULT_CLIENT}", and server.clients names another client "${DEFAULT_CLIENT}": move the keys into that client or rename it`,
      );
    }
    clients.push({ name: DEFAULT_CLIENT, keys: plain, admin: named.length === 0 });
  }
  const names = new Set<string>();
  const keys = new Map<string, string>();
  for (const client of clients) {
    if (names.has(client.name)) {
      throw new ConfigError(`invalid configuration: server.clients: the name "${client.name}" is used twice`);
    }
    names.add(client.name);
    for (const key of client.keys) {
      const other = keys.get(key);
      if (other !== undefined) {
        // The key itself is a secret: name the clients, not the key.
        throw new ConfigError(
          `invalid configuration: server.clients: a key of client "${client.name}" is also a key of client "${other}"`,
        );
      }
      keys.set(key, client.name);
    }
  }
  return clients;
}

type EnvSources = Array<{ name: string; path: string[]; value: unknown }>;

// ${VAR} and ${VAR:-default} in every string of the file; $$ stands for a literal $.
export function substituteEnv(value: unknown, env: Env, path: string[]): unknown {
  if (typeof value === "string") {
    return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (match, name, fallback) => {
      if (match === "$$") return "$";
      const found = env[name as string];
      if (found !== undefined && found !== "") return found;
      if (fallback !== undefined) return fallback as string;
      throw new ConfigError(
        `config ${formatPath(path)}: environment variable ${name} is not set (use \${${name}:-default} for a fallback)`,
      );
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substituteEnv(v, env, [...path, String(i)]));
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, substituteEnv(v, env, [...path, k])]),
    );
  }
  return value;
}

// A setting substituted to "" (e.g. ${S3_ENDPOINT:-}) counts as unset; list entries are kept and
// filtered where they are used (empty API keys are ignored).
function dropEmpty(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(dropEmpty);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== "" && v !== null)
        .map(([k, v]) => [k, dropEmpty(v)]),
    );
  }
  return value;
}

function validate(tree: Record<string, unknown>, file: string | undefined, fromEnv: EnvSources): ConfigFile {
  const withDefaults = Value.Default(ConfigFile, Value.Convert(ConfigFile, tree));
  const converted = Value.Convert(ConfigFile, withDefaults);
  const first = Value.Errors(ConfigFile, converted).First();
  if (first) {
    const where = formatPath(first.path.split("/").filter(Boolean));
    const variable = fromEnv.find(
      (s) => where === formatPath(s.path) || where.startsWith(`${formatPath(s.path)}[`),
    );
    const from = variable ? ` from ${variable.name}` : "";
    const got =
      first.value === undefined
        ? from
          ? ` (${from.trim()})`
          : ""
        : ` (got ${JSON.stringify(first.value)}${from})`;
    const origin = file && !variable ? ` in ${file} or the environment` : "";
    const choices = (first.schema.anyOf as Array<{ const?: unknown }> | undefined)?.map((s) => s.const);
    const message =
      choices && choices.every((c) => c !== undefined)
        ? `must be one of ${choices.join(", ")}`
        : first.message.toLowerCase();
    throw new ConfigError(`invalid configuration${origin}: ${where}: ${message}${got}`);
  }
  return converted as ConfigFile;
}

function resolve(c: ConfigFile): Config {
  const duration = (field: string, value: string | number) => {
    try {
      return parseDuration(value);
    } catch (err) {
      throw new ConfigError(`invalid configuration: ${field}: ${(err as Error).message}`);
    }
  };
  const config: Config = {
    server: {
      host: c.server.host,
      port: c.server.port,
      mode: c.server.mode,
      readTimeoutMs: duration("server.read_timeout", c.server.read_timeout),
      writeTimeoutMs: duration("server.write_timeout", c.server.write_timeout),
      clients: apiClients(c.server.api_keys, c.server.clients),
      docsPath: c.server.docs_path.replace(/\/+$/, "") || "/docs",
      sseHeartbeatMs: duration("server.sse_heartbeat", c.server.sse_heartbeat),
      shutdownTimeoutMs: duration("server.shutdown_timeout", c.server.shutdown_timeout),
      trustProxy: c.server.trust_proxy,
      allowUnauthenticated: c.server.allow_unauthenticated,
      rateLimit: {
        enabled: c.server.rate_limit.enabled,
        windowMs: duration("server.rate_limit.window", c.server.rate_limit.window),
        perClient: c.server.rate_limit.per_client,
        perAddress: c.server.rate_limit.per_address,
        syncIntervalMs: duration("server.rate_limit.sync_interval", c.server.rate_limit.sync_interval),
      },
    },
    redis: {
      url: c.redis.url,
      keyPrefix: c.redis.key_prefix,
      connectTimeoutMs: duration("redis.connect_timeout", c.redis.connect_timeout),
    },
    storage: {
      endpoint: c.storage.endpoint,
      region: c.storage.region,
      accessKeyId: c.storage.access_key_id,
      secretAccessKey: c.storage.secret_access_key,
      forcePathStyle: c.storage.force_path_style,
      publicBaseUrl: c.storage.public_base_url?.replace(/\/+$/, ""),
      healthBucket: c.storage.health_bucket,
      embeddedPort: c.storage.embedded_port,
      embeddedHost: c.storage.embedded_host,
    },
    executor: {
      kind: c.executor.kind,
      localConcurrency: c.executor.local_concurrency || Math.max(1, cpus().length),
      localRunnerMaxJobs: c.executor.local_runner_max_jobs,
      timeoutsMs: Object.fromEntries(
        JOB_TYPES.map((type) => [type, duration(`executor.timeouts.${type}`, c.executor.timeouts[type])]),
      ) as Record<JobType, number>,
      maxAttempts: c.executor.max_attempts,
      leaseMs: duration("executor.lease", c.executor.lease),
      scratchDir: c.executor.scratch_dir ?? join(tmpdir(), "media-service"),
    },
    kubernetes: {
      namespace: c.kubernetes.namespace ?? ownNamespace(),
      instance: c.kubernetes.instance,
      image: c.kubernetes.image,
      imagePullPolicy: c.kubernetes.image_pull_policy,
      imagePullSecrets: c.kubernetes.image_pull_secrets,
      serviceAccount: c.kubernetes.service_account,
      nodeSelector: c.kubernetes.node_selector,
      tolerations: c.kubernetes.tolerations,
      affinity: c.kubernetes.affinity,
      priorityClassName: c.kubernetes.priority_class_name,
      backoffLimit: c.kubernetes.backoff_limit,
      ttlSecondsAfterFinished: c.kubernetes.ttl_seconds_after_finished,
      scratchSize: c.kubernetes.scratch_size,
      resources: c.kubernetes.resources,
      maxResources: c.kubernetes.max_resources,
      maxRunningJobs: c.kubernetes.max_running_jobs,
      maxRunningJobsPerType: c.kubernetes.max_running_jobs_per_type,
      unschedulableTimeoutMs: duration(
        "kubernetes.unschedulable_timeout",
        c.kubernetes.unschedulable_timeout,
      ),
      startFailureTimeoutMs: duration("kubernetes.start_failure_timeout", c.kubernetes.start_failure_timeout),
      reconcileIntervalMs: duration("kubernetes.reconcile_interval", c.kubernetes.reconcile_interval),
      leaderElection: {
        enabled: c.kubernetes.leader_election.enabled,
        leaseName: c.kubernetes.leader_election.lease_name ?? `${c.kubernetes.instance}-controller`,
        leaseDurationMs: duration(
          "kubernetes.leader_election.lease_duration",
          c.kubernetes.leader_election.lease_duration,
        ),
        renewDeadlineMs: duration(
          "kubernetes.leader_election.renew_deadline",
          c.kubernetes.leader_election.renew_deadline,
        ),
        retryPeriodMs: duration(
          "kubernetes.leader_election.retry_period",
          c.kubernetes.leader_election.retry_period,
        ),
      },
      redisSecret: c.kubernetes.redis_secret,
      s3Secret: c.kubernetes.s3_secret && {
        name: c.kubernetes.s3_secret.name,
        accessKeyKey: c.kubernetes.s3_secret.access_key_key,
        secretKeyKey: c.kubernetes.s3_secret.secret_key_key,
      },
    },
    webhooks: {
      signingSecret: c.webhooks.signing_secret || undefined,
      ...(c.webhooks.allow_private !== undefined ? { allowPrivate: c.webhooks.allow_private } : {}),
      allowedHosts: c.webhooks.allowed_hosts,
      timeoutMs: duration("webhooks.timeout", c.webhooks.timeout),
      maxAttempts: c.webhooks.max_attempts,
      retryInitialDelayMs: duration("webhooks.retry_initial_delay", c.webhooks.retry_initial_delay),
      retryMaxDelayMs: duration("webhooks.retry_max_delay", c.webhooks.retry_max_delay),
      concurrency: c.webhooks.concurrency,
      perHostConcurrency: c.webhooks.per_host_concurrency,
      reclaimAfterMs: duration("webhooks.reclaim_after", c.webhooks.reclaim_after),
    },
    ai: resolveAi(c, duration),
    limits: {
      maxBodyBytes: c.limits.max_body_bytes,
      retentionMs: duration("limits.retention", c.limits.retention),
      pruneIntervalMs: duration("limits.prune_interval", c.limits.prune_interval),
      eventsMaxLen: c.limits.events_max_len,
      maxTimeoutSeconds: c.limits.max_timeout_seconds,
      healthCheckTimeoutMs: duration("limits.health_check_timeout", c.limits.health_check_timeout),
      maxInputPixels: c.limits.max_input_pixels,
      maxSourceBytes: c.limits.max_source_bytes,
      maxOutputDimension: c.limits.max_output_dimension,
    },
    dataDir: c.data_dir,
    logLevel: c.log_level ?? { debug: "debug", release: "info", test: "warn" }[c.server.mode],
    logFormat: c.log_format,
  };
  checkQuantities(c.kubernetes);
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
  const election = config.kubernetes.leaderElection;
  if (!(
    election.leaseDurationMs > election.renewDeadlineMs && election.renewDeadlineMs > election.retryPeriodMs
  )) {
    throw new ConfigError(
      "invalid configuration: kubernetes.leader_election needs lease_duration > renew_deadline > retry_period",
    );
  }
  return config;
}

/** Default transcription model: OpenAI's; local servers name their own. */
const DEFAULT_TRANSCRIPTION_MODEL = "whisper-1";

function resolveAi(c: ConfigFile, duration: (field: string, value: string | number) => number): Config["ai"] {
  const ai = c.ai;
  const providers: Record<string, AiProvider> = {};
  const provider = (
    name: string,
    p: {
      base_url?: string;
      api_key?: string;
      model?: string;
      transcription_model?: string;
      structured_output?: AiProvider["structuredOutput"];
    },
    settings: { prefix: string; baseUrl: string; model: string; apiKey: string },
    apiKeySecret: { name: string; key: string } | undefined,
  ): AiProvider => {
    if (!p.base_url) {
      throw new ConfigError(
        `invalid configuration: ${settings.baseUrl} is not set, but ${settings.prefix} is configured otherwise: set it to the provider's OpenAI-compatible API, e.g. https://api.openai.com/v1 or http://localhost:11434/v1`,
      );
    }
    let url: URL;
    try {
      url = new URL(p.base_url);
    } catch {
      throw new ConfigError(
        `invalid configuration: ${settings.baseUrl}: not a URL (got ${JSON.stringify(p.base_url)})`,
      );
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new ConfigError(`invalid configuration: ${settings.baseUrl}: must be an http or https URL`);
    }
    if (!p.model) {
      throw new ConfigError(
        `invalid configuration: ${settings.model} is not set: name the provider's chat model that accepts images (e.g. gpt-4o-mini, llava)`,
      );
    }
    return {
      name,
      baseUrl: url.href.replace(/\/+$/, ""),
      ...(p.api_key ? { apiKey: p.api_key } : {}),
      model: p.model,
      transcriptionModel: p.transcription_model ?? DEFAULT_TRANSCRIPTION_MODEL,
      structuredOutput: p.structured_output ?? "prompt",
      ...(apiKeySecret ? { apiKeySecret } : {}),
      apiKeySetting: settings.apiKey,
    };
  };
  const envDefined = Boolean(ai.base_url || ai.model || ai.api_key || ai.transcription_model);
  if (envDefined) {
    providers[ai.name] = provider(
      ai.name,
      ai,
      {
        prefix: "the AI provider",
        baseUrl: "AI_BASE_URL (ai.base_url)",
        model: "AI_MODEL (ai.model)",
        apiKey: "AI_API_KEY",
      },
      c.kubernetes.ai_secret,
    );
  }
  for (const [name, p] of Object.entries(ai.providers)) {
    if (!new RegExp(AI_PROVIDER_NAME).test(name)) {
      throw new ConfigError(
        `invalid configuration: ai.providers.${name}: a provider's name is lower-case letters, digits, - and _ (at most 63)`,
      );
    }
    if (providers[name]) {
      throw new ConfigError(
        `invalid configuration: ai.providers.${name}: the name is taken by the provider AI_BASE_URL defines (ai.name, AI_PROVIDER)`,
      );
    }
    const prefix = `ai.providers.${name}`;
    providers[name] = provider(
      name,
      p,
      { prefix, baseUrl: `${prefix}.base_url`, model: `${prefix}.model`, apiKey: `${prefix}.api_key` },
      p.api_key_secret && { name: p.api_key_secret.name, key: p.api_key_secret.key ?? "api-key" },
    );
  }
  const names = Object.keys(providers);
  let defaultProvider = ai.default_provider;
  if (defaultProvider !== undefined && !providers[defaultProvider]) {
    throw new ConfigError(
      `invalid configuration: ai.default_provider: no provider named "${defaultProvider}" (configured: ${names.join(", ") || "none"})`,
    );
  }
  if (defaultProvider === undefined) {
    if (envDefined) defaultProvider = ai.name;
    else if (names.length === 1) defaultProvider = names[0];
    else if (names.length > 1) {
      throw new ConfigError(
        `invalid configuration: ai.default_provider must name the provider of jobs that name none (configured: ${names.join(", ")})`,
      );
    }
  }
  const result: Config["ai"] = {
    providers,
    ...(defaultProvider !== undefined ? { defaultProvider } : {}),
    timeoutMs: duration("ai.timeout", ai.timeout),
    maxAttempts: ai.max_attempts,
    retryInitialDelayMs: duration("ai.retry_initial_delay", ai.retry_initial_delay),
    retryMaxDelayMs: duration("ai.retry_max_delay", ai.retry_max_delay),
    maxImageSide: ai.max_image_side,
    transcriptionSegmentMs: duration("ai.transcription_segment", ai.transcription_segment),
  };
  if (result.timeoutMs <= 0)
    throw new ConfigError("invalid configuration: ai.timeout must be more than zero");
  if (result.retryMaxDelayMs < result.retryInitialDelayMs) {
    throw new ConfigError(
      "invalid configuration: ai.retry_max_delay must be at least ai.retry_initial_delay",
    );
  }
  if (result.transcriptionSegmentMs < 10_000) {
    throw new ConfigError("invalid configuration: ai.transcription_segment must be at least 10s");
  }
  return result;
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
  quantity("scratch_size", k.scratch_size);
  quantity("max_resources.cpu", k.max_resources.cpu);
  quantity("max_resources.memory", k.max_resources.memory);
  for (const type of JOB_TYPES) {
    for (const resource of ["cpu", "memory"] as const) {
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

function formatPath(path: string[]): string {
  return path.reduce(
    (acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part),
    "",
  );
}

function getPath(tree: Record<string, unknown>, path: string[]): unknown {
  let node: unknown = tree;
  for (const key of path) {
    if (!node || typeof node !== "object") return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function setPath(tree: Record<string, unknown>, path: string[], value: unknown): void {
  let node = tree;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (!next || typeof next !== "object") node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
}

function mergeInto(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(source)) {
    if (value && typeof value === "object" && !Array.isArray(value)) {
      const existing = target[key];
      if (!existing || typeof existing !== "object") target[key] = {};
      mergeInto(target[key] as Record<string, unknown>, value as Record<string, unknown>);
    } else {
      target[key] = value;
    }
  }
}
