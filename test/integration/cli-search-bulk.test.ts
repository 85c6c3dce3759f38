// `media-service jobs` with its search options and `media-service bulk cancel|retry` as a person or a
// script runs them: the real CLI in a child process against a real stack (API, Redis, the embedded
// S3-protocol store; no executor, so jobs stay pending until cancelled or failed).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { JobSummary } from "../../core/jobs/records.js";
import type { JobStore } from "../../core/store/store.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { clientEnv, runCli, said } from "../support/cli.js";
import { makeSpec } from "../support/store.js";

const KEY = "cli-search-key-0123456789";
const ADMIN = "cli-admin-key-0123456789";

let stack: TestStack;
let store: JobStore;
/** The jobs of client "searcher": job i has source in/<i % 10>/<i>.jpg and request id r-<i / 10>. */
let ids: string[] = [];

before(async () => {
  stack = await startTestStack({
    apiKeys: [],
    config: {
      server: {
        clients: [
          { name: "searcher", keys: [KEY] },
          { name: "ops", keys: [ADMIN], admin: true },
        ],
      },
    },
  });
  store = stack.services.store;
  const specs = Array.from({ length: 300 }, (_, i) =>
    makeSpec(i % 3 === 0 ? "image_colors" : "image_resize", {
      source_key: `in/${i % 10}/${i}.jpg`,
      dest_key: `out/${i}.webp`,
      request_id: `r-${Math.floor(i / 10)}`,
    }),
  );
  ids = (await store.submit(specs, undefined, { name: "searcher", admin: false })).jobIds;
});
after(async () => {
  await stack?.close();
});

/** Runs `media-service ARGS` to its end with the stack's address and `key` in its environment. */
const cli = (args: string[], key = KEY) => runCli(args, clientEnv(stack.baseUrl, key));

async function json<T>(args: string[], key = KEY): Promise<T> {
  const ran = await cli([...args, "--json"], key);
  assert.equal(ran.code, 0, said(ran));
  return JSON.parse(ran.stdout) as T;
}

const sorted = (list: string[]) => [...list].sort();

describe("media-service jobs: search", () => {
  test("--search finds a job by id prefix or request id; the table shows source, output and error", async () => {
    const id = ids[124]!;
    const found = await json<{ jobs: JobSummary[]; total: number }>(["jobs", "--search", id.slice(0, 8)]);
    assert.deepEqual(
      found.jobs.map((j) => j.id),
      [id],
    );
    const byRequest = await json<{ jobs: JobSummary[] }>(["jobs", "--search", "r-12"]);
    assert.deepEqual(sorted(byRequest.jobs.map((j) => j.id)), sorted(ids.slice(120, 130)));
    await store.fail(id, "source s3://test-bucket/in/4/124.jpg not found");
    const table = await cli(["jobs", "--id-prefix", id]);
    assert.equal(table.code, 0, said(table));
    assert.match(table.stdout, /^ID +TYPE +STATUS +CREATED +DURATION +SOURCE +OUTPUT +ERROR$/m);
    assert.match(
      table.stdout,
      new RegExp(
        `^${id} +image_resize +failed +\\S+ +test-bucket/in/4/124\\.jpg +test-bucket/out/124\\.webp +source s3://test-bucket/in/4/124\\.jpg not found$`,
        "m",
      ),
    );
  });

  test("--source and --dest take s3:// prefixes; --request-id is matched whole; --all follows the pages", async () => {
    const bySource = await json<{ jobs: JobSummary[] }>([
      "jobs",
      "--source",
      "s3://test-bucket/in/4/",
      "--limit",
      "7",
      "--all",
    ]);
    assert.deepEqual(sorted(bySource.jobs.map((j) => j.id)), sorted(ids.filter((_, i) => i % 10 === 4)));
    const byDest = await json<{ jobs: JobSummary[] }>(["jobs", "--dest", "test-bucket/out/29."]);
    assert.deepEqual(sorted(byDest.jobs.map((j) => j.id)), sorted([ids[29]!]));
    const byRequest = await json<{ jobs: JobSummary[] }>([
      "jobs",
      "--request-id",
      "r-2",
      "--type",
      "image_colors",
    ]);
    assert.deepEqual(
      sorted(byRequest.jobs.map((j) => j.id)),
      sorted(ids.slice(20, 30).filter((_, k) => (20 + k) % 3 === 0)),
    );
  });

  test("--client is for admin keys: a client is refused in one line; an admin lists that client's jobs", async () => {
    const refused = await cli(["jobs", "--client", "someone-else"]);
    assert.equal(refused.code, 1, said(refused));
    assert.match(refused.stderr, /^error: .*client filter is for admin keys/m);
    assert.doesNotMatch(refused.stderr, /^\s+at /m, "no stack trace");
    const admin = await json<{ total: number }>(["jobs", "--client", "searcher", "--limit", "1"], ADMIN);
    assert.equal(admin.total, 300);
  });
});

describe("media-service bulk", () => {
  test("retry and cancel by filter: the dry run's count, then each job once, however often it runs", async () => {
    for (const id of ids.filter((_, i) => i % 3 !== 0 && i >= 200)) {
      await store.fail(id, "transient: storage unreachable (gave up after 3 attempts)");
    }
    // Every failed resize of the client, those the tests before failed included.
    const listed = await json<{ jobs: JobSummary[] }>([
      "jobs",
      "--status",
      "failed",
      "--type",
      "image_resize",
      "--all",
    ]);
    const resizes = listed.jobs.map((j) => j.id);
    assert.ok(resizes.length >= 66);

    const dry = await cli(["bulk", "retry", "--type", "image/resize", "--since", "1h", "--dry-run"]);
    assert.equal(dry.code, 0, said(dry));
    assert.equal(dry.stdout, `${resizes.length} jobs would be retried (dry run)\n`);

    const retried = await json<{
      changed: number;
      matched: number;
      jobs: Array<{ id: string; outcome: string }>;
    }>(["bulk", "retry", "--type", "image_resize", "--since", "1h", "--limit", "25"]);
    assert.equal(retried.matched, resizes.length);
    assert.equal(retried.changed, resizes.length);
    assert.deepEqual(
      sorted(retried.jobs.filter((j) => j.outcome === "retried").map((j) => j.id)),
      sorted(resizes),
      "each failed resize retried once, over several calls of 25",
    );

    const repeated = await cli(["bulk", "retry", "--type", "image_resize", "--since", "1h"]);
    assert.equal(
      repeated.stdout,
      `retried 0 of ${resizes.length} matching jobs; skipped: ${resizes.length} already retried\n`,
      "a repeated run retries no job twice",
    );

    const pending = await json<{ total: number }>(["jobs", "--status", "pending", "--limit", "1"]);
    const dryCancel = await cli(["bulk", "cancel", "--dry-run"]);
    assert.equal(dryCancel.stdout, `${pending.total} jobs would be cancelled (dry run)\n`);
    const cancelled = await cli(["bulk", "cancel", "--limit", "100"]);
    assert.equal(cancelled.code, 0, said(cancelled));
    assert.equal(cancelled.stdout, `cancelled ${pending.total} of ${pending.total} matching jobs\n`);
    const again = await cli(["bulk", "cancel"]);
    assert.equal(again.stdout, "cancelled 0 of 0 matching jobs\n", "a repeated run cancels nothing");
  });

  test("by id, and command lines it refuses before sending anything", async () => {
    const [a, b] = await store
      .submit([makeSpec("image_colors"), makeSpec("image_colors")], undefined, {
        name: "searcher",
        admin: false,
      })
      .then((s) => s.jobIds);
    const done = await cli(["bulk", "cancel", a!, b!, "00000000-0000-0000-0000-000000000000"]);
    assert.equal(done.code, 0, said(done));
    assert.equal(done.stdout, "cancelled 2 of 2 matching jobs; skipped: 1 not found\n");
    const both = await cli(["bulk", "cancel", a!, "--type", "image_colors"]);
    assert.equal(both.code, 2, said(both));
    assert.match(both.stderr, /give job ids or filter options, not both/);
    const since = await cli(["bulk", "retry", "--since", "yesterday"]);
    assert.equal(since.code, 2, said(since));
    assert.match(since.stderr, /--since: invalid duration "yesterday"/);
    const wrong = await cli(["bulk", "retry", "--status", "pending"]);
    assert.equal(wrong.code, 1, said(wrong));
    assert.match(wrong.stderr, /filter\.status must be failed\b/);
  });
});
