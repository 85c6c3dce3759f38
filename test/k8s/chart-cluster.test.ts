// The chart as a cluster of several nodes expects it, on helm's renders (the default values with
// networkPolicy on, and every option on): every pod's local disk requested and bounded, a runner
// Job's by its job type; the bundled Redis governed by a headless Service, as a user of its own, with
// a liveness probe apart from its readiness; API and controller replicas spread over nodes without
// ever blocking a one-node cluster; and the runner NetworkPolicy selecting the pods the controller
// creates (a runner Job of every type, built by the controller's own code from the rendered
// config.yaml), not only what the render holds.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { buildJobManifest, kubernetesSettings } from "../../controller/kubernetes/job-manifest.js";
import { loadConfig, type Config } from "../../core/config/load.js";
import type { Job } from "../../core/jobs/records.js";
import { JOB_TYPES } from "../../core/jobs/types.js";
import { parseQuantity } from "../../core/quantity.js";
import { ALL_ON_VALUES, configYaml, deploymentEnv, renderChart, type K8sObject } from "./support/helm.js";

type Labels = Record<string, string>;
type Resources = { requests?: Labels; limits?: Labels };
type Selector = { matchLabels?: Labels };
type PodSpec = {
  containers: Array<{
    name: string;
    resources?: Resources;
    livenessProbe?: unknown;
    readinessProbe?: unknown;
  }>;
  securityContext?: Record<string, unknown>;
  volumes?: Array<{ name: string; emptyDir?: { sizeLimit?: string } }>;
  affinity?: {
    podAntiAffinity?: {
      preferredDuringSchedulingIgnoredDuringExecution?: Array<{
        weight: number;
        podAffinityTerm: { topologyKey: string; labelSelector: Selector };
      }>;
      requiredDuringSchedulingIgnoredDuringExecution?: Array<{
        topologyKey: string;
        labelSelector: Selector;
      }>;
    };
    nodeAffinity?: unknown;
  };
  topologySpreadConstraints?: Array<{
    topologyKey: string;
    whenUnsatisfiable: string;
    labelSelector?: Selector;
    matchLabelKeys?: string[];
  }>;
};
type Template = { metadata: { labels: Labels }; spec: PodSpec };

const RENDERS = [
  ["the default values, networkPolicy on", ["--set", "networkPolicy.enabled=true"]],
  ["every option on", ["--values", ALL_ON_VALUES]],
] as const;

const one = (objects: K8sObject[], kind: string, suffix: string): K8sObject => {
  const found = objects.filter((o) => o.kind === kind && o.metadata.name.endsWith(suffix));
  assert.equal(found.length, 1, `one ${kind} named *${suffix}`);
  return found[0]!;
};
const template = (o: K8sObject) => (o.spec as { template: Template }).template;
const matches = (labels: Labels, selector: Selector | undefined) =>
  Object.entries(selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
/** Every pod the render holds: its owner's name and its template. */
const pods = (objects: K8sObject[]): Array<[string, Template]> =>
  objects.flatMap((o): Array<[string, Template]> => {
    const where = `${o.kind}/${o.metadata.name}`;
    if (o.kind === "Pod")
      return [[where, { metadata: { labels: o.metadata.labels ?? {} }, spec: o.spec as PodSpec }]];
    return ["Deployment", "StatefulSet"].includes(o.kind) ? [[where, template(o)]] : [];
  });

let tmp: string;
before(async () => {
  tmp = await mkdtemp(join(tmpdir(), "media-chart-cluster-"));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** The configuration the controller loads from the rendered ConfigMap, with its Deployment's env. */
async function controllerConfig(objects: K8sObject[], file: string): Promise<Config> {
  const path = join(tmp, file);
  await writeFile(path, configYaml(objects));
  return loadConfig({ file: path, env: deploymentEnv(objects, "-controller") });
}

/** The runner Job the controller creates for a job of `type`. */
function runnerJob(config: Config, type: (typeof JOB_TYPES)[number]) {
  const now = new Date().toISOString();
  const job: Job = {
    id: "5f0c8a2e-3b1d-4c6e-9f7a-2d8b1e4c6a90",
    type,
    status: "pending",
    source_bucket: "in",
    source_key: "a",
    dest_bucket: "out",
    dest_key: "b",
    parameters: {},
    created_at: now,
    updated_at: now,
  };
  return buildJobManifest(job, kubernetesSettings(config), 60);
}

for (const [name, values] of RENDERS) {
  describe(`rendered with ${name}`, () => {
    let objects: K8sObject[];
    let config: Config;
    before(async () => {
      objects = await renderChart([...values]);
      config = await controllerConfig(objects, `${name.replace(/\W+/g, "-")}.yaml`);
    });

    test("every container requests and limits its local disk; each emptyDir fits its pod's limits", () => {
      for (const [where, { spec }] of pods(objects)) {
        let limits = 0;
        for (const c of spec.containers) {
          assert.ok(
            c.resources?.requests?.["ephemeral-storage"],
            `${where} ${c.name} requests ephemeral-storage`,
          );
          const limit = c.resources?.limits?.["ephemeral-storage"];
          assert.ok(limit, `${where} ${c.name} limits ephemeral-storage`);
          limits += parseQuantity(limit);
        }
        const sized = (spec.volumes ?? []).filter((v) => v.emptyDir?.sizeLimit);
        const scratch = sized.reduce((sum, v) => sum + parseQuantity(v.emptyDir!.sizeLimit!), 0);
        assert.ok(
          scratch <= limits,
          `${where}: its emptyDirs (${scratch} bytes) within its limits (${limits})`,
        );
      }
    });

    test("a runner Job's disk is its type's (a video encode's far more than an image's), its scratch sized to match", () => {
      for (const type of JOB_TYPES) {
        const pod = runnerJob(config, type).spec!.template.spec!;
        const resources = pod.containers[0]!.resources!;
        const want = config.kubernetes.resources[type];
        assert.equal(resources.requests!["ephemeral-storage"], want.requests.ephemeralStorage, type);
        assert.equal(resources.limits!["ephemeral-storage"], want.limits.ephemeralStorage, type);
        assert.deepEqual(pod.volumes, [
          { name: "scratch", emptyDir: { sizeLimit: want.limits.ephemeralStorage } },
        ]);
      }
      const disk = (type: (typeof JOB_TYPES)[number]) =>
        parseQuantity(
          runnerJob(config, type).spec!.template.spec!.containers[0]!.resources!.limits![
            "ephemeral-storage"
          ]!,
        );
      assert.ok(disk("video_transcode") >= 8 * disk("image_colors"));
      assert.ok(disk("video_adaptive") >= 8 * disk("image_colors"));
    });

    test("the runner NetworkPolicy selects every runner Job's pod the controller creates, and no other pod", () => {
      const policy = one(objects, "NetworkPolicy", "-runner").spec as { podSelector: Selector };
      for (const type of JOB_TYPES) {
        const labels = runnerJob(config, type).spec!.template.metadata!.labels!;
        assert.ok(matches(labels, policy.podSelector), `${type}: ${JSON.stringify(labels)}`);
      }
      for (const [where, pod] of pods(objects)) {
        assert.ok(!matches(pod.metadata.labels, policy.podSelector), `${where} is no runner pod`);
      }
      // Pool workers run the same jobs: their own NetworkPolicy selects them.
      const pool = objects.find((o) => o.kind === "Deployment" && o.metadata.name.endsWith("-pool"));
      if (pool) {
        const poolPolicy = one(objects, "NetworkPolicy", "-pool").spec as { podSelector: Selector };
        assert.ok(matches(template(pool).metadata.labels, poolPolicy.podSelector));
      }
    });

    test("the Redis StatefulSet's serviceName is a headless Service of its pod", () => {
      const redis = one(objects, "StatefulSet", "-redis");
      const serviceName = (redis.spec as { serviceName: string }).serviceName;
      const service = objects.find((o) => o.kind === "Service" && o.metadata.name === serviceName);
      assert.ok(service, `a Service named ${serviceName}`);
      const spec = service.spec as { clusterIP?: string; selector: Labels };
      assert.equal(spec.clusterIP, "None");
      assert.ok(matches(template(redis).metadata.labels, { matchLabels: spec.selector }));
    });

    test("Redis runs as a user and group of its own above 10000, alive when it accepts connections, ready when it answers", () => {
      const { spec } = template(one(objects, "StatefulSet", "-redis"));
      for (const id of ["runAsUser", "runAsGroup", "fsGroup"]) {
        assert.ok((spec.securityContext?.[id] as number) > 10000, id);
      }
      const [redis] = spec.containers;
      assert.ok(redis?.livenessProbe && redis.readinessProbe);
      assert.notDeepEqual(redis.livenessProbe, redis.readinessProbe);
      assert.deepEqual((redis.livenessProbe as { tcpSocket?: unknown }).tcpSocket, { port: "redis" });
    });

    test("API and controller replicas are spread over nodes, preferred (a one-node cluster schedules them all)", () => {
      for (const suffix of ["-api", "-controller"]) {
        const { metadata, spec } = template(one(objects, "Deployment", suffix));
        const [term, ...more] =
          spec.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
        assert.ok(term, `${suffix}: preferred pod anti-affinity`);
        assert.deepEqual(more, []);
        assert.equal(
          spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution,
          undefined,
        );
        assert.equal(term.podAffinityTerm.topologyKey, "kubernetes.io/hostname");
        assert.ok(matches(metadata.labels, term.podAffinityTerm.labelSelector), `${suffix}: its own pods`);
        // Their own pods only: the API's term does not count the controller's, nor the other way.
        assert.equal(
          term.podAffinityTerm.labelSelector.matchLabels?.["app.kubernetes.io/component"],
          suffix.slice(1),
        );
        for (const c of spec.topologySpreadConstraints ?? []) {
          assert.equal(c.whenUnsatisfiable, "ScheduleAnyway", `${suffix} ${c.topologyKey}`);
          assert.ok(matches(metadata.labels, c.labelSelector), `${suffix} ${c.topologyKey}: its own pods`);
        }
      }
      const controller = template(one(objects, "Deployment", "-controller")).spec;
      assert.deepEqual(
        controller.topologySpreadConstraints?.map((c) => [c.topologyKey, c.matchLabelKeys]),
        [["topology.kubernetes.io/zone", ["pod-template-hash"]]],
      );
    });
  });
}

describe("spreading values", () => {
  test("podAntiAffinity hard: one replica a node, required; an affinity given replaces the preset", async () => {
    const hard = await renderChart([
      "--set",
      "api.podAntiAffinity=hard",
      "--set",
      "controller.podAntiAffinity=",
    ]);
    const api = template(one(hard, "Deployment", "-api")).spec.affinity?.podAntiAffinity;
    const [required] = api?.requiredDuringSchedulingIgnoredDuringExecution ?? [];
    assert.equal(required?.topologyKey, "kubernetes.io/hostname");
    assert.equal(required?.labelSelector.matchLabels?.["app.kubernetes.io/component"], "api");
    assert.equal(api?.preferredDuringSchedulingIgnoredDuringExecution, undefined);
    assert.equal(template(one(hard, "Deployment", "-controller")).spec.affinity, undefined);

    const own = await renderChart([
      "--set-json",
      'controller.affinity={"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["system"]}]}]}}}',
    ]);
    const affinity = template(one(own, "Deployment", "-controller")).spec.affinity;
    assert.ok(affinity?.nodeAffinity);
    assert.equal(affinity.podAntiAffinity, undefined);
  });

  test("a topology spread constraint given without labelSelector gets the component's; one with it is kept", async () => {
    const objects = await renderChart([
      "--set-json",
      'api.topologySpreadConstraints=[{"maxSkew":1,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"DoNotSchedule"},{"maxSkew":2,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway","labelSelector":{"matchLabels":{"tier":"web"}}}]',
      "--set-json",
      "controller.topologySpreadConstraints=[]",
    ]);
    const [host, zone] = template(one(objects, "Deployment", "-api")).spec.topologySpreadConstraints ?? [];
    assert.equal(host?.whenUnsatisfiable, "DoNotSchedule");
    assert.equal(host?.labelSelector?.matchLabels?.["app.kubernetes.io/component"], "api");
    assert.deepEqual(host?.matchLabelKeys, ["pod-template-hash"]);
    assert.deepEqual(zone?.labelSelector, { matchLabels: { tier: "web" } });
    assert.equal(zone?.matchLabelKeys, undefined);
    assert.equal(
      template(one(objects, "Deployment", "-controller")).spec.topologySpreadConstraints,
      undefined,
    );
  });
});
