import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { spawn } from "node:child_process";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { after, describe, test } from "node:test";
import { Redis } from "ioredis";
import { pino } from "pino";
import {
  RedisServerNotFoundError,
  RedisStartError,
  spawnRedisServer,
  startLocalRedis,
} from "../../local/redis.js";
import { freePort } from "../support/ports.js";
import { startTestRedis } from "../support/redis.js";

const silent = pino({ level: "silent" });

function client(url: string): Redis {
  return new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
}

async function withClient<T>(url: string, fn: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = client(url);
  try {
    await redis.connect();
    return await fn(redis);
  } finally {
    redis.disconnect();
  }
}

function connectError(port: number): Promise<NodeJS.ErrnoException | null> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(null);
    });
    socket.once("error", (err) => resolve(err));
  });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const tempDirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "media-service-local-redis-"));
  tempDirs.push(dir);
  return dir;
}
after(async () => {
  await Promise.all(tempDirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe("startTestRedis", () => {
  test("gives a working, loopback-only server without persistence", async () => {
    const server = await startTestRedis();
    try {
      assert.equal(server.url, `redis://127.0.0.1:${server.port}`);
      await withClient(server.url, async (redis) => {
        assert.equal(await redis.set("greeting", "hello"), "OK");
        assert.equal(await redis.get("greeting"), "hello");
        assert.deepEqual(await redis.config("GET", "bind"), ["bind", "127.0.0.1"]);
        assert.deepEqual(await redis.config("GET", "protected-mode"), ["protected-mode", "yes"]);
        assert.deepEqual(await redis.config("GET", "appendonly"), ["appendonly", "no"]);
        assert.deepEqual(await redis.config("GET", "save"), ["save", ""]);
      });
    } finally {
      await server.stop();
    }
  });

  test("stop() really stops the server", async () => {
    const server = await startTestRedis();
    assert.equal(isAlive(server.pid), true);
    await server.stop();
    await server.stop(); // idempotent
    assert.equal(isAlive(server.pid), false);
    const err = await connectError(server.port);
    assert.equal(err?.code, "ECONNREFUSED");
  });

  test("two servers run side by side on different ports", async () => {
    const [a, b] = await Promise.all([startTestRedis(), startTestRedis()]);
    try {
      assert.notEqual(a.port, b.port);
      await withClient(a.url, (redis) => redis.set("k", "a"));
      await withClient(b.url, async (redis) => assert.equal(await redis.get("k"), null));
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});

test("redis-server does not outlive a process that exits without stopping it", async () => {
  const module = new URL("../support/redis.ts", import.meta.url).href;
  const script = `
    import { startTestRedis } from ${JSON.stringify(module)};
    const redis = await startTestRedis();
    console.log(JSON.stringify({ port: redis.port }));
    process.exit(0);
  `;
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let stdout = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  const code = await new Promise((resolve) => child.once("close", resolve));
  assert.equal(code, 0);
  const { port } = JSON.parse(stdout) as { port: number };
  // The exit hook sends SIGTERM; redis-server needs a moment to shut down.
  const deadline = Date.now() + 5_000;
  let err = await connectError(port);
  while (err?.code !== "ECONNREFUSED" && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    err = await connectError(port);
  }
  assert.equal(err?.code, "ECONNREFUSED");
});

describe("startLocalRedis", () => {
  test("persists data across a stop/start on the same dataDir (AOF)", async () => {
    const dataDir = await tempDir();
    const first = await startLocalRedis({ dataDir, logger: silent });
    try {
      await withClient(first.url, async (redis) => {
        assert.deepEqual(await redis.config("GET", "appendonly"), ["appendonly", "yes"]);
        assert.deepEqual(await redis.config("GET", "appendfsync"), ["appendfsync", "everysec"]);
        assert.deepEqual(await redis.config("GET", "dir"), ["dir", join(dataDir, "redis")]);
        await redis.set("job:1", "done");
        await redis.hset("job:2", { state: "queued", attempts: "3" });
      });
    } finally {
      await first.stop();
    }

    const second = await startLocalRedis({ dataDir, logger: silent });
    try {
      await withClient(second.url, async (redis) => {
        assert.equal(await redis.get("job:1"), "done");
        assert.deepEqual(await redis.hgetall("job:2"), { state: "queued", attempts: "3" });
      });
    } finally {
      await second.stop();
    }
  });

  test("uses the requested port and accepts a relative dataDir", async () => {
    const port = await freePort();
    const dataDir = await tempDir();
    const server = await startLocalRedis({ dataDir: relative(process.cwd(), dataDir), port, logger: silent });
    try {
      assert.equal(server.port, port);
      // The password it generated, kept under the data dir, is part of the URL.
      const password = (await readFile(join(dataDir, "redis", "password"), "utf8")).trim();
      assert.equal(server.url, `redis://:${password}@127.0.0.1:${port}`);
      await withClient(server.url, async (redis) => {
        assert.equal(await redis.ping(), "PONG");
        assert.deepEqual(await redis.config("GET", "dir"), ["dir", join(dataDir, "redis")]);
      });
    } finally {
      await server.stop();
    }
  });

  test("stops a server left running on the same dataDir before starting a new one", async () => {
    const dataDir = await tempDir();
    const leftover = await startLocalRedis({ dataDir, logger: silent });
    let current: Awaited<ReturnType<typeof startLocalRedis>> | undefined;
    try {
      await withClient(leftover.url, (redis) => redis.set("survivor", "yes"));
      current = await startLocalRedis({ dataDir, logger: silent });
      assert.equal((await connectError(leftover.port))?.code, "ECONNREFUSED");
      await withClient(current.url, async (redis) => assert.equal(await redis.get("survivor"), "yes"));
    } finally {
      await leftover.stop();
      await current?.stop();
    }
  });

  test("a missing redis-server binary gives an install hint", async () => {
    const emptyDir = await tempDir();
    await assert.rejects(
      startLocalRedis({ dataDir: await tempDir(), logger: silent, searchPath: emptyDir, fallbacks: [] }),
      (err: unknown) => {
        assert.ok(err instanceof RedisServerNotFoundError);
        assert.match(err.message, /apt-get install -y redis-server/);
        assert.match(err.message, /brew install redis/);
        assert.match(err.message, /REDIS_URL/);
        return true;
      },
    );
    await assert.rejects(
      spawnRedisServer({ binary: join(emptyDir, "redis-server") }),
      RedisServerNotFoundError,
    );
  });

  test("a port that is already taken fails with redis-server's output", async () => {
    // Drops every connection at once (the readiness PING reaches this server, not redis-server).
    const blocker = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const address = blocker.address();
    assert.ok(address !== null && typeof address === "object");
    try {
      await assert.rejects(
        startLocalRedis({ dataDir: await tempDir(), port: address.port, logger: silent }),
        (err: unknown) => {
          assert.ok(err instanceof RedisStartError);
          assert.match(err.message, /Address already in use/);
          return true;
        },
      );
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});
