import { existsSync, readFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { Value } from "@sinclair/typebox/value";
import { parse as parseYaml } from "yaml";
import { parseDuration } from "../duration.js";
import { JOB_TYPES, type JobType } from "../jobs/types.js";
import { ConfigFile } from "./schema.js";

export class ConfigError extends Error {
  override name = "ConfigError";
}

type Env = Record<string, string | undefined>;

// Environment variables that override the file, as DESIGN.md lists them: [variable, path, kind].
const ENV_OVERRIDES: Array<[string, string[], "string" | "list"]> = [
  ["PORT", ["server", "port"], "string"],
  ["API_KEYS", ["server", "api_keys"], "list"],
  ["REDIS_URL", ["redis", "url"], "string"],
  ["REDIS_KEY_PREFIX", ["redis", "key_prefix"], "string"],
  ["SCRATCH_DIR", ["executor", "scratch_dir"], "string"],
  ["S3_ENDPOINT", ["storage", "endpoint"], "string"],
  ["S3_REGION", ["storage", "region"], "string"],
  ["S3_ACCESS_KEY_ID", ["storage", "access_key_id"], "string"],
  ["S3_SECRET_ACCESS_KEY", ["storage", "secret_access_key"], "string"],
  ["S3_FORCE_PATH_STYLE", ["storage", "force_path_style"], "string"],
  ["S3_PUBLIC_BASE_URL", ["storage", "public_base_url"], "string"],
  ["EXECUTOR", ["executor", "kind"], "string"],
  ["LOCAL_CONCURRENCY", ["executor", "local_concurrency"], "string"],
  ["DATA_DIR", ["data_dir"], "string"],
  ["EMBEDDED_S3_PORT", ["storage", "embedded_port"], "string"],
  ["LOG_LEVEL", ["log_level"], "string"],
  ["AI_BASE_URL", ["ai", "base_url"], "string"],
  ["AI_API_KEY", ["ai", "api_key"], "string"],
  ["AI_MODEL", ["ai", "model"], "string"],
  ["WEBHOOK_SIGNING_SECRET", ["webhooks", "signing_secret"], "string"],
];

export interface Config {
  server: {
    host: string;
    port: number;
    mode: "debug" | "release" | "test";
    readTimeoutMs: number;
    writeTimeoutMs: number;
    apiKeys: string[];
    docsPath: string;
    sseHeartbeatMs: number;
    shutdownTimeoutMs: number;
    trustProxy: boolean;
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
    redisSecret?: { name: string; key: string };
    s3Secret?: { name: string; accessKeyKey: string; secretKeyKey: string };
    aiSecret?: { name: string; key: string };
  };
  webhooks: { signingSecret?: string; allowPrivate: boolean; allowedHosts: string[] };
  ai: { baseUrl?: string; apiKey?: string; model?: string };
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
  for (const [name, path, kind] of ENV_OVERRIDES) {
    const value = env[name];
    if (value === undefined || value === "") continue;
    setPath(
      tree,
      path,
      kind === "list"
        ? value
            .split(",")
            .map((v) => v.trim())
            .filter(Boolean)
        : value,
    );
  }
  if (options.overrides) mergeInto(tree, options.overrides);
  return resolve(validate(tree, file));
}

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

function validate(tree: Record<string, unknown>, file: string | undefined): ConfigFile {
  const withDefaults = Value.Default(ConfigFile, Value.Convert(ConfigFile, tree));
  const converted = Value.Convert(ConfigFile, withDefaults);
  const first = Value.Errors(ConfigFile, converted).First();
  if (first) {
    const where = formatPath(first.path.split("/").filter(Boolean));
    const got = first.value === undefined ? "" : ` (got ${JSON.stringify(first.value)})`;
    const origin = file ? ` in ${file} or the environment` : "";
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
      apiKeys: c.server.api_keys.filter((k) => k.length > 0),
      docsPath: c.server.docs_path.replace(/\/+$/, "") || "/docs",
      sseHeartbeatMs: duration("server.sse_heartbeat", c.server.sse_heartbeat),
      shutdownTimeoutMs: duration("server.shutdown_timeout", c.server.shutdown_timeout),
      trustProxy: c.server.trust_proxy,
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
      redisSecret: c.kubernetes.redis_secret,
      s3Secret: c.kubernetes.s3_secret && {
        name: c.kubernetes.s3_secret.name,
        accessKeyKey: c.kubernetes.s3_secret.access_key_key,
        secretKeyKey: c.kubernetes.s3_secret.secret_key_key,
      },
      aiSecret: c.kubernetes.ai_secret,
    },
    webhooks: {
      signingSecret: c.webhooks.signing_secret || undefined,
      allowPrivate: c.webhooks.allow_private,
      allowedHosts: c.webhooks.allowed_hosts,
    },
    ai: {
      baseUrl: c.ai.base_url || undefined,
      apiKey: c.ai.api_key || undefined,
      model: c.ai.model || undefined,
    },
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
  };
  if (config.server.sseHeartbeatMs >= config.server.writeTimeoutMs) {
    throw new ConfigError(
      "invalid configuration: server.sse_heartbeat must be shorter than server.write_timeout, or idle SSE streams are cut",
    );
  }
  return config;
}

function formatPath(path: string[]): string {
  return path.reduce(
    (acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part),
    "",
  );
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
