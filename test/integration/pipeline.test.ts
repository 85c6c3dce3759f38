// The pipeline job type through the whole stack (API, local executor, runner, the object store):
// many outputs from one JPEG in one job, the source fetched once (counted by a proxy in front of the
// store), each output read back; a chain that gives the pixels of three single jobs one after
// another; a video's probe, thumbnail and ladder on one download; a failing step (outputs removed,
// or kept with keep_partial, the job failed with its steps' results, in the record and the
// webhook); a step that starts as soon as its input is ready; a cancelled pipeline whose ffmpeg
// steps all stop.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { after, before, describe, test } from "node:test";
import sharp from "sharp";
import type { Job } from "../../core/jobs/records.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { makeVideo, removeMediaDirs } from "../support/av.js";
import { clientEnv, collect, spawnCli } from "../support/cli.js";
import { exists as objectExists, finished, submit } from "../support/jobs.js";
import { openStream } from "../support/sse.js";
import { countingProxy, getsOf as countingGets, type CountingProxy } from "../support/counting-proxy.js";
import { makeImage, meanDifference, readPixels, truncated } from "../support/media.js";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.js";

const run = promisify(execFile);

const KEY = "pipeline-test-key";
let stack: TestStack;
let proxy: CountingProxy;
let hooks: WebhookReceiver;

before(async () => {
  proxy = await countingProxy();
  hooks = await startWebhookReceiver();
  stack = await startTestStack({
    apiKeys: [KEY],
    executor: true,
    notifier: true,
    config: {
      storage: { endpoint: proxy.url },
      webhooks: { allow_private: true },
    },
  });
  proxy.to(stack.s3.url);
  const photo = await makeImage({ width: 640, height: 480, format: "jpeg", photo: true });
  await put("in/photo.jpg", photo);
  await put("in/clip.mp4", await readFile(await makeVideo({ durationSeconds: 2, audio: true })));
});

after(async () => {
  await stack?.close();
  await hooks?.close();
  proxy?.server.close();
  removeMediaDirs();
});

async function put(key: string, body: Buffer) {
  await stack.services.s3.send(new PutObjectCommand({ Bucket: stack.bucket, Key: key, Body: body }));
}

async function get(key: string): Promise<Buffer> {
  const res = await stack.services.s3.send(new GetObjectCommand({ Bucket: stack.bucket, Key: key }));
  return Buffer.from(await res.Body!.transformToByteArray());
}

const exists = (key: string) => objectExists(stack, key);

/** GETs of one object through the proxy (the runner's downloads; the test reads the store directly). */
const getsOf = (key: string) => countingGets(proxy, stack.bucket, key);

const location = (source = "in/photo.jpg", prefix = "out/fan") => ({
  source_bucket: stack.bucket,
  source_key: source,
  dest_bucket: stack.bucket,
  dest_prefix: prefix,
});

type Steps = Record<string, Record<string, unknown>>;
const stepsOf = (job: Job) => (job.result as { steps: Steps }).steps;

describe("pipeline: one JPEG, many outputs", () => {
  test("widths × avif/webp, a watermark on a resize, and colours, from one GET of the source", async () => {
    const before = getsOf("in/photo.jpg");
    const id = await submit(stack, "pipeline", {
      ...location(),
      webhook_url: `${hooks.url}/fan`,
      steps: {
        w320_webp: { type: "image_resize", parameters: { width: 320, height: 240, format: "webp" } },
        w320_avif: { type: "image_resize", parameters: { width: 320, height: 240, format: "avif" } },
        w160_webp: { type: "image_resize", parameters: { width: 160, height: 120, format: "webp" } },
        w160_avif: { type: "image_resize", parameters: { width: 160, height: 120, format: "avif" } },
        small: { type: "image_resize", parameters: { width: 320, height: 240 } },
        marked: {
          type: "image_watermark",
          input: "small",
          parameters: { watermark_text: "MARK", position: "bottom-right", font_size: 40 },
        },
        colours: { type: "image_colors", parameters: { color_count: 4 } },
      },
    });
    const job = await finished(stack, id);
    assert.equal(job.status, "completed", job.error);
    const steps = stepsOf(job);
    const expected: Array<[string, string, number, number, string]> = [
      ["w320_webp", "out/fan/w320_webp.webp", 320, 240, "webp"],
      ["w320_avif", "out/fan/w320_avif.avif", 320, 240, "heif"],
      ["w160_webp", "out/fan/w160_webp.webp", 160, 120, "webp"],
      ["w160_avif", "out/fan/w160_avif.avif", 160, 120, "heif"],
      ["small", "out/fan/small.jpg", 320, 240, "jpeg"],
      ["marked", "out/fan/marked.jpg", 320, 240, "jpeg"],
    ];
    for (const [name, key, width, height, format] of expected) {
      const bytes = await get(key);
      const meta = await sharp(bytes).metadata();
      assert.deepEqual([meta.width, meta.height, meta.format], [width, height, format], name);
      assert.equal(steps[name]!.file_size, bytes.length, name);
      assert.match(String(steps[name]!.output_url), new RegExp(`${key.replace(/\./g, "\\.")}$`), name);
    }
    assert.equal((steps.colours!.colors as string[]).length, 4);
    assert.equal(steps.colours!.output_url, undefined, "colours write no file");

    // The watermark is there: the bottom-right corner differs from the resize it was put on, the
    // top-left does not (beyond JPEG's re-encoding).
    const [small, marked] = await Promise.all([get("out/fan/small.jpg"), get("out/fan/marked.jpg")]);
    assert.ok((await meanDifference(small, marked, [200, 170, 110, 60])) > 10, "the mark is drawn");
    assert.ok((await meanDifference(small, marked, [0, 0, 150, 100])) < 3, "the rest is the resize");

    assert.equal(getsOf("in/photo.jpg") - before, 1, "the source is fetched once");

    // The webhook carries the same steps' results.
    const [hook] = (await hooks.waitFor(1)).filter((h) => h.path === "/fan");
    const body = hook!.json as { job: { status: string; result: { steps: Steps } } };
    assert.equal(body.job.status, "completed");
    assert.deepEqual(body.job.result.steps, steps);
  });

  test("a chain resize → watermark → optimize gives the pixels of the three single jobs one after another", async () => {
    const resize = { width: 300, height: 200, format: "png" };
    const mark = { watermark_text: "chain", position: "center" };
    const optimize = { format: "png" };
    const id = await submit(stack, "pipeline", {
      ...location("in/photo.jpg", "out/chain"),
      steps: {
        resized: { type: "image_resize", parameters: resize },
        marked: { type: "image_watermark", input: "resized", parameters: mark },
        optimized: { type: "image_optimize", input: "marked", parameters: optimize },
      },
    });
    const one = async (path: string, source: string, dest: string, parameters: Record<string, unknown>) => {
      const single = await submit(stack, path, {
        source_bucket: stack.bucket,
        source_key: source,
        dest_bucket: stack.bucket,
        dest_key: dest,
        ...parameters,
      });
      assert.equal((await finished(stack, single)).status, "completed");
    };
    await one("image/resize", "in/photo.jpg", "out/single/resized.png", resize);
    await one("image/watermark", "out/single/resized.png", "out/single/marked.png", mark);
    await one("image/optimize", "out/single/marked.png", "out/single/optimized.png", optimize);
    const job = await finished(stack, id);
    assert.equal(job.status, "completed", job.error);
    assert.deepEqual(Object.keys(stepsOf(job)), ["resized", "marked", "optimized"]);
    const [chained, single] = await Promise.all([
      readPixels(await get("out/chain/optimized.png")),
      readPixels(await get("out/single/optimized.png")),
    ]);
    assert.deepEqual([chained.width, chained.height], [300, 200]);
    assert.ok(chained.data.equals(single.data), "PNG all the way: the same pixels exactly");
  });
});

describe("pipeline: a video", () => {
  test("probe, thumbnail and a 2-rendition ladder in one job, on one download", async () => {
    const before = getsOf("in/clip.mp4");
    const id = await submit(stack, "pipeline", {
      ...location("in/clip.mp4", "out/video"),
      steps: {
        probe: { type: "media_probe" },
        thumb: { type: "video_thumbnail", parameters: { timestamp: 1, width: 160 } },
        hls: {
          type: "video_adaptive",
          parameters: {
            preset: "ultrafast",
            segment_seconds: 1,
            renditions: [
              { height: 144, video_bitrate: "200k" },
              { height: 240, video_bitrate: "400k" },
            ],
          },
        },
      },
    });
    const job = await finished(stack, id, 120_000);
    assert.equal(job.status, "completed", job.error);
    const steps = stepsOf(job);
    assert.equal((steps.probe!.streams as unknown[]).length, 2, "video and audio probed");
    const thumb = await sharp(await get("out/video/thumb.jpg")).metadata();
    assert.deepEqual([thumb.width, thumb.format], [160, "jpeg"]);
    assert.equal((steps.hls!.renditions as unknown[]).length, 2);
    assert.match(String(steps.hls!.master_url), /out\/video\/hls\/master\.m3u8$/);
    assert.ok(await exists("out/video/hls/master.m3u8"));
    assert.equal(getsOf("in/clip.mp4") - before, 1, "the video is downloaded once");
  });
});

describe("pipeline: a step fails", () => {
  const failing = {
    small: { type: "image_resize", parameters: { width: 100, height: 100 } },
    marked: {
      type: "image_watermark",
      input: "small",
      parameters: { watermark_image: "in/no-such-mark.png" },
    },
    after: { type: "image_optimize", input: "marked" },
    colours: { type: "image_colors" },
  };

  test("by default the job fails and the outputs already written are removed", async () => {
    const id = await submit(stack, "pipeline", { ...location("in/photo.jpg", "out/fail"), steps: failing });
    const job = await finished(stack, id);
    assert.equal(job.status, "failed");
    assert.equal(
      job.error,
      `step marked (image_watermark): object s3://${stack.bucket}/in/no-such-mark.png not found`,
    );
    assert.equal(job.result, undefined);
    assert.equal(await exists("out/fail/small.jpg"), false, "the resize's output is removed");
  });

  test("keep_partial keeps them: the job fails with the completed steps' results and the failed step's error", async () => {
    const id = await submit(stack, "pipeline", {
      ...location("in/photo.jpg", "out/partial"),
      steps: failing,
      keep_partial: true,
      webhook_url: `${hooks.url}/partial`,
    });
    const job = await finished(stack, id);
    assert.equal(job.status, "failed");
    assert.match(job.error ?? "", /^step marked \(image_watermark\): .* not found$/);
    const steps = stepsOf(job);
    assert.equal(await exists("out/partial/small.jpg"), true, "the resize's output is kept");
    assert.match(String(steps.small!.output_url), /out\/partial\/small\.jpg$/);
    assert.match(String(steps.marked!.error), /not found/);
    assert.equal(steps.after!.error, "not run: its input step marked failed");
    assert.equal((steps.colours!.colors as unknown[]).length, 5);
    const hook = (await hooks.waitFor(2)).find((h) => h.path === "/partial")!;
    const body = hook.json as { job: { status: string; error: string; result: { steps: Steps } } };
    assert.equal(body.job.status, "failed");
    assert.deepEqual(body.job.result.steps, steps);
  });
});

describe("pipeline: keep_partial and a step that fails transiently on every attempt", () => {
  test("the retries spent, the job fails with the steps the last attempt completed", async () => {
    // The store refuses the writes of one step's output, as a store under load does (503 SlowDown).
    proxy.refuse((request) => request.startsWith(`PUT /${stack.bucket}/out/flaky/stuck.`));
    try {
      const id = await submit(stack, "pipeline", {
        ...location("in/photo.jpg", "out/flaky"),
        keep_partial: true,
        steps: {
          small: { type: "image_resize", parameters: { width: 100, height: 100 } },
          stuck: { type: "image_resize", parameters: { width: 50, height: 50 } },
        },
      });
      const job = await finished(stack, id);
      assert.equal(job.status, "failed");
      assert.match(job.error ?? "", /^step stuck \(image_resize\): .*\(gave up after 3 attempts\)$/);
      const steps = stepsOf(job);
      assert.match(String(steps.small!.output_url), /out\/flaky\/small\.jpg$/);
      assert.equal(await exists("out/flaky/small.jpg"), true, "the completed step's output is kept");
      assert.match(String(steps.stuck!.error), /.+/);
      assert.equal(steps.stuck!.output_url, undefined);
    } finally {
      proxy.refuse(undefined);
    }
  });
});

describe("pipeline: a source that does not decode", () => {
  test("each image step fails with its own name, whatever they would have shared", async () => {
    await put(
      "in/cut.jpg",
      truncated(await makeImage({ width: 320, height: 240, format: "jpeg", photo: true })),
    );
    const id = await submit(stack, "pipeline", {
      ...location("in/cut.jpg", "out/cut"),
      keep_partial: true,
      steps: {
        a: { type: "image_resize", parameters: { width: 32, height: 24 } },
        b: { type: "image_resize", parameters: { width: 64, height: 48 } },
      },
    });
    const job = await finished(stack, id);
    assert.equal(job.status, "failed");
    assert.match(job.error ?? "", /^step [ab] \(image_resize\): source image is truncated or corrupt/);
    const steps = stepsOf(job);
    assert.match(String(steps.a!.error), /truncated or corrupt/);
    assert.match(String(steps.b!.error), /truncated or corrupt/);
  });
});

describe("pipeline: a step starts when its input is ready", () => {
  test("a resize of the poster frame completes while a long transcode beside the poster still runs", async () => {
    await put("in/long-slow.mp4", await readFile(await makeVideo({ durationSeconds: 60 })));
    const id = await submit(stack, "pipeline", {
      ...location("in/long-slow.mp4", "out/ready"),
      steps: {
        slow: { type: "video_transcode", parameters: { video_codec: "h265", preset: "slow" } },
        poster: { type: "video_thumbnail", parameters: { timestamp: "00:00:01" } },
        small: { type: "image_resize", input: "poster", parameters: { width: 64, height: 48 } },
      },
    });
    // Run by waves, `small` would wait for the whole first wave, the minutes-long transcode too.
    const deadline = Date.now() + 60_000;
    let job = await stack.services.store.getJob(id);
    while ((job?.steps_progress?.small ?? 0) < 100) {
      assert.ok(Date.now() < deadline, "the resize of the poster completes");
      assert.notEqual(job?.status, "completed", "not after the transcode");
      await new Promise((r) => setTimeout(r, 100));
      job = await stack.services.store.getJob(id);
    }
    assert.equal(job?.status, "processing");
    assert.ok(
      (job?.steps_progress?.slow ?? 0) < 100,
      `the transcode still runs: ${job?.steps_progress?.slow}%`,
    );
    const res = await stack.request(`/api/v1/jobs/${id}/cancel`, { method: "POST" });
    assert.equal(res.status, 200);
    assert.equal((await finished(stack, id)).state, "cancelled");
  });
});

describe("pipeline: cancelled", () => {
  test("every step's ffmpeg stops and nothing is uploaded", async () => {
    await put("in/long.mp4", await readFile(await makeVideo({ durationSeconds: 60 })));
    const transcode = { video_codec: "h265", preset: "slow" };
    const id = await submit(stack, "pipeline", {
      ...location("in/long.mp4", "out/cancel"),
      steps: {
        one: { type: "video_transcode", parameters: transcode },
        two: { type: "video_transcode", parameters: { ...transcode, crf: 30 } },
      },
    });
    // The runner's scratch directory, where the steps' ffmpeg read the source, is named after the job.
    const ffmpegs = async () => {
      try {
        return (await run("pgrep", ["-f", `ffmpeg .*${id}`])).stdout.trim().split("\n").filter(Boolean);
      } catch {
        return []; // pgrep exits 1 when nothing matches
      }
    };
    const deadline = Date.now() + 60_000;
    while ((await ffmpegs()).length < 2) {
      assert.ok(Date.now() < deadline, "both steps' ffmpeg start");
      await new Promise((r) => setTimeout(r, 50));
    }
    // While they run, the record has each step's percent beside the overall one.
    let running = await stack.services.store.getJob(id);
    while (!running?.steps_progress || running.progress === undefined) {
      assert.ok(Date.now() < deadline, "the steps report progress");
      await new Promise((r) => setTimeout(r, 100));
      running = await stack.services.store.getJob(id);
    }
    assert.deepEqual(Object.keys(running.steps_progress).sort(), ["one", "two"]);
    // Its event stream's progress events carry them too (the snapshot's, then the runner's).
    const stream = await openStream(`${stack.baseUrl}/api/v1/jobs/${id}/stream`, { "x-api-key": KEY });
    try {
      const progress = await stream.waitFor((e) => e.event === "progress", 15_000);
      const steps = (progress.json as { steps?: Record<string, number> }).steps ?? {};
      assert.deepEqual(Object.keys(steps).sort(), ["one", "two"]);
    } finally {
      stream.close();
    }
    const res = await stack.request(`/api/v1/jobs/${id}/cancel`, { method: "POST" });
    assert.equal(res.status, 200);
    const stopped = Date.now() + 15_000;
    while ((await ffmpegs()).length > 0) {
      assert.ok(Date.now() < stopped, "every ffmpeg is gone");
      await new Promise((r) => setTimeout(r, 50));
    }
    const job = await stack.services.store.getJob(id);
    assert.equal(job?.state, "cancelled");
    assert.equal(await exists("out/cancel/one.mp4"), false);
    assert.equal(await exists("out/cancel/two.mp4"), false);
  });
});

describe("pipeline: the CLI", () => {
  test("submit pipeline --file steps.yaml --dest s3://bucket/prefix --wait", async () => {
    const dir = await mkdtemp(join(tmpdir(), "pipeline-cli-"));
    try {
      const steps = join(dir, "steps.yaml");
      await writeFile(
        steps,
        [
          "steps:",
          "  small:",
          "    type: image_resize",
          "    parameters: { width: 64, height: 48, format: webp }",
          "  colours:",
          "    type: image_colors",
          "",
        ].join("\n"),
      );
      const env = clientEnv(stack.baseUrl, KEY);
      const args = ["submit", "pipeline", "--source", `s3://${stack.bucket}/in/photo.jpg`];
      const ran = await collect(
        spawnCli(
          [...args, "--dest", `s3://${stack.bucket}/out/cli`, "--file", steps, "--wait", "--json"],
          env,
        ),
        args,
      );
      assert.equal(ran.code, 0, ran.stderr);
      const job = JSON.parse(ran.stdout) as Job;
      assert.equal(job.status, "completed");
      assert.deepEqual(Object.keys(stepsOf(job)), ["small", "colours"]);
      assert.equal((await sharp(await get("out/cli/small.webp")).metadata()).width, 64);

      const list = join(dir, "list.yaml");
      await writeFile(list, "- a\n- b\n");
      const refused = await collect(spawnCli([...args, "--file", list], env), args);
      assert.notEqual(refused.code, 0);
      assert.match(refused.stderr, /--file .*list\.yaml must hold an object of parameters/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
