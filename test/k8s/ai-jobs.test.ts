// AI jobs through the Kubernetes executor: runner containers on the real node call a local
// OpenAI-compatible provider (test/support/ai-provider.ts) with the settings and the key the
// controller gave the pod: the job's own provider, its key by Secret reference only.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { makeVideo, removeMediaDirs } from "../support/av.js";
import { TestAiProvider } from "../support/ai-provider.js";
import { TEST_BUCKET } from "../support/api.js";
import { makeImage } from "../support/media.js";
import { startTestCluster, type TestCluster } from "./support/cluster.js";
import { startClusterStack, type ClusterStack } from "./support/cluster-stack.js";

/** The cluster stack's bucket (its own on an outside S3 server), set when it starts. */
let B = TEST_BUCKET;
/** The client's model classes as plain data. */
const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value));
const KEY = "sk-cluster-default-key-0123";
const SECOND_KEY = "sk-cluster-second-key-4567";

describe("AI jobs in runner Jobs", () => {
  let cluster: TestCluster;
  let provider: TestAiProvider;
  let second: TestAiProvider;
  let cs: ClusterStack;

  before(async () => {
    cluster = await startTestCluster();
    provider = await TestAiProvider.start({ apiKey: KEY, model: "vision-test", maxImageSide: 640 });
    second = await TestAiProvider.start({ apiKey: SECOND_KEY, model: "second-model" });
    cs = await startClusterStack({
      cluster,
      kubernetes: { ai_secret: { name: "ai-default" } },
      secrets: { "ai-default": { "api-key": KEY }, "ai-second": { token: SECOND_KEY } },
      ai: {
        base_url: await cluster.node.expose(provider.baseUrl),
        model: "vision-test",
        max_image_side: 640,
        providers: {
          second: {
            base_url: await cluster.node.expose(second.baseUrl),
            model: "second-model",
            structured_output: "json_object",
            api_key_secret: { name: "ai-second", key: "token" },
          },
        },
      },
    });
    B = cs.stack.bucket;
    await cs.startController("controller-ai");
    await cs.put(
      "in/red.jpg",
      await makeImage({ width: 1600, height: 1200, background: "#c81e1e", format: "jpeg" }),
    );
    await cs.put("in/clip.mp4", await readFile(await makeVideo({ durationSeconds: 3 })));
  });
  after(async () => {
    await cs?.close();
    await cluster?.stop();
    await provider?.close();
    await second?.close();
    removeMediaDirs();
  });

  test("image_ai_keywords completes in its runner Job with the default provider and its key from the Secret", async () => {
    const id = await cs.submit("image/ai/keywords", {
      source_bucket: B,
      source_key: "in/red.jpg",
      keyword_count: 12,
    });
    const job = await cs.finished(id);
    assert.equal(job.status, "completed", job.error);
    const result = job.result as { keywords: string[]; confidence_scores: number[] };
    assert.equal(result.keywords.length, 12);
    assert.equal(result.keywords[0], "red");
    assert.deepEqual(
      [...result.confidence_scores].sort((a, b) => b - a),
      result.confidence_scores,
    );
    assert.deepEqual(provider.problems, []);
    const [request] = provider.to("/chat/completions");
    assert.equal(request!.headers.authorization, `Bearer ${KEY}`);
    assert.deepEqual([request!.images[0]!.width, request!.images[0]!.height], [640, 480]);

    const [kjob] = await cs.kubeJobs(id);
    const env = kjob!.spec!.template.spec!.containers[0]!.env!;
    assert.deepEqual(plain(env.find((e) => e.name === "AI_API_KEY")!.valueFrom), {
      secretKeyRef: { name: "ai-default", key: "api-key" },
    });
    assert.ok(!JSON.stringify(kjob).includes(KEY), "the key is not in the Job");
  });

  test("analyze of a video with a named provider: its settings and its Secret reach the pod", async () => {
    const id = await cs.submit("analyze", {
      source_bucket: B,
      source_key: "in/clip.mp4",
      provider: "second",
      max_frames: 3,
    });
    const job = await cs.finished(id);
    assert.equal(job.status, "completed", job.error);
    const result = job.result as { provider: string; model: string; text: string; tags: string[] };
    assert.equal(result.provider, "second");
    assert.equal(result.model, "second-model");
    assert.match(result.text, /^A video of 3 frames/);
    assert.ok(result.tags.length > 0);
    const [request] = second.to("/chat/completions");
    assert.equal(request!.headers.authorization, `Bearer ${SECOND_KEY}`);
    assert.equal(request!.images.length, 3);
    assert.deepEqual(request!.json!.response_format, { type: "json_object" });
    assert.deepEqual(second.problems, []);
    const [kjob] = await cs.kubeJobs(id);
    const env = Object.fromEntries(
      kjob!.spec!.template.spec!.containers[0]!.env!.map((e) => [e.name, e.value ?? e.valueFrom]),
    );
    assert.equal(env.AI_PROVIDER, "second");
    assert.deepEqual(plain(env.AI_API_KEY), { secretKeyRef: { name: "ai-second", key: "token" } });
  });

  test("a provider answering garbage fails the job at once, with the reason in the job and no pod retry", async () => {
    provider.script({ status: 200, body: "<html>captive portal</html>" });
    const id = await cs.submit("analyze", { source_bucket: B, source_key: "in/red.jpg" });
    const job = await cs.finished(id);
    assert.equal(job.status, "failed");
    assert.match(job.error!, /AI provider "default" answered with a body that is not JSON/);
    assert.equal((await cs.kubePods(id)).length, 1, "a permanent failure is not retried");
  });
});
