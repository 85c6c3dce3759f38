// The chart's defaults, rendered by the real helm CLI into the service's config.yaml, are the
// configuration schema's defaults except where listed with a reason, and load. The check also runs on a
// drifted rendering, to show it fails. (The chart's values, schema and templates against each other:
// test/unit/chart-drift.test.ts, which needs no helm.)
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isDeepStrictEqual } from "node:util";
import { parse as parseYaml } from "yaml";
import { loadConfig } from "../../core/config/load.js";
import { ConfigFile, DURATION } from "../../core/config/schema.js";
import { parseDuration } from "../../core/duration.js";
import { isTree, schemaAt, type JsonSchema, type Tree } from "../support/json-schema.js";
import { CHART, helm, type K8sObject } from "./support/helm.js";

/**
 * Where the chart's default config.yaml deliberately says another value than the configuration's
 * schema default. Settings without a schema default (unset: derived at start) are not compared.
 */
const CHART_DIFFERS: Record<string, string> = {
  "executor.kind": "the chart runs the Kubernetes executor",
  "kubernetes.instance": "the release name labels the runner Jobs",
  "kubernetes.image": "runner Jobs run the chart's own image (at its appVersion)",
};

/** Settings of a rendered config.yaml whose value is not the schema's default, nor listed. */
function defaultProblems(config: Tree, differs: Record<string, string> = CHART_DIFFERS): string[] {
  const problems: string[] = [];
  const root = ConfigFile as unknown as JsonSchema;
  const compare = (value: unknown, path: string[]) => {
    const key = path.join(".");
    const s = schemaAt(root, path);
    if (!s) return problems.push(`${key}: in the chart's config.yaml, not a setting`);
    if (isTree(value) && (s.properties || s.patternProperties)) {
      for (const [k, v] of Object.entries(value)) compare(v, [...path, k]);
      return;
    }
    if (s.default === undefined || key in differs) return;
    const same = s[DURATION]
      ? parseDuration(value as string) === parseDuration(s.default as string)
      : isDeepStrictEqual(value, s.default);
    if (!same) {
      problems.push(
        `${key}: the chart says ${JSON.stringify(value)}, the schema's default is ${JSON.stringify(s.default)}`,
      );
    }
  };
  for (const [k, v] of Object.entries(config)) compare(v, [k]);
  for (const key of Object.keys(differs)) {
    if (key.split(".").reduce<unknown>((node, k) => (node as Tree)?.[k], config) === undefined) {
      problems.push(`${key}: listed as differing on purpose, but the chart does not set it`);
    }
  }
  return problems;
}

async function renderedConfig(args: string[] = []): Promise<Tree> {
  const result = await helm(["template", "media", CHART, "--namespace", "media-ns", ...args]);
  assert.equal(result.code, 0, result.stderr);
  const configMap = result.stdout
    .split(/^---$/m)
    .map((doc) => parseYaml(doc) as K8sObject | null)
    .find((o) => o?.kind === "ConfigMap" && o.metadata.name === "media-media-service");
  assert.ok(configMap, "the ConfigMap");
  return parseYaml((configMap.data as Record<string, string>)["config.yaml"]!) as Tree;
}

describe("the chart's config.yaml", () => {
  test("has the configuration's defaults, except those listed with a reason, and loads", async () => {
    const config = await renderedConfig();
    assert.deepEqual(defaultProblems(config), []);
    assert.doesNotThrow(() => loadConfig({ env: {}, overrides: config }));
    const drifted = await renderedConfig([
      "--set",
      "runner.maxRunningJobs=25",
      "--set",
      "webhooks.timeout=1m",
    ]);
    assert.deepEqual(defaultProblems(drifted), [
      "kubernetes.max_running_jobs: the chart says 25, the schema's default is 20",
      'webhooks.timeout: the chart says "1m", the schema\'s default is "10s"',
    ]);
  });

  test("Kueue and the runner Jobs' labels: runner.* values become the kubernetes settings, and load", async () => {
    const config = await renderedConfig([
      "--set", "runner.kueue.queueName=media",
      "--set", "runner.kueue.maxWaitingAdmission=10m",
      "--set-json", 'runner.jobLabels={"team":"media"}',
      "--set-json", 'runner.jobAnnotations={"example.com/owner":"platform"}',
      "--set-json", 'runner.perType={"video_transcode":{"queueName":"video","labels":{"tier":"heavy"}}}',
      "--set-json", 'runner.perClient={"acme":{"queueName":"acme","annotations":{"example.com/tenant":"acme"}}}',
      "--set-json", 'runner.priorityBands=[{"minPriority":10,"workloadPriorityClass":"high"},{"minPriority":-50,"priorityClassName":"low"}]',
    ]); // prettier-ignore
    const k = loadConfig({ env: {}, overrides: config }).kubernetes;
    assert.deepEqual(k.kueue, { queueName: "media" });
    assert.equal(k.maxWaitingAdmissionMs, 600_000);
    assert.deepEqual(k.jobLabels, { team: "media" });
    assert.deepEqual(k.jobAnnotations, { "example.com/owner": "platform" });
    assert.deepEqual(k.perType.video_transcode, { queueName: "video", labels: { tier: "heavy" } });
    assert.deepEqual(k.perClient, {
      acme: { queueName: "acme", annotations: { "example.com/tenant": "acme" } },
    });
    assert.deepEqual(k.priorityBands, [
      { minPriority: 10, workloadPriorityClass: "high" },
      { minPriority: -50, priorityClassName: "low" },
    ]);
    // A label the controller owns is refused by the service, naming it.
    const own = await renderedConfig(["--set-json", 'runner.jobLabels={"app.kubernetes.io/instance":"x"}']);
    assert.throws(
      () => loadConfig({ env: {}, overrides: own }),
      /kubernetes\.job_labels: "app\.kubernetes\.io\/instance" is set by the controller/,
    );
  });
});
