// `media-service start` as a person runs it: the real CLI in a child process, with its own
// redis-server and embedded object store, on a terminal (util-linux `script` gives it one) or not.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { stripVTControlCharacters } from "node:util";
import { after, describe, test } from "node:test";
import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { Redis } from "ioredis";
import { runnerEntry } from "../../controller/runner-process.js";
import { freePort } from "../support/ports.js";
import { readmeQuickstart } from "../support/readme.js";

const ROOT = new URL("../../", import.meta.url);
const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

interface Started {
  child: ChildProcess;
  port: number;
  s3Port: number;
  dataDir: string;
  /** Everything printed so far (stdout and stderr; a terminal's \r\n made \n, colours removed). */
  output(): string;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  exited: Promise<number | null>;
  /** Ctrl-C on a terminal, SIGINT otherwise; resolves with the exit code. */
  stop(): Promise<number | null>;
}

const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * `media-service start` (or `options.command`) as a person runs it, on ports freePort() found free.
 * Between finding a port free and start's binding it, another process of a busy machine may take
 * it (an outgoing connection's ephemeral port): a start that stops on EADDRINUSE for one of its own
 * ports before it runs is started again on others, up to three times, as onFreePorts does for the
 * test stacks. Only for `start` itself, which says when it runs; the other commands are returned
 * as spawned.
 */
async function start(
  env: Record<string, string> = {},
  options: { tty?: boolean; command?: string } = {},
): Promise<Started> {
  for (let attempt = 1; ; attempt++) {
    const started = await startOnce(env, options, await freePort(), await freePort());
    if ((options.command ?? "start") !== "start" || attempt === 3) return started;
    const ran = await Promise.race([
      started.waitFor(/"msg":"media-service is running"/).then(
        () => true,
        () => false,
      ),
      started.exited.then(() => false),
    ]);
    const ours = new RegExp(`EADDRINUSE[^"]*:(${started.port}|${started.s3Port})\\b`);
    if (ran || !ours.test(started.output())) return started;
  }
}

async function startOnce(
  env: Record<string, string>,
  options: { tty?: boolean; command?: string },
  port: number,
  s3Port: number,
): Promise<Started> {
  const dataDir = await mkdtemp(join(tmpdir(), "media-service-start-"));
  dirs.push(dataDir);
  const configFile = join(dataDir, "config.yaml");
  await writeFile(configFile, "{}\n");
  const entry = runnerEntry();
  const argv = [process.execPath, ...entry.execArgv, entry.path, options.command ?? "start"];
  // Only what a person's shell would have: none of the test process's own settings leak in.
  const childEnv: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? dataDir,
    TERM: "xterm-256color",
    CONFIG_FILE: configFile,
    DATA_DIR: join(dataDir, "data"),
    PORT: String(port),
    EMBEDDED_S3_PORT: String(s3Port),
    ...env,
  };
  const child = options.tty
    ? spawn("script", ["-qfec", `exec ${argv.map(shellQuote).join(" ")}`, "/dev/null"], {
        cwd: ROOT,
        env: childEnv,
        stdio: ["pipe", "pipe", "pipe"],
      })
    : spawn(argv[0]!, argv.slice(1), { cwd: ROOT, env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
  let text = "";
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += stripVTControlCharacters(chunk.toString("utf8")).replaceAll("\r\n", "\n");
    for (const w of waiters) w();
  };
  child.stdout.on("data", onData);
  child.stderr.on("data", onData);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  let done = false;
  void exited.then(() => {
    done = true;
    for (const w of waiters) w();
  });
  const started: Started = {
    child,
    port,
    s3Port,
    dataDir: childEnv.DATA_DIR!,
    output: () => text,
    exited,
    waitFor: (pattern, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(text);
          if (match) return finish(() => resolve(match[0]));
          if (done) return finish(() => reject(new Error(`exited before ${pattern}:\n${text}`)));
        };
        const timer = setTimeout(
          () => finish(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${text}`))),
          timeoutMs,
        );
        const finish = (then: () => void) => {
          clearTimeout(timer);
          waiters.delete(check);
          then();
        };
        waiters.add(check);
        check();
      }),
    stop: async () => {
      if (!done) {
        if (options.tty) child.stdin!.write("\x03");
        else child.kill("SIGINT");
      }
      return exited;
    },
  };
  after(() => {
    if (!done) child.kill("SIGKILL");
  });
  return started;
}

async function get(url: string, headers: Record<string, string> = {}): Promise<number> {
  return (await fetch(url, { headers })).status;
}

/** An address of this machine that is not loopback (the test machine has a network interface). */
function outsideAddress(): string {
  const found = Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === "IPv4" && !a.internal);
  assert.ok(found, "this machine has a non-loopback IPv4 address to test from");
  return found.address;
}

/** PING over a bare connection, no password: the first reply line. */
function redisPing(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port }, () => socket.write("PING\r\n"));
    socket.setTimeout(5000, () => socket.destroy(new Error("no reply to PING")));
    socket.once("data", (data) => {
      socket.destroy();
      resolve(data.toString("latin1").split("\r\n")[0]!);
    });
    socket.once("error", reject);
  });
}

function tryConnect(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.setTimeout(5000, () => {
      socket.destroy();
      resolve("timeout");
    });
    socket.once("connect", () => {
      socket.destroy();
      resolve("connected");
    });
    socket.once("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

const BANNER =
  /media-service is running \(Ctrl-C stops it\)[\s\S]*?get s3:\/\/media\/out\/photo\.webp photo\.webp\n/;

describe("start on a terminal", () => {
  test("a clean start prints readable lines, the banner with the README's example, and no warning", async () => {
    const stack = await start({}, { tty: true });
    const banner = await stack.waitFor(BANNER);
    const health = await get(`http://127.0.0.1:${stack.port}/health/ready`);
    assert.equal(health, 200);

    const lines = stack.output().split("\n");
    const logLines = lines.filter((l) => /^\[\d\d:\d\d:\d\d\.\d{3}\] [A-Z]+:/.test(l));
    assert.ok(logLines.length >= 5, `readable log lines:\n${stack.output()}`);
    assert.ok(!lines.some((l) => l.startsWith('{"level"')), "no JSON line on a terminal");
    const warnings = logLines.filter((l) => !/\] (INFO|DEBUG|TRACE):/.test(l));
    assert.deepEqual(warnings, [], "no warning or error at a clean start");

    // The example it prints is the README's, with this instance's ports.
    const expected = readmeQuickstart()
      .replace("bin/media-service submit", `bin/media-service --url http://localhost:${stack.port} submit`)
      .replaceAll(
        /bin\/media-service (put|get)/g,
        `EMBEDDED_S3_PORT=${stack.s3Port} bin/media-service --url http://localhost:${stack.port} $1`,
      );
    const printed = banner
      .split("\n")
      .filter(
        (l) =>
          l.startsWith("    ") &&
          !/^ {4}(API|dashboard|health|object store|redis|AI provider|data)\b/.test(l),
      )
      .map((l) => l.slice(4))
      .join("\n");
    assert.equal(printed, expected);

    const code = await stack.stop();
    assert.equal(code, 0, `Ctrl-C ends it cleanly:\n${stack.output().slice(-2000)}`);
    assert.match(stack.output(), /shutting down/);
  });
});

describe("start's safe defaults", () => {
  test("it listens on loopback only, and its Redis demands the password it generated", async () => {
    const stack = await start();
    await stack.waitFor(/"msg":"media-service is running"/);
    assert.equal(await get(`http://127.0.0.1:${stack.port}/health/ready`), 200);
    assert.equal(await tryConnect(outsideAddress(), stack.port), "ECONNREFUSED");

    const lines = stack
      .output()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.ok(
      lines.length > 0 && lines.every((l) => typeof l.level === "number"),
      "JSON lines off a terminal",
    );
    assert.deepEqual(
      lines.filter((l) => (l.level as number) >= 40),
      [],
      "no warning at a clean start",
    );
    const started = lines.find((l) => l.msg === "local redis-server started");
    const address = String(started?.address);
    assert.match(address, /^127\.0\.0\.1:\d+$/);
    const redisPort = Number(address.split(":")[1]);

    const passwordFile = join(stack.dataDir, "redis", "password");
    const password = (await readFile(passwordFile, "utf8")).trim();
    assert.match(password, /^[A-Za-z0-9_-]{43}$/);
    const { mode } = await stat(passwordFile);
    assert.equal(mode & 0o777, 0o600, "the password file is the user's alone");
    assert.ok(!stack.output().includes(password), "the password never reaches the log");

    assert.match(await redisPing(redisPort), /^-NOAUTH/);
    const authorised = new Redis({ port: redisPort, host: "127.0.0.1", password, lazyConnect: true });
    await authorised.connect();
    assert.equal(await authorised.ping(), "PONG");
    // The password is not on redis-server's command line, which every user of the machine can read.
    const pid = Number(await authorised.info("server").then((i) => /process_id:(\d+)/.exec(i)![1]));
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    assert.ok(!cmdline.includes(password), cmdline);
    authorised.disconnect();
    assert.equal(await tryConnect(outsideAddress(), redisPort), "ECONNREFUSED");

    assert.equal(await stack.stop(), 0);
    assert.ok(
      !existsSync(`/proc/${pid}`) || readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z"),
      "its redis-server stopped with it",
    );
  });

  test("off loopback without API keys it refuses to start, naming the ways out; api too", async () => {
    const stack = await start({ HOST: "0.0.0.0" });
    assert.equal(await stack.exited, 2);
    assert.match(
      stack.output(),
      /^media-service start: refusing to serve the API on 0\.0\.0\.0:\d+ without authentication: .*API_KEYS.*HOST=127\.0\.0\.1.*ALLOW_UNAUTHENTICATED=true/m,
    );
    assert.ok(!existsSync(join(stack.dataDir, "redis")), "nothing was started");

    const api = await start({ REDIS_URL: "redis://127.0.0.1:1" }, { command: "api" });
    assert.equal(await api.exited, 2);
    assert.match(
      api.output(),
      /^media-service api: refusing to serve the API on 0\.0\.0\.0:\d+ without authentication/m,
    );

    const store = await start({ EMBEDDED_S3_HOST: "0.0.0.0" });
    assert.equal(await store.exited, 2);
    assert.match(
      store.output(),
      /refusing to serve the embedded object store on 0\.0\.0\.0:\d+ with its default credentials/,
    );
  });

  test("off loopback with API keys it serves them that hold a key; allowed open, it says so", async () => {
    const keyed = await start({ HOST: "0.0.0.0", API_KEYS: "k-1234567890" });
    await keyed.waitFor(/"msg":"media-service is running"/);
    const outside = `http://${outsideAddress()}:${keyed.port}`;
    assert.equal(await get(`${outside}/api/v1/jobs`), 401);
    assert.equal(await get(`${outside}/api/v1/jobs`, { "X-API-Key": "k-1234567890" }), 200);
    assert.ok(!keyed.output().includes("k-1234567890"), "the key never reaches the log");
    assert.equal(await keyed.stop(), 0);

    const open = await start({ HOST: "0.0.0.0", ALLOW_UNAUTHENTICATED: "true" });
    await open.waitFor(/"msg":"media-service is running"/);
    assert.equal(await get(`http://${outsideAddress()}:${open.port}/api/v1/jobs`), 200);
    const warning = open
      .output()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as { level: number; msg: string })
      .find((l) => l.level === 40);
    assert.match(warning?.msg ?? "", /anyone who reaches this address can read every job/);
    assert.equal(await open.stop(), 0);
  });

  test("object-store serves the embedded store alone; off loopback only with credentials of its own", async () => {
    const refused = await start({ EMBEDDED_S3_HOST: "0.0.0.0" }, { command: "object-store" });
    assert.equal(await refused.exited, 2);
    assert.match(
      refused.output(),
      /^media-service object-store: refusing to serve the embedded object store on 0\.0\.0\.0:\d+ with its default credentials/m,
    );

    const credentials = { accessKeyId: "store-key", secretAccessKey: "store-secret-1234" };
    const store = await start(
      {
        EMBEDDED_S3_HOST: "0.0.0.0",
        S3_ACCESS_KEY_ID: credentials.accessKeyId,
        S3_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      },
      { command: "object-store" },
    );
    await store.waitFor(/"msg":"embedded object store is running"/);
    const client = new S3Client({
      endpoint: `http://${outsideAddress()}:${store.s3Port}`,
      region: "us-east-1",
      forcePathStyle: true,
      credentials,
    });
    try {
      await client.send(new PutObjectCommand({ Bucket: "media", Key: "hello.txt", Body: "hello" }));
      const got = await client.send(new GetObjectCommand({ Bucket: "media", Key: "hello.txt" }));
      assert.equal(await got.Body!.transformToString(), "hello");
    } finally {
      client.destroy();
    }
    assert.ok(!existsSync(join(store.dataDir, "redis")), "no redis-server: the store alone");
    assert.ok(!store.output().includes(credentials.secretAccessKey), "the secret never reaches the log");
    assert.equal(await store.stop(), 0);
  });
});

describe("start ends with its redis-server, whatever stops it", () => {
  /** The pid of the redis-server a started stack runs (its pid file). */
  async function redisPid(stack: Started): Promise<number> {
    await stack.waitFor(/"msg":"media-service is running"/);
    return Number((await readFile(join(stack.dataDir, "redis", "redis-server.pid"), "utf8")).trim());
  }
  const running = (pid: number) =>
    existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z");
  async function gone(pid: number): Promise<boolean> {
    // redis-server writes its AOF and exits on SIGTERM: give it the time it takes.
    for (let i = 0; i < 100 && running(pid); i++) await new Promise((r) => setTimeout(r, 100));
    return !running(pid);
  }

  test("SIGHUP (the terminal closing) shuts it down as Ctrl-C does", async () => {
    const stack = await start();
    const pid = await redisPid(stack);
    assert.ok(running(pid));
    stack.child.kill("SIGHUP");
    assert.equal(await stack.exited, 0, stack.output().slice(-2000));
    assert.match(stack.output(), /"reason":"SIGHUP".*"msg":"shutting down"/);
    assert.ok(await gone(pid), "its redis-server stopped with it");
  });

  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    test(`a second ${signal} during the shutdown still stops its redis-server`, async () => {
      const stack = await start();
      const pid = await redisPid(stack);
      // The second one comes while the shutdown has hardly begun (a person pressing Ctrl-C twice).
      stack.child.kill(signal);
      await new Promise((r) => setTimeout(r, 30));
      stack.child.kill(signal);
      await stack.exited;
      assert.ok(await gone(pid), `its redis-server stopped:\n${stack.output().slice(-2000)}`);
    });
  }
});

describe("the command line next to start", () => {
  test("put and get find the store of the start that --url names, on whatever port it listens", async () => {
    const stack = await start();
    await stack.waitFor(/"msg":"media-service is running"/);
    const dir = await mkdtemp(join(tmpdir(), "media-service-cli-"));
    dirs.push(dir);
    await writeFile(join(dir, "note.txt"), "hello from put");
    const entry = runnerEntry();
    // The other terminal has the same configuration and data directory, and nothing but --url.
    const cli = (...args: string[]) =>
      new Promise<{ code: number | null; output: string }>((resolve) => {
        const child = spawn(
          process.execPath,
          [...entry.execArgv, entry.path, "--url", `http://localhost:${stack.port}`, ...args],
          {
            cwd: ROOT,
            env: {
              PATH: process.env.PATH ?? "/usr/bin:/bin",
              CONFIG_FILE: join(dirname(stack.dataDir), "config.yaml"),
              DATA_DIR: stack.dataDir,
            },
          },
        );
        let output = "";
        child.stdout.on("data", (c: Buffer) => (output += c.toString()));
        child.stderr.on("data", (c: Buffer) => (output += c.toString()));
        child.once("exit", (code) => resolve({ code, output }));
      });
    const put = await cli("put", join(dir, "note.txt"), "s3://media/in/note.txt");
    assert.equal(put.code, 0, put.output);
    // In this start's store, not in one that might answer on the default port.
    const client = new S3Client({
      endpoint: `http://127.0.0.1:${stack.s3Port}`,
      region: "us-east-1",
      forcePathStyle: true,
      credentials: { accessKeyId: "media-service", secretAccessKey: "media-service-secret" },
    });
    try {
      const got = await client.send(new GetObjectCommand({ Bucket: "media", Key: "in/note.txt" }));
      assert.equal(await got.Body!.transformToString(), "hello from put");
    } finally {
      client.destroy();
    }
    const get = await cli("get", "s3://media/in/note.txt", join(dir, "back.txt"));
    assert.equal(get.code, 0, get.output);
    assert.equal(await readFile(join(dir, "back.txt"), "utf8"), "hello from put");
    assert.equal(await stack.stop(), 0);
    assert.ok(!existsSync(join(stack.dataDir, "start.json")), "the state goes with start");
  });
});
