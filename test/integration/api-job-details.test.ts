// What a page showing jobs needs, through the whole local stack: a job's timeline (GET
// /jobs/{id}/events), the links to its objects (GET /jobs/{id}/links), the figures per minute (GET
// /stats/history) and every job's changes as Server-Sent Events (GET /events), each seen only by
// those who may see the job.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import sharp from "sharp";
import type { History, TimelineEntry } from "../../core/jobs/records.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { finished } from "../support/jobs.js";
import { openStream } from "../support/sse.js";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.js";

const ALICE = "alice-key-0123456789";
const BOB = "bob-key-0123456789";
const ADMIN = "admin-key-0123456789";

let stack: TestStack;
let receiver: WebhookReceiver;

before(async () => {
  receiver = await startWebhookReceiver({ answer: (n) => ({ status: n === 0 ? 503 : 200 }) });
  stack = await startTestStack({
    executor: true,
    notifier: true,
    config: {
      server: {
        clients: [
          { name: "alice", keys: [ALICE] },
          { name: "bob", keys: [BOB] },
          { name: "ops", keys: [ADMIN], admin: true },
        ],
      },
      webhooks: { allow_private: true, retry_initial_delay: "100ms", retry_max_delay: "400ms" },
    },
  });
  const photo = await sharp({ create: { width: 320, height: 200, channels: 3, background: "#c83c1e" } })
    .jpeg()
    .toBuffer();
  await stack.services.s3.send(
    new PutObjectCommand({
      Bucket: stack.bucket,
      Key: "in/photo.jpg",
      Body: photo,
      ContentType: "image/jpeg",
    }),
  );
});
after(async () => {
  await stack?.close();
  await receiver?.close();
});

async function submit(key: string, path: string, body: Record<string, unknown>): Promise<string> {
  const res = await stack.request(`/api/v1/jobs/${path}`, { method: "POST", json: body, key });
  const json = (await res.json()) as { job_id: string; error?: string };
  assert.equal(res.status, 202, json.error);
  return json.job_id;
}

const resize = (dest: string, extra: Record<string, unknown> = {}) => ({
  source_bucket: stack.bucket,
  source_key: "in/photo.jpg",
  dest_bucket: stack.bucket,
  dest_key: dest,
  width: 160,
  height: 100,
  ...extra,
});

async function timeline(key: string, id: string): Promise<{ status: number; events: TimelineEntry[] }> {
  const res = await stack.request(`/api/v1/jobs/${id}/events`, { key });
  const body = (await res.json()) as { events: TimelineEntry[] };
  return { status: res.status, events: body.events };
}

describe("a job's timeline", () => {
  test("a completed job: submitted, claimed, started, its latest progress if any, completed, each webhook attempt", async () => {
    const id = await submit(
      ALICE,
      "image/resize",
      resize("out/timeline.jpg", { webhook_url: receiver.url, priority: 3 }),
    );
    assert.equal((await finished(stack, id)).status, "completed");
    await receiver.waitFor(2);
    let events: TimelineEntry[] = [];
    const deadline = Date.now() + 10_000;
    while (events.filter((e) => e.event === "webhook").length < 2 && Date.now() < deadline) {
      events = (await timeline(ALICE, id)).events;
      await new Promise((r) => setTimeout(r, 50));
    }
    // A job shorter than the runner's quiet start (runner/run-job.ts PROGRESS_QUIET_MS) writes no
    // progress, its completion says 100 %; a longer one keeps only its latest report.
    const progress = events.filter((e) => e.event === "progress");
    assert.ok(progress.length <= 1, "the latest report replaced the ones before it");
    const names = events.filter((e) => e.event !== "progress").map((e) => e.event);
    assert.deepEqual(names, ["submitted", "claimed", "started", "completed", "webhook", "webhook"]);
    const [submitted, claimed, started, , retry, delivered] = events.filter((e) => e.event !== "progress");
    assert.equal(submitted!.priority, 3);
    assert.match(claimed!.message ?? "", /local/);
    assert.equal(started!.attempt, 1);
    assert.deepEqual([retry!.result, retry!.status_code, retry!.attempt], ["retry", 503, 1]);
    assert.deepEqual([delivered!.result, delivered!.status_code, delivered!.attempt], ["delivered", 200, 2]);
    for (let i = 1; i < events.length; i++) {
      assert.ok(Date.parse(events[i]!.at) >= Date.parse(events[i - 1]!.at), "oldest first");
    }
  });

  test("another client's job and an unknown one are 404", async () => {
    const id = await submit(ALICE, "image/colors", {
      source_bucket: stack.bucket,
      source_key: "in/photo.jpg",
    });
    assert.equal((await timeline(BOB, id)).status, 404);
    assert.equal((await timeline(ADMIN, id)).status, 200);
    assert.equal((await timeline(ALICE, "no-such-job")).status, 404);
    await finished(stack, id);
  });
});

describe("a job's links", () => {
  test("the source at once, the output once completed; both fetch the objects", async () => {
    const id = await submit(ALICE, "image/resize", resize("out/linked.jpg"));
    const early = (await (await stack.request(`/api/v1/jobs/${id}/links`, { key: ALICE })).json()) as {
      source: { url: string; expires_at: string };
      output?: unknown;
    };
    assert.ok(early.source.url.includes("in/photo.jpg"));
    assert.ok(Date.parse(early.source.expires_at) > Date.now());
    await finished(stack, id);
    const res = await stack.request(`/api/v1/jobs/${id}/links`, { key: ALICE });
    assert.equal(res.headers.get("cache-control"), "no-store");
    const links = (await res.json()) as { source: { url: string }; output: { url: string } };
    const source = await fetch(links.source.url);
    assert.equal(source.status, 200);
    assert.equal((await sharp(Buffer.from(await source.arrayBuffer())).metadata()).width, 320);
    const output = await fetch(links.output.url);
    assert.equal(output.status, 200);
    assert.equal((await sharp(Buffer.from(await output.arrayBuffer())).metadata()).width, 160);
    assert.equal((await stack.request(`/api/v1/jobs/${id}/links`, { key: BOB })).status, 404);
  });

  test("a type that writes no file has no output link", async () => {
    const id = await submit(ALICE, "image/colors", {
      source_bucket: stack.bucket,
      source_key: "in/photo.jpg",
    });
    assert.equal((await finished(stack, id)).status, "completed");
    const links = (await (await stack.request(`/api/v1/jobs/${id}/links`, { key: ALICE })).json()) as object;
    assert.deepEqual(Object.keys(links), ["source"]);
  });
});

describe("figures per minute", () => {
  test("the current minute counts what ended in it, with durations; one point per minute", async () => {
    const before = (await (
      await stack.request("/api/v1/stats/history?minutes=5", { key: ADMIN })
    ).json()) as History;
    const ok = await submit(ADMIN, "image/resize", resize("out/history.jpg"));
    const bad = await submit(ADMIN, "image/colors", {
      source_bucket: stack.bucket,
      source_key: "in/missing.jpg",
    });
    await finished(stack, ok);
    await finished(stack, bad);
    const res = await stack.request("/api/v1/stats/history?minutes=5", { key: ADMIN });
    assert.equal(res.status, 200);
    const history = (await res.json()) as History;
    assert.equal(history.interval_seconds, 60);
    assert.equal(history.points.length, 5);
    const minutes = history.points.map((p) => Date.parse(p.at) / 60_000);
    assert.deepEqual(
      minutes.slice(1).map((m, i) => m - minutes[i]!),
      [1, 1, 1, 1],
    );
    // The jobs may have ended in the minute after the one read first: count over the whole window.
    const sum = (h: History, type: string, field: "completed" | "failed") =>
      h.points.reduce((n, p) => n + (p.by_type[type]?.[field] ?? 0), 0);
    assert.ok(sum(history, "image_resize", "completed") > sum(before, "image_resize", "completed"));
    assert.ok(sum(history, "image_colors", "failed") > sum(before, "image_colors", "failed"));
    const withDuration = history.points.filter((p) => (p.by_type.image_resize?.completed ?? 0) > 0);
    assert.ok(withDuration.length > 0);
    for (const p of withDuration) {
      assert.ok(p.by_type.image_resize!.p50_seconds! > 0);
      assert.ok(p.by_type.image_resize!.p95_seconds! >= p.by_type.image_resize!.p50_seconds!);
    }
    assert.ok(history.webhooks.delivered !== undefined);
    const refused = await stack.request("/api/v1/stats/history?minutes=1441", { key: ADMIN });
    assert.equal(refused.status, 400);
  });
});

describe("every job's changes as Server-Sent Events", () => {
  test("a client sees its own jobs go pending, processing, completed; not another's; an admin sees both", async () => {
    const headers = (key: string) => ({ "x-api-key": key });
    const alice = await openStream(`${stack.baseUrl}/api/v1/events`, headers(ALICE));
    const admin = await openStream(`${stack.baseUrl}/api/v1/events?type=image_resize`, headers(ADMIN));
    assert.equal(alice.status, 200);
    assert.match(String(alice.headers["content-type"]), /text\/event-stream/);
    const mine = await submit(ALICE, "image/resize", resize("out/sse-mine.jpg"));
    const theirs = await submit(BOB, "image/resize", resize("out/sse-theirs.jpg"));
    const colors = await submit(ALICE, "image/colors", {
      source_bucket: stack.bucket,
      source_key: "in/photo.jpg",
    });
    await alice.waitFor(
      (e) =>
        (e.json as { id: string; status: string }).id === colors &&
        (e.json as { status: string }).status === "completed",
      20_000,
    );
    await admin.waitFor(
      (e) =>
        (e.json as { id: string; status: string }).id === theirs &&
        (e.json as { status: string }).status === "completed",
      20_000,
    );
    await alice.waitFor(
      (e) =>
        (e.json as { id: string; status: string }).id === mine &&
        (e.json as { status: string }).status === "completed",
      20_000,
    );
    const seen = (s: typeof alice, id: string) =>
      s.events
        .filter((e) => (e.json as { id: string }).id === id)
        .map((e) => (e.json as { status: string }).status);
    assert.deepEqual(seen(alice, mine), ["pending", "processing", "completed"]);
    assert.deepEqual(seen(alice, theirs), [], "bob's job is not alice's to see");
    assert.deepEqual(seen(admin, theirs), ["pending", "processing", "completed"]);
    assert.deepEqual(seen(admin, colors), [], "type=image_resize leaves image_colors out");
    for (const e of alice.events) {
      assert.equal(e.event, "job");
      assert.match(e.id ?? "", /^\d+-\d+$/);
    }
    // Reconnecting with the id of an event told before: the changes since then are told again.
    const firstOfMine = alice.events.find((e) => (e.json as { id: string }).id === mine)!;
    alice.close();
    admin.close();
    const resumed = await openStream(`${stack.baseUrl}/api/v1/events`, {
      ...headers(ALICE),
      "last-event-id": firstOfMine.id!,
    });
    await resumed.waitFor(
      (e) =>
        (e.json as { id: string; status: string }).id === colors &&
        (e.json as { status: string }).status === "completed",
      10_000,
    );
    assert.deepEqual(seen(resumed, mine), ["processing", "completed"]);
    resumed.close();
  });
});
