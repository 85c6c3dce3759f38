import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { ConfigError, loadConfig, type ApiClient, type Config } from "../../core/config/load.js";
import { DURATION, KEYED_BY, type TDuration } from "../../core/config/schema.js";
import { envSettings, resolveSettings, type Resolved } from "../../core/config/settings.js";
import type { JobType } from "../../core/jobs/types.js";
import { parseDuration } from "../../core/duration.js";

const dir = mkdtempSync(join(tmpdir(), "media-service-config-"));
function file(text: string): string {
  const path = join(dir, `${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(path, text);
  return path;
}

describe("configuration", () => {
  test("defaults without a file", () => {
    const config = loadConfig({ env: {} });
    assert.equal(config.server.port, 8080);
    assert.equal(config.server.mode, "release");
    assert.equal(config.server.readTimeoutMs, 30_000);
    assert.equal(config.server.writeTimeoutMs, 30_000);
    assert.deepEqual(config.server.clients, []);
    assert.equal(config.redis.url, undefined);
    assert.equal(config.limits.retentionMs, 7 * 86_400_000);
    assert.equal(config.logLevel, "info");
  });

  test("the server section of the configuration, with ${VAR} and ${VAR:-default} substitution", () => {
    const path = file(`
server:
  port: \${APP_PORT}
  mode: debug
  read_timeout: 10s
  write_timeout: 1m30s
  api_keys:
    - \${KEY_A}
    - \${KEY_B:-fallback-key}
    - \${KEY_C:-}
redis:
  url: redis://\${REDIS_HOST:-localhost}:6379/2
`);
    const config = loadConfig({ file: path, env: { APP_PORT: "9100", KEY_A: "alpha" } });
    assert.equal(config.server.port, 9100);
    assert.equal(config.server.mode, "debug");
    assert.equal(config.logLevel, "debug");
    assert.equal(config.server.readTimeoutMs, 10_000);
    assert.equal(config.server.writeTimeoutMs, 90_000);
    assert.deepEqual(config.server.clients, [
      { name: "default", keys: ["alpha", "fallback-key"], admin: true, weight: 1 },
    ]);
    assert.equal(config.redis.url, "redis://localhost:6379/2");
  });

  test("named clients: server.clients, with api_keys beside them as the client default", () => {
    const path = file(`
server:
  api_keys: [plain-key]
  clients:
    - name: alice
      keys: [a1, "\${ALICE_NEXT}", "\${ALICE_LATER:-}"]
    - name: ops
      keys: [o1]
      admin: true
`);
    const config = loadConfig({ file: path, env: { ALICE_NEXT: "a2" } });
    assert.deepEqual(config.server.clients, [
      { name: "alice", keys: ["a1", "a2"], admin: false, weight: 1 },
      { name: "ops", keys: ["o1"], admin: true, weight: 1 },
      { name: "default", keys: ["plain-key"], admin: false, weight: 1 },
    ]);
  });

  test("named clients: a key given to two clients, a name given twice, a bad name are refused without the key", () => {
    const refused = (clients: unknown[], apiKeys: string[] = []) => {
      try {
        loadConfig({ env: {}, overrides: { server: { clients, api_keys: apiKeys } } });
      } catch (err) {
        assert.ok(err instanceof ConfigError, String(err));
        return err.message;
      }
      assert.fail("accepted");
    };
    const shared = refused([
      { name: "a", keys: ["secret-shared-key"] },
      { name: "b", keys: ["secret-shared-key"] },
    ]);
    assert.match(shared, /a key of client "b" is also a key of client "a"/);
    assert.ok(!shared.includes("secret-shared-key"), shared);
    assert.ok(!refused([{ name: "a", keys: ["k1"] }], ["k1"]).includes("k1:"));
    assert.match(
      refused([
        { name: "a", keys: ["k1"] },
        { name: "a", keys: ["k2"] },
      ]),
      /the name "a" is used twice/,
    );
    assert.match(
      refused([{ name: "default", keys: ["k1"] }], ["k2"]),
      /server.api_keys are the client "default"/,
    );
    assert.match(refused([{ name: "no spaces", keys: ["k1"] }]), /server.clients\[0\].name/);
    assert.match(refused([{ name: "a", keys: [] }]), /server.clients\[0\].keys: client "a" has no key/);
    assert.match(refused([{ name: "a", keys: [""] }]), /server.clients\[0\].keys: client "a" has no key/);
  });

  test("environment variables override the file", () => {
    const path = file("server:\n  port: 7000\n  api_keys: [a]\nstorage:\n  region: eu-west-1\n");
    const config = loadConfig({
      file: path,
      env: {
        PORT: "7001",
        API_KEYS: "k1, k2,,",
        REDIS_URL: "redis://r:6379",
        S3_ENDPOINT: "http://s3:9000",
        S3_FORCE_PATH_STYLE: "false",
        EXECUTOR: "kubernetes",
        LOCAL_CONCURRENCY: "3",
        LOG_LEVEL: "warn",
        WEBHOOK_SIGNING_SECRET: "whsec_MfDgjTRNzvS5AhsG0LRpvwxOKOm6PXJHCQ+0ERBq1Rw=",
      },
    });
    assert.equal(config.server.port, 7001);
    assert.deepEqual(config.server.clients, [
      { name: "default", keys: ["k1", "k2"], admin: true, weight: 1 },
    ]);
    assert.equal(config.redis.url, "redis://r:6379");
    assert.equal(config.storage.endpoint, "http://s3:9000");
    assert.equal(config.storage.region, "eu-west-1");
    assert.equal(config.storage.forcePathStyle, false);
    assert.equal(config.executor.kind, "kubernetes");
    assert.equal(config.executor.localConcurrency, 3);
    assert.equal(config.logLevel, "warn");
    assert.equal(config.webhooks.signingSecret, "whsec_MfDgjTRNzvS5AhsG0LRpvwxOKOm6PXJHCQ+0ERBq1Rw=");
  });

  const invalid: Array<[string, string, Record<string, string>, RegExp]> = [
    ["a port that is not a number", "server:\n  port: eighty\n", {}, /server\.port: .*integer.*"eighty"/],
    [
      "a mode outside the list",
      "server:\n  mode: fast\n",
      {},
      /server\.mode: must be one of debug, release, test/,
    ],
    ["an unknown field", "server:\n  prot: 80\n", {}, /server\.prot: unexpected property/],
    ["an unknown section", "servr:\n  port: 80\n", {}, /servr: unexpected property/],
    [
      "a bad duration",
      "server:\n  read_timeout: soon\n",
      {},
      /server\.read_timeout: invalid duration "soon"/,
    ],
    [
      "an unset variable without default",
      "redis:\n  url: ${NOPE}\n",
      {},
      /redis\.url: environment variable NOPE is not set/,
    ],
    [
      "a bad environment override",
      "",
      { EXECUTOR: "docker" },
      /executor\.kind: must be one of local, kubernetes/,
    ],
    ["api_keys not a list", "server:\n  api_keys:\n    primary: abc\n", {}, /server\.api_keys/],
    ["heartbeat not shorter than write_timeout", "server:\n  sse_heartbeat: 40s\n", {}, /sse_heartbeat/],
  ];
  for (const [name, yaml, env, pattern] of invalid) {
    test(`refused at start with a message naming the field: ${name}`, () => {
      assert.throws(
        () => loadConfig({ file: file(yaml), env }),
        (err: unknown) => err instanceof ConfigError && pattern.test(err.message),
      );
    });
  }

  test("a missing file and a file that is not YAML are named", () => {
    assert.throws(
      () => loadConfig({ file: join(dir, "absent.yaml"), env: {} }),
      /cannot read config file .*absent\.yaml/,
    );
    assert.throws(() => loadConfig({ file: file("server: [unclosed\n"), env: {} }), /is not valid YAML/);
  });
});

// Compile-time: the resolved configuration's type is computed from the schema (npm run typecheck).
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Expect<T extends true> = T;
export type ResolvedTypes = [
  Expect<Equal<Config["executor"]["timeoutsMs"]["image_resize"], number>>,
  Expect<Equal<Config["executor"]["localRunnerMaxJobs"], number>>,
  Expect<Equal<Config["kubernetes"]["resources"]["video_thumbnail"]["limits"]["memory"], string>>,
  Expect<Equal<Config["kubernetes"]["maxRunningJobsPerType"]["audio_convert"], number | undefined>>,
  Expect<
    Equal<
      Config["kubernetes"]["s3Secret"],
      { name: string; accessKeyKey: string; secretKeyKey: string } | undefined
    >
  >,
  Expect<Equal<Config["server"]["host"], string | undefined>>,
  Expect<Equal<Config["server"]["rateLimit"]["syncIntervalMs"], number>>,
  Expect<Equal<Config["webhooks"]["allowPrivate"], boolean | undefined>>,
  Expect<Equal<Config["executor"]["scratchDir"], string>>,
  Expect<
    Equal<
      ApiClient,
      {
        name: string;
        keys: string[];
        admin: boolean;
        rateLimit?: number;
        weight: number;
        maxRunning?: number;
        maxPending?: number;
        jobTypes?: JobType[];
        maxPriority?: number;
        maxSourceBytes?: number;
      }
    >
  >,
];

describe("the resolved configuration, derived from the schema", () => {
  test("names are camelCase, durations milliseconds named …Ms, keys of per-job-type objects and pass-through objects kept", () => {
    const config = loadConfig({
      env: {},
      overrides: {
        kubernetes: {
          node_selector: { pool_name: "media" },
          affinity: { nodeAffinity: { some_field: 1 } },
          max_running_jobs_per_type: { audio_convert: 2 },
          leader_election: { lease_duration: "20s" },
        },
      },
    });
    assert.equal(config.executor.timeoutsMs.audio_convert, 30 * 60_000);
    assert.equal(config.executor.localRunnerMaxJobs, 500);
    assert.equal(config.kubernetes.resources.image_resize.requests.cpu, "250m");
    assert.deepEqual(config.kubernetes.maxRunningJobsPerType, { audio_convert: 2 });
    assert.deepEqual(config.kubernetes.nodeSelector, { pool_name: "media" });
    assert.deepEqual(config.kubernetes.affinity, { nodeAffinity: { some_field: 1 } });
    assert.equal(config.kubernetes.leaderElection.leaseDurationMs, 20_000);
    assert.equal(config.kubernetes.leaderElection.leaseName, "media-service-controller");
  });

  test("a new setting needs nothing but its schema: name, default, environment variable, duration", () => {
    const schema = Type.Object({
      queue: Type.Object(
        {
          max_depth_per_client: Type.Integer({ default: 10, "x-env": "MAX_DEPTH" }),
          idle_timeout: Type.Union([Type.String(), Type.Number()], {
            default: "90s",
            [DURATION]: true,
          }) as TDuration,
          per_type: Type.Object(
            { image_resize: Type.Integer({ default: 1 }) },
            { default: {}, [KEYED_BY]: "job type" },
          ),
        },
        { default: {} },
      ),
    });
    const value = Value.Default(schema, {});
    const resolved = resolveSettings(schema, value, (_, v) => parseDuration(v)) as Resolved<typeof schema>;
    assert.deepEqual(resolved, {
      queue: { maxDepthPerClient: 10, idleTimeoutMs: 90_000, perType: { image_resize: 1 } },
    });
    const typed: number = resolved.queue.idleTimeoutMs + resolved.queue.maxDepthPerClient;
    assert.equal(typed, 90_010);
    assert.deepEqual(envSettings(schema), [
      { name: "MAX_DEPTH", path: ["queue", "max_depth_per_client"], kind: "integer" },
    ]);
  });
});

describe("durations", () => {
  test("Go-style and numeric forms", () => {
    assert.equal(parseDuration("30s"), 30_000);
    assert.equal(parseDuration("250ms"), 250);
    assert.equal(parseDuration("1h30m"), 5_400_000);
    assert.equal(parseDuration("7d"), 604_800_000);
    assert.equal(parseDuration(1.5), 1500);
    assert.equal(parseDuration("2"), 2000);
  });
  test("garbage is refused", () => {
    for (const bad of ["", "s", "10x", "1h 30m", "-5s", "ten seconds"]) {
      assert.throws(() => parseDuration(bad), /invalid duration/, bad);
    }
  });
});

describe("storage.output_link_expiry", () => {
  test("15 minutes by default; longer than S3 allows a presigned URL is refused at start, naming the setting", () => {
    assert.equal(loadConfig({ env: {}, file: "/dev/null" }).storage.outputLinkExpiryMs, 15 * 60 * 1000);
    assert.equal(
      loadConfig({ env: {}, file: "/dev/null", overrides: { storage: { output_link_expiry: "7d" } } }).storage
        .outputLinkExpiryMs,
      7 * 24 * 3600 * 1000,
    );
    for (const bad of ["8d", "500ms"]) {
      assert.throws(
        () => loadConfig({ env: {}, file: "/dev/null", overrides: { storage: { output_link_expiry: bad } } }),
        /storage\.output_link_expiry must be between 1s and 7d/,
        bad,
      );
    }
  });
});

describe("limits.idempotency_ttl", () => {
  test("24 hours by default; from 1s to 7d, anything else refused at start, naming the setting", () => {
    const load = (value?: string) =>
      loadConfig({
        env: {},
        file: "/dev/null",
        ...(value === undefined ? {} : { overrides: { limits: { idempotency_ttl: value } } }),
      }).limits.idempotencyTtlMs;
    assert.equal(load(), 24 * 3600 * 1000);
    assert.equal(load("1s"), 1000);
    assert.equal(load("7d"), 7 * 24 * 3600 * 1000);
    for (const bad of ["8d", "500ms", "0"]) {
      assert.throws(() => load(bad), /limits\.idempotency_ttl must be between 1s and 7d/, bad);
    }
  });
});
