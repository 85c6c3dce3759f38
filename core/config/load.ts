import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import type { parse as YamlParse } from "yaml";
import { Value, type TLiteralValue } from "../typebox.js";
import { parseDuration } from "../duration.js";
import { JOB_TYPES } from "../jobs/types.js";
import { parseQuantity } from "../quantity.js";
import { parseAllowedHosts } from "../webhooks/address-policy.js";
import { decodeSigningSecret } from "../webhooks/signing.js";
import { RUNNER_ENV } from "./runner-env.js";
import type { ApiClientConfig, AiProviderConfig, LOG_LEVELS } from "./schema.js";
import { AI_PROVIDER_NAME, ConfigFile } from "./schema.js";
import { envSettings, resolveSettings, type Resolved } from "./settings.js";

export class ConfigError extends Error {
  override name = "ConfigError";
}

type Env = Record<string, string | undefined>;

// Settings the environment overrides (schema.ts names each one's variable). An "integer" is read as
// a number is in the file (1e9 is 1000000000) and must be a whole one: 5.5, 0x10 or 12abc are
// refused rather than cut short to 5, 16 or 12; a "list" is comma-separated.
const ENV_OVERRIDES = envSettings(ConfigFile);

const NUMBER = /^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$/;

/** The settings as schema.ts declares them, resolved generically (settings.ts). */
type Settings = Resolved<typeof ConfigFile>;

/** A caller of the API: its name, the keys it presents, whether it sees every client's jobs. */
export type ApiClient = Resolved<typeof ApiClientConfig>;

/** The client server.api_keys stand for when named clients are configured beside them. */
export const DEFAULT_CLIENT = "default";

/** One OpenAI-compatible provider: its settings (baseUrl without a trailing slash), named. */
export interface AiProvider extends Resolved<typeof AiProviderConfig> {
  name: string;
  /** Where the key is set, for messages such as "check AI_API_KEY". */
  apiKeySetting: string;
}

/** The settings of `ai` that define its provider; the resolved configuration holds it in `providers`. */
type AiProviderSettings = "baseUrl" | "model" | "apiKey" | "transcriptionModel" | "structuredOutput" | "name";

/**
 * The resolved configuration: the settings of schema.ts, named and converted by settings.ts, with
 * what is derived from them in place of what they are derived from.
 */
export interface Config extends Omit<Settings, "server" | "executor" | "kubernetes" | "ai" | "logLevel"> {
  server: Omit<Settings["server"], "apiKeys" | "clients"> & {
    /**
     * Who may call the API: server.clients, and server.api_keys as one more client ("default").
     * Empty: authentication is off. (server.host unset: see listenHost() in exposure.ts.)
     */
    clients: ApiClient[];
  };
  executor: Settings["executor"] & { scratchDir: string };
  kubernetes: Omit<Settings["kubernetes"], "namespace" | "leaderElection"> & {
    namespace: string;
    leaderElection: Settings["kubernetes"]["leaderElection"] & { leaseName: string };
  };
  ai: Omit<Settings["ai"], AiProviderSettings | "providers"> & {
    /** Every configured provider by name, the env-defined one included. */
    providers: Record<string, AiProvider>;
    /** The provider of jobs that name none; unset when no provider is configured. */
    defaultProvider?: string;
  };
  logLevel: (typeof LOG_LEVELS)[number];
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

/**
 * YAML's parser, loaded when a configuration file is read: a runner (its configuration comes from
 * its environment) never loads it. Loaded with require, as loadConfig is synchronous; the package's
 * Node entry is CommonJS either way.
 */
function parseYaml(text: string): unknown {
  const yaml = createRequire(import.meta.url)("yaml") as { parse: typeof YamlParse };
  return yaml.parse(text);
}

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
  for (const { name, path, kind } of ENV_OVERRIDES) {
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
  // The provider `ai` itself defines is configured when any of its own settings is given (before
  // the defaults fill them in): a lone AI_TRANSCRIPTION_MODEL asks for AI_BASE_URL rather than vanish.
  const ai = (tree.ai ?? {}) as Record<string, unknown>;
  const aiDefined = ["base_url", "model", "api_key", "transcription_model"].some((k) => Boolean(ai[k]));
  return resolve(validate(tree, file, sources), aiDefined);
}

/**
 * JOB_TIMEOUT_SECONDS: the deadline, in seconds, the executor gave this runner (the job's time, as
 * its Kubernetes Job has it), or undefined when it is not set. It wins over the job's timeout_seconds
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
function apiClients(apiKeys: string[], named: ApiClient[]): ApiClient[] {
  const plain = apiKeys.filter((k) => k.length > 0);
  const clients: ApiClient[] = named.map((c, i) => {
    const keys = c.keys.filter((k) => k.length > 0);
    if (keys.length === 0) {
      throw new ConfigError(
        `invalid configuration: server.clients[${i}].keys: client "${c.name}" has no key`,
      );
    }
    return { ...c, keys };
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
    const choices = (first.schema.anyOf as Array<{ const?: TLiteralValue }> | undefined)?.map((s) => s.const);
    const message =
      choices && choices.every((c) => c !== undefined)
        ? `must be one of ${choices.join(", ")}`
        : first.message.toLowerCase();
    throw new ConfigError(`invalid configuration${origin}: ${where}: ${message}${got}`);
  }
  return converted as ConfigFile;
}

function resolve(c: ConfigFile, aiDefined: boolean): Config {
  const settings = resolveSettings(ConfigFile, c, (path, value) => {
    try {
      return parseDuration(value);
    } catch (err) {
      throw new ConfigError(`invalid configuration: ${formatPath(path)}: ${(err as Error).message}`);
    }
  }) as Settings;
  const { apiKeys, clients, ...server } = settings.server;
  const { kubernetes, webhooks } = settings;
  const config: Config = {
    ...settings,
    server: {
      ...server,
      clients: apiClients(apiKeys, clients),
      docsPath: server.docsPath.replace(/\/+$/, "") || "/docs",
    },
    storage: { ...settings.storage, publicBaseUrl: settings.storage.publicBaseUrl?.replace(/\/+$/, "") },
    executor: {
      ...settings.executor,
      localConcurrency: settings.executor.localConcurrency || Math.max(1, cpus().length),
      scratchDir: settings.executor.scratchDir ?? join(tmpdir(), "media-service"),
    },
    kubernetes: {
      ...kubernetes,
      namespace: kubernetes.namespace ?? ownNamespace(),
      leaderElection: {
        ...kubernetes.leaderElection,
        leaseName: kubernetes.leaderElection.leaseName ?? `${kubernetes.instance}-controller`,
      },
    },
    webhooks: { ...webhooks, signingSecret: webhooks.signingSecret || undefined },
    ai: resolveAi(settings, aiDefined),
    logLevel: settings.logLevel ?? ({ debug: "debug", release: "info", test: "warn" } as const)[server.mode],
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
  return config;
}

function resolveAi(settings: Settings, aiDefined: boolean): Config["ai"] {
  const {
    baseUrl: _baseUrl,
    model: _model,
    apiKey: _apiKey,
    transcriptionModel: _transcriptionModel,
    structuredOutput: _structuredOutput,
    name: envName,
    providers: named,
    defaultProvider: configuredDefault,
    ...ai
  } = settings.ai;
  const providers: Record<string, AiProvider> = {};
  const provider = (
    name: string,
    p: Omit<AiProvider, "name" | "apiKeySetting" | "baseUrl" | "model"> & {
      baseUrl?: string;
      model?: string;
    },
    settingNames: { prefix: string; baseUrl: string; model: string; apiKey: string },
  ): AiProvider => {
    if (!p.baseUrl) {
      throw new ConfigError(
        `invalid configuration: ${settingNames.baseUrl} is not set, but ${settingNames.prefix} is configured otherwise: set it to the provider's OpenAI-compatible API, e.g. https://api.openai.com/v1 or http://localhost:11434/v1`,
      );
    }
    let url: URL;
    try {
      url = new URL(p.baseUrl);
    } catch {
      throw new ConfigError(
        `invalid configuration: ${settingNames.baseUrl}: not a URL (got ${JSON.stringify(p.baseUrl)})`,
      );
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new ConfigError(`invalid configuration: ${settingNames.baseUrl}: must be an http or https URL`);
    }
    if (!p.model) {
      throw new ConfigError(
        `invalid configuration: ${settingNames.model} is not set: name the provider's chat model that accepts images (e.g. gpt-4o-mini, llava)`,
      );
    }
    return {
      name,
      baseUrl: url.href.replace(/\/+$/, ""),
      ...(p.apiKey ? { apiKey: p.apiKey } : {}),
      model: p.model,
      transcriptionModel: p.transcriptionModel,
      structuredOutput: p.structuredOutput,
      ...(p.apiKeySecret ? { apiKeySecret: p.apiKeySecret } : {}),
      apiKeySetting: settingNames.apiKey,
    };
  };
  if (aiDefined) {
    providers[envName] = provider(
      envName,
      {
        baseUrl: _baseUrl,
        model: _model,
        apiKey: _apiKey,
        transcriptionModel: _transcriptionModel,
        structuredOutput: _structuredOutput,
        apiKeySecret: settings.kubernetes.aiSecret,
      },
      {
        prefix: "the AI provider",
        baseUrl: "AI_BASE_URL (ai.base_url)",
        model: "AI_MODEL (ai.model)",
        apiKey: "AI_API_KEY",
      },
    );
  }
  for (const [name, p] of Object.entries(named)) {
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
    providers[name] = provider(name, p, {
      prefix,
      baseUrl: `${prefix}.base_url`,
      model: `${prefix}.model`,
      apiKey: `${prefix}.api_key`,
    });
  }
  const names = Object.keys(providers);
  let defaultProvider = configuredDefault;
  if (defaultProvider !== undefined && !providers[defaultProvider]) {
    throw new ConfigError(
      `invalid configuration: ai.default_provider: no provider named "${defaultProvider}" (configured: ${names.join(", ") || "none"})`,
    );
  }
  if (defaultProvider === undefined) {
    if (aiDefined) defaultProvider = envName;
    else if (names.length === 1) defaultProvider = names[0];
    else if (names.length > 1) {
      throw new ConfigError(
        `invalid configuration: ai.default_provider must name the provider of jobs that name none (configured: ${names.join(", ")})`,
      );
    }
  }
  const result: Config["ai"] = {
    ...ai,
    providers,
    ...(defaultProvider !== undefined ? { defaultProvider } : {}),
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
