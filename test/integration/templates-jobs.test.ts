// A template used by many jobs, then changed: each job keeps what it was submitted with. 100 jobs
// submitted with version 1 record it and its parameters; a new version changes none of them, and
// jobs after it record version 2. A few of each then run through the local executor with real
// sharp: the old ones' outputs have version 1's width, the new ones' version 2's.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import sharp from "sharp";
import { LocalExecutor } from "../../controller/local-executor.js";
import type { Job } from "../../core/jobs/records.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { finished } from "../support/jobs.js";
import { makeImage } from "../support/media.js";

let stack: TestStack;
before(async () => {
  stack = await startTestStack();
  const source = await makeImage({ width: 64, height: 48, format: "png" });
  await stack.services.s3.send(
    new PutObjectCommand({ Bucket: stack.bucket, Key: "in/tile.png", Body: source }),
  );
});
after(async () => {
  await stack?.close();
});

async function call(path: string, method: string, json?: unknown) {
  const res = await stack.request(path, { method, ...(json === undefined ? {} : { json }) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function submitMany(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 20) {
    const answers = await Promise.all(
      Array.from({ length: Math.min(20, count - i) }, () =>
        call("/api/v1/jobs/image/resize", "POST", {
          source_bucket: stack.bucket,
          source_key: "in/tile.png",
          template: "tile",
        }),
      ),
    );
    for (const answer of answers) {
      assert.equal(answer.status, 202, JSON.stringify(answer.body));
      ids.push(answer.body.job_id as string);
    }
  }
  return ids;
}

/** The local executor on the stack, started once the jobs a test runs are queued. */
async function startExecutor(): Promise<LocalExecutor> {
  const executor = new LocalExecutor({
    config: stack.config,
    store: stack.services.store,
    subscriber: stack.services.subscriber,
    redis: stack.services.redis,
    logger: stack.api.app.log as never,
  });
  await executor.start();
  return executor;
}

const template = (width: number) => ({
  type: "image_resize",
  parameters: { width, height: width, fit: "fill", format: "png" },
  dest_bucket: "media-test",
  dest_key: "out/{name}-{job_id}.png",
});

async function outputWidth(job: Job): Promise<number> {
  const object = await stack.services.s3.send(
    new GetObjectCommand({ Bucket: job.dest_bucket, Key: job.dest_key }),
  );
  const bytes = Buffer.from(await object.Body!.transformToByteArray());
  return (await sharp(bytes).metadata()).width;
}

test("100 jobs of version 1 keep it and its parameters after version 2; their outputs are version 1's", async () => {
  assert.equal(
    (await call("/api/v1/templates/tile", "PUT", { ...template(40), dest_bucket: stack.bucket })).status,
    201,
  );
  const old = await submitMany(100);
  const changed = await call("/api/v1/templates/tile", "PUT", { ...template(20), dest_bucket: stack.bucket });
  assert.equal(changed.status, 200);
  assert.equal(changed.body.version, 2);
  const later = await submitMany(3);

  for (const id of old) {
    const job = (await stack.services.store.getJob(id))!;
    assert.deepEqual(job.template, { name: "tile", version: 1 }, id);
    assert.deepEqual(job.parameters, {
      width: 40,
      height: 40,
      fit: "fill",
      format: "png",
      quality: 85,
      enlarge: false,
    });
    assert.equal(job.dest_key, `out/tile-${id}.png`);
  }
  for (const id of later) {
    const job = (await call(`/api/v1/jobs/${id}`, "GET")).body;
    assert.deepEqual(job.template, { name: "tile", version: 2 }, "GET of a job shows its template");
    assert.equal((job.parameters as Record<string, unknown>).width, 20);
  }

  // A few of each run: the rest of the old ones are cancelled, which leaves their records as they are.
  const run = [...old.slice(0, 3), ...later];
  const cancelled = await call("/api/v1/jobs/bulk/cancel", "POST", { ids: old.slice(3) });
  assert.equal(cancelled.body.changed, 97);
  const executor = await startExecutor();
  try {
    for (const id of run) {
      const job = await finished(stack, id, 120_000);
      assert.equal(job.status, "completed", job.error);
      assert.equal(
        await outputWidth(job),
        later.includes(id) ? 20 : 40,
        `${id} (version ${job.template?.version})`,
      );
    }
  } finally {
    await executor.stop(0);
  }
});

test("a pipeline's template runs with real sharp: its steps write where their patterns say, at its version's sizes", async () => {
  const steps = (width: number) => ({
    steps: {
      small: {
        type: "image_resize",
        parameters: { width, height: width, fit: "fill", format: "png" },
        dest_key: "{prefix}/{name}-small.png",
      },
      colors: { type: "image_colors", input: "small" },
    },
    dest_bucket: stack.bucket,
  });
  assert.equal((await call("/api/v1/templates/set", "PUT", steps(24))).status, 201);
  const submitted = await call("/api/v1/jobs/pipeline", "POST", {
    source_bucket: stack.bucket,
    source_key: "in/tile.png",
    template: "set",
    dest_prefix: "sets/one/",
  });
  assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
  assert.equal((await call("/api/v1/templates/set", "PUT", steps(12))).body.version, 2);
  const executor = await startExecutor();
  try {
    const job = await finished(stack, submitted.body.job_id as string, 120_000);
    assert.equal(job.status, "completed", job.error);
    assert.deepEqual(job.template, { name: "set", version: 1 });
    const small = { ...job, dest_bucket: stack.bucket, dest_key: "sets/one/tile-small.png" };
    assert.equal(await outputWidth(small), 24, "version 1's width, though version 2 came before the job ran");
  } finally {
    await executor.stop(0);
  }
});
