// The real test node on its own: kubelet and kube-proxy of the control plane's version over
// containerd 2, pods as containers of the project's image with their own network namespace, cluster
// DNS (CoreDNS), Service routing (kube-proxy), the image's non-root user, cgroup limits the kernel
// enforces, a pull that fails, and a deadline. What every other Kubernetes test stands on.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { AppsV1Api, BatchV1Api, CoreV1Api, VersionApi, type V1Pod } from "@kubernetes/client-node";
import { startTestCluster, type TestCluster } from "./support/cluster.js";
import { eventually, kubeConfigFrom } from "./support/cluster-stack.js";
import { CLUSTER_DNS_IP, POD_CIDR } from "./support/network.js";

let cluster: TestCluster;
let core: CoreV1Api;
let batch: BatchV1Api;
let apps: AppsV1Api;
const namespace = `node-${randomBytes(3).toString("hex")}`;

before(async () => {
  cluster = await startTestCluster();
  const kc = kubeConfigFrom(cluster.cp.kubeconfigPath);
  core = kc.makeApiClient(CoreV1Api);
  batch = kc.makeApiClient(BatchV1Api);
  apps = kc.makeApiClient(AppsV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
});

after(async () => {
  await cluster?.stop();
});

const inPodCidr = (ip: string) => ip.startsWith(POD_CIDR.split(".").slice(0, 3).join(".") + ".");

/** What the namespace's pods look like and what the kubelet said last: the message of a failed wait. */
async function podsAndKubelet(): Promise<string> {
  const pods = await core.listNamespacedPod({ namespace }).catch(() => ({ items: [] as V1Pod[] }));
  const lines = pods.items.map(
    (p) =>
      `${p.metadata?.name}: ${p.status?.phase} ${JSON.stringify(p.status?.containerStatuses?.map((c) => c.state))}`,
  );
  return `${lines.join("\n")}\n--- kubelet ---\n${await cluster.node.logTail("kubelet", 30)}`;
}

/** A pod of the Job, once it has ended (Succeeded or Failed). */
async function endedPod(job: string, limitMs = 120_000): Promise<V1Pod> {
  return await eventually(
    `a pod of Job ${job} to end`,
    async () => {
      const pods = await core.listNamespacedPod({
        namespace,
        labelSelector: `batch.kubernetes.io/job-name=${job}`,
      });
      return pods.items.find((p) => p.status?.phase === "Succeeded" || p.status?.phase === "Failed");
    },
    limitMs,
    podsAndKubelet,
  );
}

/** A one-pod Job of the project's image running `node -e script` as the image's user. */
async function nodeJob(
  name: string,
  script: string,
  extra: { memory?: string; cpu?: string; activeDeadlineSeconds?: number } = {},
): Promise<void> {
  await batch.createNamespacedJob({
    namespace,
    body: {
      metadata: { name },
      spec: {
        backoffLimit: 0,
        ...(extra.activeDeadlineSeconds ? { activeDeadlineSeconds: extra.activeDeadlineSeconds } : {}),
        template: {
          spec: {
            restartPolicy: "Never",
            automountServiceAccountToken: false,
            terminationGracePeriodSeconds: 1,
            securityContext: { runAsNonRoot: true },
            containers: [
              {
                name: "main",
                image: cluster.image,
                imagePullPolicy: "Never",
                command: ["node", "-e", script],
                resources: {
                  requests: { cpu: "100m", memory: "64Mi" },
                  limits: { cpu: extra.cpu ?? "500m", memory: extra.memory ?? "256Mi" },
                },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ["ALL"] },
                },
                terminationMessagePolicy: "FallbackToLogsOnError",
              },
            ],
          },
        },
      },
    },
  });
}

describe("the real node", () => {
  test("is Ready with containerd 2 and the control plane's kubelet version; CoreDNS serves kube-dns", async () => {
    const node = await core.readNode({ name: cluster.node.name });
    const info = node.status!.nodeInfo!;
    assert.match(info.containerRuntimeVersion, /^containerd:\/\/2\./);
    const server = await kubeConfigFrom(cluster.cp.kubeconfigPath).makeApiClient(VersionApi).getCode();
    assert.equal(info.kubeletVersion, server.gitVersion, "the kubelet of the control plane's release");
    assert.equal(node.status!.addresses!.find((a) => a.type === "InternalIP")!.address, cluster.node.ip);
    const dns = await core.readNamespacedService({ name: "kube-dns", namespace: "kube-system" });
    assert.equal(dns.spec!.clusterIP, CLUSTER_DNS_IP);
    const coredns = await apps.readNamespacedDeployment({ name: "coredns", namespace: "kube-system" });
    assert.equal(coredns.status!.availableReplicas, 1);
  });

  test("a pod is a container of the image: own address, cluster DNS, a Service, the image's user, a read-only root, cgroup limits", async () => {
    // A server Deployment behind a Service, and a client Job that finds it by name.
    const labels = { app: "echo" };
    await apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: "echo" },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              containers: [
                {
                  name: "echo",
                  image: cluster.image,
                  imagePullPolicy: "Never",
                  command: [
                    "node",
                    "-e",
                    "require('http').createServer((q, r) => r.end(JSON.stringify({ from: require('os').hostname() }))).listen(8080)",
                  ],
                  ports: [{ containerPort: 8080, name: "http" }],
                  readinessProbe: { tcpSocket: { port: "http" }, periodSeconds: 1 },
                },
              ],
            },
          },
        },
      },
    });
    await core.createNamespacedService({
      namespace,
      body: {
        metadata: { name: "echo" },
        spec: { selector: labels, ports: [{ port: 80, targetPort: "http" }] },
      },
    });
    await eventually(
      "echo to be available",
      async () => {
        const d = await apps.readNamespacedDeployment({ name: "echo", namespace });
        return (d.status?.availableReplicas ?? 0) >= 1 || undefined;
      },
      120_000,
      podsAndKubelet,
    );
    const script = `
      const fs = require("fs");
      (async () => {
        const out = { uid: process.getuid(), gid: process.getgid() };
        out.resolved = (await require("dns").promises.lookup("echo.${namespace}.svc.cluster.local")).address;
        out.short = (await require("dns").promises.lookup("echo")).address;
        // kube-proxy programs a new endpoint within a sync period: retry as a client would.
        for (let i = 0; ; i++) {
          try { out.answer = await (await fetch("http://echo/")).json(); break; }
          catch (e) { if (i === 40) throw e; await new Promise((r) => setTimeout(r, 250)); }
        }
        try { fs.writeFileSync("/probe", "x"); out.write = "written"; } catch (e) { out.write = e.code; }
        const read = (p) => { try { return fs.readFileSync(p, "utf8").trim(); } catch { return null; } };
        out.cpuQuota = read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") ?? read("/sys/fs/cgroup/cpu.max");
        out.memoryLimit = read("/sys/fs/cgroup/memory/memory.limit_in_bytes") ?? read("/sys/fs/cgroup/memory.max");
        out.ip = Object.values(require("os").networkInterfaces()).flat().find((a) => a.family === "IPv4" && !a.internal)?.address;
        fs.writeFileSync("/dev/termination-log", JSON.stringify(out));
      })().catch((e) => { console.error(e); process.exit(1); });`;
    await nodeJob("client", script, { cpu: "500m", memory: "200Mi" });
    const pod = await endedPod("client");
    const status = pod.status!.containerStatuses![0]!;
    assert.equal(pod.status!.phase, "Succeeded", status.state?.terminated?.message);
    assert.match(status.containerID!, /^containerd:\/\//);
    const out = JSON.parse(status.state!.terminated!.message!) as Record<string, unknown>;
    assert.equal(out.uid, 10001, "the image's user");
    assert.equal(out.gid, 10001);
    assert.equal(out.write, "EROFS", "the root filesystem is read-only");
    const service = await core.readNamespacedService({ name: "echo", namespace });
    assert.equal(out.resolved, service.spec!.clusterIP, "the Service's name resolves to its ClusterIP");
    assert.equal(out.short, service.spec!.clusterIP, "the namespace's search path");
    const [echoPod] = (await core.listNamespacedPod({ namespace, labelSelector: "app=echo" })).items;
    assert.deepEqual(out.answer, { from: echoPod!.metadata!.name }, "routed to the Deployment's pod");
    assert.ok(inPodCidr(String(out.ip)), `a pod address (${String(out.ip)})`);
    assert.ok(inPodCidr(echoPod!.status!.podIP!));
    // 500m of a 100 ms CFS period, 200Mi: the kernel's own limits on the container.
    assert.match(String(out.cpuQuota), /^50000\b/);
    assert.equal(Number(out.memoryLimit), 200 * 1024 * 1024);
    // The API server reaches the kubelet for logs.
    const echoLog = await core.readNamespacedPodLog({ name: echoPod!.metadata!.name!, namespace });
    assert.equal(typeof echoLog, "string");
  });

  test("a container past its memory limit is OOM-killed by the kernel", async () => {
    await nodeJob("hog", "const a = []; for (;;) { a.push(Buffer.alloc(16 << 20, 1)); }", { memory: "64Mi" });
    const pod = await endedPod("hog");
    const terminated = pod.status!.containerStatuses![0]!.state!.terminated!;
    assert.equal(pod.status!.phase, "Failed");
    assert.equal(terminated.reason, "OOMKilled");
    assert.equal(terminated.exitCode, 137);
  });

  test("a Job past activeDeadlineSeconds fails and its container is gone from the node", async () => {
    await nodeJob("sleeper", "setTimeout(() => {}, 600_000)", { activeDeadlineSeconds: 3 });
    await eventually("the Job to fail with DeadlineExceeded", async () => {
      const j = await batch.readNamespacedJob({ name: "sleeper", namespace });
      return j.status?.conditions?.find(
        (c) => c.type === "Failed" && c.status === "True" && c.reason === "DeadlineExceeded",
      );
    });
    await eventually("no container of the Job left on the node", async () =>
      (await cluster.node.runningPods()).some((p) => p.startsWith(`${namespace}/sleeper-`))
        ? undefined
        : true,
    );
  });

  test("an image that cannot be pulled leaves the pod waiting with ErrImagePull or ImagePullBackOff", async () => {
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: "nopull" },
        spec: {
          restartPolicy: "Never",
          containers: [
            { name: "main", image: "media-service:tag-that-does-not-exist", imagePullPolicy: "IfNotPresent" },
          ],
        },
      },
    });
    const waiting = await eventually("the pull to fail", async () => {
      const pod = await core.readNamespacedPod({ name: "nopull", namespace });
      const w = pod.status?.containerStatuses?.[0]?.state?.waiting;
      return w && /ErrImagePull|ImagePullBackOff/.test(w.reason ?? "") ? w : undefined;
    });
    assert.match(waiting.message ?? "", /media-service:tag-that-does-not-exist/);
    const pod = await core.readNamespacedPod({ name: "nopull", namespace });
    assert.equal(pod.status!.phase, "Pending");
  });
});
