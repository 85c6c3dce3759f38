// The servers under test for the submit benchmark, in one child process so the load generator
// (bench/run.ts) does not share their event loop: the real API as deployed (rate limits on, with a
// budget the load never reaches, so every request is counted and none refused), the same API with
// rate limits off, and a bare Fastify route that does one EVALSHA of the same submit script with no
// validation, auth or logging. Prints one JSON line with their URLs, then serves until killed.
import { randomUUID } from "node:crypto";
import Fastify from "fastify";
import { BENCH_API_KEY, listenApi, startBenchStack } from "./stack.js";

const stack = await startBenchStack("submit", () => ({
  server: { rate_limit: { enabled: true, per_client: 1_000_000_000 } },
}));
const { services } = stack;
const { api, port: apiPort } = await listenApi(stack);
const unlimited = await listenApi(stack, {
  ...stack.config,
  server: { ...stack.config.server, rateLimit: { ...stack.config.server.rateLimit, enabled: false } },
});

// The bare route: the same submit script, one EVALSHA, the body passed through as the job's fields.
const bare = Fastify();
const store = services.store;
bare.post("/bare", async (request, reply) => {
  const body = request.body as Record<string, unknown>;
  const submitted = await store.submit([
    {
      type: "image_resize",
      source_bucket: body.source_bucket as string,
      source_key: body.source_key as string,
      dest_bucket: body.dest_bucket as string,
      dest_key: body.dest_key as string,
      parameters: { width: body.width, height: body.height },
    },
  ]);
  return reply.code(202).send({ job_id: submitted.jobIds[0], status: "pending" });
});
await bare.listen({ host: "127.0.0.1", port: 0 });

process.stdout.write(
  `${JSON.stringify({
    api: `http://127.0.0.1:${apiPort}/api/v1/jobs/image/resize`,
    unlimited: `http://127.0.0.1:${unlimited.port}/api/v1/jobs/image/resize`,
    bare: `http://127.0.0.1:${(bare.server.address() as { port: number }).port}/bare`,
    apiKey: BENCH_API_KEY,
    redis: stack.redisUrl,
    run: randomUUID(),
  })}\n`,
);

const stop = async () => {
  await api.close();
  await unlimited.api.close();
  await bare.close();
  await stack.stop();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
