// The AI providers of the configuration: the one `ai` itself defines (AI_BASE_URL, AI_MODEL, …)
// and the named ones of ai.providers, each checked (a URL, a model), and the default provider of
// jobs that name none.
import type { AiProviderConfig } from "./schema.js";
import { AI_PROVIDER_NAME, type ConfigFile } from "./schema.js";
import { ConfigError } from "./errors.js";
import type { Resolved } from "./settings.js";

type Settings = Resolved<typeof ConfigFile>;

/** One OpenAI-compatible provider: its settings (baseUrl without a trailing slash), named. */
export interface AiProvider extends Resolved<typeof AiProviderConfig> {
  name: string;
  /** Where the key is set, for messages such as "check AI_API_KEY". */
  apiKeySetting: string;
}

/** The settings of `ai` that define its provider; the resolved configuration holds it in `providers`. */
type AiProviderSettings = "baseUrl" | "model" | "apiKey" | "transcriptionModel" | "structuredOutput" | "name";

/** The resolved `ai` section: its settings, with every provider by name in place of the one it defines. */
export type AiConfig = Omit<Settings["ai"], AiProviderSettings | "providers"> & {
  /** Every configured provider by name, the env-defined one included. */
  providers: Record<string, AiProvider>;
  /** The provider of jobs that name none; unset when no provider is configured. */
  defaultProvider?: string;
};

export function resolveAi(settings: Settings, aiDefined: boolean): AiConfig {
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
  const result: AiConfig = {
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
