// The chart as a platform team installs it, on a cluster with real containers: `helm install --wait`
// with the default replica counts (2 API, 2 controllers), the bundled Redis and an S3-protocol store
// in the cluster (both from the project's image: redis-server and `media-service object-store`),
// then `helm test`, a job of every type in runner Jobs of the installed controller, the leading
// controller pod deleted in the middle of a burst, and `helm upgrade` with jobs in flight. Runs on the
// test cluster (real node) by default and on kind from test/e2e/kind.sh (support/target.ts).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFile, writeFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { HeadObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import {
  AppsV1Api,
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  type KubeConfig,
} from "@kubernetes/client-node";
import { definitionOf, JOB_DEFINITIONS, type JobType } from "../../core/jobs/types.js";
import { makeAudio, makeVideo, removeMediaDirs } from "../support/av.js";
import { EVERY_TYPE_SOURCES, SMALL_VIDEO_REQUESTS, submission } from "../support/submission.js";
import { eventually, kubeConfigFrom } from "./support/cluster-stack.js";
import { CHART, helm } from "./support/helm.js";
import { deployObjectStore, putImageSources, type ObjectStore } from "./support/object-store.js";
import { imageValues, startTarget, type Target } from "./support/target.js";

const RELEASE = "media";
const FULLNAME = `${RELEASE}-media-service`;
const BUCKET = "media";

let target: Target;
let kc: KubeConfig;
let core: CoreV1Api;
let apps: AppsV1Api;
let batch: BatchV1Api;
let work: string;
const namespace = `media-install-${randomBytes(3).toString("hex")}`;
let store: ObjectStore;
let s3: S3Client;
let apiUrl: string;
let apiKey: string;

const helmIn = (args: string[]) =>
  helm([...args, "--namespace", namespace], { kubeconfig: target.kubeconfigPath });

async function nodePort(service: string): Promise<number> {
  const svc = await core.readNamespacedService({ name: service, namespace });
  const port = svc.spec?.ports?.[0]?.nodePort;
  if (!port) throw new Error(`Service ${service} has no nodePort`);
  return port;
}

interface JobView {
  id: string;
  status: string;
  error?: string;
  attempts?: number;
  result?: Record<string, unknown>;
}

async function api(
  path: string,
  init: { method?: string; json?: unknown } = {},
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${apiUrl}${path}`, {
    method: init.method ?? "GET",
    headers: { "x-api-key": apiKey, ...(init.json ? { "content-type": "application/json" } : {}) },
    ...(init.json ? { body: JSON.stringify(init.json) } : {}),
  });
  return { status: res.status, body: await res.json() };
}

async function submit(path: string, body: Record<string, unknown>): Promise<string> {
  const res = await api(`/api/v1/jobs/${path}`, { method: "POST", json: body });
  const json = res.body as { job_id: string; error?: string };
  assert.equal(res.status, 202, json.error);
  return json.job_id;
}

async function submitColors(count: number): Promise<string[]> {
  const jobs = Array.from({ length: count }, () => ({
    type: "image_colors",
    source_bucket: BUCKET,
    source_key: "in/small.png",
    parameters: { color_count: 3 },
  }));
  const res = await api("/api/v1/jobs/batch", { method: "POST", json: { jobs } });
  const json = res.body as { job_ids: string[]; error?: string };
  assert.equal(res.status, 201, json.error);
  return json.job_ids;
}

async function finished(id: string, limitMs = 300_000): Promise<JobView> {
  return await eventually(
    `job ${id} to finish`,
    async () => {
      const { body } = await api(`/api/v1/jobs/${id}`).catch(() => ({ body: undefined }));
      const job = body as JobView | undefined;
      return job && (job.status === "completed" || job.status === "failed") ? job : undefined;
    },
    limitMs,
  );
}

/** The runner Jobs of each media job, by the controller's label. */
async function runnerJobsById(): Promise<Map<string, number>> {
  const list = await batch.listNamespacedJob({ namespace, labelSelector: "media-service.io/job-id" });
  const counts = new Map<string, number>();
  for (const j of list.items) {
    const id = j.metadata!.labels!["media-service.io/job-id"]!;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

before(async () => {
  target = await startTarget();
  kc = kubeConfigFrom(target.kubeconfigPath);
  core = kc.makeApiClient(CoreV1Api);
  apps = kc.makeApiClient(AppsV1Api);
  batch = kc.makeApiClient(BatchV1Api);
  work = await mkdtemp(join(tmpdir(), "media-service-install-"));
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  // The in-cluster object store: the project's own, from its image.
  store = await deployObjectStore({
    core,
    apps,
    namespace,
    image: target.image,
    nodeAddress: target.nodeAddress,
    bucket: BUCKET,
  });
  s3 = store.s3;
  await putImageSources(s3, BUCKET);
  await s3.send(
    new PutObjectCommand({
      Bucket: BUCKET,
      Key: "in/clip.mp4",
      Body: await readFile(await makeVideo({ durationSeconds: 3 })),
    }),
  );
  await s3.send(
    new PutObjectCommand({
      Bucket: BUCKET,
      Key: "in/tone.wav",
      Body: await readFile(await makeAudio({ durationSeconds: 2, sampleRate: 8000 })),
    }),
  );

  const image = imageValues(target.image);
  const values = {
    image: { ...image, pullPolicy: "Never" },
    redis: { image: { ...image, pullPolicy: "Never" }, persistence: { enabled: false } },
    s3: {
      endpoint: store.endpoint,
      accessKeyId: store.accessKeyId,
      secretAccessKey: store.secretAccessKey,
      healthBucket: BUCKET,
    },
    api: { service: { type: "NodePort" } },
    runner: { resources: SMALL_VIDEO_REQUESTS },
  };
  const file = join(work, "values.json");
  await writeFile(file, JSON.stringify(values));
  const installed = await helmIn(["install", RELEASE, CHART, "--values", file, "--wait", "--timeout", "5m"]);
  assert.equal(installed.code, 0, `${installed.stdout}\n${installed.stderr}`);
  apiUrl = `http://${target.nodeAddress}:${await nodePort(`${FULLNAME}-api`)}`;
  const secret = await core.readNamespacedSecret({ name: `${FULLNAME}-api-keys`, namespace });
  apiKey = Buffer.from(secret.data!["api-keys"]!, "base64").toString().split(",")[0]!;
});

after(async () => {
  if (kc && process.env.MEDIA_K8S_KEEP !== "1") {
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  }
  s3?.destroy();
  await target?.stop();
  if (work) await rm(work, { recursive: true, force: true });
  removeMediaDirs();
});

describe("the chart installed with its defaults", () => {
  test("two API and two controller pods are available, one controller leads, and helm test passes", async () => {
    for (const component of ["api", "controller"]) {
      const d = await apps.readNamespacedDeployment({ name: `${FULLNAME}-${component}`, namespace });
      assert.equal(d.spec!.replicas, 2, component);
      assert.equal(d.status!.availableReplicas, 2, component);
    }
    const lease = await kc
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ name: `${FULLNAME}-controller`, namespace });
    const pods = await core.listNamespacedPod({
      namespace,
      labelSelector: "app.kubernetes.io/component=controller",
    });
    const holder = lease.spec!.holderIdentity ?? "";
    assert.equal(pods.items.filter((p) => holder.startsWith(`${p.metadata!.name}_`)).length, 1, holder);
    for (const pod of pods.items) {
      assert.match(pod.status!.containerStatuses![0]!.containerID ?? "", /^containerd:\/\//);
    }
    const tested = await helmIn(["test", RELEASE, "--timeout", "2m"]);
    assert.equal(tested.code, 0, `${tested.stdout}\n${tested.stderr}`);
    assert.match(tested.stdout, /Phase:\s+Succeeded/);
  });

  test("a job of every type completes in a runner Job of the installed controller (AI types fail clearly)", async () => {
    // Every registered type, as its definition says to submit one (test/support/submission.ts).
    const submitted = new Map<JobType, { id: string; output?: string }>();
    for (const definition of JOB_DEFINITIONS) {
      const { path, body, output } = submission(definition, {
        bucket: BUCKET,
        sources: EVERY_TYPE_SOURCES,
        dest: `out/every/${definition.name}`,
      });
      submitted.set(definition.name, { id: await submit(path, body), ...(output ? { output } : {}) });
    }
    for (const [type, { id, output }] of submitted) {
      const job = await finished(id);
      if (definitionOf(type).runner.ai) {
        assert.equal(job.status, "failed", type);
        assert.match(job.error ?? "", /AI provider/, type);
        continue;
      }
      assert.equal(job.status, "completed", `${type}: ${job.error}`);
      const pods = await core.listNamespacedPod({
        namespace,
        labelSelector: `media-service.io/job-id=${id}`,
      });
      assert.equal(pods.items.length, 1, `${type}: one runner pod`);
      const pod = pods.items[0]!;
      assert.equal(pod.spec!.containers[0]!.image, target.image);
      assert.match(pod.status!.containerStatuses![0]!.containerID ?? "", /^containerd:\/\//, type);
      // Its output (for a type that writes under a prefix, the entry: the master playlist).
      if (output) await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: output }));
    }
  });

  test("the leading controller pod deleted in the middle of a burst: every job ends once, in one runner Job", async () => {
    const ids = await submitColors(30);
    const coordination = kc.makeApiClient(CoordinationV1Api);
    const leaseName = `${FULLNAME}-controller`;
    const before = (await coordination.readNamespacedLease({ name: leaseName, namespace })).spec!
      .holderIdentity!;
    await eventually(
      "a few runner Jobs to exist",
      async () =>
        [...(await runnerJobsById()).keys()].filter((id) => ids.includes(id)).length >= 3 || undefined,
    );
    const leader = before.split("_")[0]!;
    await core.deleteNamespacedPod({ name: leader, namespace });
    const jobs = await Promise.all(ids.map((id) => finished(id)));
    for (const job of jobs) assert.equal(job.status, "completed", `${job.id}: ${job.error}`);
    const after = (await coordination.readNamespacedLease({ name: leaseName, namespace })).spec!
      .holderIdentity!;
    assert.notEqual(after.split("_")[0], leader, "another pod leads");
    const counts = await runnerJobsById();
    for (const id of ids) assert.equal(counts.get(id), 1, `job ${id}: one runner Job`);
  });

  test("helm upgrade of a value with jobs in flight loses none of them", async () => {
    const ids = await submitColors(20);
    const podsBefore = new Set(
      (
        await core.listNamespacedPod({
          namespace,
          labelSelector: "app.kubernetes.io/component in (api,controller)",
        })
      ).items.map((p) => p.metadata!.name!),
    );
    const upgraded = await helmIn([
      "upgrade", RELEASE, CHART, "--reuse-values", "--set", "logLevel=debug", "--wait", "--timeout", "5m",
    ]); // prettier-ignore
    assert.equal(upgraded.code, 0, `${upgraded.stdout}\n${upgraded.stderr}`);
    const jobs = await Promise.all(ids.map((id) => finished(id)));
    for (const job of jobs) assert.equal(job.status, "completed", `${job.id}: ${job.error}`);
    const podsAfter = (
      await core.listNamespacedPod({
        namespace,
        labelSelector: "app.kubernetes.io/component in (api,controller)",
      })
    ).items.filter((p) => p.status?.phase === "Running" && !p.metadata?.deletionTimestamp);
    assert.ok(podsAfter.length >= 4);
    assert.ok(
      podsAfter.every((p) => !podsBefore.has(p.metadata!.name!)),
      "every API and controller pod was replaced",
    );
    const counts = await runnerJobsById();
    for (const id of ids) assert.equal(counts.get(id), 1, `job ${id}: one runner Job`);
  });

  test("the warm runner pool switched on by helm upgrade: its workers run image jobs, no runner Job", async () => {
    const upgraded = await helmIn([
      "upgrade", RELEASE, CHART, "--reuse-values", "--set", "pool.enabled=true",
      "--set", "pool.classes.image_colors=pool", "--wait", "--timeout", "5m",
    ]); // prettier-ignore
    assert.equal(upgraded.code, 0, `${upgraded.stdout}\n${upgraded.stderr}`);
    const deployment = await apps.readNamespacedDeployment({ name: `${FULLNAME}-pool`, namespace });
    assert.equal(deployment.status!.availableReplicas, deployment.spec!.replicas, "workers ready (/readyz)");
    const workers = (
      await core.listNamespacedPod({ namespace, labelSelector: "app.kubernetes.io/component=pool" })
    ).items.filter((p) => p.status?.phase === "Running" && !p.metadata?.deletionTimestamp);
    assert.ok(workers.length >= 1);
    const container = workers[0]!.spec!.containers[0]!;
    assert.equal(container.image, target.image);
    assert.equal(container.securityContext?.readOnlyRootFilesystem, true);
    assert.equal(container.securityContext?.allowPrivilegeEscalation, false);
    assert.equal(workers[0]!.spec!.automountServiceAccountToken, false);

    const ids = await submitColors(20);
    const jobs = await Promise.all(ids.map((id) => finished(id)));
    for (const job of jobs) assert.equal(job.status, "completed", `${job.id}: ${job.error}`);
    const counts = await runnerJobsById();
    for (const id of ids) assert.equal(counts.get(id), undefined, `job ${id}: no runner Job`);
    const names = workers.map((p) => p.metadata!.name!);
    for (const id of ids.slice(0, 5)) {
      const { body } = await api(`/api/v1/jobs/${id}/events`);
      const claims = (body as { events: Array<{ event: string; message?: string }> }).events.filter(
        (e) => e.event === "claimed",
      );
      const last = claims.at(-1)?.message ?? "";
      assert.ok(
        names.some((name) => last.startsWith(`pool:${name}:`)),
        `job ${id} ran in a pool pod (${last})`,
      );
    }
  });
});
