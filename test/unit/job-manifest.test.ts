import { EXIT } from "../../core/policy.js";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { readFileSync } from "node:fs";
import { loadConfig, type Config } from "../../core/config/load.js";
import { RUNNER_ENV, RUNNER_NODE_FLAGS, RUNNER_PROCESS_ENV } from "../../core/config/runner-env.js";
import type { Job } from "../../core/jobs/records.js";
import { definitionOf, JOB_TYPES } from "../../core/jobs/types.js";
import type { ResourceClass } from "../../jobs/define.js";
import {
  ANNOTATIONS,
  buildJobManifest,
  kubernetesSettings,
  LABELS,
  OOM_KILLED_EXIT_CODE,
  RUNNER_CONTAINER,
  runnerTimeoutSeconds,
  type KubernetesSettings,
} from "../../controller/kubernetes/job-manifest.js";
import { isDnsLabel, isLabelValue, jobName, labelValue } from "../../controller/kubernetes/names.js";

const SENTINEL = "s3cr3t-SENTINEL-do-not-leak";
// A Standard Webhooks secret must be base64; this one still spells the sentinel out.
const WEBHOOK_SECRET = `whsec_${SENTINEL.replace(/-/g, "")}AAAAAAAAAAAA=`;

function config(kubernetes: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): Config {
  return loadConfig({
    env: {},
    file: "/dev/null",
    overrides: {
      redis: { url: `redis://:${SENTINEL}@redis:6379/0`, key_prefix: "media-test" },
      storage: {
        endpoint: "http://objects:9000",
        region: "eu-west-1",
        access_key_id: `AKIA${SENTINEL}`,
        secret_access_key: SENTINEL,
      },
      ai: {
        base_url: "http://llm:8000/v1",
        api_key: SENTINEL,
        model: "tiny",
        providers: {
          hosted: {
            base_url: "https://api.example.com/v1",
            api_key: `sk-${SENTINEL}`,
            model: "vision-large",
            transcription_model: "whisper-large",
            structured_output: "json_schema",
            api_key_secret: { name: "hosted-ai" },
          },
        },
      },
      webhooks: { signing_secret: WEBHOOK_SECRET },
      kubernetes: {
        namespace: "media",
        instance: "prod",
        image: "registry.example/media-service:1.2.3",
        redis_secret: { name: "media-redis" },
        s3_secret: { name: "media-s3" },
        ai_secret: { name: "media-ai", key: "token" },
        ...kubernetes,
      },
      ...extra,
    },
  });
}

function settings(kubernetes: Record<string, unknown> = {}): KubernetesSettings {
  return kubernetesSettings(config(kubernetes));
}

function job(overrides: Partial<Job> = {}): Job {
  const now = new Date().toISOString();
  return {
    id: randomUUID(),
    type: "image_resize",
    status: "pending",
    source_bucket: "in",
    source_key: "a.jpg",
    dest_bucket: "out",
    dest_key: "b.jpg",
    parameters: { width: 100 },
    created_at: now,
    updated_at: now,
    ...overrides,
  };
}

/** The runner container's inline environment. */
function env(manifest: ReturnType<typeof buildJobManifest>): Map<string, string | undefined> {
  return new Map(container(manifest).env!.map((e) => [e.name, e.value]));
}

function container(manifest: ReturnType<typeof buildJobManifest>) {
  const c = manifest.spec!.template.spec!.containers[0]!;
  assert.equal(c.name, RUNNER_CONTAINER);
  return c;
}

describe("Kubernetes names", () => {
  test("a job's name is deterministic and a DNS-1123 label, for UUIDs and any other id", () => {
    const odd = [
      "",
      "-",
      "UPPER-case-ID",
      "with spaces and / slashes",
      "ünïcödé-ïd",
      "a".repeat(300),
      "-".repeat(100),
      "trailing-----",
      "12345",
      "job.with.dots",
    ];
    const ids = [...Array.from({ length: 500 }, () => randomUUID()), ...odd];
    const names = new Set<string>();
    for (const id of ids) {
      const name = jobName(id);
      assert.ok(isDnsLabel(name), `${JSON.stringify(id)} → ${name} is not a DNS label`);
      assert.ok(name.length <= 63);
      assert.equal(jobName(id), name, "same id, same name");
      names.add(name);
    }
    assert.equal(names.size, ids.length, "distinct ids give distinct names");
    const uuid = "0f8fad5b-d9cb-469f-a165-70867728950e";
    assert.equal(jobName(uuid), `media-${uuid}`);
  });

  test("label values are valid for odd values and kept as they are when already valid", () => {
    for (const v of ["batch-1", "image_resize", "A.b_c-9"]) assert.equal(labelValue(v), v);
    const odd = [
      "batch with spaces",
      "-leading",
      "trailing.",
      "x".repeat(64),
      "ü",
      "a/b:c",
      "_",
      "..--..",
      `${"b".repeat(60)}!!!!`,
    ];
    const values = new Set<string>();
    for (const v of odd) {
      const label = labelValue(v);
      assert.ok(isLabelValue(label) && label.length > 0, `${JSON.stringify(v)} → ${label}`);
      assert.equal(labelValue(v), label);
      values.add(label);
    }
    assert.equal(values.size, odd.length);
  });
});

describe("buildJobManifest", () => {
  test("one batch/v1 Job running the runner for the job, with the labels and raw ids", () => {
    const j = job({ batch_id: "Batch #42 / nightly run, from the importer (retry 3) ...." });
    const m = buildJobManifest(j, settings(), 120);
    assert.equal(m.apiVersion, "batch/v1");
    assert.equal(m.kind, "Job");
    assert.equal(m.metadata!.name, jobName(j.id));
    assert.equal(m.metadata!.namespace, "media");
    const labels = m.metadata!.labels!;
    assert.equal(labels[LABELS.name], "media-service");
    assert.equal(labels[LABELS.component], "runner");
    assert.equal(labels[LABELS.managedBy], "media-service-controller");
    assert.equal(labels[LABELS.instance], "prod");
    assert.equal(labels[LABELS.jobId], j.id);
    assert.equal(labels[LABELS.jobType], "image_resize");
    for (const [key, value] of Object.entries(labels)) assert.ok(isLabelValue(value), `${key}=${value}`);
    assert.equal(m.metadata!.annotations![ANNOTATIONS.batchId], j.batch_id);
    assert.equal(m.metadata!.annotations![ANNOTATIONS.jobId], j.id);
    assert.deepEqual(m.spec!.template.metadata!.labels, labels);
    assert.deepEqual(container(m).command, ["tini", "--", "media-service", "runner", "--job", j.id]);
    assert.equal(container(m).image, "registry.example/media-service:1.2.3");
    assert.equal(container(m).imagePullPolicy, "IfNotPresent");

    const noBatch = buildJobManifest(job(), settings(), 120);
    assert.equal(noBatch.metadata!.labels![LABELS.batchId], undefined);
    assert.equal(noBatch.metadata!.annotations![ANNOTATIONS.batchId], undefined);
  });

  test("per-type resource defaults from the config", () => {
    // By the type's resource class (its definition's runner.resources).
    // CPU, memory and local disk (ephemeral-storage: a video encode far more than an image).
    const expected: Record<ResourceClass, [string, string, string, string, string, string]> = {
      image: ["250m", "256Mi", "256Mi", "1", "1Gi", "2Gi"],
      media: ["500m", "512Mi", "1Gi", "2", "2Gi", "8Gi"],
      video: ["2", "2Gi", "2Gi", "4", "4Gi", "16Gi"],
      ai: ["100m", "128Mi", "256Mi", "500m", "512Mi", "2Gi"],
    };
    const s = settings();
    for (const type of JOB_TYPES) {
      const [rc, rm, rs, lc, lm, ls] = expected[definitionOf(type).runner.resources];
      const m = buildJobManifest(job({ type }), s, 60);
      assert.deepEqual(
        container(m).resources,
        {
          requests: { cpu: rc, memory: rm, "ephemeral-storage": rs },
          limits: { cpu: lc, memory: lm, "ephemeral-storage": ls },
        },
        type,
      );
      // The scratch emptyDir is the disk the pod may use: the kubelet evicts a runner that fills it.
      assert.deepEqual(m.spec!.template.spec!.volumes, [{ name: "scratch", emptyDir: { sizeLimit: ls } }]);
    }
    const custom = settings({
      resources: { audio_convert: { limits: { memory: "3Gi", ephemeral_storage: "20Gi" } } },
    });
    const audio = buildJobManifest(job({ type: "audio_convert" }), custom, 60);
    assert.deepEqual(container(audio).resources, {
      requests: { cpu: "500m", memory: "512Mi", "ephemeral-storage": "1Gi" },
      limits: { cpu: "2", memory: "3Gi", "ephemeral-storage": "20Gi" },
    });
    assert.equal(audio.spec!.template.spec!.volumes![0]!.emptyDir!.sizeLimit, "20Gi");
    assert.deepEqual(config().kubernetes.maxResources, { cpu: "4", memory: "8Gi" });
  });

  test("a pipeline's runner: the most any wave asks for (its steps' sum; requests: of the steps that run at once), within the floor and the maximum", () => {
    const s = settings();
    const resources = (steps: Record<string, unknown>, extra: Partial<Job> = {}) =>
      container(buildJobManifest(job({ type: "pipeline", parameters: { steps }, ...extra }), s, 60))
        .resources;
    const resize = { type: "image_resize" };
    // One image step: the pipeline's own class (image), as configured.
    assert.deepEqual(resources({ a: resize }), {
      requests: { cpu: "250m", memory: "256Mi", "ephemeral-storage": "256Mi" },
      limits: { cpu: "1", memory: "1Gi", "ephemeral-storage": "2Gi" },
    });
    // Three image steps at once, then a video step reading one of them: the wave of three asks
    // for more than the heaviest step's requests; the video step's limits are the most.
    assert.deepEqual(
      resources({ a: resize, b: resize, c: resize, v: { type: "video_transcode", input: "a" } }),
      {
        requests: { cpu: "2", memory: "2Gi", "ephemeral-storage": "2Gi" },
        limits: { cpu: "4", memory: "4Gi", "ephemeral-storage": "16Gi" },
      },
    );
    assert.deepEqual(resources({ a: resize, b: resize, c: resize }), {
      requests: { cpu: "750m", memory: "768Mi", "ephemeral-storage": "768Mi" },
      limits: { cpu: "3000m", memory: "3072Mi", "ephemeral-storage": "6144Mi" },
    });
    // Six at once: CPU and memory capped at kubernetes.max_resources (4, 8Gi); disk has no cap.
    const six = Object.fromEntries(["a", "b", "c", "d", "e", "f"].map((n) => [n, resize]));
    assert.deepEqual(resources(six)!.limits, {
      cpu: "4",
      memory: "6144Mi",
      "ephemeral-storage": "12288Mi",
    });
    // Requests: what the steps that run at once ask for. With 4 CPUs the runner runs 4 steps of a
    // wave at once, so ten image steps request four's (a photo's widths × AVIF and WebP, a watermark
    // on one, its colours), not ten's 2.5 CPUs that no 2-CPU node has.
    const ten = {
      ...Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`r${i}`, resize])),
      marked: { type: "image_watermark", input: "r7" },
      colours: { type: "image_colors" },
    };
    assert.deepEqual(resources(ten), {
      requests: { cpu: "1000m", memory: "1024Mi", "ephemeral-storage": "1024Mi" },
      limits: { cpu: "4", memory: "8Gi", "ephemeral-storage": "18432Mi" },
    });
    assert.deepEqual(resources(six)!.requests, {
      cpu: "1000m",
      memory: "1024Mi",
      "ephemeral-storage": "1024Mi",
    });
    // The heaviest of a wave count first: a video step beside five image steps under a 4-CPU limit.
    assert.deepEqual(resources({ ...six, v: { type: "video_transcode" } })!.requests, {
      cpu: "2750m",
      memory: "2816Mi",
      "ephemeral-storage": "2816Mi",
    });
    // The job's own resources win, as for every type.
    assert.deepEqual(resources(six, { resources: { cpu: "1" } })!.limits?.cpu, "1");
  });

  test("a job's own resources are its request and its limit", () => {
    const s = settings();
    const both = buildJobManifest(
      job({ type: "video_thumbnail", resources: { cpu: "3", memory: "6Gi" } }),
      s,
      60,
    );
    // Local disk stays its type's: a job asks for CPU and memory only.
    assert.deepEqual(container(both).resources, {
      requests: { cpu: "3", memory: "6Gi", "ephemeral-storage": "1Gi" },
      limits: { cpu: "3", memory: "6Gi", "ephemeral-storage": "8Gi" },
    });
    const memoryOnly = buildJobManifest(job({ resources: { memory: "768Mi" } }), s, 60);
    assert.deepEqual(container(memoryOnly).resources, {
      requests: { cpu: "250m", memory: "768Mi", "ephemeral-storage": "256Mi" },
      limits: { cpu: "1", memory: "768Mi", "ephemeral-storage": "2Gi" },
    });
    const cpuOnly = buildJobManifest(job({ resources: { cpu: "100m" } }), s, 60);
    assert.deepEqual(container(cpuOnly).resources, {
      requests: { cpu: "100m", memory: "256Mi", "ephemeral-storage": "256Mi" },
      limits: { cpu: "100m", memory: "1Gi", "ephemeral-storage": "2Gi" },
    });
    // The settings are not changed by a job's overrides.
    assert.equal(s.resources.image_resize.requests.memory, "256Mi");
  });

  test("deadline, retries, TTL and the pod failure policy", () => {
    const m = buildJobManifest(
      job(),
      kubernetesSettings(config({ ttl_seconds_after_finished: 60 }, { executor: { max_attempts: 6 } })),
      900,
    );
    // The Job's deadline counts from its creation: the job's 900 s plus the longest wait for a node
    // (kubernetes.unschedulable_timeout, 5m); the runner keeps the job's own 900 s from its start.
    assert.equal(m.spec!.activeDeadlineSeconds, 900 + 300);
    assert.equal(env(m).get(RUNNER_ENV.jobTimeoutSeconds), "900");
    assert.equal(runnerTimeoutSeconds(m), 900);
    assert.equal(m.spec!.backoffLimit, 5);
    assert.equal(m.spec!.ttlSecondsAfterFinished, 60);
    assert.equal(m.spec!.template.spec!.restartPolicy, "Never");
    assert.deepEqual(m.spec!.podFailurePolicy, {
      rules: [
        { action: "Ignore", onPodConditions: [{ type: "DisruptionTarget", status: "True" }] },
        {
          action: "FailJob",
          onExitCodes: {
            containerName: RUNNER_CONTAINER,
            operator: "In",
            values: [EXIT.permanent, OOM_KILLED_EXIT_CODE],
          },
        },
      ],
    });
    const defaults = buildJobManifest(job(), settings(), 30);
    assert.equal(defaults.spec!.backoffLimit, 2);
    assert.equal(defaults.spec!.ttlSecondsAfterFinished, 3600);
    const shortWait = buildJobManifest(job(), settings({ unschedulable_timeout: "1500ms" }), 30);
    assert.equal(shortWait.spec!.activeDeadlineSeconds, 30 + 2, "a wait in whole seconds, rounded up");
    assert.equal(env(shortWait).get(RUNNER_ENV.jobTimeoutSeconds), "30");
    assert.throws(() => buildJobManifest(job(), settings(), 0), RangeError);
    assert.throws(() => buildJobManifest(job(), settings(), 1.5), RangeError);
  });

  test("a hardened pod: non-root, read-only root, no capabilities, seccomp, no token", () => {
    const m = buildJobManifest(job(), settings({ service_account: "media-runner" }), 60);
    const pod = m.spec!.template.spec!;
    assert.equal(pod.automountServiceAccountToken, false);
    assert.equal(pod.serviceAccountName, "media-runner");
    assert.deepEqual(pod.securityContext, {
      runAsNonRoot: true,
      runAsUser: 10001,
      runAsGroup: 10001,
      fsGroup: 10001,
      seccompProfile: { type: "RuntimeDefault" },
    });
    const c = container(m);
    assert.equal(c.securityContext!.allowPrivilegeEscalation, false);
    assert.equal(c.securityContext!.readOnlyRootFilesystem, true);
    assert.deepEqual(c.securityContext!.capabilities, { drop: ["ALL"] });
    assert.equal(c.terminationMessagePolicy, "FallbackToLogsOnError");
    assert.equal(c.terminationMessagePath, "/dev/termination-log");
    assert.deepEqual(pod.volumes, [{ name: "scratch", emptyDir: { sizeLimit: "2Gi" } }]);
    assert.deepEqual(c.volumeMounts, [{ name: "scratch", mountPath: "/scratch" }]);
    const env = Object.fromEntries(c.env!.map((e) => [e.name, e.value]));
    assert.equal(env.TMPDIR, "/scratch");
    assert.equal(env.SCRATCH_DIR, "/scratch");
    assert.equal(env.TERMINATION_MESSAGE_PATH, "/dev/termination-log");
    // How every runner process starts: the image's media-service command puts these flags before
    // its script (Dockerfile), and glibc reads MALLOC_ARENA_MAX itself.
    assert.equal(env[RUNNER_ENV.nodeFlags], RUNNER_NODE_FLAGS.join(" "));
    assert.equal(env.MALLOC_ARENA_MAX, RUNNER_PROCESS_ENV.MALLOC_ARENA_MAX);
    const dockerfile = readFileSync(new URL("../../Dockerfile", import.meta.url), "utf8");
    assert.match(dockerfile, new RegExp(`exec node \\$${RUNNER_ENV.nodeFlags} /app/dist/cli.js`));
    // kubernetes.scratch_size, when set, is every type's scratch size instead of its disk limit.
    const sized = buildJobManifest(job(), settings({ scratch_size: "10Gi" }), 60);
    assert.equal(sized.spec!.template.spec!.volumes![0]!.emptyDir!.sizeLimit, "10Gi");
  });

  test("credentials come from Secrets by reference; no secret value is anywhere in the manifest", () => {
    const m = buildJobManifest(
      job({
        batch_id: "b1",
        type: "image_ai_keywords",
        dest_bucket: undefined,
        dest_key: undefined,
        parameters: {},
      }),
      settings(),
      60,
    );
    assert.ok(!JSON.stringify(m).includes(SENTINEL), "a secret value is inlined");
    const env = new Map(container(m).env!.map((e) => [e.name, e]));
    assert.deepEqual(env.get("REDIS_URL"), {
      name: "REDIS_URL",
      valueFrom: { secretKeyRef: { name: "media-redis", key: "redis-url" } },
    });
    assert.deepEqual(env.get("S3_ACCESS_KEY_ID")!.valueFrom, {
      secretKeyRef: { name: "media-s3", key: "access-key-id" },
    });
    assert.deepEqual(env.get("S3_SECRET_ACCESS_KEY")!.valueFrom, {
      secretKeyRef: { name: "media-s3", key: "secret-access-key" },
    });
    assert.deepEqual(env.get("AI_API_KEY")!.valueFrom, { secretKeyRef: { name: "media-ai", key: "token" } });
    for (const e of env.values()) {
      if (e.valueFrom) assert.equal(e.value, undefined, e.name);
    }
    assert.equal(env.get("S3_ENDPOINT")!.value, "http://objects:9000");
    assert.equal(env.get("S3_REGION")!.value, "eu-west-1");
    assert.equal(env.get("S3_FORCE_PATH_STYLE")!.value, "true");
    assert.equal(env.get("REDIS_KEY_PREFIX")!.value, "media-test");
    assert.equal(env.get("AI_BASE_URL")!.value, "http://llm:8000/v1");
    assert.equal(env.get("LOG_LEVEL")!.value, "info");

    // Without an S3 or AI Secret (e.g. workload identity), the keys are left out, never inlined.
    const bare = buildJobManifest(
      job({ type: "analyze", dest_bucket: undefined, dest_key: undefined, parameters: {} }),
      settings({ s3_secret: undefined, ai_secret: undefined }),
      60,
    );
    assert.ok(!JSON.stringify(bare).includes(SENTINEL));
    const names = container(bare).env!.map((e) => e.name);
    assert.ok(!names.includes("S3_ACCESS_KEY_ID") && !names.includes("AI_API_KEY"));
    assert.throws(() => kubernetesSettings(config({ redis_secret: undefined })), /kubernetes\.redis_secret/);
  });

  test("an AI job's pod gets its own provider's settings and key; other pods get no AI settings", () => {
    const envOf = (j: Job) =>
      Object.fromEntries(
        container(buildJobManifest(j, settings(), 60)).env!.map((e) => [e.name, e.value ?? e.valueFrom]),
      );
    const ai = (parameters: Record<string, unknown>) =>
      job({ type: "analyze", dest_bucket: undefined, dest_key: undefined, parameters });

    const hosted = envOf(ai({ provider: "hosted" }));
    assert.equal(hosted.AI_PROVIDER, "hosted");
    assert.equal(hosted.AI_BASE_URL, "https://api.example.com/v1");
    assert.equal(hosted.AI_MODEL, "vision-large");
    assert.equal(hosted.AI_TRANSCRIPTION_MODEL, "whisper-large");
    assert.equal(hosted.AI_STRUCTURED_OUTPUT, "json_schema");
    assert.deepEqual(hosted.AI_API_KEY, { secretKeyRef: { name: "hosted-ai", key: "api-key" } });
    assert.equal(hosted.AI_TIMEOUT, "120000ms");
    assert.equal(hosted.AI_MAX_ATTEMPTS, "4");
    assert.equal(hosted.AI_MAX_IMAGE_SIDE, "1024");

    // No provider named: the default, which is the one AI_BASE_URL defines.
    const byDefault = envOf(ai({}));
    assert.equal(byDefault.AI_PROVIDER, "default");
    assert.equal(byDefault.AI_BASE_URL, "http://llm:8000/v1");
    assert.deepEqual(byDefault.AI_API_KEY, { secretKeyRef: { name: "media-ai", key: "token" } });

    // An unknown provider: no AI settings at all, so the runner fails the job naming the problem.
    const unknown = envOf(ai({ provider: "nope" }));
    assert.ok(!Object.keys(unknown).some((name) => name.startsWith("AI_")), Object.keys(unknown).join());
    const resize = envOf(job());
    assert.ok(!Object.keys(resize).some((name) => name.startsWith("AI_")), Object.keys(resize).join());
  });

  test("optional scheduling fields are present only when set", () => {
    const plain = buildJobManifest(job(), settings(), 60).spec!.template.spec!;
    for (const field of [
      "nodeSelector",
      "tolerations",
      "affinity",
      "priorityClassName",
      "imagePullSecrets",
      "serviceAccountName",
    ] as const) {
      assert.equal(field in plain, false, field);
    }
    const affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: "pool", operator: "In", values: ["media"] }] }],
        },
      },
    };
    const s = settings({
      node_selector: { "kubernetes.io/arch": "amd64" },
      tolerations: [{ key: "media", operator: "Equal", value: "true", effect: "NoSchedule" }],
      affinity,
      priority_class_name: "media-batch",
      image_pull_secrets: ["regcred"],
      image_pull_policy: "Always",
    });
    const m = buildJobManifest(job(), s, 60);
    const pod = m.spec!.template.spec!;
    assert.deepEqual(pod.nodeSelector, { "kubernetes.io/arch": "amd64" });
    assert.deepEqual(pod.tolerations, [
      { key: "media", operator: "Equal", value: "true", effect: "NoSchedule" },
    ]);
    assert.deepEqual(pod.affinity, affinity);
    assert.equal(pod.priorityClassName, "media-batch");
    assert.deepEqual(pod.imagePullSecrets, [{ name: "regcred" }]);
    assert.equal(container(m).imagePullPolicy, "Always");
  });
});

describe("kubernetes configuration", () => {
  test("defaults, and the namespace falls back to default outside a pod", () => {
    const k = loadConfig({ env: {}, file: "/dev/null" }).kubernetes;
    assert.equal(k.namespace, "default");
    assert.equal(k.instance, "media-service");
    assert.equal(k.ttlSecondsAfterFinished, 3600);
    assert.equal(k.scratchSize, undefined);
    assert.deepEqual(k.imagePullSecrets, []);
    assert.equal(k.redisSecret, undefined);
  });

  test("invalid settings are refused with the field named", () => {
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ unknown_field: 1 }, /kubernetes\.unknown_field: unexpected property/],
      [{ ttl_seconds_after_finished: -1 }, /kubernetes\.ttl_seconds_after_finished/],
      [{ scratch_size: "lots" }, /kubernetes\.scratch_size/],
      [
        { resources: { video_transcode: { requests: { ephemeral_storage: "40Gi" } } } },
        /kubernetes\.resources\.video_transcode\.requests\.ephemeral_storage 40Gi is above its limit 16Gi/,
      ],
      [{ namespace: "Not_A_Namespace" }, /kubernetes\.namespace/],
      [
        { resources: { image_resize: { requests: { cpu: "fast" } } } },
        /kubernetes\.resources\.image_resize\.requests\.cpu/,
      ],
      [
        { image_pull_policy: "Sometimes" },
        /kubernetes\.image_pull_policy: must be one of Always, IfNotPresent, Never/,
      ],
      [{ redis_secret: { key: "x" } }, /kubernetes\.redis_secret\.name/],
    ];
    for (const [kubernetes, message] of bad) {
      assert.throws(() => loadConfig({ env: {}, file: "/dev/null", overrides: { kubernetes } }), message);
    }
  });
});

describe("labels, annotations, Kueue and priority bands", () => {
  const metadata = {
    job_labels: { team: "media", "example.com/cost-center": "global" },
    job_annotations: { "example.com/owner": "platform" },
    kueue: { queue_name: "media" },
    per_type: {
      video_transcode: {
        labels: { "example.com/cost-center": "video", tier: "heavy" },
        annotations: { "example.com/owner": "video-team" },
        queue_name: "video",
      },
    },
    per_client: {
      acme: { labels: { "example.com/cost-center": "acme" }, queue_name: "acme" },
    },
  };

  test("merged global < job type < client, the controller's own labels kept", () => {
    const s = settings(metadata);
    const plain = buildJobManifest(job(), s, 60);
    assert.equal(plain.metadata!.labels!.team, "media");
    assert.equal(plain.metadata!.labels!["example.com/cost-center"], "global");
    assert.equal(plain.metadata!.labels!["kueue.x-k8s.io/queue-name"], "media");
    assert.equal(plain.metadata!.annotations!["example.com/owner"], "platform");

    const video = buildJobManifest(job({ type: "video_transcode" }), s, 60);
    assert.equal(video.metadata!.labels!["example.com/cost-center"], "video");
    assert.equal(video.metadata!.labels!.tier, "heavy");
    assert.equal(video.metadata!.labels!.team, "media");
    assert.equal(video.metadata!.labels!["kueue.x-k8s.io/queue-name"], "video");
    assert.equal(video.metadata!.annotations!["example.com/owner"], "video-team");

    const acme = buildJobManifest(job({ type: "video_transcode" }), s, 60, "acme");
    assert.equal(acme.metadata!.labels!["example.com/cost-center"], "acme");
    assert.equal(acme.metadata!.labels!.tier, "heavy");
    assert.equal(acme.metadata!.labels!["kueue.x-k8s.io/queue-name"], "acme");
    assert.equal(
      buildJobManifest(job(), s, 60, "other").metadata!.labels!["kueue.x-k8s.io/queue-name"],
      "media",
    );

    const j = job();
    const m = buildJobManifest(j, s, 60, "acme");
    assert.equal(m.metadata!.labels![LABELS.jobId], j.id);
    assert.equal(m.metadata!.labels![LABELS.instance], "prod");
    assert.equal(m.metadata!.annotations![ANNOTATIONS.jobId], j.id);
    // The pod has the labels, not Kueue's: Kueue admits the Job, not its pod.
    const podLabels = m.spec!.template.metadata!.labels!;
    assert.equal(podLabels["example.com/cost-center"], "acme");
    assert.equal(podLabels[LABELS.jobId], j.id);
    assert.equal("kueue.x-k8s.io/queue-name" in podLabels, false);
    assert.equal(m.spec!.template.metadata!.annotations!["example.com/owner"], "platform");
  });

  test("a Job Kueue manages is created suspended; without a queue it is not", () => {
    assert.equal(buildJobManifest(job(), settings(metadata), 60).spec!.suspend, true);
    const plain = buildJobManifest(job(), settings({ job_labels: { team: "media" } }), 60);
    assert.equal("suspend" in plain.spec!, false);
    assert.equal("kueue.x-k8s.io/queue-name" in plain.metadata!.labels!, false);
    const onlyType = settings({ per_type: { video_transcode: { queue_name: "video" } } });
    assert.equal(buildJobManifest(job(), onlyType, 60).spec!.suspend, undefined);
    assert.equal(buildJobManifest(job({ type: "video_transcode" }), onlyType, 60).spec!.suspend, true);
  });

  test("PriorityClass and Kueue WorkloadPriorityClass by the job's priority band", () => {
    const s = settings({
      priority_class_name: "media-normal",
      kueue: { queue_name: "media" },
      priority_bands: [
        { min_priority: 10, priority_class_name: "media-high", workload_priority_class: "high" },
        { min_priority: -50, workload_priority_class: "low" },
        { min_priority: 0, workload_priority_class: "normal" },
      ],
    });
    const band = (priority?: number) => {
      const m = buildJobManifest(job(priority === undefined ? {} : { priority }), s, 60);
      return [m.spec!.template.spec!.priorityClassName, m.metadata!.labels!["kueue.x-k8s.io/priority-class"]];
    };
    assert.deepEqual(band(50), ["media-high", "high"]);
    assert.deepEqual(band(10), ["media-high", "high"]);
    assert.deepEqual(band(9), ["media-normal", "normal"]);
    assert.deepEqual(band(undefined), ["media-normal", "normal"]);
    assert.deepEqual(band(-1), ["media-normal", "low"]);
    const none = buildJobManifest(
      job({ priority: 5 }),
      settings({ priority_bands: [{ min_priority: 10, priority_class_name: "high" }] }),
      60,
    );
    assert.equal(none.spec!.template.spec!.priorityClassName, undefined);
  });

  test("labels and annotations Kubernetes would refuse, or that are the controller's or Kueue's, are refused at load naming the key", () => {
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ job_labels: { "bad key": "x" } }, /kubernetes\.job_labels: "bad key" is not a label key/],
      [
        { job_labels: { team: "not valid!" } },
        /kubernetes\.job_labels: "team" has an invalid value "not valid!"/,
      ],
      [{ job_labels: { team: "x".repeat(64) } }, /kubernetes\.job_labels: "team" has an invalid value/],
      [
        { job_labels: { "Example.com/x": "y" } },
        /kubernetes\.job_labels: "Example\.com\/x" is not a label key: its prefix/,
      ],
      [
        { job_labels: { [LABELS.instance]: "other" } },
        /kubernetes\.job_labels: "app\.kubernetes\.io\/instance" is set by the controller/,
      ],
      [
        { per_type: { image_resize: { labels: { "media-service.io/anything": "x" } } } },
        /kubernetes\.per_type\.image_resize\.labels: "media-service\.io\/anything" is set by the controller/,
      ],
      [
        { per_client: { acme: { labels: { "kueue.x-k8s.io/queue-name": "q" } } } },
        /kubernetes\.per_client\.acme\.labels: "kueue\.x-k8s\.io\/queue-name" is set by the controller/,
      ],
      [
        { job_annotations: { [ANNOTATIONS.jobId]: "x" } },
        /kubernetes\.job_annotations: "media-service\.io\/job-id" is set by the controller/,
      ],
      [{ job_annotations: { "-x": "y" } }, /kubernetes\.job_annotations: "-x" is not an annotation key/],
      [{ kueue: { queue_name: "Not_A_Queue" } }, /kubernetes\.kueue\.queue_name/],
      [{ per_type: { no_such_type: {} } }, /kubernetes\.per_type\.no_such_type/],
      [
        { priority_bands: [{ min_priority: 1 }, { min_priority: 1 }] },
        /kubernetes\.priority_bands\[1\]\.min_priority: 1 begins another band too/,
      ],
      [{ priority_bands: [{ min_priority: 51 }] }, /kubernetes\.priority_bands\[0\]\.min_priority/],
    ];
    for (const [kubernetes, message] of bad) {
      assert.throws(() => loadConfig({ env: {}, file: "/dev/null", overrides: { kubernetes } }), message);
    }
    // Any other label, prefixed or not, and any annotation value are accepted.
    const ok = settings({
      job_labels: { "example.com/team": "media", empty: "" },
      job_annotations: { "example.com/note": "anything at all: spaces, slashes / and more" },
    });
    assert.equal(buildJobManifest(job(), ok, 60).metadata!.labels!["example.com/team"], "media");
  });
});
