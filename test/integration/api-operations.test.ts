// The operational surface end to end: /health, /health/live, /health/ready, /metrics, queue
// statistics, the OpenAPI document and the interactive reference, X-Request-ID; with every
// dependency up, with the object store unreachable, and with Redis stopped.
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { JOB_TYPES, type JobType } from "../../core/jobs/types.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { startTestRedis, type TestRedis } from "../support/redis.js";
import { spawnRedisServer, type RedisServerProcess } from "../../local/redis.js";
import { claimJob, sleep } from "../support/store.js";

const KEY = "ops-test-key-0123456789abcdef";
const LEASE = 60_000;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z$/;
const DEPENDENCIES = ["queue_store", "object_store"] as const;
/** Every request of this file gives up after this long, so a hang fails instead of stalling. */
const REQUEST_TIMEOUT = 10_000;

type Json = Record<string, unknown>;

const location = () => ({
  source_bucket: "media-test",
  source_key: `in/${randomUUID()}.jpg`,
  dest_bucket: "media-test",
  dest_key: `out/${randomUUID()}.webp`,
});

async function json(res: Response): Promise<Json> {
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/, `${res.url}: a JSON answer`);
  return (await res.json()) as Json;
}

function assertIso(value: unknown, what: string) {
  assert.equal(typeof value, "string", `${what} is a string`);
  assert.match(value as string, ISO, `${what} is an ISO 8601 UTC timestamp`);
  assert.ok(Math.abs(Date.parse(value as string) - Date.now()) < 60_000, `${what} is recent`);
}

function assertDependency(dep: unknown, name: string, healthy: boolean) {
  assert.ok(dep && typeof dep === "object", `dependencies.${name} is present`);
  const d = dep as Json;
  assert.equal(typeof d.status, "string");
  assert.equal(typeof d.latency_ms, "number", `${name}.latency_ms is a number`);
  assert.ok((d.latency_ms as number) >= 0);
  assertIso(d.last_check, `${name}.last_check`);
  if (healthy) {
    assert.equal(d.status, "healthy", `${name} is healthy: ${JSON.stringify(d)}`);
    assert.equal(d.error, undefined, `${name} has no error`);
  } else {
    assert.equal(d.status, "unhealthy", `${name} is unhealthy: ${JSON.stringify(d)}`);
    assert.equal(typeof d.error, "string", `${name}.error says why`);
    assert.ok((d.error as string).length > 0);
  }
}

function assertSystem(system: unknown) {
  assert.ok(system && typeof system === "object", "system is present");
  const s = system as Json;
  for (const field of ["memory_free_mb", "disk_free_gb", "disk_used_gb", "disk_total_gb"]) {
    assert.equal(typeof s[field], "number", `system.${field} is a number`);
    assert.ok(Number.isFinite(s[field]) && (s[field] as number) >= 0, `system.${field} >= 0`);
  }
  assert.ok((s.disk_total_gb as number) > 0, "the disk has a size");
}

// The Prometheus text exposition format, as far as these tests need it.
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parseExposition(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line.startsWith("# TYPE ")) {
      const [name, type] = line.slice(7).split(" ");
      types.set(name!, type!);
      continue;
    }
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/.exec(line);
    assert.ok(m, `a well-formed sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!;
    const raw = m[3]!;
    const value = raw === "+Inf" ? Infinity : raw === "-Inf" ? -Infinity : Number(raw);
    samples.push({ name: m[1]!, labels, value });
  }
  return { samples, types };
}

function value(samples: Sample[], name: string, labels: Record<string, string>): number | undefined {
  return samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    ?.value;
}

describe("operations with every dependency up", () => {
  let stack: TestStack;
  const get = (path: string, init: RequestInit & { key?: string | null } = {}) =>
    stack.request(path, { signal: AbortSignal.timeout(REQUEST_TIMEOUT), ...init });
  const submit = async (path: string, body: Json) => {
    const res = await stack.request(path, {
      method: "POST",
      json: body,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT),
    });
    assert.equal(res.status, 202, await res.clone().text());
    return (await json(res)).job_id as string;
  };
  const metrics = async () => {
    const res = await get("/metrics", { key: null });
    assert.equal(res.status, 200);
    return parseExposition(await res.text());
  };
  const stats = async () => {
    const res = await get("/api/v1/queue/stats");
    assert.equal(res.status, 200);
    return (await json(res)) as {
      total_jobs: number;
      total_pending: number;
      total_processing: number;
      total_completed: number;
      total_failed: number;
      total_cancelled: number;
      queues: Record<
        string,
        {
          name: string;
          pending: number;
          processing: number;
          completed: number;
          failed: number;
          cancelled: number;
        }
      >;
    };
  };

  before(async () => {
    stack = await startTestStack({ apiKeys: [KEY] });
  });
  after(async () => {
    await stack?.close();
  });

  test("GET /health: 200, healthy, timestamp, system figures and both dependencies (no key needed)", async () => {
    const res = await get("/health", { key: null });
    assert.equal(res.status, 200);
    const body = await json(res);
    assert.equal(body.status, "healthy", JSON.stringify(body));
    assertIso(body.timestamp, "timestamp");
    assertSystem(body.system);
    const deps = body.dependencies as Json;
    for (const name of DEPENDENCIES) assertDependency(deps[name], name, true);
  });

  test("GET /health/live: 200 {status, timestamp}", async () => {
    const res = await get("/health/live", { key: null });
    assert.equal(res.status, 200);
    const body = await json(res);
    assert.equal(typeof body.status, "string");
    assertIso(body.timestamp, "timestamp");
  });

  test("GET /health/ready: 200 with the dependencies", async () => {
    const res = await get("/health/ready", { key: null });
    assert.equal(res.status, 200);
    const body = await json(res);
    assert.equal(typeof body.status, "string");
    assertIso(body.timestamp, "timestamp");
    const deps = body.dependencies as Json;
    for (const name of DEPENDENCIES) assertDependency(deps[name], name, true);
  });

  test("GET /api/v1/queue/stats: the documented shape, every job type a queue, and it needs the key", async () => {
    const unauthorized = await get("/api/v1/queue/stats", { key: null });
    assert.equal(unauthorized.status, 401);
    assert.equal(typeof (await json(unauthorized)).error, "string");

    const s = await stats();
    assert.deepEqual(Object.keys(s).sort(), [
      "queues",
      "total_cancelled",
      "total_completed",
      "total_failed",
      "total_jobs",
      "total_pending",
      "total_processing",
    ]);
    for (const type of ["image_resize", "image_optimize", "video_thumbnail", "audio_convert", ...JOB_TYPES]) {
      const q = s.queues[type];
      assert.ok(q, `queue ${type} is listed`);
      assert.deepEqual(Object.keys(q).sort(), [
        "cancelled",
        "completed",
        "failed",
        "name",
        "pending",
        "processing",
      ]);
      assert.ok(Number.isInteger(q.cancelled) && q.cancelled >= 0 && q.cancelled <= q.failed);
      assert.equal(q.name, type);
      for (const n of [q.pending, q.processing, q.completed, q.failed])
        assert.ok(Number.isInteger(n) && n >= 0);
    }
    const sum = (field: "pending" | "processing" | "completed" | "failed" | "cancelled") =>
      Object.values(s.queues).reduce((acc, q) => acc + q[field], 0);
    assert.equal(s.total_pending, sum("pending"));
    assert.equal(s.total_processing, sum("processing"));
    assert.equal(s.total_completed, sum("completed"));
    assert.equal(s.total_failed, sum("failed"));
    assert.equal(s.total_cancelled, sum("cancelled"));
    assert.equal(s.total_jobs, s.total_pending + s.total_processing + s.total_completed + s.total_failed);
  });

  test("queue statistics follow submit, start, complete and fail", async () => {
    const store = stack.services.store;
    const type: JobType = "image_optimize";
    const before = await stats();
    const delta = async () => {
      const now = await stats();
      const q = now.queues[type]!;
      const b = before.queues[type]!;
      return {
        pending: q.pending - b.pending,
        processing: q.processing - b.processing,
        completed: q.completed - b.completed,
        failed: q.failed - b.failed,
        total_jobs: now.total_jobs - before.total_jobs,
      };
    };
    const a = await submit("/api/v1/jobs/image/optimize", { ...location(), quality: 70 });
    const b = await submit("/api/v1/jobs/image/optimize", location());
    assert.deepEqual(await delta(), { pending: 2, processing: 0, completed: 0, failed: 0, total_jobs: 2 });

    await claimJob(store, type, a, LEASE);
    assert.equal(await store.start(a, LEASE), true);
    assert.deepEqual(await delta(), { pending: 1, processing: 1, completed: 0, failed: 0, total_jobs: 2 });

    assert.equal(await store.complete(a, { output_url: "s3://media-test/out/a.webp", file_size: 1 }), true);
    assert.deepEqual(await delta(), { pending: 1, processing: 0, completed: 1, failed: 0, total_jobs: 2 });

    await claimJob(store, type, b, LEASE);
    assert.equal(await store.start(b, LEASE), true);
    assert.equal(await store.fail(b, "not an image"), true);
    assert.deepEqual(await delta(), { pending: 0, processing: 0, completed: 1, failed: 1, total_jobs: 2 });
  });

  test("GET /metrics: Prometheus text with job counters, queue depth, duration histogram and process metrics", async () => {
    const store = stack.services.store;
    const res = await get("/metrics", { key: null });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/plain/);
    const first = parseExposition(await res.text());
    assert.equal(first.types.get("media_jobs_total"), "counter");
    assert.equal(first.types.get("media_queue_depth"), "gauge");
    assert.equal(first.types.get("media_job_duration_seconds"), "histogram");
    for (const name of ["process_cpu_seconds_total", "nodejs_heap_size_total_bytes"]) {
      assert.ok(
        first.samples.some((s) => s.name === name),
        `process metric ${name} is exported`,
      );
    }
    const submitted = (m: Sample[]) =>
      value(m, "media_jobs_total", { type: "image_resize", status: "pending" }) ?? Number.NaN;
    const depth = (m: Sample[]) => value(m, "media_queue_depth", { queue: "image_resize" }) ?? Number.NaN;
    const count = (m: Sample[]) =>
      value(m, "media_job_duration_seconds_count", { type: "image_resize" }) ?? Number.NaN;
    assert.ok(
      Number.isFinite(submitted(first.samples)),
      "media_jobs_total{type=image_resize,status=pending}",
    );
    assert.ok(Number.isFinite(depth(first.samples)), "media_queue_depth{queue=image_resize}");

    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push(await submit("/api/v1/jobs/image/resize", { ...location(), width: 64, height: 48 }));
    }
    const second = (await metrics()).samples;
    assert.equal(submitted(second), submitted(first.samples) + 3, "each submit counts once");
    assert.equal(depth(second), depth(first.samples) + 3);
    assert.equal(depth(second), (await stats()).queues.image_resize!.pending, "queue depth = pending jobs");

    await claimJob(store, "image_resize", ids[0]!, LEASE);
    assert.equal(await store.start(ids[0]!, LEASE), true);
    await sleep(20);
    assert.equal(
      await store.complete(ids[0]!, { output_url: "s3://media-test/out/x.webp", file_size: 10 }),
      true,
    );
    const third = (await metrics()).samples;
    assert.equal(depth(third), depth(first.samples) + 2);
    assert.equal(depth(third), (await stats()).queues.image_resize!.pending, "queue depth = pending jobs");
    assert.equal(
      value(third, "media_jobs_total", { type: "image_resize", status: "completed" }),
      (value(first.samples, "media_jobs_total", { type: "image_resize", status: "completed" }) ?? 0) + 1,
    );
    assert.equal(count(third), count(first.samples) + 1, "the completion is in the histogram");
    const sum = value(third, "media_job_duration_seconds_sum", { type: "image_resize" });
    assert.ok(sum !== undefined && sum > 0, `media_job_duration_seconds_sum is positive (${sum})`);
    const buckets = third
      .filter((s) => s.name === "media_job_duration_seconds_bucket" && s.labels.type === "image_resize")
      .map((s) => ({ le: s.labels.le === "+Inf" ? Infinity : Number(s.labels.le), value: s.value }));
    assert.ok(buckets.length >= 2, "histogram buckets with le labels");
    assert.ok(
      buckets.every((b) => !Number.isNaN(b.le)),
      "every bucket has a numeric le",
    );
    buckets.sort((x, y) => x.le - y.le);
    assert.equal(buckets.at(-1)!.le, Infinity, "a +Inf bucket");
    assert.equal(buckets.at(-1)!.value, count(third), "the +Inf bucket equals the count");
    assert.ok(
      buckets.every((b, i) => i === 0 || b.value >= buckets[i - 1]!.value),
      "buckets are cumulative",
    );
    for (const type of JOB_TYPES) {
      assert.ok(value(third, "media_queue_depth", { queue: type }) !== undefined, `queue depth of ${type}`);
    }
  });

  /** The OpenAPI document, with a resolver for its component references. */
  const openapi = async () => {
    const res = await get("/docs/json", { key: null });
    assert.equal(res.status, 200);
    const doc = await json(res);
    const paths = doc.paths as Record<string, Record<string, Json>>;
    const components = ((doc.components as Json | undefined)?.schemas ?? {}) as Record<string, Json>;
    const deref = (schema: Json): Json => {
      const ref = schema.$ref as string | undefined;
      if (!ref) return schema;
      const target = components[ref.replace(/^#\/components\/schemas\//, "")];
      assert.ok(target, `reference ${ref} resolves`);
      return deref(target);
    };
    const bodyOf = (path: string) => {
      const requestBody = deref(paths[path]!.post!.requestBody as Json);
      const content = requestBody.content as Record<string, { schema: Json }>;
      assert.ok(content["application/json"], `${path} takes a JSON body`);
      return deref(content["application/json"].schema);
    };
    return { doc, paths, deref, bodyOf };
  };
  const SUBMIT_PATHS = [
    "/api/v1/jobs/image/resize",
    "/api/v1/jobs/image/optimize",
    "/api/v1/jobs/image/watermark",
    "/api/v1/jobs/image/colors",
    "/api/v1/jobs/image/ai/keywords",
    "/api/v1/jobs/video/thumbnail",
    "/api/v1/jobs/audio/convert",
    "/api/v1/jobs/analyze",
  ];

  test("GET /docs/json: an OpenAPI 3 document with every route and the submit body schemas", async () => {
    const { doc, paths, deref, bodyOf } = await openapi();
    assert.equal(typeof doc.openapi, "string");
    assert.match(doc.openapi as string, /^3\./);
    const expected: Array<[string, string]> = [
      ...SUBMIT_PATHS.map((path): [string, string] => [path, "post"]),
      ["/api/v1/jobs/{id}", "get"],
      ["/api/v1/jobs/{id}/stream", "get"],
      ["/api/v1/jobs", "get"],
      ["/api/v1/jobs/batch", "post"],
      ["/api/v1/jobs/batch", "get"],
      ["/api/v1/jobs/batch/{id}", "get"],
      ["/api/v1/queue/stats", "get"],
      ["/health", "get"],
      ["/health/live", "get"],
      ["/health/ready", "get"],
      ["/metrics", "get"],
    ];
    const missing = expected.filter(([path, method]) => !paths[path]?.[method]);
    assert.deepEqual(missing, [], `documented paths: ${Object.keys(paths).join(", ")}`);

    const resize = bodyOf("/api/v1/jobs/image/resize");
    const required = resize.required as string[];
    for (const field of ["width", "height", "source_bucket", "source_key", "dest_bucket", "dest_key"]) {
      assert.ok(required.includes(field), `resize requires ${field} (required: ${required.join(", ")})`);
    }
    const props = resize.properties as Record<string, Json>;
    const quality = deref(props.quality!);
    assert.equal(quality.default, 85);
    assert.equal(quality.maximum, 100);
    assert.equal(quality.minimum, 1);
    assert.equal(deref(props.width!).minimum, 1);
    assert.equal(deref(props.height!).minimum, 1);
    const optimize = bodyOf("/api/v1/jobs/image/optimize");
    assert.equal(deref((optimize.properties as Record<string, Json>).quality!).default, 80);
    for (const path of SUBMIT_PATHS) {
      const body = bodyOf(path);
      assert.ok(body.properties && typeof body.properties === "object", `${path} documents its fields`);
    }
  });

  test("GET /docs/json: optional fields with a default (resize quality, ...) are not marked required", async () => {
    // The API contract: quality is optional, default 85; a client generated from the document must not
    // have to send it. The API does accept bodies without them (defaults are applied).
    const { bodyOf } = await openapi();
    const wrong: string[] = [];
    for (const path of SUBMIT_PATHS) {
      const body = bodyOf(path);
      const props = body.properties as Record<string, Json>;
      for (const name of (body.required as string[] | undefined) ?? []) {
        if (props[name]?.default !== undefined) wrong.push(`${path}: ${name}`);
      }
    }
    assert.deepEqual(wrong, [], "fields with a default listed in `required`");
  });

  test("GET /docs/json: a wildcard route is documented with a named path parameter", async () => {
    const { paths } = await openapi();
    const wildcards = Object.keys(paths).filter((path) => path.includes("*"));
    assert.deepEqual(wildcards, [], "no path names a parameter *");
    const ladder = paths["/api/v1/jobs/{id}/ladder/{path}"]?.get;
    assert.ok(ladder, `documented paths: ${Object.keys(paths).join(", ")}`);
    const params = (ladder.parameters as Json[]).map((p) => [p.in, p.name, p.required]);
    assert.deepEqual(
      params.filter(([where]) => where === "path"),
      [
        ["path", "id", true],
        ["path", "path", true],
      ],
    );
  });

  test("GET /docs serves the interactive reference as HTML (no key needed)", async () => {
    for (const path of ["/docs", "/docs/"]) {
      const res = await get(path, { key: null });
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get("content-type") ?? "", /^text\/html/, path);
      assert.match(await res.text(), /<html/i, path);
    }
  });

  test("X-Request-ID is echoed (public and /api/v1 routes, errors too) or generated when absent", async () => {
    for (const [path, init] of [
      ["/health/live", { key: null }],
      ["/metrics", { key: null }],
      ["/api/v1/queue/stats", {}],
      ["/api/v1/queue/stats", { key: null }],
      [`/api/v1/jobs/${randomUUID()}`, {}],
    ] as const) {
      const id = `trace-${randomUUID()}`;
      const res = await get(path, { ...init, headers: { "X-Request-ID": id } });
      await res.arrayBuffer();
      assert.equal(res.headers.get("x-request-id"), id, `${path} (${res.status}) echoes X-Request-ID`);
    }
    const id = `trace-${randomUUID()}`;
    const res = await stack.request("/api/v1/jobs/image/resize", {
      method: "POST",
      json: { ...location(), width: 10, height: 10 },
      headers: { "X-Request-ID": id },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT),
    });
    assert.equal(res.status, 202);
    assert.equal(res.headers.get("x-request-id"), id, "a submit echoes X-Request-ID");
    await res.arrayBuffer();
    const generated = await get("/health/live", { key: null });
    await generated.arrayBuffer();
    assert.ok(
      (generated.headers.get("x-request-id") ?? "").length > 0,
      "an id is generated when none is given",
    );
  });
});

describe("operations with the object store unreachable (storage.endpoint http://127.0.0.1:1)", () => {
  let api: TestStack;
  const get = (path: string) =>
    fetch(`${api.baseUrl}${path}`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT) });

  before(async () => {
    api = await startTestStack({ config: { storage: { endpoint: "http://127.0.0.1:1" } } });
  });
  after(async () => {
    await api?.close();
  });

  test("GET /health/ready: 503, object_store unhealthy with an error, queue_store healthy", async () => {
    const res = await get("/health/ready");
    assert.equal(res.status, 503);
    const body = await json(res);
    assertIso(body.timestamp, "timestamp");
    const deps = body.dependencies as Json;
    assertDependency(deps.object_store, "object_store", false);
    assertDependency(deps.queue_store, "queue_store", true);
  });

  test("GET /health: still 200, status unhealthy", async () => {
    const res = await get("/health");
    assert.equal(res.status, 200);
    const body = await json(res);
    assert.equal(body.status, "unhealthy");
    assertSystem(body.system);
    assertDependency((body.dependencies as Json).object_store, "object_store", false);
  });
});

describe("operations with Redis stopped", () => {
  let redis: TestRedis;
  let stack: TestStack;
  const get = (path: string, init: RequestInit = {}) =>
    stack.request(path, { signal: AbortSignal.timeout(REQUEST_TIMEOUT), ...init });

  before(async () => {
    redis = await startTestRedis();
    stack = await startTestStack({ redis });
    // Some figures exist before Redis goes away.
    const res = await get("/api/v1/jobs/image/resize", {
      method: "POST",
      body: JSON.stringify({ ...location(), width: 8, height: 8 }),
      headers: { "content-type": "application/json" },
    });
    assert.equal(res.status, 202);
    await redis.stop();
    // Readiness notices once the connection has dropped.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const ready = await get("/health/ready");
      await ready.arrayBuffer();
      if (ready.status === 503) break;
      if (Date.now() > deadline) assert.fail("/health/ready never reported Redis down");
      await sleep(50);
    }
  });
  after(async () => {
    await stack?.close();
    await redis?.stop();
  });

  test("GET /health/ready: 503 with queue_store unhealthy and an error", async () => {
    const res = await get("/health/ready");
    assert.equal(res.status, 503);
    const body = await json(res);
    assertDependency((body.dependencies as Json).queue_store, "queue_store", false);
    assertDependency((body.dependencies as Json).object_store, "object_store", true);
  });

  test("GET /health: 200 with status unhealthy", async () => {
    const res = await get("/health");
    assert.equal(res.status, 200);
    const body = await json(res);
    assert.equal(body.status, "unhealthy");
    assertSystem(body.system);
    assertDependency((body.dependencies as Json).queue_store, "queue_store", false);
  });

  test("GET /health/live: still 200", async () => {
    const res = await get("/health/live");
    assert.equal(res.status, 200);
    await res.arrayBuffer();
  });

  test("GET /api/v1/queue/stats: 500 {error}", async () => {
    const res = await get("/api/v1/queue/stats");
    assert.equal(res.status, 500);
    const body = await json(res);
    assert.deepEqual(Object.keys(body), ["error"]);
    assert.equal(typeof body.error, "string");
  });

  test("a submit answers 503 {error} instead of hanging", async () => {
    const res = await get("/api/v1/jobs/image/resize", {
      method: "POST",
      body: JSON.stringify({ ...location(), width: 8, height: 8 }),
      headers: { "content-type": "application/json" },
    });
    assert.equal(res.status, 503);
    const body = await json(res);
    assert.deepEqual(Object.keys(body), ["error"]);
    assert.equal(typeof body.error, "string");
  });

  test("GET /metrics: still 200 with the process metrics", async () => {
    const res = await get("/metrics");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/plain/);
    const { samples } = parseExposition(await res.text());
    assert.ok(samples.some((s) => s.name === "process_cpu_seconds_total"));
    assert.ok(samples.some((s) => s.name === "nodejs_heap_size_total_bytes"));
  });
});

describe("a Redis outage in the log", () => {
  let dir: string;
  let server: RedisServerProcess | undefined;
  let stack: TestStack;
  const submit = () =>
    stack.request("/api/v1/jobs/image/resize", {
      method: "POST",
      json: { ...location(), width: 8, height: 8 },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT),
    });
  const lines = (from: number, message: string) => stack.logs.slice(from).filter((l) => l.msg === message);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "media-service-outage-"));
    server = await spawnRedisServer({ cwd: dir, args: ["--dir", dir, "--save", "", "--appendonly", "no"] });
    stack = await startTestStack({
      redis: { url: server.url, port: server.port, pid: server.pid, stop: async () => undefined },
    });
  });
  after(async () => {
    await stack?.close();
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test("down and back up are one line each; the 503s it causes are logged at debug, without a stack", async () => {
    assert.equal((await submit()).status, 202);
    const from = stack.logs.length;
    const port = server!.port;
    await server!.stop();
    server = undefined;
    const statuses = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const res = await submit();
      await res.arrayBuffer();
      statuses.add(res.status);
    }
    assert.deepEqual([...statuses], [503]);
    const during = stack.logs.slice(from);
    // Nothing a flood of refused requests writes lands above debug, or carries a stack.
    // What is told above debug is told once per outage: by each connection, and by the rate limiter
    // (its counts stay with this replica meanwhile).
    const once = [
      "redis connection error",
      "rate limit counts cannot reach Redis: each API replica limits on its own until it can",
    ];
    const loud = during.filter((l) => (l.level as number) >= 30 && !once.includes(l.msg as string));
    assert.deepEqual(loud, []);
    assert.ok(lines(from, once[1]!).length <= 1);
    assert.doesNotMatch(JSON.stringify(during), /"stack":"[^"]/, "a line carries a stack");
    // One line per connection (the commands' and the subscriber's) says Redis is down.
    const down = lines(from, "redis connection error");
    assert.ok(down.length >= 1 && down.length <= 2, JSON.stringify(down));
    assert.equal(lines(from, "request refused: queue store unavailable").length, 200);
    assert.ok(during.filter((l) => l.msg === "request").every((l) => l.level === 20));

    // Back up on the same port: one line per connection says so, and submits are accepted again.
    server = await spawnRedisServer({
      port,
      cwd: dir,
      args: ["--dir", dir, "--save", "", "--appendonly", "no"],
    });
    const deadline = Date.now() + 15_000;
    while ((await submit()).status !== 202) {
      if (Date.now() > deadline) assert.fail("submits never accepted again");
      await sleep(100);
    }
    while (lines(from, "redis connection restored").length < down.length) {
      if (Date.now() > deadline) assert.fail("a connection never said it was restored");
      await sleep(50);
    }
    assert.equal(lines(from, "redis connection restored").length, down.length);
    assert.equal(lines(from, "redis connection error").length, down.length);
  });
});
