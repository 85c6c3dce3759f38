import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { test } from "node:test";

const LOGGER = new URL("../../core/logger.ts", import.meta.url).href;

/** Runs `body` in a child process whose JSON log lines go to a pipe (as in a container). */
function child(body: string) {
  const source = `import { createLogger } from ${JSON.stringify(LOGGER)};
const log = createLogger({ format: "json" });
${body}`;
  return spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", source], {
    stdio: ["ignore", "pipe", "inherit"],
  });
}

function lines(proc: ReturnType<typeof child>): AsyncIterable<string> {
  return createInterface({ input: proc.stdout });
}

test("lines buffered in a block are written when the process exits", async () => {
  const proc = child(`for (let i = 0; i < 3; i++) log.info({ job_id: "job-" + i }, "last words");
process.exit(3);`);
  const seen: Array<Record<string, unknown>> = [];
  for await (const line of lines(proc)) seen.push(JSON.parse(line) as Record<string, unknown>);
  const code = await new Promise((resolve) =>
    proc.exitCode !== null ? resolve(proc.exitCode) : proc.once("exit", resolve),
  );
  assert.equal(code, 3);
  assert.deepEqual(
    seen.map((l) => [l.msg, l.job_id, l.level, l.service]),
    [0, 1, 2].map((i) => ["last words", `job-${i}`, 30, "media-service"]),
  );
});

test("a quiet process still writes its lines without exiting", async () => {
  const proc = child(`log.warn({ job_id: "quiet" }, "only line"); setInterval(() => {}, 1000);`);
  try {
    for await (const line of lines(proc)) {
      const entry = JSON.parse(line) as Record<string, unknown>;
      assert.equal(entry.msg, "only line");
      assert.equal(entry.job_id, "quiet");
      break;
    }
  } finally {
    proc.kill("SIGKILL");
  }
});

test("credentials in logged headers and settings are redacted", async () => {
  const proc =
    child(`log.info({ headers: { "x-api-key": "key-123", authorization: "Bearer tok-456", host: "h" }, redis: { password: "pw-789" } }, "with secrets");
process.exit(0);`);
  const seen: string[] = [];
  for await (const line of lines(proc)) seen.push(line);
  assert.equal(seen.length, 1);
  for (const secret of ["key-123", "tok-456", "pw-789"]) assert.ok(!seen[0]!.includes(secret), seen[0]);
  const entry = JSON.parse(seen[0]!) as { headers: Record<string, string>; redis: Record<string, string> };
  assert.deepEqual(entry.headers, { "x-api-key": "[redacted]", authorization: "[redacted]", host: "h" });
  assert.deepEqual(entry.redis, { password: "[redacted]" });
});
