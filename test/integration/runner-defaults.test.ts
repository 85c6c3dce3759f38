// Parameter defaults in the runner. The API records a submission's parameters with its schema's
// defaults filled in; a job recorded without them (written to the store by other means) must be
// processed with those same defaults. Each case records a job whose parameters leave out every
// field that has a default, runs it through runJob (the code path of `runner --job`) beside the
// same job submitted through the API, and expects the same result and the same output bytes; the
// bare record itself is left as it was written.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { GetObjectCommand } from "@aws-sdk/client-s3";
import sharp from "sharp";
import { PARAMETER_SCHEMAS } from "../../core/jobs/parameters.js";
import type { Job } from "../../core/jobs/records.js";
import type { JobType } from "../../core/jobs/types.js";
import { TestAiProvider } from "../support/ai-provider.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { makeVideo, removeMediaDirs } from "../support/av.js";
import { makeImage } from "../support/media.js";
import { putObject, runClaimed, submitAndClaim } from "../support/runner.js";
import { claimJob } from "../support/store.js";

type Body = Record<string, unknown>;

const KEY = "sk-defaults-test-key";

let stack: TestStack;
let provider: TestAiProvider;

before(async () => {
  provider = await TestAiProvider.start({ apiKey: KEY, model: "vision-test", maxImageSide: 256 });
  stack = await startTestStack({
    config: {
      ai: {
        base_url: provider.baseUrl,
        api_key: KEY,
        model: "vision-test",
        max_image_side: 256,
        timeout: "5s",
        max_attempts: 1,
      },
    },
  });
  await putObject(
    stack,
    "in/photo.jpg",
    await makeImage({ width: 400, height: 200, photo: true, format: "jpeg", quality: 95 }),
  );
  const stripes = ["#d02010", "#10a040", "#2040d0", "#e0c020", "#a020c0", "#20c0c0", "#f08010", "#404040"];
  await putObject(
    stack,
    "in/stripes.png",
    await makeImage({
      width: 320,
      height: 80,
      stripes: stripes.map((color) => ({ color, share: 1 / stripes.length })),
    }),
  );
  await putObject(stack, "in/clip.mp4", await readFile(await makeVideo({ durationSeconds: 3 })));
});

after(async () => {
  await stack?.close();
  await provider?.close();
  removeMediaDirs();
});

/** The defaults a type's schema states: its fields with a `default`. */
function schemaDefaults(type: JobType): Body {
  return Object.fromEntries(
    Object.entries(PARAMETER_SCHEMAS[type].properties)
      .filter(([, schema]) => "default" in schema)
      .map(([name, schema]) => [name, (schema as { default: unknown }).default]),
  );
}

interface Case {
  type: JobType;
  /** Under /api/v1/jobs/. */
  path: string;
  sourceKey: string;
  /** Parameters without any field that has a default. */
  parameters: Body;
  writesOutput: boolean;
  /** What the defaults must show in the bare job's outcome, beyond matching the API's job. */
  check?: (job: Job, output: Buffer | undefined) => Promise<void> | void;
}

let serial = 0;

/** A job recorded with `parameters` as they are, no defaults added, and claimed. */
async function recordAndClaim(c: Case): Promise<string> {
  const {
    jobIds: [id],
  } = await stack.services.store.submit([
    {
      type: c.type,
      source_bucket: stack.bucket,
      source_key: c.sourceKey,
      ...(c.writesOutput ? { dest_bucket: stack.bucket, dest_key: `out/bare-${++serial}` } : {}),
      parameters: c.parameters,
    },
  ]);
  await claimJob(stack.services.store, c.type, id!);
  return id!;
}

/** The same job through the API, which records the parameters with their defaults. */
async function submitThroughApi(c: Case): Promise<string> {
  return submitAndClaim(stack, c.type, c.path, {
    source_bucket: stack.bucket,
    source_key: c.sourceKey,
    ...(c.writesOutput ? { dest_bucket: stack.bucket, dest_key: `out/api-${++serial}` } : {}),
    ...c.parameters,
  });
}

async function output(job: Job): Promise<Buffer | undefined> {
  if (!job.dest_key) return undefined;
  const got = await stack.services.s3.send(new GetObjectCommand({ Bucket: stack.bucket, Key: job.dest_key }));
  return Buffer.from(await got.Body!.transformToByteArray());
}

/**
 * The result without what differs between two runs of the same job: the output's location and, for
 * images, the time the processing took.
 */
function resultOf(job: Job): Body {
  const { output_url: _url, ...rest } = job.result as Body;
  if (job.type.startsWith("image_") && typeof rest.duration === "number") delete rest.duration;
  return rest;
}

const CASES: Case[] = [
  {
    type: "image_resize",
    path: "image/resize",
    sourceKey: "in/photo.jpg",
    parameters: { width: 100, height: 100 },
    writesOutput: true,
    // cover fills the whole box (inside would give 100x50, contain would pad).
    check: async (_job, out) => {
      const meta = await sharp(out).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ["jpeg", 100, 100]);
    },
  },
  {
    type: "image_optimize",
    path: "image/optimize",
    sourceKey: "in/photo.jpg",
    // AVIF: without a quality, sharp's own default for JPEG would happen to equal the schema's.
    parameters: { format: "avif" },
    writesOutput: true,
  },
  {
    type: "image_watermark",
    path: "image/watermark",
    sourceKey: "in/photo.jpg",
    parameters: { watermark_text: "defaults" },
    writesOutput: true,
  },
  {
    type: "image_colors",
    path: "image/colors",
    sourceKey: "in/stripes.png",
    parameters: {},
    writesOutput: false,
    check: (job) => {
      const colors = (job.result as { colors: string[] }).colors;
      assert.equal(colors.length, 5, "eight stripes, the default color_count of colours");
      for (const color of colors) assert.match(color, /^#[0-9a-f]{6}$/i);
    },
  },
  {
    type: "video_thumbnail",
    path: "video/thumbnail",
    sourceKey: "in/clip.mp4",
    parameters: {},
    writesOutput: true,
    check: async (job, out) => {
      assert.equal((job.result as { timestamp: string }).timestamp, "00:00:01");
      assert.equal((await sharp(out).metadata()).format, "jpeg");
    },
  },
  {
    type: "image_ai_keywords",
    path: "image/ai/keywords",
    sourceKey: "in/photo.jpg",
    parameters: {},
    writesOutput: false,
    check: (job) => {
      assert.equal((job.result as { keywords: string[] }).keywords.length, 15);
      const [request] = provider.to("/chat/completions");
      assert.match(request!.text!, /exactly 15 different keywords/);
      assert.match(request!.text!, /in English \(en\)/);
    },
  },
  {
    type: "analyze",
    path: "analyze",
    sourceKey: "in/clip.mp4",
    parameters: {},
    writesOutput: false,
    check: () => {
      const [request] = provider.to("/chat/completions");
      assert.equal(request!.images.length, 8, "max_frames frames sampled");
    },
  },
];

describe("a job recorded without its defaulted parameters is processed with the schema's defaults", () => {
  test("no case gives a parameter that has a default", () => {
    for (const type of new Set(CASES.map((c) => c.type))) {
      const given = CASES.filter((c) => c.type === type).flatMap((c) => Object.keys(c.parameters));
      assert.deepEqual(
        given.filter((name) => name in schemaDefaults(type)),
        [],
        type,
      );
    }
  });

  for (const c of CASES) {
    test(`${c.type} ${JSON.stringify(c.parameters)}`, async () => {
      provider.reset();
      const bareId = await recordAndClaim(c);
      const bare = await runClaimed(stack, bareId);
      assert.equal(bare.outcome.code, 0, bare.outcome.error);
      assert.equal(bare.job.status, "completed", bare.job.error);
      assert.deepEqual(
        bare.job.parameters,
        c.parameters,
        "the record keeps the parameters it was written with",
      );
      const bareOutput = await output(bare.job);
      await c.check?.(bare.job, bareOutput);

      provider.reset();
      const api = await runClaimed(stack, await submitThroughApi(c));
      assert.equal(api.job.status, "completed", api.job.error);
      assert.deepEqual(api.job.parameters, { ...c.parameters, ...schemaDefaults(c.type) });
      assert.deepEqual(resultOf(bare.job), resultOf(api.job));
      const apiOutput = await output(api.job);
      assert.equal(bareOutput === undefined, apiOutput === undefined);
      if (bareOutput && apiOutput) assert.ok(bareOutput.equals(apiOutput), "the same output bytes");
    });
  }
});
