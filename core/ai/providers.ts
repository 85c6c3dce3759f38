// Which provider a job uses. Pure (no I/O), so the Kubernetes manifest builder, the API and the
// runner all decide the same way.
import type { AiProvider, Config } from "../config/load.js";
import { JOB_DEFINITIONS, type JobType } from "../jobs/types.js";

/** Job types that call an AI provider. */
export const AI_JOB_TYPES: ReadonlySet<JobType> = new Set(
  JOB_DEFINITIONS.filter((d) => d.runner.ai).map((d) => d.name),
);

type ProviderSettings = Pick<Config["ai"], "providers" | "defaultProvider">;

export type ProviderChoice =
  { ok: true; provider: AiProvider } | { ok: false; reason: "not_configured" | "unknown"; message: string };

/** The provider a job asks for (`provider`), else the default one; or why there is none. */
export function chooseProvider(ai: ProviderSettings, requested?: string): ProviderChoice {
  const names = Object.keys(ai.providers);
  if (requested !== undefined) {
    const provider = ai.providers[requested];
    if (provider) return { ok: true, provider };
    return {
      ok: false,
      reason: names.length === 0 ? "not_configured" : "unknown",
      message:
        names.length === 0
          ? `no AI provider named "${requested}": none is configured`
          : `no AI provider named "${requested}" (configured: ${names.join(", ")})`,
    };
  }
  const provider = ai.defaultProvider !== undefined ? ai.providers[ai.defaultProvider] : undefined;
  if (provider) return { ok: true, provider };
  return {
    ok: false,
    reason: "not_configured",
    message:
      "no AI provider is configured: set AI_BASE_URL, AI_MODEL and AI_API_KEY (or ai.providers in the configuration file)",
  };
}
