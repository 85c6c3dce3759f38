// How the project's commands find their Node and their command line: scripts/node.sh (Node 24 for
// npm start, npm test and bin/media-service, whatever Node the machine has) and the commands `start`
// prints, which must never fetch a package from the npm registry.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, symlink } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, describe, test } from "node:test";
import { quickstart } from "../../local/banner.js";
import { loadConfig } from "../../core/config/load.js";
import { readmeQuickstart } from "../support/readme.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const NODE_SH = join(ROOT, "scripts/node.sh");
const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});
const tempDir = async () => {
  const dir = await mkdtemp(join(tmpdir(), "media-service-launcher-"));
  dirs.push(dir);
  return dir;
};

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}
function run(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(command, args, { ...options, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * A PATH with the programs scripts/node.sh uses and no Node at all (a machine whose Node is not
 * 24 is one where the node on PATH does not serve): bash and coreutils, nothing else of /usr/bin.
 */
async function pathWithoutNode(): Promise<string> {
  const bin = join(await tempDir(), "bin");
  await mkdir(bin);
  for (const tool of [
    "bash",
    "uname",
    "grep",
    "dirname",
    "mkdir",
    "mktemp",
    "rm",
    "mv",
    "tar",
    "sed",
    "head",
    "flock",
    "cat",
    "env",
  ]) {
    for (const dir of ["/usr/bin", "/bin"]) {
      try {
        await symlink(join(dir, tool), join(bin, tool));
        break;
      } catch {
        // not there, or already linked
      }
    }
  }
  return bin;
}

describe("scripts/node.sh: Node 24 whatever Node the machine has", () => {
  test("the node on PATH when it is Node 24", async () => {
    const ran = await run("bash", [NODE_SH, "node", "-p", "process.versions.node"], {
      cwd: ROOT,
      env: { PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, HOME: await tempDir() },
    });
    assert.equal(ran.code, 0, ran.stderr);
    assert.match(ran.stdout, /^24\./);
  });

  test("otherwise the cached copy in ~/.cache/media-service, first on the command's PATH", async () => {
    const cache = await tempDir();
    await mkdir(join(cache, "media-service"));
    // The cache as a fetch leaves it: the node-linux-<arch> package's bin/node (here, this Node 24).
    const arch = process.arch === "arm64" ? "arm64" : "x64";
    await symlink(dirname(dirname(process.execPath)), join(cache, "media-service", `node24-linux-${arch}`));
    const ran = await run("bash", [NODE_SH, "bash", "-c", "node -p process.versions.node"], {
      cwd: ROOT,
      env: { PATH: await pathWithoutNode(), HOME: cache, XDG_CACHE_HOME: cache },
    });
    assert.equal(ran.code, 0, ran.stderr);
    assert.match(ran.stdout, /^24\./);
    assert.equal(ran.stderr, "", "nothing to say when it is cached");
  });

  test("without one and unable to fetch one, it refuses in one line naming what to install", async () => {
    const path = await pathWithoutNode();
    for (const env of [
      { PATH: path, XDG_CACHE_HOME: await tempDir(), MEDIA_SERVICE_NODE_FETCH: "0" },
      { PATH: path, XDG_CACHE_HOME: await tempDir() }, // no npm to fetch it with
    ]) {
      const ran = await run("bash", [NODE_SH, "node", "--version"], { cwd: ROOT, env });
      assert.equal(ran.code, 1);
      assert.equal(ran.stdout, "");
      assert.match(
        ran.stderr,
        /^media-service: Node 24 is required \(this is Node none\); install Node 24 .*\n$/,
      );
      assert.equal(ran.stderr.split("\n").length, 2, "one line");
    }
  });
});

describe("the commands start prints and the README shows", () => {
  /** A registry that records every connection: nothing may reach it. */
  async function recordingRegistry(): Promise<{ url: string; connections: () => number; close(): void }> {
    let count = 0;
    const server = createServer((socket) => {
      count++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    return { url: `http://127.0.0.1:${port}/`, connections: () => count, close: () => server.close() };
  }

  const printed = () => {
    const config = loadConfig({ env: {}, overrides: {} });
    return quickstart(config, "cli", "http://127.0.0.1:9000");
  };

  test("are the README's quickstart", () => {
    assert.equal(printed(), readmeQuickstart());
  });

  test("run from another directory, they fail at once and never ask the npm registry for a package", async () => {
    const registry = await recordingRegistry();
    try {
      const elsewhere = await tempDir();
      const env = {
        PATH: `${dirname(process.execPath)}:${process.env.PATH ?? "/usr/bin:/bin"}`,
        HOME: elsewhere,
        npm_config_registry: registry.url,
        npm_config_cache: join(elsewhere, "npm-cache"),
        npm_config_yes: "true", // non-interactive npx would install without asking
        npm_config_fetch_retries: "0",
      };
      for (const line of printed().replaceAll("\\\n", " ").split("\n")) {
        const ran = await run("bash", ["-c", line], { cwd: elsewhere, env });
        assert.notEqual(ran.code, 0, `${line}\n${ran.stdout}${ran.stderr}`);
        assert.equal(registry.connections(), 0, `${line} asked the registry:\n${ran.stderr}`);
      }
    } finally {
      registry.close();
    }
  });

  test("run from the project's directory, they run its command line", async () => {
    const ran = await run("bash", ["-c", "bin/media-service submit --help"], {
      cwd: ROOT,
      env: { PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, HOME: await tempDir() },
    });
    assert.equal(ran.code, 0, ran.stderr);
    assert.match(ran.stdout, /usage: media-service submit/);
  });
});
