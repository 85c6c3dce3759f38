// scripts/provision.sh on this machine: a no-op once everything is there, and, for a user who may
// not install, the list of what is missing with the one command to run.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

const SCRIPT = new URL("../../scripts/provision.sh", import.meta.url).pathname;

function which(name: string): string {
  const found = spawnSync("bash", ["-c", `command -v ${name}`], { encoding: "utf8" }).stdout.trim();
  assert.ok(found, `${name} is on PATH`);
  return found;
}

test("with everything present it installs nothing and says nothing but the Node line", () => {
  const run = spawnSync("bash", [SCRIPT, "test"], { encoding: "utf8" });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout, "");
  const lines = run.stderr.split("\n").filter(Boolean);
  // Off Node 24 it says, in one line, that Node 24 is the target; on Node 24 it is silent.
  assert.ok(lines.every((l) => /targets Node 24/.test(l)) && lines.length <= 1, run.stderr);
});

test("a user who may not install is told what is missing, why, and the one command to run", () => {
  // A PATH with the shell's basics, node and apt-get, and none of the programs start needs.
  const bin = mkdtempSync(join(tmpdir(), "media-service-provision-"));
  chmodSync(bin, 0o755);
  after(() => rmSync(bin, { recursive: true, force: true }));
  for (const tool of ["node", "awk", "uname", "id", "apt-get", "env", "mktemp"]) {
    symlinkSync(which(tool), join(bin, tool));
  }
  // As root it would install; run it as nobody then, as a person without rights would.
  const asUser =
    process.getuid?.() === 0 ? [which("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups"] : [];
  // The script on stdin: nobody may not be able to read the checkout (under /root, say).
  const command = [...asUser, which("bash"), "-s", "--", "start"];
  const input = readFileSync(SCRIPT, "utf8");
  const run = spawnSync(command[0]!, command.slice(1), {
    encoding: "utf8",
    input,
    env: { PATH: bin, HOME: bin },
  });
  assert.equal(run.status, 1, run.stderr);
  assert.match(run.stderr, /this machine lacks what npm start needs:/);
  assert.match(run.stderr, /^ {2}redis-server {7,}the job store that start runs for itself/m);
  assert.match(run.stderr, /^ {2}ffmpeg {7,}video thumbnails, audio conversion and analyze/m);
  assert.match(
    run.stderr,
    /this user cannot install packages \(not root, no passwordless sudo\); run: sudo apt-get update && sudo apt-get install -y --no-install-recommends redis-server ffmpeg/,
  );

  // With REDIS_URL set, start needs no redis-server.
  const remote = spawnSync(command[0]!, command.slice(1), {
    encoding: "utf8",
    input,
    env: { PATH: bin, HOME: bin, REDIS_URL: "redis://redis.example:6379" },
  });
  assert.equal(remote.status, 1);
  assert.doesNotMatch(remote.stderr, /redis-server/);

  // MEDIA_SERVICE_PROVISION=check only checks, even where it could install.
  const check = spawnSync(which("bash"), [SCRIPT, "start"], {
    encoding: "utf8",
    env: { PATH: bin, HOME: bin, MEDIA_SERVICE_PROVISION: "check" },
  });
  assert.equal(check.status, 1);
  assert.match(check.stderr, /to install them: sudo apt-get update && sudo apt-get install/);
});

test("an unknown profile is a usage error", () => {
  const run = spawnSync("bash", [SCRIPT, "everything"], { encoding: "utf8" });
  assert.equal(run.status, 2);
  assert.match(
    run.stderr,
    /^usage: scripts\/provision\.sh start\|test\|bench\|k8s\|fresh\|contract\|browser\|versitygw\|ci\|image/,
  );
});

test("versitygw: once built it returns at once and silently; unbuilt, a check names the build", () => {
  const cache = mkdtempSync(join(tmpdir(), "media-service-provision-cache-"));
  after(() => rmSync(cache, { recursive: true, force: true }));
  const env = { ...process.env, XDG_CACHE_HOME: cache, MEDIA_SERVICE_PROVISION: "check" };
  const missing = spawnSync("bash", [SCRIPT, "versitygw"], { encoding: "utf8", env });
  assert.equal(missing.status, 1);
  const dir = join(cache, "media-service/versitygw-1.8.0");
  assert.equal(
    missing.stderr,
    `media-service: versitygw 1.8.0 is not built (no ${dir}/versitygw); to build it: GOBIN=${dir} go install github.com/versity/versitygw/cmd/versitygw@v1.8.0\n`,
  );

  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "versitygw"), "#!/bin/sh\n", { mode: 0o755 });
  const built = spawnSync("bash", [SCRIPT, "versitygw"], { encoding: "utf8", env });
  assert.equal(built.status, 0, built.stderr);
  assert.equal(built.stdout + built.stderr, "");
});
