// The runner Job manifest against a real kube-apiserver: its own validation (and PodSecurity admission
// at the `restricted` level) accepts the Job of every job type, and what it stores is what we built.
import { EXIT } from "../../core/policy.js";
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { BatchV1Api, CoreV1Api, KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { loadConfig } from "../../core/config/load.js";
import type { Job } from "../../core/jobs/records.js";
import { JOB_TYPES } from "../../core/jobs/types.js";
import {
  buildJobManifest,
  kubernetesSettings,
  OOM_KILLED_EXIT_CODE,
  type KubernetesSettings,
} from "../../controller/kubernetes/job-manifest.js";
import { jobName } from "../../controller/kubernetes/names.js";
import { startControlPlane, type ControlPlane } from "./support/control-plane.js";
import { eventually } from "./support/eventually.js";

const NS = `manifest-${randomBytes(3).toString("hex")}`;
const SENTINEL = "k8s-SENTINEL-secret-value";

function job(type: Job["type"], extra: Partial<Job> = {}): Job {
  const now = new Date().toISOString();
  return {
    id: randomUUID(),
    type,
    status: "pending",
    source_bucket: "in",
    source_key: "source.bin",
    dest_bucket: "out",
    dest_key: "out.bin",
    parameters: {},
    batch_id: "Nightly import #7 (retry) ",
    created_at: now,
    updated_at: now,
    ...extra,
  };
}

describe("runner Job manifest on a real control plane", () => {
  let cp: ControlPlane;
  let batch: BatchV1Api;
  let core: CoreV1Api;
  let settings: KubernetesSettings;

  before(async () => {
    cp = await startControlPlane({ log: (m) => console.log(`# ${m}`) });
    const kc = new KubeConfig();
    kc.loadFromFile(cp.kubeconfigPath);
    batch = kc.makeApiClient(BatchV1Api);
    core = kc.makeApiClient(CoreV1Api);
    // The restricted Pod Security Standard is enforced: a pod of the Job must meet it to be created.
    await core.createNamespace({
      body: {
        metadata: {
          name: NS,
          labels: {
            "pod-security.kubernetes.io/enforce": "restricted",
            "pod-security.kubernetes.io/warn": "restricted",
          },
        },
      },
    });
    await core.createNamespacedServiceAccount({
      namespace: NS,
      body: { metadata: { name: "media-runner" } },
    });
    await core.createNamespacedSecret({
      namespace: NS,
      body: {
        metadata: { name: "media-redis" },
        stringData: { "redis-url": `redis://:${SENTINEL}@redis:6379` },
      },
    });
    await core.createNamespacedSecret({
      namespace: NS,
      body: {
        metadata: { name: "media-s3" },
        stringData: { "access-key-id": "AKIAEXAMPLE", "secret-access-key": SENTINEL },
      },
    });
    settings = kubernetesSettings(
      loadConfig({
        env: {},
        file: "/dev/null",
        overrides: {
          redis: { url: `redis://:${SENTINEL}@redis:6379` },
          storage: { endpoint: "http://s3:9000", access_key_id: "AKIAEXAMPLE", secret_access_key: SENTINEL },
          kubernetes: {
            namespace: NS,
            instance: "k8s-test",
            image: "media-service:test",
            service_account: "media-runner",
            image_pull_secrets: ["regcred"],
            node_selector: { "kubernetes.io/os": "linux" },
            tolerations: [{ key: "media", operator: "Exists", effect: "NoSchedule" }],
            redis_secret: { name: "media-redis" },
            s3_secret: { name: "media-s3" },
          },
        },
      }),
    );
  });

  after(async () => {
    await cp?.stop();
  });

  test("the apiserver accepts the Job of every job type (dry run and real create)", async () => {
    for (const type of JOB_TYPES) {
      const manifest = buildJobManifest(job(type), settings, 300);
      assert.ok(!JSON.stringify(manifest).includes(SENTINEL));
      const dry = await batch.createNamespacedJob({
        namespace: NS,
        body: manifest,
        dryRun: "All",
        fieldValidation: "Strict",
      });
      assert.equal(dry.metadata?.name, manifest.metadata!.name);
      const created = await batch.createNamespacedJob({
        namespace: NS,
        body: manifest,
        fieldValidation: "Strict",
      });
      assert.equal(created.metadata?.name, manifest.metadata!.name, type);
    }
  });

  test("the pod template meets the restricted Pod Security Standard (a weakened one is refused)", async () => {
    const template = buildJobManifest(job("audio_convert"), settings, 60).spec!.template;
    const pod = (name: string): V1Pod => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { ...template.metadata, name },
      spec: structuredClone(template.spec!),
    });
    await core.createNamespacedPod({ namespace: NS, body: pod("restricted-ok"), dryRun: "All" });
    const weakened = pod("restricted-weakened");
    delete weakened.spec!.containers[0]!.securityContext!.capabilities;
    await assert.rejects(
      core.createNamespacedPod({ namespace: NS, body: weakened, dryRun: "All" }),
      (err: { code?: number }) => err.code === 403,
    );
  });

  test("a second create of the same job's Job is refused with AlreadyExists (409)", async () => {
    const j = job("image_resize");
    await batch.createNamespacedJob({ namespace: NS, body: buildJobManifest(j, settings, 60) });
    await assert.rejects(
      batch.createNamespacedJob({ namespace: NS, body: buildJobManifest(j, settings, 60) }),
      (err: { code?: number }) => err.code === 409,
    );
  });

  test("the Job read back keeps the failure policy, deadline, resources and security context; its pod is admitted", async () => {
    const j = job("video_thumbnail", { resources: { cpu: "1500m", memory: "3Gi" } });
    const name = jobName(j.id);
    await batch.createNamespacedJob({ namespace: NS, body: buildJobManifest(j, settings, 1234) });
    const stored = await batch.readNamespacedJob({ namespace: NS, name });
    const spec = stored.spec!;
    // The job's 1234 s plus the longest wait for a node (kubernetes.unschedulable_timeout, 5m).
    assert.equal(spec.activeDeadlineSeconds, 1234 + 300);
    assert.equal(spec.backoffLimit, 2);
    assert.equal(spec.ttlSecondsAfterFinished, 3600);
    const rules = spec.podFailurePolicy!.rules;
    assert.equal(rules[0]!.action, "Ignore");
    assert.equal(rules[0]!.onPodConditions![0]!.type, "DisruptionTarget");
    assert.equal(rules[1]!.action, "FailJob");
    assert.equal(rules[1]!.onExitCodes!.containerName, "runner");
    assert.equal(rules[1]!.onExitCodes!.operator, "In");
    assert.deepEqual(rules[1]!.onExitCodes!.values, [EXIT.permanent, OOM_KILLED_EXIT_CODE]);
    const pod = spec.template.spec!;
    assert.equal(pod.automountServiceAccountToken, false);
    assert.equal(pod.serviceAccountName, "media-runner");
    assert.equal(pod.restartPolicy, "Never");
    assert.equal(pod.securityContext!.runAsNonRoot, true);
    assert.equal(pod.securityContext!.runAsUser, 10001);
    assert.equal(pod.securityContext!.fsGroup, 10001);
    assert.equal(pod.securityContext!.seccompProfile!.type, "RuntimeDefault");
    const c = pod.containers[0]!;
    assert.equal(c.securityContext!.allowPrivilegeEscalation, false);
    assert.equal(c.securityContext!.readOnlyRootFilesystem, true);
    assert.deepEqual(c.securityContext!.capabilities!.drop, ["ALL"]);
    assert.equal(c.terminationMessagePolicy, "FallbackToLogsOnError");
    assert.deepEqual(c.resources!.requests, { cpu: "1500m", memory: "3Gi", "ephemeral-storage": "1Gi" });
    assert.deepEqual(c.resources!.limits, { cpu: "1500m", memory: "3Gi", "ephemeral-storage": "8Gi" });
    assert.equal(
      c.env!.find((e) => e.name === "S3_SECRET_ACCESS_KEY")!.valueFrom!.secretKeyRef!.name,
      "media-s3",
    );
    // The scratch emptyDir is the type's disk limit (video_thumbnail: 8Gi).
    assert.equal(pod.volumes![0]!.emptyDir!.sizeLimit, "8Gi");

    // The Job controller creates its pod; PodSecurity admission (restricted) lets it in.
    const created = await eventually<V1Pod>("the Job's pod", async () => {
      const pods = await core.listNamespacedPod({
        namespace: NS,
        labelSelector: `batch.kubernetes.io/job-name=${name}`,
      });
      return pods.items[0];
    });
    assert.equal(created.metadata!.labels!["media-service.io/job-id"], j.id);
    assert.equal(
      created.spec!.containers[0]!.command!.join(" "),
      `tini -- media-service runner --job ${j.id}`,
    );
  });
});
