// The client commands of `media-service` as a person or a script runs them: the real CLI in a child
// process against a real stack (API, local executor and runner processes, Redis, the S3-protocol
// store), with MEDIA_SERVICE_URL, MEDIA_SERVICE_API_KEY and the store's S3_* settings in its
// environment. The progress bar is checked on a terminal: inside tmux, whose pane is captured.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stripVTControlCharacters } from "node:util";
import { after, before, describe, test } from "node:test";
import { HeadObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { runnerEntry } from "../../controller/runner-process.js";
import type { Batch, Job, JobSummary, QueueStats } from "../../core/jobs/records.js";
import { CLI_RUN_LIMIT_MS, collect, type Ran } from "../support/cli.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { makeAudio, removeMediaDirs } from "../support/av.js";
import { makeImage } from "../support/media.js";
import { freePort } from "../support/ports.js";

const ROOT = new URL("../../", import.meta.url).pathname;
const KEY = `cli-key-${randomUUID()}`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A child CLI gets this long; every command here ends well within it. */
/** The escape that starts a terminal's colour codes. */
const ESC = "\u001b";

let stack: TestStack;
/** A second stack on the same Redis, without an executor: its jobs stay pending. */
let idle: TestStack;
let dir: string;
let configFile: string;

before(async () => {
  stack = await startTestStack({ executor: true, apiKeys: [KEY] });
  idle = await startTestStack({ apiKeys: [KEY], redis: stack.redis });
  dir = await mkdtemp(join(tmpdir(), "media-service-cli-"));
  configFile = join(dir, "config.yaml");
  await writeFile(configFile, "{}\n");
  const photo = await makeImage({ width: 64, height: 48, format: "png" });
  await writeFile(join(dir, "photo.png"), photo);
  // The source the job commands use, there whether or not `put` works (put's own test uploads it again).
  await stack.services.s3.send(
    new PutObjectCommand({ Bucket: stack.bucket, Key: "cli/photo.png", Body: photo }),
  );
});
after(async () => {
  await idle?.close();
  await stack?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  removeMediaDirs();
});

/** What a person's shell would hold: the API, its key and the store, and nothing of this process. */
function cliEnv(
  target: TestStack = stack,
  extra: Record<string, string | undefined> = {},
): Record<string, string> {
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? dir,
    CONFIG_FILE: configFile,
    MEDIA_SERVICE_URL: target.baseUrl,
    MEDIA_SERVICE_API_KEY: KEY,
    S3_ENDPOINT: target.s3.url,
    S3_ACCESS_KEY_ID: target.s3.accessKeyId,
    S3_SECRET_ACCESS_KEY: target.s3.secretAccessKey,
    S3_REGION: target.s3.region,
    ...extra,
  };
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

function cliArgv(args: string[]): string[] {
  const entry = runnerEntry();
  return [process.execPath, ...entry.execArgv, entry.path, ...args];
}

/** Starts `media-service ARGS`, stdout and stderr piped. */
function spawnCli(args: string[], env: Record<string, string> = cliEnv()) {
  const [command, ...rest] = cliArgv(args);
  return spawn(command!, rest, { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
}

/** Runs `media-service ARGS` to its end, stdout and stderr piped. */
function cli(args: string[], env: Record<string, string> = cliEnv()): Promise<Ran> {
  return collect(spawnCli(args, env), args);
}

/** Exit code and output, for assertion messages. */
const said = (r: Ran) => `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;

/** A command that succeeds, its stdout parsed as the one JSON document --json prints. */
async function json<T>(args: string[], env?: Record<string, string>): Promise<T> {
  const ran = await cli([...args, "--json"], env);
  assert.equal(ran.code, 0, said(ran));
  assert.equal(ran.stdout.trimEnd().split("\n").length, 1, `one line: ${ran.stdout}`);
  return JSON.parse(ran.stdout) as T;
}

/** A failure says what went wrong in one line, never with a stack trace. */
function assertOneLineError(ran: Ran, code: number, message: RegExp): void {
  assert.equal(ran.code, code, said(ran));
  assert.match(ran.stderr, message, said(ran));
  assert.doesNotMatch(ran.stderr, /^\s+at /m, "no stack trace");
}

const s3url = (key: string, target: TestStack = stack) => `s3://${target.bucket}/${key}`;

describe("help", () => {
  const COMMANDS = [
    ["put"],
    ["get"],
    ["submit"],
    ["batch"],
    ["batch", "submit"],
    ["jobs"],
    ["job"],
    ["watch"],
    ["cancel"],
    ["retry"],
    ["stats"],
    ["start"],
    ["api"],
    ["controller"],
    ["runner"],
    ["object-store"],
  ];

  test("media-service --help lists every command; each command's --help shows an example", async () => {
    const top = await cli(["--help"]);
    assert.equal(top.code, 0, said(top));
    assert.match(top.stdout, /^usage: media-service/);
    for (const [name] of COMMANDS) assert.match(top.stdout, new RegExp(`^  ${name}\\b`, "m"), name);
    assert.match(top.stdout, /^examples?:\n {2}\$ media-service /m);

    const helps = await Promise.all(COMMANDS.map((c) => cli([...c, "--help"])));
    for (const [i, help] of helps.entries()) {
      const name = COMMANDS[i]!.join(" ");
      assert.equal(help.code, 0, `${name}: ${said(help)}`);
      assert.match(help.stdout, new RegExp(`^usage: media-service ${name}`), name);
      assert.match(help.stdout, new RegExp(`^example:\\n {2}\\$ .*media-service ${name}`, "m"), name);
    }
  });

  test("no command prints the usage and exits 2; an unknown command or option is a usage error", async () => {
    const none = await cli([]);
    assert.equal(none.code, 2);
    assert.match(none.stdout, /^usage: media-service/);
    assertOneLineError(await cli(["frobnicate"]), 2, /^error: unknown command 'frobnicate'/);
    assertOneLineError(
      await cli(["jobs", "--bogus"]),
      2,
      /^error: unknown option '--bogus'\n\(media-service jobs --help/,
    );
  });
});

describe("put and get", () => {
  test("a file goes up and comes back byte for byte, to a file and to stdout; the type follows the extension", async () => {
    const data = randomBytes(300_000);
    const file = join(dir, "data.bin");
    await writeFile(file, data);
    const put = await json<{ bucket: string; key: string; size: number; content_type: string }>([
      "put",
      file,
      s3url("cli/data.bin"),
    ]);
    assert.deepEqual(
      { bucket: put.bucket, key: put.key, size: put.size, type: put.content_type },
      { bucket: stack.bucket, key: "cli/data.bin", size: data.length, type: "application/octet-stream" },
    );

    const back = join(dir, "back.bin");
    const got = await cli(["get", s3url("cli/data.bin"), back]);
    assert.equal(got.code, 0, said(got));
    assert.match(
      got.stdout,
      /^downloaded s3:\/\/.+\/cli\/data\.bin to .+back\.bin \(293\.0 KiB, application\/octet-stream\)/,
    );
    assert.ok((await readFile(back)).equals(data), "the same bytes in the file");

    const piped = await cli(["get", s3url("cli/data.bin"), "-"]);
    assert.equal(piped.code, 0, piped.stderr);
    assert.ok(piped.bytes.equals(data), "the same bytes on stdout");

    // A key ending in / takes the file's name; the content type comes from the extension.
    const photo = await cli(["put", join(dir, "photo.png"), s3url("cli/")]);
    assert.equal(photo.code, 0, said(photo));
    assert.match(photo.stdout, /^uploaded .+photo\.png to s3:\/\/.+\/cli\/photo\.png \(.+, image\/png\)$/m);
    const s3 = new S3Client({
      endpoint: stack.s3.url,
      region: stack.s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: stack.s3.accessKeyId, secretAccessKey: stack.s3.secretAccessKey },
    });
    try {
      const head = await s3.send(new HeadObjectCommand({ Bucket: stack.bucket, Key: "cli/photo.png" }));
      assert.equal(head.ContentType, "image/png");
    } finally {
      s3.destroy();
    }
  });

  test("to a reader that is slow, stdout carries every byte: the command exits only once its output is written", async () => {
    const data = randomBytes(2_000_000);
    const file = join(dir, "slow.bin");
    await writeFile(file, data);
    const put = await cli(["put", file, s3url("cli/slow.bin")]);
    assert.equal(put.code, 0, said(put));

    const child = spawnCli(["get", s3url("cli/slow.bin"), "-"]);
    const stderr: Buffer[] = [];
    child.stderr.on("data", (c: Buffer) => stderr.push(c));
    const code = new Promise<number | null>((resolve) => child.once("close", resolve));
    // The reader takes 8 KiB at a time with a rest between, so the command writes faster than it is
    // read: one that exits with output still in its buffers loses that output here. (A "readable"
    // listener throughout keeps the stream paused, read only here, also once the command has exited.)
    const chunks: Buffer[] = [];
    let ended = false;
    let wake = () => {};
    child.stdout.on("readable", () => wake());
    child.stdout.once("end", () => {
      ended = true;
      wake();
    });
    while (!ended) {
      const chunk = (child.stdout.read(8192) ?? child.stdout.read()) as Buffer | null;
      if (chunk) {
        chunks.push(chunk);
        await new Promise((resolve) => setTimeout(resolve, 2));
      } else await new Promise<void>((resolve) => (wake = resolve));
    }
    const bytes = Buffer.concat(chunks);
    assert.equal(await code, 0, Buffer.concat(stderr).toString());
    assert.equal(bytes.length, data.length, "every byte");
    assert.ok(bytes.equals(data), "the same bytes");
  });

  test("a missing object or file, a bad URL: one line each", async () => {
    assertOneLineError(
      await cli(["get", s3url("cli/nothing-here.bin"), join(dir, "nothing.bin")]),
      1,
      /^error: s3:\/\/.+\/cli\/nothing-here\.bin not found$/m,
    );
    assertOneLineError(
      await cli(["put", join(dir, "absent.jpg"), s3url("x")]),
      2,
      /^error: cannot read .+absent\.jpg: no such file$/m,
    );
    assertOneLineError(
      await cli(["put", join(dir, "photo.png"), "media/x.png"]),
      2,
      /^error: the destination must be an s3:\/\/bucket\/key URL/m,
    );
    assertOneLineError(await cli(["get", "s3://Not_A_Bucket/x", "-"]), 2, /is not a bucket name/);
  });

  test("without S3_ENDPOINT they use the embedded store `start` runs, and make a bucket it lacks", async () => {
    const s3Port = await freePort();
    const env = cliEnv(stack, {
      S3_ENDPOINT: undefined,
      S3_ACCESS_KEY_ID: undefined,
      S3_SECRET_ACCESS_KEY: undefined,
      S3_REGION: undefined,
      EMBEDDED_S3_PORT: String(s3Port),
    });
    const [command, ...rest] = cliArgv(["object-store"]);
    const store = spawn(command!, rest, {
      cwd: ROOT,
      env: { ...env, DATA_DIR: join(dir, "embedded") },
      stdio: ["ignore", "ignore", "inherit"],
    });
    const exited = new Promise<number | null>((resolve) => store.once("exit", resolve));
    try {
      await listening(s3Port);
      const data = randomBytes(10_000);
      await writeFile(join(dir, "fresh.bin"), data);
      const put = await cli(["put", join(dir, "fresh.bin"), "s3://fresh-bucket/a/fresh.bin"], env);
      assert.equal(put.code, 0, said(put));
      const got = await cli(["get", "s3://fresh-bucket/a/fresh.bin", "-"], env);
      assert.equal(got.code, 0, said(got));
      assert.ok(got.bytes.equals(data));
    } finally {
      store.kill("SIGINT");
    }
    assert.equal(await exited, 0);
    assertOneLineError(
      await cli(["get", "s3://fresh-bucket/a/fresh.bin", "-"], env),
      1,
      /^error: cannot reach the object store at http:\/\/127\.0\.0\.1:\d+: connection refused \(is media-service start running\?/m,
    );
  });
});

describe("submit", () => {
  test("--wait follows the job to its end and prints its result in words; --json prints the record", async () => {
    const ran = await cli([
      "submit",
      "image/resize",
      "--source",
      s3url("cli/photo.png"),
      "--dest",
      s3url("cli/small.webp"),
      "width=32",
      "height=24",
      "format=webp",
      "--wait",
    ]);
    assert.equal(ran.code, 0, said(ran));
    assert.match(ran.stdout, /^image_resize job [0-9a-f-]{36} completed in [\d.]+ s$/m);
    assert.match(ran.stdout, /^output: +http:\/\/.+\/cli\/small\.webp/m);
    assert.match(ran.stdout, /^dimensions: +32 × 24 webp$/m);
    assert.match(ran.stdout, /^size: +\d+ bytes|^size: +[\d.]+ KiB/m);
    assert.equal(ran.stderr, "", "no bar and no message off a terminal");

    const job = await json<Job>([
      "submit",
      "image_colors",
      "--source",
      s3url("cli/photo.png"),
      "--params",
      '{"color_count": 3}',
      "--wait",
    ]);
    assert.equal(job.status, "completed");
    assert.equal(job.type, "image_colors");
    assert.ok(Array.isArray((job.result as { colors?: unknown }).colors), JSON.stringify(job));
    assert.equal((job.parameters as { color_count?: number }).color_count, 3);
  });

  test("without --wait it prints the job id; --json the API's answer; watch follows it", async () => {
    const ran = await cli(["submit", "image_colors", "--source", s3url("cli/photo.png"), "color_count=4"]);
    assert.equal(ran.code, 0, said(ran));
    const id = ran.stdout.trim();
    assert.match(id, UUID);
    const watched = await cli(["watch", id]);
    assert.equal(watched.code, 0, said(watched));
    assert.match(watched.stdout, new RegExp(`^image_colors job ${id} completed`, "m"));
    assert.match(watched.stdout, /^colours: +#[0-9a-f]{6} [\d.]+%/m);

    const accepted = await json<{ job_id: string; status: string; queue_position: number }>([
      "submit",
      "image_colors",
      "--source",
      s3url("cli/photo.png"),
      "--priority",
      "5",
    ]);
    assert.match(accepted.job_id, UUID);
    assert.equal(accepted.status, "pending");
    const record = await json<Job>(["job", accepted.job_id]);
    assert.equal(record.priority, 5);
  });

  test("a job that fails exits 1 with its error; retry --wait runs it again once the source is there", async () => {
    const ran = await cli(["submit", "image_colors", "--source", s3url("cli/later.png"), "--wait"]);
    assertOneLineError(ran, 1, /^failed: job [0-9a-f-]{36}: source s3:\/\/.+\/cli\/later\.png not found$/m);
    const failed = /job ([0-9a-f-]{36})/.exec(ran.stderr)![1]!;

    const put = await cli(["put", join(dir, "photo.png"), s3url("cli/later.png")]);
    assert.equal(put.code, 0, said(put));
    const retried = await cli(["retry", failed, "--wait"]);
    assert.equal(retried.code, 0, said(retried));
    const id = /^image_colors job ([0-9a-f-]{36}) completed/m.exec(retried.stdout)?.[1];
    assert.ok(id && id !== failed, retried.stdout);
    assert.equal((await json<Job>(["job", id])).retry_of, failed);
  });

  test("usage errors found before sending exit 2; the API's refusals exit 1 with its message", async () => {
    const source = ["--source", s3url("cli/photo.png")];
    const dest = ["--dest", s3url("cli/out.png")];
    const cases: Array<[string[], number, RegExp]> = [
      [
        ["submit", "image_sharpen", ...source],
        2,
        /^error: unknown job type "image_sharpen"; the types are image_resize \(image\/resize\)/,
      ],
      [
        ["submit", "image_resize", "--source", "media/in.png", ...dest],
        2,
        /^error: --source must be an s3:\/\/bucket\/key URL; got "media\/in.png"/,
      ],
      [
        ["submit", "image_resize", ...dest, "width=1"],
        2,
        /^error: required option '--source <s3url>' not specified/,
      ],
      [
        ["submit", "image_resize", ...source, "width=1", "height=1"],
        2,
        /^error: image_resize writes a file: --dest s3:\/\/bucket\/key is required/,
      ],
      [["submit", "image_colors", ...source, ...dest], 2, /^error: image_colors writes no file/],
      [
        ["submit", "image_resize", ...source, ...dest, "width"],
        2,
        /^error: parameters are key=value \(such as width=800\); got "width"/,
      ],
      [
        ["submit", "image_resize", ...source, ...dest, "--priority", "high"],
        2,
        /^error: option '--priority <n>' argument 'high' is invalid/,
      ],
      [
        ["submit", "image_resize", ...source, ...dest, "--params", "{width"],
        2,
        /^error: --params is not valid JSON/,
      ],
      [["jobs", "--status", "lost"], 2, /^error: option '--status <status>' argument 'lost' is invalid/],
      [["--url", "localhost:8080", "stats"], 2, /^error: --url must be an http:\/\/ or https:\/\/ URL/],
      [
        ["submit", "image_resize", ...source, ...dest, "width=-5", "height=10"],
        1,
        /^error: 400: width must be >= 1$/m,
      ],
      [["job", randomUUID()], 1, /^error: 404: job [0-9a-f-]{36} not found$/m],
    ];
    const ran = await Promise.all(cases.map(([args]) => cli(args)));
    for (const [i, [args, code, message]] of cases.entries()) {
      assertOneLineError(ran[i]!, code, message);
      assert.equal(ran[i]!.stdout, "", args.join(" "));
    }
  });

  test("no key, a wrong key, no API: one line naming the problem, exit 1", async () => {
    assertOneLineError(
      await cli(["stats"], cliEnv(stack, { MEDIA_SERVICE_API_KEY: undefined })),
      1,
      /^error: 401: missing API key: .* \(no API key given: set MEDIA_SERVICE_API_KEY or pass --api-key\)$/m,
    );
    assertOneLineError(await cli(["--api-key", "wrong", "stats"]), 1, /^error: 401: invalid API key$/m);
    const port = await freePort();
    assertOneLineError(
      await cli(["--url", `http://127.0.0.1:${port}`, "jobs"]),
      1,
      new RegExp(
        `^error: cannot reach the API at http://127\\.0\\.0\\.1:${port}: connection refused \\(is media-service start running\\?\\)$`,
        "m",
      ),
    );
  });
});

describe("batch submit", () => {
  test("--wait shows the batch to its end and lists its failures; exit 1", async () => {
    const entries = [
      {
        type: "image/resize",
        source_bucket: stack.bucket,
        source_key: "cli/photo.png",
        dest_bucket: stack.bucket,
        dest_key: "cli/b1.png",
        parameters: { width: 16, height: 16 },
      },
      { type: "image_colors", source_bucket: stack.bucket, source_key: "cli/photo.png" },
      { type: "image_colors", source_bucket: stack.bucket, source_key: "cli/batch-missing.png" },
    ];
    const file = join(dir, "batch.jsonl");
    await writeFile(file, `${entries.map((e) => JSON.stringify(e)).join("\n")}\n\n`);
    const ran = await cli(["batch", "submit", file, "--wait", "--batch-id", "cli-batch-1"]);
    assert.equal(ran.code, 1, said(ran));
    assert.match(ran.stdout, /^batch cli-batch-1 partial: 2 completed, 1 failed, 0 cancelled, of 3$/m);
    const failure =
      /^([0-9a-f-]{36}) +image_colors +failed +source s3:\/\/.+\/cli\/batch-missing\.png not found$/m.exec(
        ran.stdout,
      );
    assert.ok(failure, ran.stdout);
    const job = await json<Job>(["job", failure[1]!]);
    assert.equal(job.status, "failed");
    assert.equal(job.batch_id, "cli-batch-1");

    // Without --wait: the batch id, or the API's answer.
    const created = await json<{ batch_id: string; total_jobs: number; job_ids: string[] }>([
      "batch",
      "submit",
      file,
      "--fail-fast",
      "--priority",
      "3",
    ]);
    assert.equal(created.total_jobs, 3);
    assert.equal(created.job_ids.length, 3);
    // --wait --json: the batch, its jobs and the records of the failed ones; still exit 1.
    const waited = await cli(["batch", "submit", file, "--batch-id", "cli-batch-2", "--wait", "--json"]);
    assert.equal(waited.code, 1, said(waited));
    const answer = JSON.parse(waited.stdout) as { batch: Batch; jobs: JobSummary[]; failed: Job[] };
    assert.equal(answer.batch.id, "cli-batch-2");
    assert.equal(answer.jobs.length, 3);
    assert.deepEqual(
      answer.failed.map((j) => j.source_key),
      ["cli/batch-missing.png"],
    );
  });

  test("a file that is not JSON Lines is a usage error naming the line", async () => {
    const file = join(dir, "bad.jsonl");
    await writeFile(file, '{"type":"image_colors","source_bucket":"b","source_key":"k"}\nnot json\n');
    assertOneLineError(await cli(["batch", "submit", file]), 2, /^error: .+bad\.jsonl:2: not JSON/m);
  });
});

describe("jobs, job, cancel, retry, stats", () => {
  test("for people a table holding the ids, for scripts the API's JSON", async () => {
    // On the stack without an executor the jobs stay pending until cancelled.
    const submitted = await cli(
      ["submit", "image_colors", "--source", s3url("in/a.png", idle)],
      cliEnv(idle),
    );
    assert.equal(submitted.code, 0, said(submitted));
    const id = submitted.stdout.trim();
    assert.match(id, UUID);
    const env = cliEnv(idle);

    const list = await json<{ jobs: JobSummary[]; total: number }>(
      ["jobs", "--status", "pending", "--limit", "50"],
      env,
    );
    assert.ok(
      list.jobs.some((j) => j.id === id && j.status === "pending"),
      JSON.stringify(list),
    );
    const table = await cli(["jobs", "--limit", "50"], env);
    assert.equal(table.code, 0, said(table));
    assert.match(table.stdout, /^ID +TYPE +STATUS +CREATED +DURATION +SOURCE +OUTPUT +ERROR$/m);
    assert.match(table.stdout, new RegExp(`^${id} +image_colors +pending +\\d{4}-`, "m"));

    const record = await json<Job>(["job", id], env);
    assert.equal(record.status, "pending");
    const shown = await cli(["job", id], env);
    assert.match(shown.stdout, new RegExp(`^id: +${id}$`, "m"));
    assert.match(shown.stdout, /^status: +pending$/m);

    // watch follows the pending job; cancelling it from another command ends it: exit 3, cancelled.
    const watching = cli(["watch", id], env);
    const cancelled = await json<Job>(["cancel", id], env);
    assert.equal(cancelled.status, "failed");
    assert.equal(cancelled.error, "cancelled by request");
    assertOneLineError(await watching, 3, new RegExp(`^cancelled: job ${id}: cancelled by request$`, "m"));
    const again = await cli(["cancel", id], env);
    assert.equal(again.code, 0, said(again));
    assert.equal(again.stdout, `job ${id} cancelled: cancelled by request\n`);

    const retried = await cli(["retry", id], env);
    assert.equal(retried.code, 0, said(retried));
    const retry = retried.stdout.trim();
    assert.match(retry, UUID);
    assert.equal((await json<Job>(["job", retry], env)).retry_of, id);
    assertOneLineError(
      await cli(["retry", retry], env),
      1,
      /^error: 409: job .+ is pending; only a failed job can be retried$/m,
    );

    const stats = await json<QueueStats>(["stats"], env);
    assert.ok(stats.queues.image_colors!.pending >= 1, JSON.stringify(stats));
    assert.ok(stats.total_failed >= 1);
    const statsTable = await cli(["stats"], env);
    assert.match(statsTable.stdout, /^QUEUE +PENDING +PROCESSING +COMPLETED +FAILED +CANCELLED$/m);
    assert.match(
      statsTable.stdout,
      new RegExp(`^image_colors +${stats.queues.image_colors!.pending} +0 +0 +\\d+ +\\d+$`, "m"),
    );
    assert.match(statsTable.stdout, /^total +\d+/m);
  });

  test("jobs pages with cursors and filters by type and batch", async () => {
    const env = cliEnv(idle);
    for (let i = 0; i < 3; i++) {
      const r = await cli(["submit", "image_colors", "--source", s3url("in/a.png", idle)], env);
      assert.equal(r.code, 0, said(r));
    }
    const first = await json<{ jobs: JobSummary[]; total: number; next_cursor?: string }>(
      ["jobs", "--type", "image_colors", "--limit", "2"],
      env,
    );
    assert.equal(first.jobs.length, 2);
    assert.ok(first.next_cursor, "more follow");
    assert.ok(first.jobs.every((j) => j.type === "image_colors"));
    const second = await json<{ jobs: JobSummary[] }>(
      ["jobs", "--type", "image_colors", "--limit", "2", "--cursor", first.next_cursor],
      env,
    );
    const firstIds = first.jobs.map((j) => j.id);
    assert.ok(
      second.jobs.every((j) => !firstIds.includes(j.id)),
      "no job twice",
    );
    const table = await cli(["jobs", "--type", "image_colors", "--limit", "2"], env);
    assert.match(table.stdout, new RegExp(`next: --cursor ${first.next_cursor.replace(/[.]/g, "\\.")}`));
    const all = await json<{ jobs: JobSummary[]; total: number }>(
      ["jobs", "--type", "image_colors", "--all"],
      env,
    );
    assert.equal(all.jobs.length, all.total);
    assert.equal(new Set(all.jobs.map((j) => j.id)).size, all.total);
    const none = await json<{ jobs: JobSummary[]; total: number }>(["jobs", "--batch", "no-such-batch"], env);
    assert.deepEqual([none.jobs, none.total], [[], 0]);
  });
});

describe("on a terminal", () => {
  // The first command on a socket starts that tmux server, whose environment the pane's shell gets.
  const tmux = (socket: string, args: string[], env?: Record<string, string>) => {
    const run = spawnSync("tmux", ["-L", socket, "-f", "/dev/null", ...args], { encoding: "utf8", env });
    assert.equal(run.status, 0, `tmux ${args.join(" ")}: ${run.stderr}`);
    return run.stdout;
  };

  /** Runs a command in a detached 100×20 tmux pane until it ends; the pane with its colour codes. */
  async function inTmux(args: string[], env: Record<string, string>): Promise<string> {
    const socket = `media-service-cli-${randomUUID().slice(0, 8)}`;
    const quoted = cliArgv(args)
      .map((a) => `'${a.replaceAll("'", `'\\''`)}'`)
      .join(" ");
    // The pane's shell says how the command ended and stays, so the pane can be read.
    const session = ["new-session", "-d", "-x", "100", "-y", "20", "-s", "cli", "-c", ROOT];
    tmux(socket, [...session, `${quoted}; echo "exit $?"; sleep 300`], env);
    try {
      const deadline = Date.now() + CLI_RUN_LIMIT_MS;
      for (;;) {
        const pane = tmux(socket, ["capture-pane", "-p", "-e", "-t", "cli"]);
        if (/^exit \d+/m.test(stripVTControlCharacters(pane))) return pane;
        if (Date.now() > deadline) assert.fail(`the command did not end in tmux:\n${pane}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      spawnSync("tmux", ["-L", socket, "kill-server"]);
    }
  }

  const resize = (key: string) => [
    "submit",
    "image/resize",
    "--source",
    s3url("cli/photo.png"),
    "--dest",
    s3url(key),
    "width=20",
    "height=10",
    "--wait",
  ];

  test("submit --wait draws a progress bar with its percentage, in colour; piped it prints neither", async () => {
    const env = { ...cliEnv(), TERM: "xterm-256color" };
    const pane = await inTmux(resize("cli/tty.png"), env);
    const plain = stripVTControlCharacters(pane);
    assert.match(plain, /^exit 0$/m, pane);
    assert.match(plain, /^█{30} 100% \| completed$/m, pane);
    assert.match(plain, /^image_resize job [0-9a-f-]{36} completed in /m);
    assert.ok(pane.includes(`${ESC}[36m${"█".repeat(30)}`), `the bar is coloured (cyan):\n${pane}`);
    assert.ok(pane.includes(`${ESC}[32mcompleted`), "the outcome is coloured (green)");

    const muted = await inTmux(resize("cli/tty-muted.png"), { ...env, NO_COLOR: "1" });
    assert.match(muted, /^█{30} 100% \| completed$/m, muted);
    assert.ok(!muted.includes(ESC), "NO_COLOR: no colour codes");

    const piped = await cli(resize("cli/piped.png"), env);
    assert.equal(piped.code, 0, said(piped));
    const printed = piped.stdout + piped.stderr;
    assert.ok(
      !printed.includes(ESC) && !printed.includes("█") && !printed.includes("%"),
      "piped: no colour, no bar",
    );
    assert.match(piped.stdout, /^image_resize job [0-9a-f-]{36} completed in /m);
  });
});

describe("on a terminal, every frame", () => {
  // tmux shows the pane as it ends; util-linux's `script` runs the command on a terminal of its own
  // and copies every byte written to it, so each frame the bar drew while the job ran can be read.
  test("submit --wait on a conversion that takes seconds: ffmpeg's own percentage and the time left", async () => {
    // 10 minutes of 8 kHz mono into AAC: seconds of ffmpeg's work, past the estimator's first 2 s.
    const long = await makeAudio({ durationSeconds: 600, sampleRate: 8000, channels: 1 });
    await stack.services.s3.send(
      new PutObjectCommand({ Bucket: stack.bucket, Key: "cli/long.wav", Body: await readFile(long) }),
    );
    const command = cliArgv([
      ...["submit", "audio/convert", "--source", s3url("cli/long.wav"), "--dest", s3url("cli/long.aac")],
      ...["format=aac", "--wait"],
    ])
      .map((a) => `'${a.replaceAll("'", `'\\''`)}'`)
      .join(" ");
    const ran = await collect(
      spawn("script", ["--quiet", "--flush", "--return", "--command", command, "/dev/null"], {
        cwd: ROOT,
        env: { ...cliEnv(), TERM: "xterm-256color", NO_COLOR: "1" },
        stdio: ["ignore", "pipe", "pipe"],
      }),
      ["script", "submit", "--wait"],
    );
    assert.equal(ran.code, 0, said(ran));
    // cli-progress redraws its line from its first column (CSI 1 G): one frame per redraw.
    const frames = ran.stdout
      .split(new RegExp(`\r|\n|${ESC}\\[1G`))
      .map((f) => /^[█░]{30} (\d+)% \| (.*)$/.exec(stripVTControlCharacters(f).trim()))
      .filter((m) => m !== null)
      .map((m) => ({ percent: Number(m[1]), rest: m[2]! }));
    const percents = frames.map((f) => f.percent);
    assert.ok(
      percents.some((p) => p > 5 && p < 95),
      `a frame between the download and the upload: ${percents.join(" ")}`,
    );
    assert.ok(
      percents.every((p, i) => i === 0 || p >= percents[i - 1]!),
      `the bar never goes back: ${percents.join(" ")}`,
    );
    assert.ok(
      frames.some((f) => /^about \d+ (s|min) left \| processing/.test(f.rest)),
      `a frame with the time left: ${frames.map((f) => f.rest).join(" / ")}`,
    );
    assert.deepEqual(frames.at(-1), { percent: 100, rest: "completed" });
    assert.match(stripVTControlCharacters(ran.stdout), /audio_convert job [0-9a-f-]{36} completed in /);
  });
});

/** Waits (bounded) until something listens on the port. */
async function listening(port: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: "127.0.0.1", port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on ${port}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
