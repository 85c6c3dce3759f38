// The configuration: the YAML file (CONFIG_FILE, ./config.yaml), the environment over it and the
// caller's overrides over both, validated by the schema (schema.ts), resolved (settings.ts: names
// and units), with what derives from the settings filled in and what the schema cannot say checked
// (checks.ts). The file's and the environment's tree: tree.ts; the API's clients: clients.ts; the AI
// providers: ai.ts.
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import type { parse as YamlParse } from "yaml";
import { Value, type TLiteralValue } from "../typebox.js";
import { parseDuration } from "../duration.js";
import { resolveAi, type AiConfig } from "./ai.js";
import { checkConfig } from "./checks.js";
import { apiClients, type ApiClient } from "./clients.js";
import { ConfigError } from "./errors.js";
import { RUNNER_ENV } from "./runner-env.js";
import type { LOG_LEVELS } from "./schema.js";
import { ConfigFile } from "./schema.js";
import { resolveSettings, type Resolved } from "./settings.js";
import { configTemplates } from "./templates.js";
import type { Template } from "../jobs/templates.js";
import {
  applyEnvOverrides,
  dropEmpty,
  formatPath,
  getPath,
  mergeInto,
  substituteEnv,
  type Env,
  type EnvSources,
} from "./tree.js";

export type { AiProvider } from "./ai.js";
export { DEFAULT_CLIENT, type ApiClient } from "./clients.js";
export { ConfigError } from "./errors.js";
export { substituteEnv } from "./tree.js";

/** The settings as schema.ts declares them, resolved generically (settings.ts). */
type Settings = Resolved<typeof ConfigFile>;

/**
 * The resolved configuration: the settings of schema.ts, named and converted by settings.ts, with
 * what is derived from them in place of what they are derived from.
 */
export interface Config extends Omit<
  Settings,
  "server" | "executor" | "kubernetes" | "ai" | "logLevel" | "templates"
> {
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
  ai: AiConfig;
  logLevel: (typeof LOG_LEVELS)[number];
  /** The configuration's templates (read-only, every client's), validated, in name order. */
  templates: Template[];
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
  const fromEnv = applyEnvOverrides(tree, env);
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
    templates: [],
  };
  config.templates = configTemplates(c.templates, config);
  checkConfig(c, config);
  return config;
}
