// The eight submit endpoints over HTTP: 202 with the submit response, the job as recorded (locations,
// parameters with the interface's defaults, request_id), and every rule of the API contract refused
// with 400 `{error}` naming the field, with nothing written for a refused request.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startTestStack, type TestStack } from "../support/api.js";
import { ISO_MS_UTC, UUID_V4 } from "../support/store.js";

let stack: TestStack;

before(async () => {
  stack = await startTestStack({ apiKeys: ["submit-test-key"] });
});
after(async () => {
  await stack?.close();
});

type Body = Record<string, unknown>;

const SOURCE = { source_bucket: "media-in", source_key: "uploads/photo.jpg" };
const LOCATION = { ...SOURCE, dest_bucket: "media-out", dest_key: "results/photo.webp" };

interface Endpoint {
  path: string;
  type: string;
  /** A minimal valid body. */
  body: Body;
  writesOutput: boolean;
  /** Parameters the job must show when only `body` was sent (the defaults). */
  defaults: Body;
}

const ENDPOINTS: Endpoint[] = [
  {
    path: "/api/v1/jobs/image/resize",
    type: "image_resize",
    body: { ...LOCATION, width: 320, height: 200 },
    writesOutput: true,
    defaults: { width: 320, height: 200, quality: 85 },
  },
  {
    path: "/api/v1/jobs/image/optimize",
    type: "image_optimize",
    body: { ...LOCATION },
    writesOutput: true,
    defaults: { quality: 80, strip_metadata: false },
  },
  {
    path: "/api/v1/jobs/image/watermark",
    type: "image_watermark",
    body: { ...LOCATION, watermark_text: "© example" },
    writesOutput: true,
    defaults: { watermark_text: "© example", opacity: 100, position: "bottom-right" },
  },
  {
    path: "/api/v1/jobs/image/colors",
    type: "image_colors",
    body: { ...SOURCE },
    writesOutput: false,
    defaults: { color_count: 5, format: "hex" },
  },
  {
    path: "/api/v1/jobs/image/ai/keywords",
    type: "image_ai_keywords",
    body: { ...SOURCE },
    writesOutput: false,
    defaults: { keyword_count: 15, language: "en" },
  },
  {
    path: "/api/v1/jobs/video/thumbnail",
    type: "video_thumbnail",
    body: { ...LOCATION, source_key: "uploads/clip.mp4", dest_key: "results/clip.jpg" },
    writesOutput: true,
    defaults: { timestamp: "00:00:01", format: "jpeg" },
  },
  {
    path: "/api/v1/jobs/audio/convert",
    type: "audio_convert",
    body: { ...LOCATION, source_key: "uploads/song.wav", dest_key: "results/song.mp3", format: "mp3" },
    writesOutput: true,
    defaults: { format: "mp3" },
  },
  {
    path: "/api/v1/jobs/analyze",
    type: "analyze",
    body: { ...SOURCE },
    writesOutput: false,
    defaults: {},
  },
];

function endpoint(type: string): Endpoint {
  const found = ENDPOINTS.find((e) => e.type === type);
  assert.ok(found, type);
  return found;
}

interface SubmitResponse {
  job_id: string;
  status: string;
  message: string;
  queue_position: number;
}

async function submit(path: string, body: Body): Promise<SubmitResponse> {
  const res = await stack.request(path, { method: "POST", json: body });
  const text = await res.text();
  assert.equal(res.status, 202, `${path} ${JSON.stringify(body)} → ${res.status} ${text}`);
  return JSON.parse(text) as SubmitResponse;
}

async function getJob(id: string): Promise<Record<string, unknown>> {
  const res = await stack.request(`/api/v1/jobs/${id}`);
  assert.equal(res.status, 200);
  return (await res.json()) as Record<string, unknown>;
}

/** POSTs a body the interface refuses; asserts 400 `{error}` whose message names `field`. */
async function refused(path: string, body: unknown, field: string): Promise<string> {
  const res = await stack.request(path, { method: "POST", json: body });
  const text = await res.text();
  assert.equal(
    res.status,
    400,
    `${path} ${JSON.stringify(body)} should be refused, got ${res.status} ${text}`,
  );
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  const parsed = JSON.parse(text) as Record<string, unknown>;
  assert.deepEqual(Object.keys(parsed), ["error"], text);
  assert.equal(typeof parsed.error, "string");
  assert.ok(
    (parsed.error as string).includes(field),
    `error for ${path} ${JSON.stringify(body)} should name ${field}: ${text}`,
  );
  return parsed.error as string;
}

/** Everything a refused request could have written, as the API shows it. */
async function writtenState(): Promise<{ total: number; stats: unknown }> {
  const list = await stack.request("/api/v1/jobs?limit=1");
  assert.equal(list.status, 200);
  const stats = await stack.request("/api/v1/queue/stats");
  assert.equal(stats.status, 200);
  return { total: ((await list.json()) as { total: number }).total, stats: await stats.json() };
}

function without(body: Body, field: string): Body {
  const copy = { ...body };
  delete copy[field];
  return copy;
}

describe("submit endpoints accept a valid job", () => {
  for (const ep of ENDPOINTS) {
    test(`${ep.path} → 202 and the job is recorded with its defaults`, async () => {
      const res = await stack.request(ep.path, {
        method: "POST",
        json: { ...ep.body, request_id: `rq-${ep.type}` },
      });
      assert.equal(res.status, 202, await res.clone().text());
      assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
      const body = (await res.json()) as Record<string, unknown>;
      assert.deepEqual(Object.keys(body).sort(), ["job_id", "message", "queue_position", "status"]);
      assert.match(body.job_id as string, UUID_V4);
      assert.equal(body.status, "pending");
      assert.equal(typeof body.message, "string");
      assert.ok((body.message as string).length > 0);
      assert.ok(Number.isInteger(body.queue_position), "queue_position is an integer");
      assert.ok((body.queue_position as number) >= 1);

      const job = await getJob(body.job_id as string);
      assert.equal(job.id, body.job_id);
      assert.equal(job.type, ep.type);
      assert.equal(job.status, "pending");
      assert.equal(job.source_bucket, ep.body.source_bucket);
      assert.equal(job.source_key, ep.body.source_key);
      if (ep.writesOutput) {
        assert.equal(job.dest_bucket, ep.body.dest_bucket);
        assert.equal(job.dest_key, ep.body.dest_key);
      } else {
        assert.equal(job.dest_bucket, undefined);
        assert.equal(job.dest_key, undefined);
      }
      assert.equal(job.request_id, `rq-${ep.type}`);
      assert.ok(job.parameters && typeof job.parameters === "object", "parameters is an object");
      const parameters = job.parameters as Body;
      for (const [name, value] of Object.entries(ep.defaults)) {
        assert.deepEqual(parameters[name], value, `${ep.type} parameters.${name}`);
      }
      // Location and option fields are not parameters.
      for (const name of ["source_bucket", "source_key", "dest_bucket", "dest_key", "request_id"]) {
        assert.equal(name in parameters, false, `${name} is not a parameter`);
      }
      assert.match(job.created_at as string, ISO_MS_UTC);
      assert.match(job.updated_at as string, ISO_MS_UTC);
      assert.ok(
        Math.abs(Date.parse(job.created_at as string) - Date.now()) < 60_000,
        "created_at is now (UTC)",
      );
      assert.equal(job.result, undefined);
      assert.equal(job.error, undefined);
    });
  }

  test("queue_position increases per queue, and each queue counts on its own", async () => {
    const resize = endpoint("image_resize");
    const colors = endpoint("image_colors");
    const a = await submit(resize.path, resize.body);
    const c = await submit(colors.path, colors.body);
    const b = await submit(resize.path, resize.body);
    const d = await submit(colors.path, colors.body);
    assert.equal(b.queue_position, a.queue_position + 1);
    assert.equal(d.queue_position, c.queue_position + 1);
    assert.notEqual(a.job_id, b.job_id);
  });

  test("explicit parameters are kept as submitted", async () => {
    const resize = await submit("/api/v1/jobs/image/resize", {
      ...LOCATION,
      width: 1,
      height: 1,
      quality: 100,
      format: "avif",
    });
    assert.deepEqual(
      (({ width, height, quality, format }) => ({ width, height, quality, format }))(
        (await getJob(resize.job_id)).parameters as Body,
      ),
      { width: 1, height: 1, quality: 100, format: "avif" },
    );
    const optimize = await submit("/api/v1/jobs/image/optimize", {
      ...LOCATION,
      quality: 1,
      strip_metadata: true,
      format: "webp",
    });
    const op = (await getJob(optimize.job_id)).parameters as Body;
    assert.equal(op.quality, 1);
    assert.equal(op.strip_metadata, true);
    assert.equal(op.format, "webp");
    const watermark = await submit("/api/v1/jobs/image/watermark", {
      ...LOCATION,
      watermark_image: "logos/logo.png",
      position: "center",
      opacity: 0,
    });
    const wp = (await getJob(watermark.job_id)).parameters as Body;
    assert.equal(wp.watermark_image, "logos/logo.png");
    assert.equal(wp.position, "center");
    assert.equal(wp.opacity, 0);
    const colors = await submit("/api/v1/jobs/image/colors", { ...SOURCE, color_count: 10, format: "hsl" });
    const cp = (await getJob(colors.job_id)).parameters as Body;
    assert.equal(cp.color_count, 10);
    assert.equal(cp.format, "hsl");
    const keywords = await submit("/api/v1/jobs/image/ai/keywords", {
      ...SOURCE,
      keyword_count: 20,
      language: "de",
    });
    const kp = (await getJob(keywords.job_id)).parameters as Body;
    assert.equal(kp.keyword_count, 20);
    assert.equal(kp.language, "de");
    const audio = await submit("/api/v1/jobs/audio/convert", { ...LOCATION, format: "opus", bitrate: "96k" });
    const ap = (await getJob(audio.job_id)).parameters as Body;
    assert.equal(ap.format, "opus");
    assert.equal(ap.bitrate, "96k");
  });

  test("limits are inclusive: the bounds themselves are accepted", async () => {
    await submit("/api/v1/jobs/image/resize", { ...LOCATION, width: 1, height: 1, quality: 1 });
    await submit("/api/v1/jobs/image/optimize", { ...LOCATION, quality: 100 });
    await submit("/api/v1/jobs/image/watermark", { ...LOCATION, watermark_text: "x", opacity: 100 });
    await submit("/api/v1/jobs/image/colors", { ...SOURCE, color_count: 3 });
    await submit("/api/v1/jobs/image/ai/keywords", { ...SOURCE, keyword_count: 10 });
    for (const format of ["jpeg", "png", "webp", "avif"]) {
      await submit("/api/v1/jobs/image/resize", { ...LOCATION, width: 10, height: 10, format });
    }
    for (const format of ["hex", "rgb", "hsl"])
      await submit("/api/v1/jobs/image/colors", { ...SOURCE, format });
    for (const position of ["top-left", "top-right", "bottom-left", "bottom-right", "center"]) {
      await submit("/api/v1/jobs/image/watermark", { ...LOCATION, watermark_text: "x", position });
    }
    for (const format of ["mp3", "aac", "opus", "ogg", "flac", "wav", "m4a"]) {
      await submit("/api/v1/jobs/audio/convert", { ...LOCATION, format });
    }
  });

  test("thumbnail timestamp accepts HH:MM:SS, MM:SS and seconds (string or number)", async () => {
    const thumbnail = endpoint("video_thumbnail");
    for (const timestamp of ["01:02:03", "02:03", "90", 90]) {
      const res = await submit(thumbnail.path, { ...thumbnail.body, timestamp });
      const job = await getJob(res.job_id);
      assert.deepEqual((job.parameters as Body).timestamp, timestamp);
    }
    for (const format of ["jpeg", "png", "webp"]) {
      await submit(thumbnail.path, { ...thumbnail.body, format, width: 160 });
    }
  });

  test("audio bitrate: outside the recommended range is accepted", async () => {
    const audio = endpoint("audio_convert");
    const res = await submit(audio.path, { ...audio.body, format: "mp3", bitrate: "32k" });
    assert.equal(((await getJob(res.job_id)).parameters as Body).bitrate, "32k");
    await submit(audio.path, { ...audio.body, format: "aac", bitrate: "320k" });
    await submit(audio.path, { ...audio.body, format: "flac" });
    await submit(audio.path, { ...audio.body, format: "wav" });
  });

  test("webhook_url (http/https) and webhook_style default/chat are accepted and kept", async () => {
    const resize = endpoint("image_resize");
    const a = await submit(resize.path, {
      ...resize.body,
      webhook_url: "https://example.com/hook",
      webhook_style: "chat",
    });
    const jobA = await getJob(a.job_id);
    assert.equal(jobA.webhook_url, "https://example.com/hook");
    assert.equal(jobA.webhook_style, "chat");
    // Webhook fields are options of the submission, not job parameters.
    assert.equal("webhook_url" in (jobA.parameters as Body), false);
    const b = await submit(resize.path, {
      ...resize.body,
      webhook_url: "http://example.com/hook",
      webhook_style: "default",
    });
    assert.equal((await getJob(b.job_id)).webhook_style, "default");
  });

  test("timeout_seconds up to limits.max_timeout_seconds is accepted", async () => {
    const max = stack.config.limits.maxTimeoutSeconds;
    const resize = endpoint("image_resize");
    const res = await submit(resize.path, { ...resize.body, timeout_seconds: max });
    assert.equal((await getJob(res.job_id)).timeout_seconds, max);
  });
});

describe("submit endpoints refuse what breaks a rule, and write nothing", () => {
  test("every refused request answers 400 {error} naming the field; job total and queue stats unchanged", async () => {
    const resize = endpoint("image_resize").body;
    const optimize = endpoint("image_optimize").body;
    const watermark = endpoint("image_watermark").body;
    const colors = endpoint("image_colors").body;
    const keywords = endpoint("image_ai_keywords").body;
    const thumbnail = endpoint("video_thumbnail").body;
    const audio = endpoint("audio_convert").body;
    const max = stack.config.limits.maxTimeoutSeconds;

    const cases: Array<[path: string, body: Body, field: string]> = [
      // resize: width / height
      ["/api/v1/jobs/image/resize", { ...resize, width: 0 }, "width"],
      ["/api/v1/jobs/image/resize", { ...resize, height: 0 }, "height"],
      ["/api/v1/jobs/image/resize", without(resize, "width"), "width"],
      ["/api/v1/jobs/image/resize", without(resize, "height"), "height"],
      ["/api/v1/jobs/image/resize", { ...resize, width: 10.5 }, "width"],
      ["/api/v1/jobs/image/resize", { ...resize, height: 2.25 }, "height"],
      ["/api/v1/jobs/image/resize", { ...resize, width: "100" }, "width"],
      ["/api/v1/jobs/image/resize", { ...resize, height: "100" }, "height"],
      ["/api/v1/jobs/image/resize", { ...resize, width: -5 }, "width"],
      // quality
      ["/api/v1/jobs/image/resize", { ...resize, quality: 0 }, "quality"],
      ["/api/v1/jobs/image/resize", { ...resize, quality: 101 }, "quality"],
      ["/api/v1/jobs/image/optimize", { ...optimize, quality: 0 }, "quality"],
      ["/api/v1/jobs/image/optimize", { ...optimize, quality: 101 }, "quality"],
      ["/api/v1/jobs/image/optimize", { ...optimize, strip_metadata: "yes" }, "strip_metadata"],
      // formats outside their enums
      ["/api/v1/jobs/image/resize", { ...resize, format: "gif" }, "format"],
      ["/api/v1/jobs/image/optimize", { ...optimize, format: "bmp" }, "format"],
      ["/api/v1/jobs/image/colors", { ...colors, format: "cmyk" }, "format"],
      ["/api/v1/jobs/video/thumbnail", { ...thumbnail, format: "avif" }, "format"],
      // watermark
      ["/api/v1/jobs/image/watermark", { ...watermark, opacity: -1 }, "opacity"],
      ["/api/v1/jobs/image/watermark", { ...watermark, opacity: 101 }, "opacity"],
      ["/api/v1/jobs/image/watermark", { ...watermark, position: "middle" }, "position"],
      ["/api/v1/jobs/image/watermark", without(watermark, "watermark_text"), "watermark_text"],
      [
        "/api/v1/jobs/image/watermark",
        { ...watermark, watermark_image: "logos/logo.png" },
        "watermark_image",
      ],
      // colors, keywords
      ["/api/v1/jobs/image/colors", { ...colors, color_count: 2 }, "color_count"],
      ["/api/v1/jobs/image/colors", { ...colors, color_count: 11 }, "color_count"],
      ["/api/v1/jobs/image/ai/keywords", { ...keywords, keyword_count: 9 }, "keyword_count"],
      ["/api/v1/jobs/image/ai/keywords", { ...keywords, keyword_count: 21 }, "keyword_count"],
      // thumbnail timestamp
      ["/api/v1/jobs/video/thumbnail", { ...thumbnail, timestamp: "1:2:3:4" }, "timestamp"],
      ["/api/v1/jobs/video/thumbnail", { ...thumbnail, timestamp: "abc" }, "timestamp"],
      ["/api/v1/jobs/video/thumbnail", { ...thumbnail, timestamp: -1 }, "timestamp"],
      ["/api/v1/jobs/video/thumbnail", { ...thumbnail, width: 0 }, "width"],
      // audio
      ["/api/v1/jobs/audio/convert", without(audio, "format"), "format"],
      ["/api/v1/jobs/audio/convert", { ...audio, format: "wma" }, "format"],
      ["/api/v1/jobs/audio/convert", { ...audio, bitrate: "fast" }, "bitrate"],
      ["/api/v1/jobs/audio/convert", { ...audio, format: "flac", bitrate: "128k" }, "bitrate"],
      ["/api/v1/jobs/audio/convert", { ...audio, format: "wav", bitrate: "320k" }, "bitrate"],
      // location fields
      ["/api/v1/jobs/image/resize", without(resize, "source_bucket"), "source_bucket"],
      ["/api/v1/jobs/image/resize", without(resize, "source_key"), "source_key"],
      ["/api/v1/jobs/image/resize", without(resize, "dest_bucket"), "dest_bucket"],
      ["/api/v1/jobs/image/resize", without(resize, "dest_key"), "dest_key"],
      ["/api/v1/jobs/image/optimize", without(optimize, "dest_key"), "dest_key"],
      ["/api/v1/jobs/image/watermark", without(watermark, "dest_bucket"), "dest_bucket"],
      ["/api/v1/jobs/video/thumbnail", without(thumbnail, "dest_bucket"), "dest_bucket"],
      ["/api/v1/jobs/video/thumbnail", without(thumbnail, "dest_key"), "dest_key"],
      ["/api/v1/jobs/audio/convert", without(audio, "dest_bucket"), "dest_bucket"],
      ["/api/v1/jobs/audio/convert", without(audio, "source_key"), "source_key"],
      ["/api/v1/jobs/image/colors", without(colors, "source_bucket"), "source_bucket"],
      ["/api/v1/jobs/image/ai/keywords", without(keywords, "source_key"), "source_key"],
      ["/api/v1/jobs/analyze", {}, "source_bucket"],
      ["/api/v1/jobs/image/resize", { ...resize, source_bucket: "Bad_Bucket!" }, "source_bucket"],
      ["/api/v1/jobs/image/resize", { ...resize, dest_bucket: "x" }, "dest_bucket"],
      ["/api/v1/jobs/image/resize", { ...resize, source_key: "" }, "source_key"],
      ["/api/v1/jobs/image/resize", { ...resize, source_bucket: 42 }, "source_bucket"],
      // unknown fields
      ["/api/v1/jobs/image/resize", { ...resize, colour: "red" }, "colour"],
      ["/api/v1/jobs/image/colors", { ...colors, width: 10 }, "width"],
      ["/api/v1/jobs/analyze", { ...colors, bogus: true }, "bogus"],
      // submission options
      ["/api/v1/jobs/image/resize", { ...resize, webhook_url: "ftp://x" }, "webhook_url"],
      ["/api/v1/jobs/image/resize", { ...resize, webhook_url: "not a url" }, "webhook_url"],
      ["/api/v1/jobs/image/colors", { ...colors, webhook_url: "https://" }, "webhook_url"],
      ["/api/v1/jobs/image/resize", { ...resize, webhook_style: "teams" }, "webhook_style"],
      ["/api/v1/jobs/image/resize", { ...resize, request_id: 7 }, "request_id"],
      ["/api/v1/jobs/image/resize", { ...resize, timeout_seconds: max + 1 }, "timeout_seconds"],
      ["/api/v1/jobs/image/resize", { ...resize, timeout_seconds: 0 }, "timeout_seconds"],
    ];

    const before = await writtenState();
    for (const [path, body, field] of cases) await refused(path, body, field);
    // Bodies that are not objects at all.
    for (const ep of ENDPOINTS) {
      await refused(ep.path, [ep.body], "body");
    }
    const after = await writtenState();
    assert.deepEqual(after, before, "refused requests wrote nothing");
  });

  test("watermark: the messages say which of the two rules was broken", async () => {
    const watermark = endpoint("image_watermark").body;
    const neither = await refused(
      "/api/v1/jobs/image/watermark",
      without(watermark, "watermark_text"),
      "watermark_image",
    );
    const both = await refused(
      "/api/v1/jobs/image/watermark",
      { ...watermark, watermark_image: "logos/logo.png" },
      "watermark_text",
    );
    assert.notEqual(neither, both);
  });
});
