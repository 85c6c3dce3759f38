// The servers under test for the submit benchmark, in one child process so the load generator
// (bench/run.ts) does not share their event loop: the real API as deployed (rate limits on, with a
// budget the load never reaches, so every request is counted and none refused), the same API with
// rate limits off, and a bare Fastify route that does one EVALSHA of the same submit script with no
// validation, auth or logging. The bare route records the same job as the API (the load sends every
// parameter, defaults included; the request id and the client are recorded too), so that the two
// differ by the path alone. Prints one JSON line with their URLs, then serves until killed.
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
const client = stack.config.server.clients[0];
bare.post("/bare", async (request, reply) => {
  const { source_bucket, source_key, dest_bucket, dest_key, ...parameters } = request.body as Record<
    string,
    string
  >;
  const submitted = await store.submit(
    [
      {
        type: "image_resize",
        source_bucket: source_bucket!,
        source_key: source_key!,
        dest_bucket: dest_bucket!,
        dest_key: dest_key!,
        parameters,
        request_id: request.id,
      },
    ],
    undefined,
    client,
  );
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
