// The runner's limits from the environment (runner pods get no configuration file), the deadline
// the executor passes in JOB_TIMEOUT_SECONDS, and the Kubernetes quantities checked at load.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { ConfigError, jobTimeoutFromEnv, loadConfig } from "../../core/config/load.js";
import { RUNNER_ENV } from "../../core/config/runner-env.js";

const dir = mkdtempSync(join(tmpdir(), "media-service-config-limits-"));
function file(text: string): string {
  const path = join(dir, `${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(path, text);
  return path;
}

function refused(load: () => unknown, pattern: RegExp): void {
  assert.throws(load, (err: unknown) => {
    assert.ok(err instanceof ConfigError, String(err));
    assert.match(err.message, pattern);
    return true;
  });
}

describe("runner limits from the environment", () => {
  test("the variable names are exported from core", () => {
    assert.equal(RUNNER_ENV.maxSourceBytes, "MAX_SOURCE_BYTES");
    assert.equal(RUNNER_ENV.maxInputPixels, "MAX_INPUT_PIXELS");
    assert.equal(RUNNER_ENV.maxOutputDimension, "MAX_OUTPUT_DIMENSION");
    assert.equal(RUNNER_ENV.jobTimeoutSeconds, "JOB_TIMEOUT_SECONDS");
  });

  test("MAX_SOURCE_BYTES, MAX_INPUT_PIXELS and MAX_OUTPUT_DIMENSION set the limits", () => {
    const config = loadConfig({
      env: { MAX_SOURCE_BYTES: "1048576", MAX_INPUT_PIXELS: "4000000", MAX_OUTPUT_DIMENSION: "2048" },
    });
    assert.equal(config.limits.maxSourceBytes, 1_048_576);
    assert.equal(config.limits.maxInputPixels, 4_000_000);
    assert.equal(config.limits.maxOutputDimension, 2048);
  });

  test("without them, the defaults", () => {
    const config = loadConfig({ env: {} });
    assert.equal(config.limits.maxSourceBytes, 5 * 1024 ** 3);
    assert.equal(config.limits.maxInputPixels, 100_000_000);
    assert.equal(config.limits.maxOutputDimension, 16_384);
  });

  test("they override the file, and an empty value counts as unset", () => {
    const path = file("limits:\n  max_source_bytes: 1000\n  max_input_pixels: 2000\n");
    const config = loadConfig({ file: path, env: { MAX_SOURCE_BYTES: "3000", MAX_INPUT_PIXELS: "" } });
    assert.equal(config.limits.maxSourceBytes, 3000);
    assert.equal(config.limits.maxInputPixels, 2000);
  });

  test("a number is read as the file reads it: 1e9 is an integer", () => {
    assert.equal(loadConfig({ env: { MAX_SOURCE_BYTES: "1e9" } }).limits.maxSourceBytes, 1_000_000_000);
    assert.equal(loadConfig({ env: { MAX_SOURCE_BYTES: "2048.0" } }).limits.maxSourceBytes, 2048);
    assert.equal(loadConfig({ env: { MAX_SOURCE_BYTES: " 42 " } }).limits.maxSourceBytes, 42);
  });

  const invalid: Array<[string, string, RegExp]> = [
    [
      "MAX_SOURCE_BYTES",
      "5GB",
      /limits\.max_source_bytes: expected integer \(got "5GB" from MAX_SOURCE_BYTES\)/,
    ],
    [
      "MAX_SOURCE_BYTES",
      "0x10",
      /limits\.max_source_bytes: expected integer \(got "0x10" from MAX_SOURCE_BYTES\)/,
    ],
    [
      "MAX_SOURCE_BYTES",
      "12abc",
      /limits\.max_source_bytes: expected integer \(got "12abc" from MAX_SOURCE_BYTES\)/,
    ],
    [
      "MAX_INPUT_PIXELS",
      "0",
      /limits\.max_input_pixels: .*greater or equal to 1 \(got 0 from MAX_INPUT_PIXELS\)/,
    ],
    [
      "MAX_INPUT_PIXELS",
      "-5",
      /limits\.max_input_pixels: .*greater or equal to 1 \(got -5 from MAX_INPUT_PIXELS\)/,
    ],
    [
      "MAX_OUTPUT_DIMENSION",
      "2.5",
      /limits\.max_output_dimension: expected integer \(got "2\.5" from MAX_OUTPUT_DIMENSION\)/,
    ],
    [
      "MAX_OUTPUT_DIMENSION",
      "wide",
      /limits\.max_output_dimension: .*\(got "wide" from MAX_OUTPUT_DIMENSION\)/,
    ],
  ];
  for (const [name, value, pattern] of invalid) {
    test(`${name}=${value} is refused with a message naming the variable`, () => {
      refused(() => loadConfig({ env: { [name]: value } }), pattern);
    });
  }

  test("a bad value in the file is still named by its field and file", () => {
    const path = file("limits:\n  max_output_dimension: 0\n");
    refused(
      () => loadConfig({ file: path, env: {} }),
      /in .*\.yaml or the environment: limits\.max_output_dimension: .*\(got 0\)$/,
    );
  });

  test("a value the overrides replace is not blamed on the variable", () => {
    refused(
      () => loadConfig({ env: { MAX_INPUT_PIXELS: "10" }, overrides: { limits: { max_input_pixels: 0 } } }),
      /limits\.max_input_pixels: .*\(got 0\)$/,
    );
  });

  test("the other integer variables are read the same way", () => {
    assert.equal(loadConfig({ env: { PORT: "9000" } }).server.port, 9000);
    refused(
      () => loadConfig({ env: { PORT: "80.5" } }),
      /server\.port: expected integer \(got "80\.5" from PORT\)/,
    );
    refused(
      () => loadConfig({ env: { LOCAL_CONCURRENCY: "two" } }),
      /executor\.local_concurrency: expected integer \(got "two" from LOCAL_CONCURRENCY\)/,
    );
  });
});

describe("JOB_TIMEOUT_SECONDS", () => {
  test("unset or empty: no deadline from the executor", () => {
    assert.equal(jobTimeoutFromEnv({}), undefined);
    assert.equal(jobTimeoutFromEnv({ JOB_TIMEOUT_SECONDS: "" }), undefined);
  });

  test("a positive integer is the deadline in seconds", () => {
    assert.equal(jobTimeoutFromEnv({ JOB_TIMEOUT_SECONDS: "1" }), 1);
    assert.equal(jobTimeoutFromEnv({ JOB_TIMEOUT_SECONDS: "3600" }), 3600);
  });

  test("anything else is a ConfigError naming the variable", () => {
    for (const bad of ["0", "-1", "1.5", "1e3", "ten", "30s", "99999999999999999999"]) {
      refused(
        () => jobTimeoutFromEnv({ JOB_TIMEOUT_SECONDS: bad }),
        new RegExp(
          `JOB_TIMEOUT_SECONDS must be a positive integer .*${JSON.stringify(bad).replace(/[.+]/g, "\\$&")}`,
        ),
      );
    }
  });
});

describe("Kubernetes quantities in the configuration", () => {
  test("the defaults parse and every default request fits its limit", () => {
    const config = loadConfig({ env: {} });
    assert.deepEqual(config.kubernetes.maxResources, { cpu: "4", memory: "8Gi" });
  });

  test("quantities in other forms are accepted", () => {
    const path = file(`
kubernetes:
  max_resources: { cpu: 2500m, memory: 8192Mi }
  resources:
    image_resize:
      requests: { cpu: "1", memory: 1G, ephemeral_storage: 500M }
      limits: { cpu: 1000m, memory: 1Gi, ephemeral_storage: 4Gi }
`);
    const config = loadConfig({ file: path, env: {} });
    assert.deepEqual(config.kubernetes.maxResources, { cpu: "2500m", memory: "8192Mi" });
    assert.deepEqual(config.kubernetes.resources.image_resize, {
      requests: { cpu: "1", memory: "1G", ephemeralStorage: "500M" },
      limits: { cpu: "1000m", memory: "1Gi", ephemeralStorage: "4Gi" },
    });
  });

  const invalid: Array<[string, string, RegExp]> = [
    [
      "a max_resources memory the schema pattern lets through but Kubernetes refuses",
      "kubernetes:\n  max_resources:\n    memory: 8K\n",
      /kubernetes\.max_resources\.memory: "8K" is not a Kubernetes quantity: unknown suffix "K"/,
    ],
    [
      "a max_resources cpu that is not a quantity",
      "kubernetes:\n  max_resources:\n    cpu: four\n",
      /kubernetes\.max_resources\.cpu: .*"four"/,
    ],
    [
      "a request that does not parse",
      "kubernetes:\n  resources:\n    audio_convert:\n      requests:\n        memory: 512K\n",
      /kubernetes\.resources\.audio_convert\.requests\.memory: "512K" is not a Kubernetes quantity/,
    ],
    [
      "a limit that does not parse",
      "kubernetes:\n  resources:\n    analyze:\n      limits:\n        memory: 1P0\n",
      /kubernetes\.resources\.analyze\.limits\.memory/,
    ],
    [
      "a cpu request above its limit",
      "kubernetes:\n  resources:\n    image_resize:\n      requests:\n        cpu: 1500m\n",
      /kubernetes\.resources\.image_resize\.requests\.cpu 1500m is above its limit 1 \(kubernetes\.resources\.image_resize\.limits\.cpu\)/,
    ],
    [
      "a memory request above its limit, in other units",
      "kubernetes:\n  resources:\n    video_thumbnail:\n      requests:\n        memory: 2049Mi\n",
      /kubernetes\.resources\.video_thumbnail\.requests\.memory 2049Mi is above its limit 2Gi/,
    ],
    [
      "a limit lowered under the default request",
      "kubernetes:\n  resources:\n    image_ai_keywords:\n      limits:\n        memory: 100Mi\n",
      /kubernetes\.resources\.image_ai_keywords\.requests\.memory 128Mi is above its limit 100Mi/,
    ],
    [
      "a scratch size Kubernetes refuses",
      "kubernetes:\n  scratch_size: 2K\n",
      /kubernetes\.scratch_size: "2K" is not a Kubernetes quantity/,
    ],
  ];
  for (const [name, yaml, pattern] of invalid) {
    test(`refused at load: ${name}`, () => {
      refused(() => loadConfig({ file: file(yaml), env: {} }), pattern);
    });
  }

  test("a request equal to its limit (in other units) is accepted", () => {
    const path = file(
      "kubernetes:\n  resources:\n    image_colors:\n      requests: { cpu: 1000m, memory: 1024Mi, ephemeral_storage: 2048Mi }\n",
    );
    const config = loadConfig({ file: path, env: {} });
    assert.deepEqual(config.kubernetes.resources.image_colors.requests, {
      cpu: "1000m",
      memory: "1024Mi",
      ephemeralStorage: "2048Mi",
    });
  });
});
