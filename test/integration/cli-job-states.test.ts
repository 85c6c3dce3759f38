// The client commands on cancelled and retried jobs, as a person or a script runs them: the real CLI
// in a child process against a stack with no executor (jobs stay pending until a test cancels or
// fails them), Redis and the S3-protocol store. A cancelled job reads "cancelled" in `cancel`, `job`,
// `jobs` and `watch` / `submit --wait`, which exit 3 for it (1 stays a failure); `jobs --state`
// filters on it; `retry` names an existing retry rather than making a second, unless --force.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Job, JobSummary } from "../../core/jobs/records.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { clientEnv, runCli, said } from "../support/cli.js";
import { submit } from "../support/jobs.js";

const KEY = `cli-states-key-${randomUUID()}`;

let stack: TestStack;
const dir = mkdtempSync(join(tmpdir(), "cli-states-"));

before(async () => {
  stack = await startTestStack({ apiKeys: [KEY] });
});
after(async () => {
  await stack?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** What a person's shell would hold: the API and its key. */
const shellEnv = () => clientEnv(stack.baseUrl, KEY, { NO_COLOR: "1" });
const cli = (args: string[]) => runCli(args, shellEnv());

const colors = () =>
  submit(stack, "image/colors", { source_bucket: stack.bucket, source_key: "in/none.jpg" });
const thumbnail = () =>
  submit(stack, "video/thumbnail", {
    source_bucket: stack.bucket,
    source_key: "in/none.mp4",
    dest_bucket: stack.bucket,
    dest_key: `out/${randomUUID()}.jpg`,
  });

async function record(id: string): Promise<Job> {
  return (await (await stack.request(`/api/v1/jobs/${id}`)).json()) as Job;
}

describe("a cancelled job reads cancelled", () => {
  test("cancel, job and jobs say cancelled; watch exits 3 with it; a failed job still exits 1", async () => {
    const id = await colors();
    const cancelled = await cli(["cancel", id]);
    assert.equal(cancelled.code, 0, said(cancelled));
    assert.equal(cancelled.stdout.trim(), `job ${id} cancelled: cancelled by request`);

    const shown = await cli(["job", id]);
    assert.equal(shown.code, 0, said(shown));
    assert.match(shown.stdout, /^status:\s+cancelled$/m, said(shown));

    const watched = await cli(["watch", id]);
    assert.equal(watched.code, 3, said(watched));
    assert.match(watched.stderr, new RegExp(`^cancelled: job ${id}: cancelled by request$`, "m"));

    const failed = await colors();
    await stack.services.store.fail(failed, "source s3://b/in/none.jpg not found");
    const watchedFailed = await cli(["watch", failed]);
    assert.equal(watchedFailed.code, 1, said(watchedFailed));
    assert.match(watchedFailed.stderr, /^failed: job /m);
  });

  test("jobs --state cancelled lists the cancelled jobs only, --state failed the others; the table says cancelled", async () => {
    const [cancelled, failed] = [await thumbnail(), await thumbnail()];
    await stack.request(`/api/v1/jobs/${cancelled}/cancel`, { method: "POST" });
    await stack.services.store.fail(failed, "source s3://b/in/none.mp4 not found");
    const list = async (...args: string[]) => {
      const ran = await cli(["jobs", "--type", "video/thumbnail", ...args, "--json"]);
      assert.equal(ran.code, 0, said(ran));
      return (JSON.parse(ran.stdout) as { jobs: JobSummary[] }).jobs.map((j) => [j.id, j.status, j.state]);
    };
    assert.deepEqual(await list("--state", "cancelled"), [[cancelled, "failed", "cancelled"]]);
    assert.deepEqual(await list("--state", "failed"), [[failed, "failed", "failed"]]);
    assert.equal((await list("--status", "failed")).length, 2, "--status failed keeps both");

    const table = await cli(["jobs", "--type", "video/thumbnail", "--status", "failed"]);
    assert.match(
      table.stdout,
      new RegExp(`^${cancelled}\\s+video_thumbnail\\s+cancelled\\s`, "m"),
      said(table),
    );
    assert.match(table.stdout, new RegExp(`^${failed}\\s+video_thumbnail\\s+failed\\s`, "m"), said(table));
    const refused = await cli(["jobs", "--state", "gone"]);
    assert.equal(refused.code, 2, said(refused));
  });

  test("submit --wait on a job cancelled while it waits exits 3 and says cancelled", async () => {
    const before = new Set(
      (await stack.services.store.listJobs({ limit: 1000, type: "image_colors" })).jobs.map((j) => j.id),
    );
    const args = ["submit", "image/colors", "--source", `s3://${stack.bucket}/in/waited.jpg`, "--wait"];
    const running = runCli(args, shellEnv());
    let id: string | undefined;
    const deadline = Date.now() + 60_000;
    while (!id) {
      assert.ok(Date.now() < deadline, "the submitted job never appeared");
      const page = await stack.services.store.listJobs({ limit: 10, type: "image_colors" });
      id = page.jobs.find((j) => !before.has(j.id))?.id;
      if (!id) await new Promise((r) => setTimeout(r, 50));
    }
    // Its stream is open once the job has subscribers; cancelling before that is as good (the
    // stream opens on a finished job and ends at once).
    await stack.request(`/api/v1/jobs/${id}/cancel`, { method: "POST" });
    const ran = await running;
    assert.equal(ran.code, 3, said(ran));
    assert.match(ran.stderr, new RegExp(`^cancelled: job ${id}: cancelled by request$`, "m"));
  });

  test("batch submit --wait on a batch cancelled while it waits counts its jobs cancelled, not failed, and exits 3", async () => {
    const batchId = `cli-cancelled-${randomUUID()}`;
    const file = join(dir, "cancelled.jsonl");
    const entry = { type: "image_colors", source_bucket: stack.bucket, source_key: "in/none.jpg" };
    await writeFile(file, `${JSON.stringify(entry)}\n${JSON.stringify(entry)}\n`);
    const running = runCli(["batch", "submit", file, "--batch-id", batchId, "--wait"], shellEnv());
    const deadline = Date.now() + 60_000;
    while ((await stack.request(`/api/v1/jobs/batch/${batchId}`)).status !== 200) {
      assert.ok(Date.now() < deadline, "the batch never appeared");
      await new Promise((r) => setTimeout(r, 50));
    }
    const cancel = await stack.request(`/api/v1/jobs/batch/${batchId}/cancel`, { method: "POST" });
    assert.equal(cancel.status, 200);
    const ran = await running;
    assert.equal(ran.code, 3, said(ran));
    assert.match(
      ran.stdout,
      new RegExp(`^batch ${batchId} failed: 0 completed, 0 failed, 2 cancelled, of 2$`, "m"),
    );
    assert.match(ran.stdout, /^[0-9a-f-]{36} +image_colors +cancelled +cancelled by request$/m, said(ran));
    const batch = (await (await stack.request(`/api/v1/jobs/batch/${batchId}`)).json()) as {
      batch: { failed: number; cancelled: number };
    };
    assert.deepEqual([batch.batch.failed, batch.batch.cancelled], [2, 2]);
  });

  test("stats counts the cancelled apart from the failed", async () => {
    const ran = await cli(["stats"]);
    assert.equal(ran.code, 0, said(ran));
    const header = ran.stdout.split("\n")[0]!;
    assert.match(header, /FAILED\s+CANCELLED$/);
    const stats = (await (await stack.request("/api/v1/queue/stats")).json()) as {
      queues: Record<string, { failed: number; cancelled: number }>;
    };
    const q = stats.queues.video_thumbnail!;
    assert.ok(q.cancelled >= 1);
    assert.match(
      ran.stdout,
      new RegExp(
        `^video_thumbnail\\s+\\d+\\s+\\d+\\s+\\d+\\s+${q.failed - q.cancelled}\\s+${q.cancelled}$`,
        "m",
      ),
      said(ran),
    );
  });
});

describe("retry", () => {
  test("retry makes one retry; again it names that one; --force makes another, which job shows as retried as", async () => {
    const id = await colors();
    await stack.request(`/api/v1/jobs/${id}/cancel`, { method: "POST" });
    const first = await cli(["retry", id]);
    assert.equal(first.code, 0, said(first));
    const firstId = first.stdout.trim();
    assert.equal((await record(id)).retried_as, firstId);

    const again = await cli(["retry", id]);
    assert.equal(again.code, 0, said(again));
    assert.equal(again.stdout.trim(), firstId, "the existing retry's id");
    assert.match(
      again.stderr,
      new RegExp(`job ${id} was retried already as ${firstId}; --force makes another`),
    );

    const forced = await cli(["retry", id, "--force"]);
    assert.equal(forced.code, 0, said(forced));
    const forcedId = forced.stdout.trim();
    assert.notEqual(forcedId, firstId);
    assert.equal((await record(forcedId)).retry_of, id);

    const shown = await cli(["job", id]);
    assert.match(shown.stdout, new RegExp(`^retried as:\\s+${forcedId}$`, "m"), said(shown));
  });
});
