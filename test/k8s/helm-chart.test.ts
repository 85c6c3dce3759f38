// The Helm chart, rendered by the real helm CLI: lint is clean, the schema refuses wrong types by
// name, and the rendered objects carry the conventions platform teams expect (labels, exactly the
// controller's RBAC, hardened pods, probes, resources) with the default values and with every
// optional part turned on. The rendered config.yaml must load with the service's own loader.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { CONTROLLER_RULES } from "../../controller/kubernetes/rbac.js";
import { loadConfig } from "../../core/config/load.js";
import { ALL_ON_VALUES, CHART, helm, renderChart, type K8sObject } from "./support/helm.js";

type Container = {
  name: string;
  args?: string[];
  env?: Array<{ name: string; value?: string; valueFrom?: unknown }>;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
  livenessProbe?: { httpGet?: { path: string } };
  readinessProbe?: { httpGet?: { path: string } };
  lifecycle?: { preStop?: unknown };
};
type PodSpec = {
  containers: Container[];
  securityContext?: Record<string, unknown>;
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  terminationGracePeriodSeconds?: number;
};

const byKind = (objects: K8sObject[], kind: string) => objects.filter((o) => o.kind === kind);
const one = (objects: K8sObject[], kind: string, nameSuffix = ""): K8sObject => {
  const found = objects.filter((o) => o.kind === kind && o.metadata.name.endsWith(nameSuffix));
  assert.equal(
    found.length,
    1,
    `one ${kind} named *${nameSuffix}: ${found.map((o) => o.metadata.name).join(", ")}`,
  );
  return found[0]!;
};
const podSpec = (o: K8sObject) => (o.spec as { template: { spec: PodSpec } }).template.spec;

let tmp: string;
before(async () => {
  tmp = await mkdtemp(join(tmpdir(), "media-chart-"));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe("helm lint", () => {
  for (const [name, args] of [
    ["default values", []],
    ["every option on", ["--values", ALL_ON_VALUES]],
  ] as const) {
    test(`is clean with ${name} (strict)`, async () => {
      const result = await helm(["lint", CHART, "--strict", ...args]);
      assert.equal(result.code, 0, result.stdout + result.stderr);
      assert.match(result.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
      assert.doesNotMatch(result.stdout, /\[(WARNING|ERROR)\]/);
    });
  }
});

describe("values schema", () => {
  const cases: Array<[string, string[], RegExp]> = [
    [
      "a port that is not a number",
      ["--set-string", "api.port=eighty"],
      /at '\/api\/port': got string, want integer/,
    ],
    [
      "replicas as text",
      ["--set-string", "controller.replicas=two"],
      /at '\/controller\/replicas': got string, want integer/,
    ],
    [
      "a boolean as text",
      ["--set-string", "webhooks.allowPrivate=yes"],
      /at '\/webhooks\/allowPrivate': got string, want boolean/,
    ],
    [
      "a pull policy outside the list",
      ["--set", "image.pullPolicy=Sometimes"],
      /at '\/image\/pullPolicy': value must be one of/,
    ],
    ["a misspelt value", ["--set", "api.replica=3"], /at '\/api'.*replica/s],
    [
      "a bad memory quantity",
      ["--set", "runner.scratchSize=lots"],
      /at '\/runner\/scratchSize': 'lots' does not match/,
    ],
  ];
  for (const [name, args, message] of cases) {
    test(`refuses ${name}, naming the value`, async () => {
      const result = await helm(["template", "media", CHART, ...args]);
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, /values don't meet the specifications of the schema/);
      assert.match(result.stderr, message);
    });
  }
});

for (const [name, args] of [
  ["default values", []],
  ["every option on", ["--values", ALL_ON_VALUES]],
] as const) {
  describe(`rendered with ${name}`, () => {
    let objects: K8sObject[];
    before(async () => {
      objects = await renderChart([...args]);
    });

    test("every object has the standard labels and the release's namespace", () => {
      for (const o of objects) {
        const labels = o.metadata.labels ?? {};
        const where = `${o.kind}/${o.metadata.name}`;
        assert.equal(labels["app.kubernetes.io/name"], "media-service", where);
        assert.equal(labels["app.kubernetes.io/instance"], "media", where);
        assert.equal(labels["app.kubernetes.io/managed-by"], "Helm", where);
        assert.match(labels["helm.sh/chart"] ?? "", /^media-service-\d+\.\d+\.\d+/, where);
        assert.ok(labels["app.kubernetes.io/version"], where);
        if (o.kind !== "ServiceMonitor" && o.kind !== "PrometheusRule") {
          assert.ok(labels["app.kubernetes.io/component"], `${where} has a component`);
        }
        assert.equal(o.metadata.namespace, "media-ns", where);
      }
    });

    test("RBAC: exactly the controller's rules, namespaced, bound to its ServiceAccount", () => {
      assert.deepEqual(byKind(objects, "ClusterRole"), []);
      assert.deepEqual(byKind(objects, "ClusterRoleBinding"), []);
      const role = one(objects, "Role", "-controller");
      assert.deepEqual(role.rules, CONTROLLER_RULES);
      const binding = one(objects, "RoleBinding", "-controller");
      const controller = one(objects, "Deployment", "-controller");
      assert.deepEqual(binding.subjects, [
        { kind: "ServiceAccount", name: podSpec(controller).serviceAccountName, namespace: "media-ns" },
      ]);
      assert.equal((binding.roleRef as { name: string }).name, role.metadata.name);
      const runnerSa = objects.find(
        (o) => o.kind === "ServiceAccount" && o.metadata.name.endsWith("-runner"),
      );
      assert.equal(runnerSa?.automountServiceAccountToken, false, "runner pods get no token");
    });

    test("API and controller pods are hardened, probed, resourced and shut down gracefully", () => {
      for (const [suffix, live, ready] of [
        ["-api", "/health/live", "/health/ready"],
        ["-controller", "/healthz", "/readyz"],
      ] as const) {
        const spec = podSpec(one(objects, "Deployment", suffix));
        assert.equal(spec.securityContext?.runAsNonRoot, true, suffix);
        assert.equal(typeof spec.securityContext?.runAsUser, "number");
        assert.deepEqual(spec.securityContext?.seccompProfile, { type: "RuntimeDefault" });
        assert.ok((spec.terminationGracePeriodSeconds ?? 0) >= 10);
        const [c] = spec.containers;
        assert.ok(c);
        assert.deepEqual(c.securityContext, {
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ["ALL"] },
        });
        assert.equal(c.livenessProbe?.httpGet?.path, live);
        assert.equal(c.readinessProbe?.httpGet?.path, ready);
        assert.ok(c.resources?.requests?.cpu && c.resources.requests.memory && c.resources.limits?.memory);
        assert.deepEqual(c.args, [suffix.slice(1)]);
        const env = new Map((c.env ?? []).map((e) => [e.name, e]));
        assert.equal(env.get("CONFIG_FILE")?.value, "/etc/media-service/config.yaml");
        assert.ok(env.get("REDIS_URL")?.valueFrom, "the Redis URL comes from a Secret");
        for (const e of c.env ?? []) {
          assert.ok(!/SECRET|PASSWORD|KEY/.test(e.name) || e.valueFrom, `${e.name} is not inlined`);
        }
      }
      const api = podSpec(one(objects, "Deployment", "-api"));
      assert.ok(api.containers[0]!.lifecycle?.preStop, "the API drains before it stops");
      assert.equal(api.automountServiceAccountToken, false, "the API needs no Kubernetes token");
    });

    test("the controller runs 2 replicas with leader election by default", () => {
      const controller = one(objects, "Deployment", "-controller");
      assert.equal((controller.spec as { replicas: number }).replicas, 2);
    });

    test("config.yaml loads with the service's own loader: kubernetes executor, private webhook targets refused", async () => {
      const cm = one(objects, "ConfigMap");
      const file = join(tmp, `${name.replace(/\W+/g, "-")}.yaml`);
      await writeFile(file, (cm.data as Record<string, string>)["config.yaml"]!);
      const config = loadConfig({ file, env: { REDIS_URL: "redis://x:6379" } });
      assert.equal(config.executor.kind, "kubernetes");
      assert.equal(config.kubernetes.namespace, "media-ns");
      assert.equal(config.kubernetes.instance, "media");
      assert.match(config.kubernetes.image, /^ghcr\.io\/media-service\/media-service:/);
      assert.equal(config.kubernetes.serviceAccount, "media-media-service-runner");
      assert.equal(config.webhooks.allowPrivate, false, "the chart refuses private webhook targets");
      assert.equal(config.kubernetes.leaderElection.enabled, true);
      assert.ok(config.kubernetes.redisSecret?.name);
    });
  });
}

describe("every option on", () => {
  let objects: K8sObject[];
  before(async () => {
    objects = await renderChart(["--values", ALL_ON_VALUES]);
  });

  test("renders the optional objects", () => {
    for (const kind of [
      "Ingress",
      "HorizontalPodAutoscaler",
      "ServiceMonitor",
      "PrometheusRule",
      "StatefulSet",
    ]) {
      assert.equal(byKind(objects, kind).length, 1, kind);
    }
    assert.equal(byKind(objects, "PodDisruptionBudget").length, 2);
    const alerts = (
      one(objects, "PrometheusRule").spec as { groups: Array<{ rules: Array<{ alert: string }> }> }
    ).groups[0]!.rules.map((r) => r.alert);
    assert.deepEqual(alerts, [
      "MediaServiceQueueDepthHigh",
      "MediaServiceFailureRateHigh",
      "MediaServiceControllerNotLeading",
    ]);
    const api = one(objects, "Deployment", "-api");
    assert.equal((api.spec as { replicas?: number }).replicas, undefined, "the HPA owns the replica count");
  });

  test("runner pods reach only DNS, S3, Redis and the configured AI provider, and accept nothing", () => {
    const policy = one(objects, "NetworkPolicy", "-runner");
    const spec = policy.spec as {
      podSelector: { matchLabels: Record<string, string> };
      policyTypes: string[];
      ingress: unknown[];
      egress: Array<{ ports: Array<{ port: number; protocol: string }> }>;
    };
    assert.deepEqual(spec.podSelector.matchLabels, {
      "app.kubernetes.io/name": "media-service",
      "app.kubernetes.io/instance": "media",
      "app.kubernetes.io/component": "runner",
    });
    assert.deepEqual(spec.policyTypes, ["Ingress", "Egress"]);
    assert.deepEqual(spec.ingress, []);
    const ports = spec.egress.map((rule) => rule.ports.map((p) => p.port).sort((a, b) => a - b));
    assert.deepEqual(ports, [[53, 53], [80, 443, 9000], [6379], [80, 443]]);
  });

  test("credentials are Secrets; the bundled Redis has a password, AOF and a volume claim", () => {
    const secrets = byKind(objects, "Secret")
      .map((s) => s.metadata.name)
      .sort();
    assert.deepEqual(secrets, [
      "media-media-service-ai",
      "media-media-service-api-keys",
      "media-media-service-redis",
      "media-media-service-redis-url",
      "media-media-service-s3",
      "media-media-service-webhooks",
    ]);
    const redis = one(objects, "StatefulSet");
    const spec = redis.spec as {
      template: { spec: PodSpec };
      volumeClaimTemplates: Array<{ spec: { storageClassName: string } }>;
    };
    const args = spec.template.spec.containers[0]!.args ?? [];
    assert.ok(args.includes("--requirepass") && args.includes("--appendonly"));
    assert.equal(spec.volumeClaimTemplates[0]!.spec.storageClassName, "fast");
    const apiKeys = objects.find((o) => o.metadata.name === "media-media-service-api-keys")!;
    assert.equal(
      Buffer.from((apiKeys.data as Record<string, string>)["api-keys"]!, "base64").toString(),
      "test-key-0123456789abcdef,test-key-fedcba9876543210",
    );
  });
});
