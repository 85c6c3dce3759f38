// A notifier that dies (SIGKILL, no hand-over) while its receiver is down: another controller process
// takes its delivery over once reclaim_after has passed, and the receiver gets the webhook once, with
// the id the dead one used. Both controllers are real `media-service controller` processes.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { runnerEntry } from "../../controller/runner-process.js";
import type { Job } from "../../core/jobs/records.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { claimJob } from "../support/store.js";
import { startWebhookReceiver } from "../support/webhook-receiver.js";

let stack: TestStack;
const children = new Set<ChildProcess>();

before(async () => {
  stack = await startTestStack();
});
after(async () => {
  for (const child of children) child.kill("SIGKILL");
  await stack?.close();
});

async function startController(configFile: string): Promise<ChildProcess> {
  const entry = runnerEntry();
  const child = spawn(process.execPath, [...entry.execArgv, entry.path, "controller"], {
    env: {
      ...process.env,
      CONFIG_FILE: configFile,
      REDIS_URL: stack.redis.url,
      REDIS_KEY_PREFIX: stack.config.redis.keyPrefix,
      S3_ENDPOINT: stack.s3.url,
      S3_REGION: stack.s3.region,
      S3_ACCESS_KEY_ID: stack.s3.accessKeyId,
      S3_SECRET_ACCESS_KEY: stack.s3.secretAccessKey,
      EXECUTOR: "local",
      PORT: "0",
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.add(child);
  child.once("exit", () => children.delete(child));
  // Ready once the notifier has said so.
  await new Promise<void>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("webhook notifier started")) resolve();
    });
    child.once("exit", (code) =>
      reject(new Error(`controller exited (${code}) before its notifier started:\n${out}`)),
    );
  });
  return child;
}

async function job(id: string): Promise<Job> {
  return (await stack.services.store.getJob(id))!;
}

async function until(what: string, check: () => Promise<boolean>, limitMs = 30_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("a killed notifier's delivery is taken over by another controller and delivered once", async () => {
  const configFile = join(stack.config.dataDir, "controller.yaml");
  await writeFile(
    configFile,
    [
      "webhooks:",
      "  allow_private: true",
      "  retry_initial_delay: 200ms",
      "  retry_max_delay: 400ms",
      "  reclaim_after: 1s",
      "  max_attempts: 50",
      "",
    ].join("\n"),
  );
  const placeholder = await startWebhookReceiver();
  const port = placeholder.port;
  await placeholder.close();

  const res = await stack.request("/api/v1/jobs/image/colors", {
    method: "POST",
    json: {
      source_bucket: stack.bucket,
      source_key: "in/x.png",
      webhook_url: `http://127.0.0.1:${port}/hook`,
    },
  });
  const id = ((await res.json()) as { job_id: string }).job_id;
  await claimJob(stack.services.store, "image_colors", id);
  await stack.services.store.start(id, 60_000);
  await stack.services.store.complete(id, { colors: ["#102030"], percentages: [100] });

  const first = await startController(configFile);
  await until("two failed attempts", async () => ((await job(id)).webhook_delivery?.attempts ?? 0) >= 2);
  const webhookId = (await job(id)).webhook_delivery!.id;
  first.kill("SIGKILL");
  await new Promise((resolve) => first.once("exit", resolve));
  const attemptsBefore = (await job(id)).webhook_delivery!.attempts;

  const receiver = await startWebhookReceiver({ port });
  try {
    await startController(configFile);
    await until("the delivery", async () => (await job(id)).webhook_delivery?.status === "delivered");
    assert.equal(receiver.accepted().length, 1);
    assert.equal(receiver.received[0]!.headers["webhook-id"], webhookId);
    assert.deepEqual((receiver.received[0]!.json as { job: { id: string } }).job.id, id);
    assert.ok((await job(id)).webhook_delivery!.attempts > attemptsBefore);
  } finally {
    await receiver.close();
  }
});
