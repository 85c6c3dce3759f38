// The Helm chart, rendered by the real helm CLI: lint is clean, the schema refuses wrong types by
// name, and the rendered objects carry the conventions platform teams expect (labels, exactly the
// controller's RBAC, hardened pods, probes, resources) with the default values and with every
// optional part turned on. The rendered config.yaml must load with the service's own loader.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { buildJobManifest, kubernetesSettings } from "../../controller/kubernetes/job-manifest.js";
import { CONTROLLER_RULES } from "../../controller/kubernetes/rbac.js";
import { AI_JOB_TYPES } from "../../core/ai/providers.js";
import { loadConfig, type Config } from "../../core/config/load.js";
import type { Job } from "../../core/jobs/records.js";
import { JOB_TYPES } from "../../core/jobs/types.js";
import { Keys } from "../../core/store/keys.js";
import {
  ALL_ON_VALUES,
  CHART,
  configYaml,
  deploymentEnv,
  helm,
  renderChart,
  secretData,
  type K8sObject,
} from "./support/helm.js";

type Container = {
  name: string;
  image?: string;
  args?: string[];
  ports?: Array<{ name: string; containerPort: number }>;
  volumeMounts?: Array<{ name: string; mountPath: string }>;
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
  enableServiceLinks?: boolean;
  terminationGracePeriodSeconds?: number;
  volumes?: Array<{ name: string; emptyDir?: { sizeLimit?: string } }>;
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
type SecretKeyRef = { secretKeyRef?: { name: string; key: string } };

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
    [
      "an AI provider name with capitals",
      ["--set-json", 'ai.providers={"Local":{"baseUrl":"http://ollama:11434/v1","model":"llava"}}'],
      /at '\/ai\/providers': additional properties 'Local' not allowed/,
    ],
    [
      "an AI provider name with a dot",
      ["--set-json", 'ai.providers={"gpu.1":{"baseUrl":"http://vllm:8000/v1","model":"qwen"}}'],
      /at '\/ai\/providers': additional properties 'gpu\.1' not allowed/,
    ],
    [
      "an AI provider without a model",
      ["--set-json", 'ai.providers={"local":{"baseUrl":"http://ollama:11434/v1"}}'],
      /at '\/ai\/providers\/local': missing property 'model'/,
    ],
    [
      "a structuredOutput outside the list",
      ["--set", "ai.structuredOutput=xml"],
      /at '\/ai\/structuredOutput': value must be one of '', 'prompt', 'json_object', 'json_schema'/,
    ],
    [
      "an AI provider's structuredOutput outside the list",
      [
        "--set-json",
        'ai.providers={"local":{"baseUrl":"http://ollama:11434/v1","model":"llava","structuredOutput":"json"}}',
      ],
      /at '\/ai\/providers\/local\/structuredOutput': value must be one of/,
    ],
    [
      "an execution class outside the list",
      ["--set", "pool.classes.image_resize=warm"],
      /at '\/pool\/classes\/image_resize': value must be one of 'job', 'pool', 'auto'/,
    ],
    [
      "an execution class of a job type that does not exist",
      ["--set", "pool.classes.image_resise=pool"],
      /at '\/pool\/classes': additional properties 'image_resise' not allowed/,
    ],
    [
      "a KEDA address that is not host:port",
      ["--set", "pool.autoscaling.keda.address=redis://redis.data:6379"],
      /at '\/pool\/autoscaling\/keda\/address': 'redis:\/\/redis.data:6379' does not match/,
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
      const file = join(tmp, `${name.replace(/\W+/g, "-")}.yaml`);
      await writeFile(file, configYaml(objects));
      // With the environment each Deployment gives its container (${VAR} in the file included).
      for (const suffix of ["-api", "-controller"]) {
        const config = loadConfig({ file, env: deploymentEnv(objects, suffix) });
        assert.equal(config.executor.kind, "kubernetes");
        assert.equal(config.kubernetes.namespace, "media-ns");
        assert.equal(config.kubernetes.instance, "media");
        assert.match(config.kubernetes.image, /^ghcr\.io\/media-service\/media-service:/);
        assert.equal(config.kubernetes.serviceAccount, "media-media-service-runner");
        assert.equal(config.webhooks.allowPrivate, false, "the chart refuses private webhook targets");
        assert.equal(config.kubernetes.leaderElection.enabled, true);
        assert.ok(config.kubernetes.redisSecret?.name);
      }
    });
  });
}

describe("every option on", () => {
  let objects: K8sObject[];
  before(async () => {
    objects = await renderChart(["--values", ALL_ON_VALUES]);
  });

  test("renders the optional objects", () => {
    for (const kind of ["Ingress", "PrometheusRule", "StatefulSet"]) {
      assert.equal(byKind(objects, kind).length, 1, kind);
    }
    const names = (kind: string) =>
      byKind(objects, kind)
        .map((o) => o.metadata.name)
        .sort();
    assert.deepEqual(names("HorizontalPodAutoscaler"), [
      "media-media-service-api",
      "media-media-service-pool",
    ]);
    assert.deepEqual(names("ServiceMonitor"), ["media-media-service", "media-media-service-pool"]);
    assert.deepEqual(names("PodDisruptionBudget"), [
      "media-media-service-api",
      "media-media-service-controller",
      "media-media-service-pool",
    ]);
    const alerts = (
      one(objects, "PrometheusRule").spec as { groups: Array<{ rules: Array<{ alert: string }> }> }
    ).groups[0]!.rules.map((r) => r.alert);
    assert.deepEqual(alerts, [
      "MediaServiceQueueDepthHigh",
      "MediaServiceFailureRateHigh",
      "MediaServiceControllerNotLeading",
      "MediaServicePoolQueueFull",
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
    assert.deepEqual(secretData(objects, "media-media-service-ai"), {
      "api-key": "example-ai-key",
      "openai-api-key": "example-openai-key",
    });
  });

  test("AI: the provider ai.baseUrl defines and the named ones, with their settings and keys", async () => {
    const file = join(tmp, "all-on-ai.yaml");
    await writeFile(file, configYaml(objects));
    const { ai, kubernetes } = loadConfig({ file, env: deploymentEnv(objects, "-api") });
    const settings = Object.fromEntries(
      Object.values(ai.providers).map((p) => [
        p.name,
        [p.baseUrl, p.model, p.transcriptionModel, p.structuredOutput, p.apiKey, p.apiKeySecret],
      ]),
    );
    assert.deepEqual(settings, {
      default: [
        "http://ollama.ai:11434/v1",
        "llava",
        "whisper-large-v3",
        "json_object",
        "example-ai-key",
        { name: "media-media-service-ai", key: "api-key" },
      ],
      openai: [
        "https://api.openai.com/v1",
        "gpt-4o-mini",
        "whisper-1",
        "json_schema",
        "example-openai-key",
        { name: "media-media-service-ai", key: "openai-api-key" },
      ],
      "vllm-gpu": [
        "http://vllm.inference:8000/v1",
        "qwen2-vl-7b",
        "whisper-1",
        "prompt",
        "external:vllm-token/token",
        { name: "vllm-token", key: "token" },
      ],
      edge_ollama: ["http://ollama.edge:11434/v1", "llava", "whisper-1", "prompt", undefined, undefined],
    });
    assert.equal(ai.defaultProvider, "openai");
    assert.deepEqual(
      [ai.timeoutMs, ai.maxAttempts, ai.maxImageSide, ai.transcriptionSegmentMs],
      [180_000, 3, 768, 300_000],
    );
    assert.equal(kubernetes.redisSecret?.name, "media-media-service-redis-url");
  });
});

describe("AI providers", () => {
  const render = async (ai: Record<string, unknown>, ...args: string[]) =>
    renderChart(["--set-json", `ai=${JSON.stringify(ai)}`, ...args]);
  const named = {
    providers: {
      local: { baseUrl: "http://ollama.ai:11434/v1/", model: "llava", structuredOutput: "json_object" },
      "open-ai": {
        baseUrl: "https://api.openai.com/v1",
        model: "gpt-4o-mini",
        transcriptionModel: "gpt-4o-transcribe",
        apiKey: "sk-open-ai-0123456789",
      },
      gpu_2: {
        baseUrl: "http://vllm.inference:8000/v1",
        model: "qwen2-vl-7b",
        apiKey: "vllm-key-0123456789",
      },
      hosted: {
        baseUrl: "https://llm.example.com/v1",
        model: "llava-next",
        existingSecret: "hosted-llm",
      },
    },
    defaultProvider: "local",
    timeout: "90s",
    maxAttempts: 2,
    maxImageSide: 512,
    transcriptionSegment: "5m",
  };
  const keys = ["sk-open-ai-0123456789", "vllm-key-0123456789"];
  let objects: K8sObject[];
  before(async () => {
    objects = await render(
      named,
      "--set",
      "networkPolicy.enabled=true",
      "--set",
      "networkPolicy.aiPorts={443,11434}",
    );
  });

  test("no key appears in the ConfigMap: config.yaml names AI_PROVIDER_<NAME>_API_KEY", () => {
    const cm = JSON.stringify(one(objects, "ConfigMap"));
    for (const key of keys) assert.ok(!cm.includes(key), "the key is not in the ConfigMap");
    const text = configYaml(objects);
    assert.match(text, /api_key: \$\{AI_PROVIDER_OPEN_AI_API_KEY\}/);
    assert.match(text, /api_key: \$\{AI_PROVIDER_GPU_2_API_KEY\}/);
    assert.match(text, /api_key: \$\{AI_PROVIDER_HOSTED_API_KEY\}/);
  });

  test("the chart's Secret holds the keys given as values, under <name>-api-key", () => {
    assert.deepEqual(secretData(objects, "media-media-service-ai"), {
      "open-ai-api-key": "sk-open-ai-0123456789",
      "gpu_2-api-key": "vllm-key-0123456789",
    });
    assert.equal(secretData(objects, "hosted-llm"), undefined, "an existingSecret is not created");
  });

  test("the API and the controller get each provider's key from its Secret", () => {
    for (const suffix of ["-api", "-controller"]) {
      const env = podSpec(one(objects, "Deployment", suffix)).containers[0]!.env ?? [];
      const ai = env.filter((e) => e.name.startsWith("AI_"));
      assert.deepEqual(
        ai.map((e) => [e.name, e.value, (e.valueFrom as SecretKeyRef).secretKeyRef]),
        [
          ["AI_PROVIDER_GPU_2_API_KEY", undefined, { name: "media-media-service-ai", key: "gpu_2-api-key" }],
          ["AI_PROVIDER_HOSTED_API_KEY", undefined, { name: "hosted-llm", key: "api-key" }],
          [
            "AI_PROVIDER_OPEN_AI_API_KEY",
            undefined,
            { name: "media-media-service-ai", key: "open-ai-api-key" },
          ],
        ],
        suffix,
      );
    }
  });

  test("config.yaml loads with the Deployment's environment: each provider with its key and Secret", async () => {
    const file = join(tmp, "ai-providers.yaml");
    await writeFile(file, configYaml(objects));
    for (const suffix of ["-api", "-controller"]) {
      const { ai } = loadConfig({ file, env: deploymentEnv(objects, suffix) });
      assert.deepEqual(Object.keys(ai.providers).sort(), ["gpu_2", "hosted", "local", "open-ai"]);
      const { local, "open-ai": openAi, gpu_2: gpu, hosted } = ai.providers;
      assert.deepEqual(
        [local?.baseUrl, local?.model, local?.structuredOutput, local?.transcriptionModel],
        ["http://ollama.ai:11434/v1", "llava", "json_object", "whisper-1"],
      );
      assert.ok(!("apiKey" in local!) && !("apiKeySecret" in local!), "local sends no key");
      assert.deepEqual(
        [openAi?.baseUrl, openAi?.model, openAi?.transcriptionModel, openAi?.apiKey, openAi?.apiKeySecret],
        [
          "https://api.openai.com/v1",
          "gpt-4o-mini",
          "gpt-4o-transcribe",
          "sk-open-ai-0123456789",
          { name: "media-media-service-ai", key: "open-ai-api-key" },
        ],
      );
      assert.deepEqual(
        [gpu?.baseUrl, gpu?.model, gpu?.apiKey, gpu?.apiKeySecret],
        [
          "http://vllm.inference:8000/v1",
          "qwen2-vl-7b",
          "vllm-key-0123456789",
          { name: "media-media-service-ai", key: "gpu_2-api-key" },
        ],
      );
      assert.deepEqual(
        [hosted?.apiKey, hosted?.apiKeySecret],
        ["external:hosted-llm/api-key", { name: "hosted-llm", key: "api-key" }],
      );
      assert.equal(ai.defaultProvider, "local");
      assert.deepEqual(
        [ai.timeoutMs, ai.maxAttempts, ai.maxImageSide, ai.transcriptionSegmentMs],
        [90_000, 2, 512, 300_000],
      );
    }
    // The keys really come from the environment: without it the file does not load.
    const { AI_PROVIDER_OPEN_AI_API_KEY: _key, ...env } = deploymentEnv(objects, "-api");
    assert.throws(() => loadConfig({ file, env }), /AI_PROVIDER_OPEN_AI_API_KEY is not set/);
  });

  test("runner pods may reach the AI peers when only named providers are configured", () => {
    const spec = one(objects, "NetworkPolicy", "-runner").spec as {
      egress: Array<{ ports: Array<{ port: number }> }>;
    };
    assert.deepEqual(
      spec.egress.at(-1)?.ports.map((p) => p.port),
      [443, 11434],
    );
  });

  test("unset AI values stay out of config.yaml, so the service's defaults apply", async () => {
    const defaults = await renderChart([]);
    assert.match(configYaml(defaults), /^ai: \{\}$/m);
    const file = join(tmp, "ai-defaults.yaml");
    await writeFile(file, configYaml(defaults));
    const { ai } = loadConfig({ file, env: deploymentEnv(defaults, "-api") });
    assert.deepEqual(ai.providers, {});
    assert.equal(ai.defaultProvider, undefined);
    assert.deepEqual(
      [ai.timeoutMs, ai.maxAttempts, ai.maxImageSide, ai.transcriptionSegmentMs],
      [120_000, 4, 1024, 600_000],
    );
    for (const suffix of ["-api", "-controller"]) {
      const env = podSpec(one(defaults, "Deployment", suffix)).containers[0]!.env ?? [];
      assert.deepEqual(
        env.filter((e) => e.name.startsWith("AI_")),
        [],
        suffix,
      );
    }
    assert.equal(secretData(defaults, "media-media-service-ai"), undefined);
  });

  const refusals: Array<[string, Record<string, unknown>, RegExp]> = [
    [
      "several providers and no defaultProvider",
      { providers: { ...named.providers } },
      /ai\.defaultProvider is required with several AI providers.*\(configured: gpu_2, hosted, local, open-ai\)/,
    ],
    [
      "a defaultProvider that names none",
      { ...named, defaultProvider: "openai" },
      /ai\.defaultProvider: no provider named "openai" \(configured: gpu_2, hosted, local, open-ai\)/,
    ],
    [
      "two names with one environment variable",
      {
        providers: {
          "gpu-2": { baseUrl: "http://a:8000/v1", model: "m" },
          gpu_2: { baseUrl: "http://b:8000/v1", model: "m" },
        },
        defaultProvider: "gpu_2",
      },
      /ai\.providers: gpu-2 and gpu_2 would share the environment variable AI_PROVIDER_GPU_2_API_KEY/,
    ],
    [
      "a named provider called like the one ai.baseUrl defines",
      {
        baseUrl: "https://api.openai.com/v1",
        model: "gpt-4o-mini",
        providers: { default: { baseUrl: "http://ollama:11434/v1", model: "llava" } },
      },
      /ai\.providers\.default: the name is taken by the provider ai\.baseUrl defines/,
    ],
  ];
  for (const [name, ai, message] of refusals) {
    test(`refuses ${name} at render time`, async () => {
      const result = await helm(["template", "media", CHART, "--set-json", `ai=${JSON.stringify(ai)}`]);
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, message);
    });
  }
});

describe("warm runner pool", () => {
  type SecretRef = { name: string; key: string };
  const refKey = (r: SecretRef) => `${r.name}/${r.key}`;
  const secretRefs = (env: Container["env"] = []) =>
    new Set(
      env.flatMap((e) => {
        const ref = (e.valueFrom as SecretKeyRef | undefined)?.secretKeyRef;
        return ref ? [refKey(ref)] : [];
      }),
    );
  const loaded = async (objects: K8sObject[], file: string, suffix: string): Promise<Config> => {
    const path = join(tmp, file);
    await writeFile(path, configYaml(objects));
    return loadConfig({ file: path, env: deploymentEnv(objects, suffix) });
  };
  const record = (type: (typeof JOB_TYPES)[number], provider?: string): Job => {
    const now = new Date().toISOString();
    return {
      id: "0b6c0e62-8a53-4b8e-9a8e-3f1d2c4b5a69",
      type,
      status: "pending",
      source_bucket: "in",
      source_key: "a.jpg",
      dest_bucket: "out",
      dest_key: "b.jpg",
      parameters: provider ? { provider } : {},
      created_at: now,
      updated_at: now,
    };
  };
  /** The runner Jobs the controller would create with this config.yaml: one per type (and AI provider). */
  const runnerJobs = (config: Config) => {
    const settings = kubernetesSettings(config);
    return JOB_TYPES.flatMap((type) =>
      AI_JOB_TYPES.has(type) && Object.keys(config.ai.providers).length > 0
        ? Object.keys(config.ai.providers).map((name) => buildJobManifest(record(type, name), settings, 60))
        : [buildJobManifest(record(type), settings, 60)],
    );
  };
  const matches = (labels: Record<string, string>, selector: Record<string, string>) =>
    Object.entries(selector).every(([k, v]) => labels[k] === v);
  const renderFails = async (...args: string[]) => {
    const result = await helm(["template", "media", CHART, "--namespace", "media-ns", ...args]);
    assert.notEqual(result.code, 0, "the render fails");
    return result.stderr;
  };

  describe("disabled (the default)", () => {
    let objects: K8sObject[];
    before(async () => {
      objects = await renderChart([
        "--set",
        "networkPolicy.enabled=true",
        "--set",
        "metrics.serviceMonitor.enabled=true",
      ]);
    });

    test("renders no pool object, and config.yaml keeps the pool off with every class `job`", async () => {
      const pool = objects.filter(
        (o) =>
          o.metadata.name.endsWith("-pool") || o.metadata.labels?.["app.kubernetes.io/component"] === "pool",
      );
      assert.deepEqual(
        pool.map((o) => `${o.kind}/${o.metadata.name}`),
        [],
      );
      for (const kind of ["ScaledObject", "TriggerAuthentication", "HorizontalPodAutoscaler"]) {
        assert.deepEqual(byKind(objects, kind), [], kind);
      }
      const { executor } = await loaded(objects, "pool-off.yaml", "-controller");
      assert.equal(executor.pool.enabled, false);
      assert.deepEqual(new Set(Object.values(executor.pool.classes)), new Set(["job"]));
    });

    test("autoscaling values alone render nothing while the pool is off", async () => {
      const keda = await renderChart([
        "--set",
        "pool.autoscaling.keda.enabled=true",
        "--api-versions",
        "keda.sh/v1alpha1",
      ]);
      const hpa = await renderChart(["--set", "pool.autoscaling.hpa.enabled=true"]);
      assert.deepEqual(byKind(keda, "ScaledObject"), []);
      assert.deepEqual(
        byKind(hpa, "HorizontalPodAutoscaler").map((o) => o.metadata.name),
        [],
      );
    });
  });

  describe("enabled (every option on)", () => {
    let objects: K8sObject[];
    let config: Config;
    let deployment: K8sObject;
    let spec: PodSpec;
    let container: Container;
    before(async () => {
      objects = await renderChart(["--values", ALL_ON_VALUES]);
      config = await loaded(objects, "pool-on.yaml", "-pool");
      deployment = one(objects, "Deployment", "-pool");
      spec = podSpec(deployment);
      container = spec.containers[0]!;
    });

    test("config.yaml's executor.pool is the values, loaded with the workers' environment", () => {
      assert.deepEqual(config.executor.pool, {
        enabled: true,
        // The values set three types' classes (ci/all-on-values.yaml); every other type keeps its
        // chart default, "job".
        classes: {
          ...Object.fromEntries(JOB_TYPES.map((type) => [type, "job"])),
          image_resize: "pool",
          image_optimize: "auto",
          image_colors: "auto",
        },
        autoMaxSourceBytes: 8388608,
        jobResources: { cpu: "500m", memory: "512Mi" },
        queueLimit: 50,
        concurrency: 3,
        runnerMaxJobs: 1,
      });
    });

    test("the workers run `media-service pool` in the image of the controller and the runner Jobs", () => {
      assert.deepEqual(container.args, ["pool"]);
      assert.equal(container.image, podSpec(one(objects, "Deployment", "-controller")).containers[0]!.image);
      assert.equal(container.image, config.kubernetes.image);
      assert.equal(
        (deployment.spec as { replicas?: number }).replicas,
        undefined,
        "the HPA owns the replica count",
      );
    });

    test("their pods are hardened as the runner pods the controller creates", () => {
      const runner = runnerJobs(config)[0]!.spec!.template.spec!;
      assert.deepEqual(spec.securityContext, runner.securityContext);
      const hardening = runner.containers[0]!.securityContext!;
      for (const key of ["allowPrivilegeEscalation", "readOnlyRootFilesystem", "capabilities"] as const) {
        assert.deepEqual(container.securityContext?.[key], hardening[key], key);
      }
      assert.equal(spec.automountServiceAccountToken, false, "no Kubernetes token");
      assert.equal(spec.enableServiceLinks, false);
      assert.equal(spec.serviceAccountName, runner.serviceAccountName);
      assert.equal(
        (container as { terminationMessagePolicy?: string }).terminationMessagePolicy,
        "FallbackToLogsOnError",
      );
    });

    test("scratch and /tmp are emptyDirs (the root filesystem is read-only), and SCRATCH_DIR and TMPDIR point there", () => {
      const env = deploymentEnv(objects, "-pool");
      const mounts = new Map((container.volumeMounts ?? []).map((m) => [m.mountPath, m.name]));
      const volumes = new Map((spec.volumes ?? []).map((v) => [v.name, v]));
      const scratch = volumes.get(mounts.get(env.SCRATCH_DIR!)!);
      assert.equal(scratch?.emptyDir?.sizeLimit, "4Gi", "pool.scratchSize");
      assert.equal(env.TMPDIR, env.SCRATCH_DIR);
      assert.ok(volumes.get(mounts.get("/tmp")!)?.emptyDir, "/tmp is writable");
      assert.equal(config.executor.scratchDir, "/scratch");
    });

    test("the workers get every Secret a runner Job of any type and AI provider gets, and no value inlined", () => {
      const pool = secretRefs(container.env);
      for (const job of runnerJobs(config)) {
        const runner = job.spec!.template.spec!.containers[0]!;
        for (const ref of secretRefs(runner.env)) {
          assert.ok(pool.has(ref), `${job.metadata!.labels!["media-service.io/job-type"]}: ${ref}`);
        }
      }
      // What the runner pods read from them, the workers' runner processes get through config.yaml.
      assert.equal(config.redis.url, secretData(objects, "media-media-service-redis-url")!["redis-url"]);
      assert.equal(config.storage.accessKeyId, "AKIAEXAMPLE");
      for (const provider of Object.values(config.ai.providers)) {
        if (provider.apiKeySecret) assert.ok(provider.apiKey, `${provider.name} has its key`);
      }
      for (const e of container.env ?? []) {
        assert.ok(!/SECRET|PASSWORD|KEY|REDIS_URL/.test(e.name) || e.valueFrom, `${e.name} is not inlined`);
      }
    });

    test("probes on /healthz and /readyz, PORT, the Service and the PodDisruptionBudget agree", () => {
      const env = deploymentEnv(objects, "-pool");
      const port = container.ports?.find((p) => p.name === "http")?.containerPort;
      assert.equal(String(port), env.PORT);
      assert.equal(container.livenessProbe?.httpGet?.path, "/healthz");
      assert.equal(container.readinessProbe?.httpGet?.path, "/readyz");
      const podLabels = (deployment.spec as { template: { metadata: { labels: Record<string, string> } } })
        .template.metadata.labels;
      assert.equal(podLabels.pool, "warm", "pool.podLabels");
      const service = one(objects, "Service", "-pool").spec as {
        selector: Record<string, string>;
        ports: Array<{ port: number; targetPort: string }>;
      };
      assert.ok(matches(podLabels, service.selector));
      assert.deepEqual(
        service.ports.map((p) => [p.port, p.targetPort]),
        [[port, "http"]],
      );
      const pdb = one(objects, "PodDisruptionBudget", "-pool").spec as {
        selector: { matchLabels: Record<string, string> };
      };
      assert.ok(matches(podLabels, pdb.selector.matchLabels));
      const monitor = one(objects, "ServiceMonitor", "-pool").spec as {
        selector: { matchLabels: Record<string, string> };
      };
      assert.ok(matches(one(objects, "Service", "-pool").metadata.labels!, monitor.selector.matchLabels));
      const resources = container.resources;
      // The values' CPU and memory over the chart's default local disk (Helm merges the maps).
      assert.deepEqual(resources, {
        requests: { cpu: "1500m", memory: "1536Mi", "ephemeral-storage": "1Gi" },
        limits: { cpu: "2", memory: "2Gi", "ephemeral-storage": "4608Mi" },
      });
    });

    test("NetworkPolicy: the workers reach what runner pods reach, accept their own port, and Redis admits them", () => {
      type Policy = {
        podSelector: { matchLabels: Record<string, string> };
        policyTypes: string[];
        ingress: Array<{
          ports: Array<{ port: number }>;
          from?: Array<{ podSelector?: { matchLabels: Record<string, string> } }>;
        }>;
        egress: unknown[];
      };
      const pool = one(objects, "NetworkPolicy", "-pool").spec as Policy;
      const runner = one(objects, "NetworkPolicy", "-runner").spec as Policy;
      const podLabels = (deployment.spec as { template: { metadata: { labels: Record<string, string> } } })
        .template.metadata.labels;
      assert.ok(matches(podLabels, pool.podSelector.matchLabels));
      assert.deepEqual(pool.policyTypes, ["Ingress", "Egress"]);
      assert.deepEqual(pool.egress, runner.egress);
      assert.deepEqual(
        pool.ingress.map((rule) => rule.ports.map((p) => p.port)),
        [[container.ports![0]!.containerPort]],
      );
      const redis = one(objects, "NetworkPolicy", "-redis").spec as Policy;
      assert.ok(
        redis.ingress[0]!.from!.some(
          (peer) => peer.podSelector && matches(podLabels, peer.podSelector.matchLabels),
        ),
      );
    });

    test("the HPA scales the Deployment on the External metric media_pool_queue_length", () => {
      const hpa = one(objects, "HorizontalPodAutoscaler", "-pool").spec as {
        scaleTargetRef: { kind: string; name: string };
        minReplicas: number;
        maxReplicas: number;
        metrics: unknown[];
      };
      assert.deepEqual(hpa.scaleTargetRef, {
        apiVersion: "apps/v1",
        kind: "Deployment",
        name: deployment.metadata.name,
      });
      assert.deepEqual([hpa.minReplicas, hpa.maxReplicas], [1, 8]);
      assert.deepEqual(hpa.metrics, [
        {
          type: "External",
          external: {
            metric: { name: "media_pool_queue_length", selector: { matchLabels: { namespace: "media" } } },
            target: { type: "AverageValue", averageValue: "6" },
          },
        },
      ]);
    });
  });

  describe("scaled by KEDA", () => {
    const keda = ["--set", "pool.enabled=true", "--set", "pool.autoscaling.keda.enabled=true"];
    const withCrd = [...keda, "--api-versions", "keda.sh/v1alpha1"];
    type Trigger = {
      type: string;
      metadata: Record<string, string>;
      authenticationRef?: { name: string };
    };
    const scaledObject = (objects: K8sObject[]) =>
      one(objects, "ScaledObject", "-pool").spec as {
        scaleTargetRef: { name: string };
        minReplicaCount: number;
        maxReplicaCount: number;
        pollingInterval: number;
        cooldownPeriod: number;
        triggers: Trigger[];
      };

    test("a ScaledObject with the Redis list scaler on the pool's list of the bundled Redis, authenticated by its Secret", async () => {
      const objects = await renderChart([...withCrd, "--set", "networkPolicy.enabled=true"]);
      const so = scaledObject(objects);
      const deployment = one(objects, "Deployment", "-pool");
      assert.equal(so.scaleTargetRef.name, deployment.metadata.name);
      assert.equal((deployment.spec as { replicas?: number }).replicas, undefined, "KEDA owns the count");
      assert.deepEqual(
        [so.minReplicaCount, so.maxReplicaCount, so.pollingInterval, so.cooldownPeriod],
        [1, 10, 15, 300],
      );
      assert.equal(so.triggers.length, 1);
      const [trigger] = so.triggers;
      assert.equal(trigger!.type, "redis");
      // The list the dispatcher pushes to (core/store/keys.ts), in the Redis the service uses.
      assert.equal(trigger!.metadata.listName, new Keys("media").pool());
      const redis = one(objects, "Service", "-redis");
      const redisPort = (redis.spec as { ports: Array<{ port: number }> }).ports[0]!.port;
      assert.equal(trigger!.metadata.address, `${redis.metadata.name}.media-ns.svc:${redisPort}`);
      const url = new URL(secretData(objects, "media-media-service-redis-url")!["redis-url"]!);
      assert.equal(`${url.hostname}:${url.port}`, `${redis.metadata.name}:${redisPort}`);
      assert.equal(trigger!.metadata.listLength, "4");
      assert.equal(trigger!.metadata.databaseIndex, url.pathname.slice(1));
      assert.equal(trigger!.metadata.enableTLS, "false");
      // The password, by reference to the Secret that holds the one in the service's Redis URL.
      const auth = one(objects, "TriggerAuthentication", "-pool");
      assert.equal(trigger!.authenticationRef?.name, auth.metadata.name);
      const [ref, ...more] = (auth.spec as { secretTargetRef: Array<SecretRef & { parameter: string }> })
        .secretTargetRef;
      assert.deepEqual(more, []);
      assert.equal(ref!.parameter, "password");
      assert.equal(secretData(objects, ref!.name)?.[ref!.key], decodeURIComponent(url.password));
      // The bundled Redis admits the KEDA operator.
      const policy = one(objects, "NetworkPolicy", "-redis").spec as {
        ingress: Array<{ from: Array<{ namespaceSelector?: { matchLabels: Record<string, string> } }> }>;
      };
      assert.ok(
        policy.ingress[0]!.from.some(
          (peer) => peer.namespaceSelector?.matchLabels["kubernetes.io/metadata.name"] === "keda",
        ),
      );
    });

    test("the list name follows the key prefix (config.keyPrefix, or redis.key_prefix in config.extra)", async () => {
      for (const [args, prefix] of [
        [["--set", "config.keyPrefix=tenant-a"], "tenant-a"],
        [["--set-json", 'config.extra={"redis":{"key_prefix":"tenant_b"}}'], "tenant_b"],
      ] as const) {
        const objects = await renderChart([...withCrd, ...args]);
        const { redis } = await loaded(objects, `pool-prefix-${prefix}.yaml`, "-pool");
        assert.equal(redis.keyPrefix, prefix);
        assert.equal(scaledObject(objects).triggers[0]!.metadata.listName, new Keys(prefix).pool());
      }
    });

    test("an external Redis: the address given, and a TriggerAuthentication only with a password Secret", async () => {
      const external = [
        ...withCrd,
        "--set",
        "redis.enabled=false",
        "--set",
        "redis.external.url=rediss://redis.data:6380/2",
        "--set",
        "pool.autoscaling.keda.address=redis.data:6380",
        "--set",
        "pool.autoscaling.keda.databaseIndex=2",
        "--set",
        "pool.autoscaling.keda.enableTLS=true",
      ];
      const open = await renderChart(external);
      const [trigger] = scaledObject(open).triggers;
      assert.deepEqual(
        [trigger!.metadata.address, trigger!.metadata.databaseIndex, trigger!.metadata.enableTLS],
        ["redis.data:6380", "2", "true"],
      );
      assert.equal(trigger!.authenticationRef, undefined);
      assert.deepEqual(byKind(open, "TriggerAuthentication"), []);
      const withPassword = await renderChart([
        ...external,
        "--set",
        "pool.autoscaling.keda.passwordSecret=redis-auth",
        "--set",
        "pool.autoscaling.keda.passwordSecretKey=password",
      ]);
      const auth = one(withPassword, "TriggerAuthentication", "-pool");
      assert.equal(scaledObject(withPassword).triggers[0]!.authenticationRef?.name, auth.metadata.name);
      assert.deepEqual((auth.spec as { secretTargetRef: unknown[] }).secretTargetRef, [
        { parameter: "password", name: "redis-auth", key: "password" },
      ]);
    });

    test("refuses a cluster without KEDA's API, unless told to skip the check", async () => {
      assert.match(
        await renderFails(...keda),
        /pool\.autoscaling\.keda\.enabled: the cluster does not serve keda\.sh\/v1alpha1/,
      );
      const skipped = await renderChart([...keda, "--set", "pool.autoscaling.keda.skipCapabilityCheck=true"]);
      assert.equal(byKind(skipped, "ScaledObject").length, 1);
    });

    test("refuses an external Redis without pool.autoscaling.keda.address", async () => {
      assert.match(
        await renderFails(
          ...withCrd,
          "--set",
          "redis.enabled=false",
          "--set",
          "redis.external.url=redis://redis.data:6379",
        ),
        /pool\.autoscaling\.keda\.address \(host:port of the external Redis\) is required when redis\.enabled is false/,
      );
    });

    test("refuses KEDA and the HPA together", async () => {
      assert.match(
        await renderFails(...withCrd, "--set", "pool.autoscaling.hpa.enabled=true"),
        /pool\.autoscaling: keda\.enabled and hpa\.enabled are mutually exclusive/,
      );
    });
  });
});
