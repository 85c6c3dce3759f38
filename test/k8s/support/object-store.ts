// The S3-protocol store the chart's scenarios give the release: the project's own
// (`media-service object-store`, from its image) as a Deployment and a NodePort Service in the
// namespace, a bucket made on it, reached by the test process at a node's address. `placement` puts
// it on chosen nodes (the kind scenarios keep it off the workers they stop).
import { randomBytes } from "node:crypto";
import { CreateBucketCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import type { AppsV1Api, CoreV1Api, V1Toleration } from "@kubernetes/client-node";
import { makeImage } from "../../support/media.js";
import { eventually } from "./eventually.js";

export interface ObjectStoreOptions {
  core: CoreV1Api;
  apps: AppsV1Api;
  namespace: string;
  /** The project's image, loaded into the nodes (imagePullPolicy Never). */
  image: string;
  /** Where the Service's NodePort answers the test process. */
  nodeAddress: string;
  bucket: string;
  placement?: { nodeSelector: Record<string, string>; tolerations: V1Toleration[] };
}

export interface ObjectStore {
  s3: S3Client;
  /** In the cluster: http://objects.<namespace>.svc:9000. */
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
}

export async function deployObjectStore(o: ObjectStoreOptions): Promise<ObjectStore> {
  const { core, apps, namespace } = o;
  const labels = { app: "objects" };
  const accessKeyId = "objects-access-key";
  const secretAccessKey = `objects-secret-${randomBytes(8).toString("hex")}`;
  await core.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name: "objects" },
      stringData: { "access-key-id": accessKeyId, "secret-access-key": secretAccessKey },
    },
  });
  const secretEnv = (name: string, key: string) => ({
    name,
    valueFrom: { secretKeyRef: { name: "objects", key } },
  });
  await apps.createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name: "objects", labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            ...(o.placement ?? {}),
            automountServiceAccountToken: false,
            containers: [
              {
                name: "objects",
                image: o.image,
                imagePullPolicy: "Never",
                args: ["object-store"],
                env: [
                  { name: "EMBEDDED_S3_HOST", value: "0.0.0.0" },
                  { name: "EMBEDDED_S3_PORT", value: "9000" },
                  { name: "DATA_DIR", value: "/data" },
                  secretEnv("S3_ACCESS_KEY_ID", "access-key-id"),
                  secretEnv("S3_SECRET_ACCESS_KEY", "secret-access-key"),
                ],
                ports: [{ containerPort: 9000 }],
                readinessProbe: { tcpSocket: { port: 9000 }, periodSeconds: 1 },
                resources: { requests: { cpu: "50m", memory: "64Mi" } },
                volumeMounts: [{ name: "data", mountPath: "/data" }],
              },
            ],
            volumes: [{ name: "data", emptyDir: {} }],
          },
        },
      },
    },
  });
  await core.createNamespacedService({
    namespace,
    body: {
      metadata: { name: "objects" },
      spec: { type: "NodePort", selector: labels, ports: [{ port: 9000, targetPort: 9000 }] },
    },
  });
  await eventually(
    "the object store to be available",
    async () => {
      const d = await apps.readNamespacedDeployment({ name: "objects", namespace });
      return (d.status?.availableReplicas ?? 0) >= 1 || undefined;
    },
    180_000,
    async () => {
      const pods = await core.listNamespacedPod({ namespace, labelSelector: "app=objects" });
      return JSON.stringify(
        pods.items.map((p) => [p.metadata?.name, p.status?.phase, p.status?.containerStatuses]),
      );
    },
  );
  const svc = await core.readNamespacedService({ name: "objects", namespace });
  const port = svc.spec?.ports?.[0]?.nodePort;
  if (!port) throw new Error("Service objects has no nodePort");
  const s3 = new S3Client({
    endpoint: `http://${o.nodeAddress}:${port}`,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId, secretAccessKey },
  });
  await eventually("the bucket to be created", async () => {
    // A retry after an answer that was lost finds the bucket made.
    await s3.send(new CreateBucketCommand({ Bucket: o.bucket })).catch((err: Error) => {
      if (err.name !== "BucketAlreadyOwnedByYou") throw err;
    });
    return true;
  });
  return { s3, endpoint: `http://objects.${namespace}.svc:9000`, accessKeyId, secretAccessKey };
}

/** The image sources the scenarios' jobs read: in/photo.jpg (640×480, photo-like) and in/small.png. */
export async function putImageSources(s3: S3Client, bucket: string): Promise<void> {
  const sources: Array<[string, Promise<Buffer>]> = [
    ["in/photo.jpg", makeImage({ width: 640, height: 480, format: "jpeg", photo: true })],
    ["in/small.png", makeImage({ width: 96, height: 64, format: "png" })],
  ];
  for (const [key, body] of sources) {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: await body }));
  }
}
