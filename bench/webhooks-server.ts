// The server under test for the webhooks benchmark, in a child process so the load generator does
// not share its event loop: the API and the webhook notifier in one process, as `media-service
// start` runs them (the case where a slow receiver could hurt the API most). A control route primes
// N completed jobs whose webhooks go to a given URL. Prints one JSON line, then serves until killed.
import Fastify from "fastify";
import { startNotifier } from "../controller/webhooks/start.js";
import { BENCH_API_KEY, listenApi, startBenchStack } from "./stack.js";

// The receiver is local; webhook settings are otherwise the defaults.
const stack = await startBenchStack("webhooks", () => ({
  webhooks: { allow_private: true, timeout: "60s" },
}));
const { services } = stack;
const { port: apiPort } = await listenApi(stack);
await startNotifier(stack.config, services, stack.logger);

// Completes `n` jobs with a webhook to `url`, through the store's transitions as an executor would.
const control = Fastify();
control.post("/prime", async (request) => {
  const { n, url } = request.body as { n: number; url: string };
  const store = services.store;
  // A queue of its own (the load submits image_colors), so jobs come out in the order they went in.
  const specs = Array.from({ length: n }, (_, i) => ({
    type: "video_thumbnail" as const,
    source_bucket: "media",
    source_key: `in/${i}.mp4`,
    parameters: {},
    webhook_url: url,
  }));
  const { jobIds } = await store.submit(specs);
  for (const id of jobIds) {
    const claimed = await store.claim("video_thumbnail", 60_000, "bench");
    if (claimed !== id) throw new Error(`expected job ${id} from the queue, got ${claimed}`);
    await store.start(id, 60_000);
    await store.complete(id, { output_url: "s3://media/out.jpg", file_size: 1 });
  }
  return { primed: jobIds.length };
});
control.get("/delivered", async () => services.store.webhookDeliveries());
await control.listen({ host: "127.0.0.1", port: 0 });

process.stdout.write(
  `${JSON.stringify({
    api: `http://127.0.0.1:${apiPort}/api/v1/jobs/image/colors`,
    control: `http://127.0.0.1:${(control.server.address() as { port: number }).port}`,
    apiKey: BENCH_API_KEY,
  })}\n`,
);
