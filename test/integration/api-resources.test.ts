// Per-job `resources` over HTTP, single and batch: bounded by kubernetes.max_resources (compared as
// quantities, so 8192Mi is 8Gi), zero refused, and a refused request writing nothing.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startTestStack, type TestStack } from "../support/api.js";

type Body = Record<string, unknown>;

let stack: TestStack;
/** The same Redis, with smaller maximums configured. */
let small: TestStack;

before(async () => {
  stack = await startTestStack({ apiKeys: ["resources-test-key"] });
  small = await startTestStack({
    apiKeys: ["resources-test-key"],
    redis: stack.redis,
    config: { kubernetes: { max_resources: { cpu: "1500m", memory: "3Gi" } } },
  });
});
after(async () => {
  await small?.close();
  await stack?.close();
});

const RESIZE = "/api/v1/jobs/image/resize";
const resize = (resources: Body): Body => ({
  source_bucket: "media-in",
  source_key: "uploads/photo.jpg",
  dest_bucket: "media-out",
  dest_key: "results/photo.webp",
  width: 320,
  height: 200,
  resources,
});
const colors = (resources?: Body): Body => ({
  type: "image_colors",
  source_bucket: "media-in",
  source_key: `uploads/${Math.random().toString(36).slice(2)}.jpg`,
  ...(resources ? { resources } : {}),
});

async function post(on: TestStack, path: string, json: unknown): Promise<{ status: number; body: Body }> {
  const res = await on.request(path, { method: "POST", json });
  const text = await res.text();
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/, text);
  return { status: res.status, body: JSON.parse(text) as Body };
}

/** 400 with exactly `{error}`; returns the message. */
async function refused(on: TestStack, path: string, json: unknown): Promise<string> {
  const { status, body } = await post(on, path, json);
  assert.equal(status, 400, `${JSON.stringify(json)} should be refused: ${JSON.stringify(body)}`);
  assert.deepEqual(Object.keys(body), ["error"]);
  return body.error as string;
}

async function resourcesOf(on: TestStack, id: string): Promise<unknown> {
  const res = await on.request(`/api/v1/jobs/${id}`);
  assert.equal(res.status, 200);
  return ((await res.json()) as Body).resources;
}

async function writtenState(): Promise<unknown> {
  const list = await stack.request("/api/v1/jobs?limit=1");
  const stats = await stack.request("/api/v1/queue/stats");
  return { total: ((await list.json()) as Body).total, stats: await stats.json() };
}

describe("per-job resources on a single submission", () => {
  test("over the maximum: 400 naming the field, the value and the limit", async () => {
    const before = await writtenState();
    assert.equal(
      await refused(stack, RESIZE, resize({ memory: "16Gi" })),
      "resources.memory must be a quantity such as 512Mi or 2Gi, more than zero and at most 8Gi (kubernetes.max_resources.memory); got 16Gi",
    );
    assert.equal(
      await refused(stack, RESIZE, resize({ cpu: "5" })),
      "resources.cpu must be a quantity such as 500m or 2, more than zero and at most 4 (kubernetes.max_resources.cpu); got 5",
    );
    // Just over, in other units than the maximum's.
    assert.equal(
      await refused(stack, RESIZE, resize({ cpu: "4001m", memory: "1Gi" })),
      "resources.cpu must be a quantity such as 500m or 2, more than zero and at most 4 (kubernetes.max_resources.cpu); got 4001m",
    );
    assert.match(
      await refused(stack, RESIZE, resize({ memory: "8193Mi" })),
      /^resources\.memory must be a quantity .*; got 8193Mi$/,
    );
    assert.match(
      await refused(stack, RESIZE, resize({ memory: "9G" })),
      /^resources\.memory must be a quantity .*; got 9G$/,
    );
    assert.match(
      await refused(stack, RESIZE, resize({ memory: "9e9" })),
      /^resources\.memory must be a quantity .*; got 9e9$/,
    );
    assert.deepEqual(await writtenState(), before, "refused requests wrote nothing");
  });

  test("at the maximum, in any units: accepted and recorded as submitted", async () => {
    for (const resources of [
      { cpu: "4", memory: "8Gi" },
      { cpu: "4000m", memory: "8192Mi" },
      { memory: "8589934592" },
      { cpu: "250m", memory: "512Mi" },
      { cpu: "0.5" },
    ]) {
      const { status, body } = await post(stack, RESIZE, resize(resources));
      assert.equal(status, 202, JSON.stringify(body));
      assert.deepEqual(await resourcesOf(stack, body.job_id as string), resources);
    }
  });

  test("zero: 400 naming the field", async () => {
    const before = await writtenState();
    const zeros: Array<Record<string, string>> = [
      { cpu: "0" },
      { cpu: "0m" },
      { cpu: "0.0" },
      { memory: "0" },
      { memory: "0Mi" },
    ];
    for (const resources of zeros) {
      const [field, value] = Object.entries(resources)[0]!;
      assert.equal(
        await refused(stack, RESIZE, resize(resources)),
        `resources.${field} must be a quantity such as ${field === "cpu" ? "500m or 2" : "512Mi or 2Gi"}, more than zero and at most ${field === "cpu" ? "4" : "8Gi"} (kubernetes.max_resources.${field}); got ${value}`,
      );
    }
    assert.deepEqual(await writtenState(), before);
  });

  test("a quantity Kubernetes would refuse: 400 naming the field", async () => {
    assert.match(
      await refused(stack, RESIZE, resize({ memory: "512K" })),
      /^resources\.memory must be a quantity such as 512Mi or 2Gi, more than zero and at most 8Gi \(kubernetes\.max_resources\.memory\); got 512K$/,
    );
    assert.match(await refused(stack, RESIZE, resize({ cpu: "1Gi" })), /resources\.cpu/);
  });

  test("the configured maximums are the ones applied", async () => {
    assert.equal(
      await refused(small, RESIZE, resize({ cpu: "2" })),
      "resources.cpu must be a quantity such as 500m or 2, more than zero and at most 1500m (kubernetes.max_resources.cpu); got 2",
    );
    assert.equal(
      await refused(small, RESIZE, resize({ memory: "4Gi" })),
      "resources.memory must be a quantity such as 512Mi or 2Gi, more than zero and at most 3Gi (kubernetes.max_resources.memory); got 4Gi",
    );
    const { status } = await post(small, RESIZE, resize({ cpu: "1.5", memory: "3072Mi" }));
    assert.equal(status, 202);
  });
});

describe("per-job resources on a batch entry", () => {
  test("an entry over the maximum: 400 naming the entry, and nothing is written", async () => {
    const before = await writtenState();
    const id = `resources-${Math.random().toString(36).slice(2)}`;
    assert.equal(
      await refused(stack, "/api/v1/jobs/batch", {
        batch_id: id,
        jobs: [colors(), colors({ memory: "16Gi" }), colors()],
      }),
      "jobs[1].resources.memory must be a quantity such as 512Mi or 2Gi, more than zero and at most 8Gi (kubernetes.max_resources.memory); got 16Gi",
    );
    assert.equal(
      await refused(stack, "/api/v1/jobs/batch", { jobs: [colors({ cpu: "8", memory: "1Gi" })] }),
      "jobs[0].resources.cpu must be a quantity such as 500m or 2, more than zero and at most 4 (kubernetes.max_resources.cpu); got 8",
    );
    assert.equal((await stack.request(`/api/v1/jobs/batch/${id}`)).status, 404);
    assert.deepEqual(await writtenState(), before, "no job of a refused batch was written");
  });

  test("entries at the maximum are accepted and recorded as submitted", async () => {
    const resources = [{ cpu: "4", memory: "8Gi" }, { cpu: "4000m", memory: "8192Mi" }, undefined];
    const { status, body } = await post(stack, "/api/v1/jobs/batch", {
      jobs: resources.map((r) => colors(r)),
    });
    assert.equal(status, 201, JSON.stringify(body));
    const ids = body.job_ids as string[];
    for (const [i, id] of ids.entries()) assert.deepEqual(await resourcesOf(stack, id), resources[i]);
  });

  test("an entry with a zero quantity: 400 naming the entry", async () => {
    const before = await writtenState();
    assert.equal(
      await refused(stack, "/api/v1/jobs/batch", { jobs: [colors(), colors({ cpu: "0" })] }),
      "jobs[1].resources.cpu must be a quantity such as 500m or 2, more than zero and at most 4 (kubernetes.max_resources.cpu); got 0",
    );
    assert.equal(
      await refused(stack, "/api/v1/jobs/batch", { jobs: [colors({ memory: "0Mi" })] }),
      "jobs[0].resources.memory must be a quantity such as 512Mi or 2Gi, more than zero and at most 8Gi (kubernetes.max_resources.memory); got 0Mi",
    );
    assert.deepEqual(await writtenState(), before);
  });

  test("a batch on the stack with smaller maximums is bounded by them", async () => {
    assert.equal(
      await refused(small, "/api/v1/jobs/batch", {
        jobs: [colors({ memory: "3Gi" }), colors({ memory: "3073Mi" })],
      }),
      "jobs[1].resources.memory must be a quantity such as 512Mi or 2Gi, more than zero and at most 3Gi (kubernetes.max_resources.memory); got 3073Mi",
    );
  });
});
