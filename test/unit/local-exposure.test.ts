import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { apiExposureProblem, isLoopback, listenHost } from "../../core/config/exposure.js";
import { loadConfig } from "../../core/config/load.js";
import { banner, quickstart } from "../../local/banner.js";
import { embeddedStoreExposureProblem } from "../../local/stack.js";
import { readmeQuickstart } from "../support/readme.js";

const config = (env: Record<string, string> = {}) => loadConfig({ env });

describe("where start and api listen", () => {
  test("start listens on loopback, api and controller on every interface, HOST wins", () => {
    assert.equal(listenHost(config(), "start"), "127.0.0.1");
    assert.equal(listenHost(config(), "api"), "0.0.0.0");
    assert.equal(listenHost(config(), "controller"), "0.0.0.0");
    assert.equal(listenHost(config({ HOST: "0.0.0.0" }), "start"), "0.0.0.0");
    assert.equal(listenHost(config({ HOST: "127.0.0.1" }), "api"), "127.0.0.1");
  });

  test("loopback: localhost, 127.0.0.0/8, ::1 and its IPv4-mapped forms; nothing else", () => {
    for (const host of [
      "localhost",
      "LOCALHOST",
      "app.localhost",
      "127.0.0.1",
      "127.1.2.3",
      "::1",
      "[::1]",
      "::ffff:127.0.0.1",
    ]) {
      assert.ok(isLoopback(host), host);
    }
    for (const host of [
      "0.0.0.0",
      "::",
      "10.0.0.1",
      "192.168.1.10",
      "example.com",
      "localhost.example.com",
      "::ffff:10.0.0.1",
    ]) {
      assert.ok(!isLoopback(host), host);
    }
  });

  test("no API keys off loopback is refused, naming the three ways out", () => {
    const problem = apiExposureProblem(config({ HOST: "0.0.0.0" }), "start");
    assert.match(problem ?? "", /^refusing to serve the API on 0\.0\.0\.0:8080 without authentication/);
    for (const way of ["API_KEYS", "HOST=127.0.0.1", "ALLOW_UNAUTHENTICATED=true"])
      assert.ok(problem?.includes(way), way);
    assert.ok(apiExposureProblem(config(), "api"), "api listens on 0.0.0.0 by default and has no keys");
    assert.equal(apiExposureProblem(config(), "start"), undefined);
    assert.equal(apiExposureProblem(config({ HOST: "0.0.0.0", API_KEYS: "k" }), "start"), undefined);
    assert.equal(
      apiExposureProblem(config({ HOST: "0.0.0.0", ALLOW_UNAUTHENTICATED: "true" }), "api"),
      undefined,
    );
    assert.ok(apiExposureProblem(config({ HOST: "0.0.0.0", ALLOW_UNAUTHENTICATED: "false" }), "api"));
  });

  test("the embedded store off loopback needs credentials other than the defaults", () => {
    assert.equal(embeddedStoreExposureProblem(config()), undefined);
    const open = config({ EMBEDDED_S3_HOST: "0.0.0.0" });
    assert.match(embeddedStoreExposureProblem(open) ?? "", /S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY/);
    const defaults = config({
      EMBEDDED_S3_HOST: "0.0.0.0",
      S3_ACCESS_KEY_ID: "media-service",
      S3_SECRET_ACCESS_KEY: "media-service-secret",
    });
    assert.ok(embeddedStoreExposureProblem(defaults));
    const own = config({
      EMBEDDED_S3_HOST: "0.0.0.0",
      S3_ACCESS_KEY_ID: "media",
      S3_SECRET_ACCESS_KEY: "a-secret-of-mine",
    });
    assert.equal(embeddedStoreExposureProblem(own), undefined);
    // With an object store of its own, start runs no embedded store at all.
    assert.equal(
      embeddedStoreExposureProblem(config({ EMBEDDED_S3_HOST: "0.0.0.0", S3_ENDPOINT: "http://s3:9000" })),
      undefined,
    );
  });
});

describe("the banner", () => {
  test("the README's quickstart is what start prints with the default settings", () => {
    assert.equal(readmeQuickstart(), quickstart(config()));
  });

  test("with keys and credentials of the user's own, it names their variables and prints no secret", () => {
    const own = config({
      HOST: "0.0.0.0",
      API_KEYS: "k-secret-1",
      S3_ACCESS_KEY_ID: "media",
      S3_SECRET_ACCESS_KEY: "s3-secret-2",
      S3_ENDPOINT: "http://127.0.0.1:9000",
    });
    const text = banner(own, { ai: "none", started: { s3: "http://127.0.0.1:9000" }, client: "curl" });
    assert.ok(!text.includes("k-secret-1") && !text.includes("s3-secret-2"));
    assert.match(text, /--user "\$S3_ACCESS_KEY_ID:\$S3_SECRET_ACCESS_KEY"/);
    assert.match(text, /-H "X-API-Key: \$API_KEY"/);
    assert.match(text, /reachable from 0\.0\.0\.0, with API keys/);
    assert.match(text, /http:\/\/localhost:8080\/api\/v1/);
    // The command line reads the store's settings from the environment: no credentials in its example.
    const cli = banner(own, { ai: "none", started: { s3: "http://127.0.0.1:9000" }, client: "cli" });
    assert.ok(!cli.includes("k-secret-1") && !cli.includes("s3-secret-2"));
    assert.match(cli, /bin\/media-service --api-key "\$API_KEY" submit image\/resize/);
    assert.match(cli, /in this directory/);
  });

  test("an API on another port is named with --url", () => {
    assert.match(
      quickstart(config({ PORT: "9090" })),
      /bin\/media-service --url http:\/\/localhost:9090 submit/,
    );
  });
});
