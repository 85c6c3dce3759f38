// AiClient and its signal, against the local OpenAI-compatible provider: an abort while the client
// waits between attempts ends the call at once with the abort's reason, and no further attempt is
// made; a signal aborted before the call sends nothing.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { AiClient } from "../../core/ai/client.js";
import { chooseProvider } from "../../core/ai/providers.js";
import { loadConfig } from "../../core/config/load.js";
import { TestAiProvider } from "../support/ai-provider.js";

let provider: TestAiProvider;
let client: AiClient;

before(async () => {
  provider = await TestAiProvider.start();
  const config = loadConfig({
    env: {},
    file: "/dev/null",
    overrides: {
      ai: {
        base_url: provider.baseUrl,
        api_key: provider.apiKey,
        model: provider.model,
        max_attempts: 3,
        // Far longer than the test: only the abort can end the wait.
        retry_initial_delay: "10m",
        retry_max_delay: "10m",
      },
    },
  });
  const choice = chooseProvider(config.ai);
  assert.ok(choice.ok);
  client = new AiClient(choice.provider, config.ai);
});

after(async () => {
  await provider.close();
});

test("an abort during the wait between attempts ends the call with its reason, without another attempt", async () => {
  provider.reset();
  provider.script({ status: 503, body: { error: { message: "busy" } } });
  const controller = new AbortController();
  const reason = new Error("runner stopped");
  const started = Date.now();
  const call = client.listModels(controller.signal);
  // The first attempt has been answered 503 and the client is waiting to retry.
  while (provider.to("/models")[0]?.status !== 503) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 100));
  controller.abort(reason);
  await assert.rejects(call, (err) => err === reason);
  assert.ok(Date.now() - started < 5000, "the wait ended with the abort");
  assert.equal(provider.to("/models").length, 1, "no attempt after the abort");
});

test("a signal aborted before the call sends nothing and rejects with its reason", async () => {
  provider.reset();
  const reason = new Error("already stopped");
  await assert.rejects(client.listModels(AbortSignal.abort(reason)), (err) => err === reason);
  assert.equal(provider.to("/models").length, 0);
});
