// The chart installed on the kind cluster as a multi-node cluster runs it: 2 API replicas and 2
// controllers on different workers, the warm pool on (2 workers, one per node) beside runner Jobs,
// Redis with AOF on a PersistentVolume of the second worker, and an S3-protocol store (the project's
// own, from its image) on the control-plane node, so losing a worker never loses the sources.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { S3Client } from "@aws-sdk/client-s3";
import { AppsV1Api, BatchV1Api, CoordinationV1Api, StorageV1Api, type V1Pod } from "@kubernetes/client-node";
import { startWebhookReceiver, type WebhookReceiver } from "../../support/webhook-receiver.js";
import { CHART, helm } from "../../k8s/support/helm.js";
import { deployObjectStore, putImageSources } from "../../k8s/support/object-store.js";
import { imageValues } from "../../k8s/support/target.js";
import { docker, workers, type KindTarget } from "./kind.js";

export const RELEASE = "media";
export const FULLNAME = `${RELEASE}-media-service`;
export const BUCKET = "media";
/** The bundled Redis runs as this user (the chart's redis securityContext). */
const REDIS_UID = 999;

export interface Release {
  t: KindTarget;
  namespace: string;
  apps: AppsV1Api;
  batch: BatchV1Api;
  coordination: CoordinationV1Api;
  /** The API through the control-plane node's NodePort. */
  apiUrl: string;
  apiKey: string;
  s3: S3Client;
  receiver: WebhookReceiver;
  /** Where the jobs' webhooks go. */
  webhookUrl: string;
  /** The workers, sorted; Redis's volume is on `redisNode`, the other is `otherNode`. */
  redisNode: string;
  otherNode: string;
  close(): Promise<void>;
}

const SMALL = { requests: { cpu: "50m", memory: "96Mi" }, limits: { cpu: "1", memory: "512Mi" } };
const CONTROL_PLANE = {
  nodeSelector: { "node-role.kubernetes.io/control-plane": "" },
  tolerations: [{ key: "node-role.kubernetes.io/control-plane", operator: "Exists", effect: "NoSchedule" }],
};

/** A local PersistentVolume on `node` for Redis's claim (no provisioner needed). */
async function redisVolume(t: KindTarget, namespace: string, node: string): Promise<string> {
  const storage = t.kc.makeApiClient(StorageV1Api);
  const name = `${namespace}-redis`;
  const path = `/var/local/${name}`;
  await docker(["exec", node, "sh", "-c", `mkdir -p ${path} && chown ${REDIS_UID}:${REDIS_UID} ${path}`]);
  await storage.createStorageClass({
    body: {
      metadata: { name },
      provisioner: "kubernetes.io/no-provisioner",
      volumeBindingMode: "WaitForFirstConsumer",
    },
  });
  await t.core.createPersistentVolume({
    body: {
      metadata: { name },
      spec: {
        capacity: { storage: "1Gi" },
        accessModes: ["ReadWriteOnce"],
        persistentVolumeReclaimPolicy: "Retain",
        storageClassName: name,
        local: { path },
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: [node] }] },
            ],
          },
        },
      },
    },
  });
  return name;
}

async function nodePort(t: KindTarget, namespace: string, service: string): Promise<number> {
  const svc = await t.core.readNamespacedService({ name: service, namespace });
  const port = svc.spec?.ports?.[0]?.nodePort;
  if (!port) throw new Error(`Service ${service} has no nodePort`);
  return port;
}

export async function installRelease(t: KindTarget, scenario: string): Promise<Release> {
  const namespace = `media-${scenario}-${randomBytes(3).toString("hex")}`;
  const apps = t.kc.makeApiClient(AppsV1Api);
  const [otherNode, redisNode] = await workers(t);
  if (!otherNode || !redisNode) throw new Error("the scenarios need a cluster with two workers");
  await t.core.createNamespace({ body: { metadata: { name: namespace } } });
  const storageClass = await redisVolume(t, namespace, redisNode);
  const store = await deployObjectStore({
    core: t.core,
    apps,
    namespace,
    image: t.image,
    nodeAddress: t.controlPlaneAddress,
    bucket: BUCKET,
    placement: CONTROL_PLANE,
  });
  const { s3 } = store;
  await putImageSources(s3, BUCKET);
  const receiver = await startWebhookReceiver({ host: "0.0.0.0" });
  const work = await mkdtemp(join(tmpdir(), "media-service-kind-"));
  const image = { ...imageValues(t.image), pullPolicy: "Never" };
  const values = {
    image,
    redis: {
      image,
      persistence: { enabled: true, storageClass, size: "1Gi" },
      resources: { requests: { cpu: "50m", memory: "64Mi" }, limits: { cpu: "1", memory: "512Mi" } },
    },
    s3: {
      endpoint: store.endpoint,
      accessKeyId: store.accessKeyId,
      secretAccessKey: store.secretAccessKey,
      healthBucket: BUCKET,
    },
    api: { service: { type: "NodePort" }, podAntiAffinity: "hard", resources: SMALL },
    controller: { podAntiAffinity: "hard", resources: SMALL },
    pool: {
      enabled: true,
      replicas: 2,
      classes: { image_colors: "pool" },
      podAntiAffinity: "hard",
      resources: { requests: { cpu: "100m", memory: "256Mi" }, limits: { cpu: "2", memory: "2304Mi" } },
    },
    runner: { resources: { image_resize: SMALL, image_colors: SMALL } },
    webhooks: { allowPrivate: true },
  };
  const file = join(work, "values.json");
  await writeFile(file, JSON.stringify(values));
  const installed = await helm(
    ["install", RELEASE, CHART, "--namespace", namespace, "--values", file, "--wait", "--timeout", "8m"],
    { kubeconfig: t.kubeconfigPath },
  );
  if (installed.code !== 0) throw new Error(`helm install failed: ${installed.stdout}\n${installed.stderr}`);
  const secret = await t.core.readNamespacedSecret({ name: `${FULLNAME}-api-keys`, namespace });
  const apiKey = Buffer.from(secret.data!["api-keys"]!, "base64").toString().split(",")[0]!;
  const storage = t.kc.makeApiClient(StorageV1Api);
  return {
    t,
    namespace,
    apps,
    batch: t.kc.makeApiClient(BatchV1Api),
    coordination: t.kc.makeApiClient(CoordinationV1Api),
    apiUrl: `http://${t.controlPlaneAddress}:${await nodePort(t, namespace, `${FULLNAME}-api`)}`,
    apiKey,
    s3,
    receiver,
    webhookUrl: `http://${t.hostAddress}:${receiver.port}/hook`,
    redisNode,
    otherNode,
    close: async () => {
      await receiver.close();
      s3.destroy();
      await rm(work, { recursive: true, force: true });
      if (process.env.MEDIA_K8S_KEEP === "1") return;
      await t.core.deleteNamespace({ name: namespace }).catch(() => undefined);
      await t.core.deletePersistentVolume({ name: storageClass }).catch(() => undefined);
      await storage.deleteStorageClass({ name: storageClass }).catch(() => undefined);
      await docker(["exec", redisNode, "rm", "-rf", `/var/local/${storageClass}`]).catch(() => undefined);
    },
  };
}

/** The pods of a component (api, controller, pool, redis), or runner pods (`runner`). */
export async function podsOf(r: Release, component: string): Promise<V1Pod[]> {
  const labelSelector =
    component === "runner" ? "media-service.io/job-id" : `app.kubernetes.io/component=${component}`;
  return (await r.t.core.listNamespacedPod({ namespace: r.namespace, labelSelector })).items;
}

/** The leading controller: the Lease's holder, its pod and that pod's node. */
export async function leader(r: Release): Promise<{ pod: string; node: string }> {
  const lease = await r.coordination.readNamespacedLease({
    name: `${FULLNAME}-controller`,
    namespace: r.namespace,
  });
  const pod = (lease.spec?.holderIdentity ?? "").split("_")[0] ?? "";
  const found = (await podsOf(r, "controller")).find((p) => p.metadata?.name === pod);
  return { pod, node: found?.spec?.nodeName ?? "" };
}
