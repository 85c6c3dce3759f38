// The AI providers as a dependency of /health: optional (never critical), "not_configured" when
// there is none, else every provider must answer GET /models with the configured key. A hosted
// provider is asked at most once per PROBE_CACHE_MS, however often /health is polled: health
// checks should not spend an API quota or trip its rate limit.
import type { Config } from "../config/load.js";
import type { DependencyCheck } from "../health/dependencies.js";
import { AiClient } from "./client.js";

export const PROBE_CACHE_MS = 30_000;

export function aiDependency(ai: Config["ai"], timeoutMs: number): DependencyCheck {
  const clients = Object.values(ai.providers).map(
    (provider) =>
      new AiClient(provider, { timeoutMs, maxAttempts: 1, retryInitialDelayMs: 0, retryMaxDelayMs: 0 }),
  );
  let last: { at: number; outcome: Promise<void> } | undefined;
  const probeAll = async (signal: AbortSignal) => {
    const failures = (
      await Promise.all(
        clients.map((c) =>
          c.listModels(signal).then(
            () => undefined,
            (err: Error) => err.message, // names the provider
          ),
        ),
      )
    ).filter((f): f is string => f !== undefined);
    if (failures.length > 0) throw new Error(failures.join("; "));
  };
  return {
    name: "ai_provider",
    critical: false,
    configured: clients.length > 0,
    probe: (signal) => {
      const now = Date.now();
      if (!last || now - last.at >= PROBE_CACHE_MS) {
        const outcome = probeAll(signal);
        outcome.catch(() => undefined);
        last = { at: now, outcome };
      }
      return last.outcome;
    },
  };
}
