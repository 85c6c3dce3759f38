// The kind cluster test/e2e/kind.sh makes (test/e2e/kind-config.yaml; with `npm run test:kind`, on the
// node image scripts/k8s/build-kind-image.sh makes here): one control-plane node and two workers, all
// Ready; a PersistentVolumeClaim of the default StorageClass binds and a pod writes to it; a pod on one
// worker reaches, by its DNS name, a Service whose only pod runs on the other worker (the pod network
// across nodes, kube-proxy, CoreDNS). Pods run the project's image (MEDIA_K8S_IMAGE, loaded into the
// nodes by kind.sh) with its Node; the cluster is MEDIA_K8S_KUBECONFIG's.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import { eventually, kubeConfigFrom } from "../k8s/support/cluster-stack.js";

const kubeconfig = process.env.MEDIA_K8S_KUBECONFIG;
const image = process.env.MEDIA_K8S_IMAGE;
if (!kubeconfig || !image) {
  throw new Error(
    "run through test/e2e/kind.sh: MEDIA_K8S_KUBECONFIG and MEDIA_K8S_IMAGE name the kind cluster",
  );
}
const core = kubeConfigFrom(kubeconfig).makeApiClient(CoreV1Api);
const namespace = `kind-cluster-${randomBytes(3).toString("hex")}`;
let workers: string[] = [];

/** A pod of the project's image running `node -e SCRIPT` on NODE (through the scheduler, which also
 * binds a claim of a WaitForFirstConsumer StorageClass). */
function nodePod(name: string, node: string, script: string, extra: Partial<V1Pod["spec"]> = {}): V1Pod {
  return {
    metadata: { name, labels: { app: name } },
    spec: {
      nodeSelector: { "kubernetes.io/hostname": node },
      restartPolicy: "Never",
      containers: [
        {
          name,
          image,
          imagePullPolicy: "Never",
          command: ["node", "-e", script],
          ...(extra?.containers?.[0] ?? {}),
        },
      ],
      ...(extra?.volumes ? { volumes: extra.volumes } : {}),
    },
  };
}

async function podLog(name: string): Promise<string> {
  return core.readNamespacedPodLog({ name, namespace }).catch((err: unknown) => `(no log: ${String(err)})`);
}

/** Waits for the pod to end; its phase and log. */
async function finished(name: string): Promise<{ phase: string; log: string }> {
  const phase = await eventually(
    `pod ${name} to end`,
    async () => {
      const pod = await core.readNamespacedPod({ name, namespace });
      const p = pod.status?.phase;
      return p === "Succeeded" || p === "Failed" ? p : undefined;
    },
    180_000,
  );
  return { phase, log: await podLog(name) };
}

before(async () => {
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const nodes = (await core.listNode()).items;
  workers = nodes
    .filter((n) => !("node-role.kubernetes.io/control-plane" in (n.metadata?.labels ?? {})))
    .map((n) => n.metadata?.name ?? "")
    .sort();
});

after(async () => {
  if (process.env.MEDIA_K8S_KEEP !== "1") {
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  }
});

test("three nodes, Ready: one control plane, two workers", async () => {
  const nodes = (await core.listNode()).items;
  const ready = nodes.filter((n) =>
    n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
  );
  assert.equal(nodes.length, 3, `nodes: ${nodes.map((n) => n.metadata?.name).join(", ")}`);
  assert.equal(ready.length, 3, `Ready: ${ready.map((n) => n.metadata?.name).join(", ")}`);
  assert.equal(workers.length, 2, `workers: ${workers.join(", ")}`);
});

test("a pod on one worker reaches a Service backed by a pod on the other, by its DNS name", async () => {
  const [here, there] = workers;
  assert.ok(here && there, "two workers");
  const server = "echo";
  await core.createNamespacedPod({
    namespace,
    body: nodePod(
      server,
      there,
      "require('node:http').createServer((q, r) => r.end('hello from ' + require('node:os').hostname())).listen(8080)",
    ),
  });
  await core.createNamespacedService({
    namespace,
    body: {
      metadata: { name: server },
      spec: { selector: { app: server }, ports: [{ port: 80, targetPort: 8080 }] },
    },
  });
  await eventually(
    `pod ${server} on ${there} to run`,
    async () => {
      const pod = await core.readNamespacedPod({ name: server, namespace });
      return pod.status?.containerStatuses?.[0]?.ready || pod.status?.phase === "Running" ? true : undefined;
    },
    180_000,
  );
  // The client retries for a minute: the Service's endpoints and the DNS record come a moment after
  // the pod runs.
  const url = `http://${server}.${namespace}.svc.cluster.local/`;
  const client = "client";
  await core.createNamespacedPod({
    namespace,
    body: nodePod(
      client,
      here,
      `(async () => {
        let last;
        for (let i = 0; i < 60; i++) {
          try { console.log(await (await fetch(${JSON.stringify(url)})).text()); return; }
          catch (err) { last = err; await new Promise((r) => setTimeout(r, 1000)); }
        }
        console.error(String(last?.cause ?? last)); process.exit(1);
      })()`,
    ),
  });
  const { phase, log } = await finished(client);
  assert.equal(phase, "Succeeded", `client on ${here}: ${log}`);
  assert.equal(log.trim(), `hello from ${server}`);
  const pods = await core.listNamespacedPod({ namespace });
  const where: Record<string, string | undefined> = {};
  for (const p of pods.items) where[p.metadata?.name ?? ""] = p.spec?.nodeName;
  assert.deepEqual(where, { [server]: there, [client]: here });
});

test("a PersistentVolumeClaim of the default StorageClass binds and is written to", async () => {
  const claim = "data";
  await core.createNamespacedPersistentVolumeClaim({
    namespace,
    body: {
      metadata: { name: claim },
      spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "16Mi" } } },
    },
  });
  const writer = "writer";
  await core.createNamespacedPod({
    namespace,
    body: nodePod(
      writer,
      workers[0] ?? "",
      "require('node:fs').writeFileSync('/data/file', 'kept'); console.log(require('node:fs').readFileSync('/data/file', 'utf8'))",
      {
        containers: [{ name: writer, volumeMounts: [{ name: "data", mountPath: "/data" }] }],
        volumes: [{ name: "data", persistentVolumeClaim: { claimName: claim } }],
      },
    ),
  });
  const { phase, log } = await finished(writer);
  assert.equal(phase, "Succeeded", `writer: ${log}`);
  assert.equal(log.trim(), "kept");
  const pvc = await core.readNamespacedPersistentVolumeClaim({ name: claim, namespace });
  assert.equal(pvc.status?.phase, "Bound");
  assert.equal(pvc.spec?.storageClassName, "standard");
});
