// Input no route may store or choke on, refused in one place (api/body.ts) or by the shared schemas,
// for single jobs and batch entries alike; and what a server error may put in a log line.
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, before, describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import { loggableError } from "../../api/errors.js";
import { MAX_BODY_DEPTH } from "../../api/body.js";
import { startTestStack, type TestStack } from "../support/api.js";

let stack: TestStack;
before(async () => {
  stack = await startTestStack({ apiKeys: ["hostile-test-key"] });
});
after(async () => {
  await stack?.close();
});

const RESIZE = "/api/v1/jobs/image/resize";
const JOB = {
  source_bucket: "media-in",
  source_key: "in/photo.jpg",
  dest_bucket: "media-out",
  dest_key: "out/photo.webp",
  width: 320,
  height: 200,
};
const { width: _w, height: _h, ...LOCATION } = JOB;
const ENTRY = { type: "image_resize", ...LOCATION, parameters: { width: 320, height: 200 } };
const SECRET_HOOK = "https://hooks.example.com/services/T000/B000/secret-path-xyz";

async function total(): Promise<number> {
  const res = await stack.request("/api/v1/jobs?limit=1");
  return ((await res.json()) as { total: number }).total;
}

async function refused(path: string, body: unknown, message: RegExp): Promise<void> {
  const res = await stack.request(path, { method: "POST", json: body });
  const text = await res.text();
  assert.equal(res.status, 400, text);
  assert.match((JSON.parse(text) as { error: string }).error, message);
}

function nested(depth: number): unknown {
  let value: unknown = "bottom";
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

describe("hostile request bodies", () => {
  test("a lone UTF-16 surrogate anywhere is a 400 naming the field; nothing is recorded or logged as an error", async () => {
    const before = await total();
    const logsBefore = stack.logs.length;
    await refused(RESIZE, { ...JOB, source_key: "in/\udfff.jpg" }, /^source_key is not valid Unicode/);
    await refused(RESIZE, { ...JOB, dest_key: "out/\ud800" }, /^dest_key is not valid Unicode/);
    await refused(
      RESIZE,
      { ...JOB, request_id: "r-\udfff", webhook_url: SECRET_HOOK },
      /^request_id is not valid Unicode/,
    );
    await refused(
      "/api/v1/jobs/batch",
      {
        jobs: [
          { type: "image_resize", ...JOB },
          { type: "image_resize", ...JOB, source_key: "x\udc00" },
        ],
      },
      /^jobs\[1\]\.source_key is not valid Unicode/,
    );
    await refused(
      RESIZE,
      { ...JOB, ["k\udfff"]: 1 },
      /^a field name in the request body is not valid Unicode/,
    );
    assert.equal(await total(), before);
    const errors = stack.logs.slice(logsBefore).filter((l) => (l.level as number) >= 50);
    assert.deepEqual(errors, []);
    assert.ok(!JSON.stringify(stack.logs).includes("secret-path-xyz"), "the webhook URL reached a log line");

    // A proper surrogate pair is just a character.
    const ok = await stack.request(RESIZE, {
      method: "POST",
      json: { ...JOB, source_key: "in/😀 photo.jpg" },
    });
    assert.equal(ok.status, 202);
  });

  test(`nesting deeper than ${MAX_BODY_DEPTH} levels is a 400, on single jobs and batch entries`, async () => {
    await refused(
      "/api/v1/jobs/batch",
      { jobs: [{ ...ENTRY, parameters: nested(2000) }] },
      new RegExp(`^jobs\\[0\\]\\.parameters(\\.a)+ nests deeper than ${MAX_BODY_DEPTH} levels$`),
    );
    await refused(RESIZE, { ...JOB, extra: nested(100) }, /nests deeper than 32 levels$/);
    // A batch with parameters is far from the limit.
    const res = await stack.request("/api/v1/jobs/batch", {
      method: "POST",
      json: { jobs: [ENTRY] },
    });
    assert.equal(res.status, 201, await res.text());
  });

  test("a number beyond a double (1e309) is refused rather than read as Infinity", async () => {
    const res = await stack.request(RESIZE, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-API-Key": "hostile-test-key" },
      body: JSON.stringify(JOB).replace('"width":320', '"width":1e309'),
    });
    assert.equal(res.status, 400);
    assert.match(
      ((await res.json()) as { error: string }).error,
      /^width is a number too large to represent$/,
    );
  });

  test("control characters in keys and request_id are refused; other Unicode is fine", async () => {
    for (const [field, value] of [
      ["source_key", "in/a\u0000.jpg"],
      ["dest_key", "out/a\r\nSet-Cookie: x"],
      ["request_id", "req\u007f"],
      ["source_key", "in/tab\there.jpg"],
      // C1 controls: NEL (a line break to some log readers), CSI (a terminal escape), the ends.
      ["source_key", "in/a\u0085b.jpg"],
      ["dest_key", "out/\u009b31m.jpg"],
      ["request_id", "req\u0080"],
      ["request_id", "req\u009f"],
    ] as const) {
      await refused(
        RESIZE,
        { ...JOB, [field]: value },
        new RegExp(`^${field} must not contain control characters`),
      );
    }
    await refused(
      "/api/v1/jobs/batch",
      { jobs: [{ ...ENTRY, dest_key: "a\nb" }] },
      /^jobs\[0\]\.dest_key must not contain control characters/,
    );
    await refused(
      "/api/v1/jobs/batch",
      { jobs: [{ ...ENTRY, source_key: "in/\u0085.jpg" }] },
      /^jobs\[0\]\.source_key must not contain control characters/,
    );
    const ok = await stack.request(RESIZE, {
      method: "POST",
      json: { ...JOB, source_key: "in/Ünïcødé – photo (1).jpg", request_id: "trace-ü-1" },
    });
    assert.equal(ok.status, 202);
  });
});

/** A POST whose headers are sent as given, a header with several values as several lines. */
async function rawPost(
  path: string,
  headers: Record<string, string | string[]>,
  body: Buffer,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${stack.baseUrl}${path}`, { method: "POST" }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString() }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.setHeader("x-api-key", "hostile-test-key");
    for (const [name, value] of Object.entries(headers)) req.setHeader(name, value);
    req.end(body);
  });
}

describe("bodies the API cannot read as they came", () => {
  const json = Buffer.from(JSON.stringify(JOB));

  test("a body with a Content-Encoding (gzip) is a 415 naming it, not parsed as plain JSON; nothing is recorded", async () => {
    const before = await total();
    for (const [encoding, body] of [
      ["gzip", gzipSync(json)],
      ["gzip", json], // plain JSON labelled gzip was read as plain JSON too
      ["br", json],
      ["deflate, gzip", json],
    ] as const) {
      const res = await rawPost(
        RESIZE,
        { "content-type": "application/json", "content-encoding": encoding },
        body,
      );
      assert.equal(res.status, 415, `${encoding}: ${res.body}`);
      assert.equal(
        (JSON.parse(res.body) as { error: string }).error,
        `unsupported Content-Encoding "${encoding}": send the JSON body uncompressed, without Content-Encoding`,
      );
    }
    assert.equal(await total(), before);
    const identity = await rawPost(
      RESIZE,
      { "content-type": "application/json", "content-encoding": "identity" },
      json,
    );
    assert.equal(identity.status, 202, identity.body);
  });

  test("a charset other than UTF-8 is a 415 naming it; utf-8 in any spelling is read", async () => {
    const before = await total();
    const utf16 = Buffer.from(`\ufeff${JSON.stringify(JOB)}`, "utf16le");
    for (const [contentType, body] of [
      ["application/json; charset=utf-16", utf16],
      ["application/json;charset=UTF-16LE", utf16],
      ['application/json; charset="iso-8859-1"', json],
    ] as const) {
      const res = await rawPost(RESIZE, { "content-type": contentType }, body);
      assert.equal(res.status, 415, `${contentType}: ${res.body}`);
      const charset = /charset="?([^";]+)/.exec(contentType)![1]!.toLowerCase();
      assert.equal(
        (JSON.parse(res.body) as { error: string }).error,
        `unsupported charset "${charset}": send the JSON body in UTF-8 (charset=utf-8, or no charset)`,
      );
    }
    assert.equal(await total(), before);
    for (const contentType of ["application/json; charset=utf-8", 'application/json; charset="UTF-8"']) {
      const res = await rawPost(RESIZE, { "content-type": contentType }, json);
      assert.equal(res.status, 202, `${contentType}: ${res.body}`);
    }
  });

  test('two Idempotency-Key headers are a 400, not one key "a1, a2"; nothing is recorded or kept', async () => {
    const before = await total();
    const res = await rawPost(
      RESIZE,
      { "content-type": "application/json", "idempotency-key": ["dup-a1", "dup-a2"] },
      json,
    );
    assert.equal(res.status, 400, res.body);
    assert.equal(
      (JSON.parse(res.body) as { error: string }).error,
      "Idempotency-Key was sent 2 times: send one Idempotency-Key header per request",
    );
    const batch = await rawPost(
      "/api/v1/jobs/batch",
      { "content-type": "application/json", "idempotency-key": ["dup-b1", "dup-b2", "dup-b3"] },
      Buffer.from(JSON.stringify({ jobs: [ENTRY] })),
    );
    assert.equal(batch.status, 400, batch.body);
    assert.match(batch.body, /Idempotency-Key was sent 3 times/);
    assert.equal(await total(), before);
    // The joined value was never taken as a key: it is free for a request that sends it once.
    const once = await rawPost(
      RESIZE,
      { "content-type": "application/json", "idempotency-key": "dup-a1, dup-a2" },
      json,
    );
    assert.equal(once.status, 202, once.body);
  });
});

describe("what a server error may log", () => {
  test("a Redis reply error keeps its message, never the command's arguments", async () => {
    // A real ReplyError from the test's redis-server: cjson refuses an escaped lone surrogate, and
    // ioredis keeps the whole command (here a job with a secret webhook URL) on the error.
    const job = JSON.stringify({ webhook_url: SECRET_HOOK, source_key: "in/\udfff.jpg" });
    const err = await stack.services.redis.eval("return cjson.decode(ARGV[1])", 0, job).then(
      () => assert.fail("cjson accepted a lone surrogate"),
      (e: unknown) => e,
    );
    assert.ok(
      JSON.stringify(Object.entries(err as object)).includes("secret-path-xyz"),
      "the error carries the command",
    );
    const logged = JSON.stringify(loggableError(err));
    assert.ok(!logged.includes("secret-path-xyz"), logged);
    assert.match(logged, /"type":"ReplyError"/);
    assert.match(logged, /cjson|Lua|script/i);
  });
});

describe("values the API bounds before a job is recorded", () => {
  test("bucket names S3 would refuse are a 400 naming the rule; nothing is recorded", async () => {
    const before = await total();
    for (const bucket of ["a..b", "192.168.1.1", "xn--abc", "sthree-data", "files-s3alias", "files--ol-s3"]) {
      await refused(RESIZE, { ...JOB, source_bucket: bucket }, /^source_bucket must be a valid bucket name/);
      await refused(
        "/api/v1/jobs/batch",
        { jobs: [{ ...ENTRY, dest_bucket: bucket }] },
        /^jobs\[0\]\.dest_bucket must be a valid bucket name .*no adjacent dots, not an IP address/,
      );
    }
    assert.equal(await total(), before);
    const res = await stack.request(RESIZE, {
      method: "POST",
      json: { ...JOB, source_bucket: "my.media-1" },
    });
    assert.equal(res.status, 202, await res.text());
  });

  test("width and height above limits.max_output_dimension are a 400, single and batch alike", async () => {
    const max = stack.config.limits.maxOutputDimension;
    await refused(
      RESIZE,
      { ...JOB, width: max + 1 },
      new RegExp(`^width must be at most ${max} pixels \\(limits\\.max_output_dimension\\)$`),
    );
    await refused(RESIZE, { ...JOB, height: 10_000_000_000 }, /^height must be at most \d+ pixels/);
    await refused(
      "/api/v1/jobs/batch",
      { jobs: [{ ...ENTRY, parameters: { width: 320, height: max + 1 } }] },
      /^jobs\[0\]\.parameters\.height must be at most \d+ pixels/,
    );
    await refused(
      "/api/v1/jobs/video/thumbnail",
      { ...LOCATION, dest_key: "out/t.jpg", width: max + 1 },
      /^width must be at most \d+ pixels/,
    );
    const res = await stack.request(RESIZE, { method: "POST", json: { ...JOB, width: max, height: max } });
    assert.equal(res.status, 202, await res.text());
  });
});

describe("audio bitrates", () => {
  const AUDIO = "/api/v1/jobs/audio/convert";
  const { dest_key: _d, ...where } = LOCATION;
  test("a bitrate the format's encoder cannot produce is a 400 naming the range, single and batch", async () => {
    for (const [format, bitrate, range] of [
      ["mp3", "9999k", "8k to 320k"],
      ["mp3", "321k", "8k to 320k"],
      ["opus", "520k", "6k to 512k"],
      ["ogg", "512k", "8k to 500k"],
      ["aac", "7k", "8k to 512k"],
      ["m4a", "600k", "8k to 512k"],
    ] as const) {
      await refused(
        AUDIO,
        { ...where, dest_key: `out/a.${format}`, format, bitrate },
        new RegExp(`^bitrate ${bitrate} is out of range for ${format}: ${range}$`),
      );
    }
    await refused(
      "/api/v1/jobs/batch",
      {
        jobs: [
          {
            type: "audio_convert",
            ...where,
            dest_key: "out/a.mp3",
            parameters: { format: "mp3", bitrate: "9999k" },
          },
        ],
      },
      /^jobs\[0\]\.parameters\.bitrate 9999k is out of range for mp3: 8k to 320k$/,
    );
  });

  test("the ends of each range are accepted", async () => {
    for (const [format, bitrate] of [
      ["mp3", "320k"],
      ["mp3", "8k"],
      ["opus", "512k"],
      ["ogg", "500k"],
      ["aac", "512k"],
    ] as const) {
      const res = await stack.request(AUDIO, {
        method: "POST",
        json: { ...where, dest_key: `out/a.${format}`, format, bitrate },
      });
      assert.equal(res.status, 202, `${format} ${bitrate}: ${await res.text()}`);
    }
  });
});

describe("thumbnail timestamps", () => {
  const THUMB = "/api/v1/jobs/video/thumbnail";
  const body = { ...LOCATION, dest_key: "out/t.jpg" };
  test("a timestamp beyond 1000 hours is a 400, as a number or a clock, single and batch", async () => {
    await refused(
      THUMB,
      { ...body, timestamp: 1e308 },
      /^timestamp must be HH:MM:SS, MM:SS or a number of seconds, at most 1000:00:00 \(3600000 seconds\); got 1e\+308$/,
    );
    await refused(
      THUMB,
      { ...body, timestamp: "1000:00:01" },
      /^timestamp must be HH:MM:SS, MM:SS or a number of seconds, at most 1000:00:00/,
    );
    await refused(
      THUMB,
      { ...body, timestamp: "99999999999" },
      /^timestamp must be HH:MM:SS, MM:SS or a number of seconds, at most 1000:00:00/,
    );
    await refused(
      "/api/v1/jobs/batch",
      { jobs: [{ type: "video_thumbnail", ...body, parameters: { timestamp: 4e6 } }] },
      /^jobs\[0\]\.parameters\.timestamp must be HH:MM:SS, MM:SS or a number of seconds, at most 1000:00:00/,
    );
    for (const timestamp of [3_600_000, "1000:00:00", "02:30", 0]) {
      const res = await stack.request(THUMB, { method: "POST", json: { ...body, timestamp } });
      assert.equal(res.status, 202, `${String(timestamp)}: ${await res.text()}`);
    }
  });
});
