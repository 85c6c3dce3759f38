// A throwaway redis-server for tests: free port, no persistence, its own temp dir (removed on stop, or
// when the test process exits without stopping it; local/redis.ts then SIGTERMs the server itself).
import { rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnRedisServer } from "../../local/redis.js";

export interface TestRedis {
  url: string;
  port: number;
  pid: number;
  stop(): Promise<void>;
}

const liveDirs = new Set<string>();
let exitHookInstalled = false;

export async function startTestRedis(): Promise<TestRedis> {
  const dir = await mkdtemp(join(tmpdir(), "media-service-test-redis-"));
  liveDirs.add(dir);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on("exit", () => {
      for (const d of liveDirs) rmSync(d, { recursive: true, force: true });
    });
  }
  const removeDir = async () => {
    await rm(dir, { recursive: true, force: true });
    liveDirs.delete(dir);
  };
  try {
    const server = await spawnRedisServer({
      cwd: dir,
      args: ["--dir", dir, "--save", "", "--appendonly", "no"],
    });
    let stopping: Promise<void> | undefined;
    const stop = () =>
      (stopping ??= (async () => {
        await server.stop();
        await removeDir();
      })());
    return { url: server.url, port: server.port, pid: server.pid, stop };
  } catch (err) {
    await removeDir();
    throw err;
  }
}
