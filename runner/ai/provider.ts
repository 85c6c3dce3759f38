// The provider of a job, and provider failures as the runner's errors.
import { AiClient, AiProviderError, type ResponseFormat } from "../../core/ai/client.js";
import type { AiProvider } from "../../core/config/load.js";
import { chooseProvider } from "../../core/ai/providers.js";
import { PermanentError } from "../errors.js";
import type { ProcessContext } from "../processor.js";

/** A client of the job's provider (`provider` of analyze, else the default); none configured → permanent. */
export function providerClient(ctx: ProcessContext): AiClient {
  const requested = (ctx.job.parameters as { provider?: string }).provider;
  const choice = chooseProvider(ctx.config.ai, requested);
  if (!choice.ok) throw new PermanentError(`${ctx.job.type} needs an AI provider: ${choice.message}`);
  return new AiClient(choice.provider, ctx.config.ai, ctx.logger.child({ provider: choice.provider.name }));
}

/** Runs a provider call; a refusal the same request would meet again fails the job at once. */
export async function askProvider<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof AiProviderError && err.permanent) throw new PermanentError(err.message);
    throw err;
  }
}

/** The `response_format` the provider is configured for (none for `prompt`: the prompt asks for JSON). */
export function responseFormatFor(
  provider: AiProvider,
  name: string,
  schema: object,
): ResponseFormat | undefined {
  if (provider.structuredOutput === "json_object") return { type: "json_object" };
  if (provider.structuredOutput === "json_schema")
    return { type: "json_schema", json_schema: { name, schema, strict: true } };
  return undefined;
}
