// The test node agent on a real control plane (with kube-scheduler): it registers a Ready node that the
// scheduler uses, runs the pods bound to it as real processes, and reports them through the API as a
// kubelet would, so that the Job controller completes, retries and fails Jobs on what it reports.
// The scenarios run concurrently in one namespace.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  AppsV1Api,
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  type V1Container,
  type V1ContainerStateTerminated,
  type V1Job,
  type V1JobSpec,
  type V1Pod,
  type V1PodSpec,
} from "@kubernetes/client-node";
import { startControlPlane, type ControlPlane } from "./support/control-plane.js";
import { startNodeAgent, type NodeAgent } from "./support/node-agent.js";
import { eventually } from "./support/eventually.js";
import { isAlive } from "./support/processes.js";

const NS = `agent-${randomBytes(3).toString("hex")}`;
const CRASH_FIRST_LABEL = "node-agent-test/crash-first";
const POLL_SCHEDULER = "node-agent";
const POLL_TAINT = "node-agent-test/rss-poll";
const UNPULLABLE = "registry.invalid/media-service:missing";
// An "image" whose ENTRYPOINT the agent knows (options.entrypoints): containers give it only args.
// `serve --port=N [--state=DIR] [--ready-file=FILE]`: crashes (exit 3) on its first start when given a
// state dir, then serves HTTP, answering 503 while FILE is missing.
const APP_IMAGE = "registry.test/entrypoint-app:1";
const APP = `const fs = require("node:fs");
const args = process.argv.slice(1);
console.log("argv=" + JSON.stringify(args));
const opt = (name) => args.find((a) => a.startsWith("--" + name + "="))?.slice(name.length + 3);
if (args[0] !== "serve") process.exit(64);
const state = opt("state");
if (state && !fs.existsSync(state + "/crashed")) {
  fs.writeFileSync(state + "/crashed", "");
  console.error("first start: crashing");
  process.exit(3);
}
const readyFile = opt("ready-file");
require("node:http").createServer((req, res) => {
  const ok = !readyFile || fs.existsSync(readyFile);
  console.log("probe " + req.url + " " + (ok ? 200 : 503) + " " + req.headers["user-agent"]);
  res.writeHead(ok ? 200 : 503).end(ok ? "ok" : "not yet");
}).listen(Number(opt("port")), "127.0.0.1", () => console.log("listening"));`;
// Allocates 10 MB every 10 ms (and touches it) up to 300 MB, then idles: killed long before under a
// 64Mi limit, whether a cgroup or the RSS poller enforces it.
const ALLOCATE = `const a = []; const t = setInterval(() => { a.push(Buffer.alloc(10 << 20, 1));
  if (a.length === 30) { clearInterval(t); console.log("allocated 300 MB"); setTimeout(() => {}, 10000); } }, 10);`;

const agentLog: string[] = [];
const log = (m: string) => {
  agentLog.push(m);
  if (process.env.MEDIA_K8S_DEBUG) console.log(`# ${m}`);
};

function container(name: string, command: string[], extra: Partial<V1Container> = {}): V1Container {
  return { name, image: "media-service:test", command, ...extra };
}

function podSpec(containers: V1Container[], extra: Partial<V1PodSpec> = {}): V1PodSpec {
  return { restartPolicy: "Never", automountServiceAccountToken: false, containers, ...extra };
}

function job(name: string, spec: Omit<V1JobSpec, "template">, pod: V1PodSpec, labels = {}): V1Job {
  return {
    metadata: { name },
    spec: { backoffLimit: 0, ...spec, template: { metadata: { labels }, spec: pod } },
  };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((res) => server.listen(0, "127.0.0.1", res));
  const { port } = server.address() as AddressInfo;
  await new Promise((res) => server.close(res));
  return port;
}

const isPodReady = (p: V1Pod) =>
  Boolean(p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));

function terminated(pod: V1Pod, containerName?: string): V1ContainerStateTerminated | undefined {
  const statuses = pod.status?.containerStatuses ?? [];
  const status = containerName ? statuses.find((s) => s.name === containerName) : statuses[0];
  return status?.state?.terminated;
}

describe("test node agent on a real control plane", { concurrency: true }, () => {
  let cp: ControlPlane;
  let core: CoreV1Api;
  let batch: BatchV1Api;
  let apps: AppsV1Api;
  let leases: CoordinationV1Api;
  let agent: NodeAgent;
  let pollAgent: NodeAgent;
  const crashed = new Set<string>();

  before(async () => {
    cp = await startControlPlane({ scheduler: true, log: (m) => console.log(`# ${m}`) });
    const kc = new KubeConfig();
    kc.loadFromFile(cp.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
    batch = kc.makeApiClient(BatchV1Api);
    apps = kc.makeApiClient(AppsV1Api);
    leases = kc.makeApiClient(CoordinationV1Api);
    const common = {
      kubeconfigPath: cp.kubeconfigPath,
      commands: { node: [process.execPath] },
      log,
    };
    agent = await startNodeAgent({
      ...common,
      // entrypoint[0] ("node") goes through `commands` too.
      entrypoints: { [APP_IMAGE]: ["node", "-e", APP] },
      probePeriodMs: 200,
      pullFailure: /^registry\.invalid\//,
      beforeStart: (pod) => {
        const jobName = pod.metadata?.labels?.["batch.kubernetes.io/job-name"];
        if (!jobName || !pod.metadata?.labels?.[CRASH_FIRST_LABEL] || crashed.has(jobName)) return undefined;
        crashed.add(jobName);
        return { exitCode: 1, message: "injected fault" };
      },
    });
    // A second node whose agent binds pods itself and has no cgroups to use: its taint keeps
    // kube-scheduler's pods off it.
    pollAgent = await startNodeAgent({
      ...common,
      bind: true,
      schedulerName: POLL_SCHEDULER,
      memoryCgroups: false,
      taints: [{ key: POLL_TAINT, value: "true", effect: "NoSchedule" }],
    });
    await core.createNamespace({ body: { metadata: { name: NS } } });
    await core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: "creds" }, stringData: { token: "s3cr3t-token" } },
    });
    await core.createNamespacedConfigMap({
      namespace: NS,
      body: { metadata: { name: "settings" }, data: { mode: "fast" } },
    });
    // ServiceAccount admission rejects pods until the namespace's default ServiceAccount exists.
    await eventually("ServiceAccount default", () =>
      core.readNamespacedServiceAccount({ namespace: NS, name: "default" }),
    );
  });

  after(async () => {
    await agent?.stop();
    await pollAgent?.stop();
    await cp?.stop();
  });

  async function jobPods(name: string): Promise<V1Pod[]> {
    const pods = await core.listNamespacedPod({
      namespace: NS,
      labelSelector: `batch.kubernetes.io/job-name=${name}`,
    });
    return pods.items;
  }

  async function jobCondition(name: string, type: string, timeoutMs = 90_000) {
    return await eventually(
      `Job ${name} ${type}`,
      async () => {
        const j = await batch.readNamespacedJob({ namespace: NS, name });
        return j.status?.conditions?.find((c) => c.type === type && c.status === "True");
      },
      timeoutMs,
    );
  }

  async function podWhere(name: string, what: string, check: (p: V1Pod) => boolean): Promise<V1Pod> {
    return await eventually(`pod ${name}: ${what}`, async () => {
      const p = await core.readNamespacedPod({ namespace: NS, name });
      return check(p) ? p : undefined;
    });
  }

  async function onlyPod(jobName: string): Promise<V1Pod> {
    return await eventually(`the pod of Job ${jobName}`, async () => (await jobPods(jobName))[0]);
  }

  test("the node is Ready, without not-ready taint, and renews its Lease", async () => {
    const node = await core.readNode({ name: agent.nodeName });
    const ready = node.status?.conditions?.find((c) => c.type === "Ready");
    assert.equal(ready?.status, "True");
    assert.equal(node.status?.capacity?.cpu, "8");
    assert.equal(node.status?.allocatable?.memory, "32Gi");
    assert.match(node.status?.nodeInfo?.kubeletVersion ?? "", /^v1\.\d+\.\d+$/);
    assert.deepEqual(node.status?.addresses?.find((a) => a.type === "InternalIP")?.address, "127.0.0.1");

    const read = () => leases.readNamespacedLease({ namespace: "kube-node-lease", name: agent.nodeName });
    const first = await read();
    assert.equal(first.spec?.holderIdentity, agent.nodeName);
    const renewed = (l: typeof first) => new Date(l.spec!.renewTime as unknown as string).getTime();
    await eventually(
      "the Lease to be renewed",
      async () => {
        const l = await read();
        return renewed(l) > renewed(first) ? l : undefined;
      },
      30_000,
    );

    // The node lifecycle controller has had the node for 10 s+ and kept it schedulable and Ready.
    const later = await core.readNode({ name: agent.nodeName });
    assert.ok(
      !later.spec?.taints?.some((t) => t.key.startsWith("node.kubernetes.io/")),
      "no not-ready taint",
    );
    assert.equal(later.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
    const poll = await core.readNode({ name: pollAgent.nodeName });
    assert.deepEqual(
      poll.spec?.taints?.map((t) => t.key),
      [POLL_TAINT],
    );
  });

  test("the node lifecycle controller marks a silent node unreachable but keeps the agent's node Ready", async () => {
    // An agent stopped right after registering leaves its Node behind with no heartbeat. Its taint
    // keeps the other scenarios' pods (running concurrently) off it until the node controller's
    // own taint would: for up to 50 s the dead node still looks Ready to the scheduler.
    const silent = await startNodeAgent({
      kubeconfigPath: cp.kubeconfigPath,
      log,
      taints: [{ key: "media-service.io/silent-node", value: "true", effect: "NoSchedule" }],
    });
    await silent.stop();
    const unknown = await eventually(
      "the silent node to turn Ready=Unknown and be tainted unreachable",
      async () => {
        const n = await core.readNode({ name: silent.nodeName });
        const ready = n.status?.conditions?.find((c) => c.type === "Ready");
        const tainted = n.spec?.taints?.some((t) => t.key === "node.kubernetes.io/unreachable");
        return ready?.status === "Unknown" && tainted ? ready : undefined;
      },
      // node-monitor-grace-period is 50 s.
      120_000,
    );
    assert.equal(unknown.reason, "NodeStatusUnknown");

    const node = await core.readNode({ name: agent.nodeName });
    assert.equal(node.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
    assert.deepEqual(node.spec?.taints ?? [], []);
    await core.deleteNode({ name: silent.nodeName });
  });

  test("a Job's pod: env from a Secret, a ConfigMap and the pod, an emptyDir, the termination message", async () => {
    const name = "env-and-scratch";
    const script = [
      "set -e",
      'echo "hello from $POD_NAME" > "$SCRATCH_FILE"',
      'echo "to the log"',
      "printf 'secret=%s config=%s prefixed=%s pod=%s ns=%s node=%s ip=%s scratch=%s file=%s' " +
        '"$SECRET" "$MODE" "$CFG_mode" "$POD_NAME" "$POD_NAMESPACE" "$NODE_NAME" "$POD_IP" "$SCRATCH_DIR" "$(cat "$SCRATCH_FILE")" ' +
        '> "$TERMINATION_MESSAGE_PATH"',
    ].join("\n");
    const main = container("main", ["sh", "-c", script], {
      env: [
        { name: "SECRET", valueFrom: { secretKeyRef: { name: "creds", key: "token" } } },
        { name: "MODE", valueFrom: { configMapKeyRef: { name: "settings", key: "mode" } } },
        { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
        { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
        { name: "NODE_NAME", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
        { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
        { name: "SCRATCH_DIR", value: "/scratch" },
        { name: "SCRATCH_FILE", value: "$(SCRATCH_DIR)/out.txt" },
        { name: "TERMINATION_MESSAGE_PATH", value: "/dev/termination-log" },
      ],
      envFrom: [{ configMapRef: { name: "settings" }, prefix: "CFG_" }],
      volumeMounts: [{ name: "scratch", mountPath: "/scratch" }],
    });
    await batch.createNamespacedJob({
      namespace: NS,
      body: job(name, {}, podSpec([main], { volumes: [{ name: "scratch", emptyDir: {} }] })),
    });
    await jobCondition(name, "Complete");

    const pod = await onlyPod(name);
    const podName = pod.metadata!.name!;
    assert.equal(pod.spec?.nodeName, agent.nodeName, "kube-scheduler bound it to the agent's node");
    assert.equal(pod.status?.phase, "Succeeded");
    assert.equal(pod.status?.hostIP, "127.0.0.1");
    assert.ok(pod.status?.startTime instanceof Date);
    const t = terminated(pod);
    assert.equal(t?.exitCode, 0);
    assert.equal(t?.reason, "Completed");
    assert.ok(t?.startedAt && t.finishedAt && t.startedAt <= t.finishedAt);
    const fields = Object.fromEntries(
      (t?.message ?? "").split(" ").map((kv) => kv.split("=") as [string, string]),
    );
    assert.equal(fields.secret, "s3cr3t-token");
    assert.equal(fields.config, "fast");
    assert.equal(fields.prefixed, "fast", "envFrom with a prefix");
    assert.equal(fields.pod, podName);
    assert.equal(fields.ns, NS);
    assert.equal(fields.node, agent.nodeName);
    assert.equal(fields.ip, "127.0.0.1");
    assert.ok(
      fields.scratch?.startsWith(`${agent.dir}/`),
      `scratch rewritten to a host dir: ${fields.scratch}`,
    );
    assert.equal(t?.message?.split(" file=")[1], `hello from ${podName}`);
    assert.match(await agent.logs(podName), /^to the log$/m);

    const condition = (type: string) => pod.status?.conditions?.find((c) => c.type === type);
    assert.equal(condition("PodScheduled")?.status, "True");
    assert.equal(condition("Initialized")?.status, "True");
    assert.equal(condition("Ready")?.status, "False");
    assert.equal(condition("Ready")?.reason, "PodCompleted");
  });

  test("a container exits 3: pod Failed, reason Error, FallbackToLogsOnError takes the message from the log", async () => {
    const name = "exit-3";
    const failing = container(
      "fails",
      ["sh", "-c", 'echo "working"; echo "boom: input is broken" >&2; exit 3'],
      {
        terminationMessagePolicy: "FallbackToLogsOnError",
      },
    );
    const sidecar = container("succeeds", ["sh", "-c", "exit 0"]);
    await batch.createNamespacedJob({ namespace: NS, body: job(name, {}, podSpec([failing, sidecar])) });
    const failed = await jobCondition(name, "Failed");
    assert.equal(failed.reason, "BackoffLimitExceeded");

    const pod = await onlyPod(name);
    assert.equal(pod.status?.phase, "Failed");
    const t = terminated(pod, "fails");
    assert.equal(t?.exitCode, 3);
    assert.equal(t?.reason, "Error");
    assert.match(t?.message ?? "", /working\nboom: input is broken/);
    assert.equal(terminated(pod, "succeeds")?.exitCode, 0);
    assert.equal(terminated(pod, "succeeds")?.reason, "Completed");
  });

  test("a memory limit is enforced by a memory cgroup: OOMKilled, exit 137", async () => {
    const name = "oom-cgroup";
    const hog = container("hog", ["node", "-e", ALLOCATE], {
      resources: { requests: { memory: "64Mi" }, limits: { memory: "64Mi" } },
    });
    await batch.createNamespacedJob({ namespace: NS, body: job(name, {}, podSpec([hog])) });
    await jobCondition(name, "Failed");
    const pod = await onlyPod(name);
    assert.equal(pod.status?.phase, "Failed");
    const t = terminated(pod);
    assert.equal(t?.reason, "OOMKilled");
    assert.equal(t?.exitCode, 137);
    assert.doesNotMatch(await agent.logs(pod.metadata!.name!), /allocated 300 MB/);
  });

  test("without a memory cgroup the RSS poller enforces the limit; bind: true binds the pod itself", async () => {
    const name = "oom-poll";
    const hog = container("hog", ["node", "-e", ALLOCATE], {
      resources: { requests: { memory: "64Mi" }, limits: { memory: "64Mi" } },
    });
    await core.createNamespacedPod({
      namespace: NS,
      body: { metadata: { name }, spec: podSpec([hog], { schedulerName: POLL_SCHEDULER }) },
    });
    const pod = await podWhere(name, "Failed", (p) => p.status?.phase === "Failed");
    assert.equal(pod.spec?.nodeName, pollAgent.nodeName);
    assert.equal(pod.status?.conditions?.find((c) => c.type === "PodScheduled")?.status, "True");
    const t = terminated(pod);
    assert.equal(t?.reason, "OOMKilled");
    assert.equal(t?.exitCode, 137);
  });

  test("activeDeadlineSeconds: the Job controller deletes the pod, the agent kills its processes", async () => {
    const name = "deadline";
    const sleeper = container("main", ["sh", "-c", 'sleep 120 & echo "child=$!"; wait']);
    await batch.createNamespacedJob({
      namespace: NS,
      body: job(name, { activeDeadlineSeconds: 3 }, podSpec([sleeper])),
    });
    const podName = (await onlyPod(name)).metadata!.name!;
    const [pid] = await eventually("the process", async () => {
      const pids = agent.pids(podName);
      return pids.length > 0 ? pids : undefined;
    });
    const child = await eventually("the sleep's pid in the log", async () => {
      const m = /child=(\d+)/.exec(await agent.logs(podName));
      return m ? Number(m[1]) : undefined;
    });

    const failed = await jobCondition(name, "Failed");
    assert.equal(failed.reason, "DeadlineExceeded");
    await eventually("the pod to be deleted", async () =>
      (await jobPods(name)).length === 0 ? true : undefined,
    );
    assert.equal(isAlive(pid!), false, "the container's process is gone");
    assert.equal(isAlive(child), false, "its child is gone too");
    assert.deepEqual(agent.pids(podName), []);
  });

  test("podFailurePolicy FailJob on exit code 2: the Job fails at once, with one pod", async () => {
    const name = "permanent";
    await batch.createNamespacedJob({
      namespace: NS,
      body: job(
        name,
        {
          backoffLimit: 3,
          podFailurePolicy: {
            rules: [
              { action: "FailJob", onExitCodes: { containerName: "main", operator: "In", values: [2] } },
            ],
          },
        },
        podSpec([container("main", ["sh", "-c", "exit 2"])]),
      ),
    });
    const failed = await jobCondition(name, "Failed");
    assert.equal(failed.reason, "PodFailurePolicy");
    const pods = await jobPods(name);
    assert.equal(pods.length, 1);
    assert.equal(terminated(pods[0]!)?.exitCode, 2);
    const j = await batch.readNamespacedJob({ namespace: NS, name });
    assert.equal(j.status?.failed, 1);
  });

  test("a missing Secret: CreateContainerConfigError until it exists, then the container runs", async () => {
    const name = "late-secret";
    const main = container("main", ["sh", "-c", 'printf %s "$TOKEN" > "$MESSAGE_FILE"'], {
      env: [
        { name: "TOKEN", valueFrom: { secretKeyRef: { name: "late", key: "token" } } },
        { name: "MESSAGE_FILE", value: "/dev/termination-log" },
      ],
    });
    await core.createNamespacedPod({ namespace: NS, body: { metadata: { name }, spec: podSpec([main]) } });
    const waiting = await podWhere(
      name,
      "CreateContainerConfigError",
      (p) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason === "CreateContainerConfigError",
    );
    assert.equal(waiting.status?.containerStatuses?.[0]?.state?.waiting?.message, 'secret "late" not found');
    assert.equal(waiting.status?.phase, "Pending");
    assert.ok(!agent.running().includes(`${NS}/${name}`));

    await core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: "late" }, stringData: { token: "finally" } },
    });
    const done = await podWhere(name, "Succeeded", (p) => p.status?.phase === "Succeeded");
    assert.equal(terminated(done)?.message, "finally");
  });

  test("an image that does not pull: ImagePullBackOff; deleting the pod never starts it", async () => {
    const name = "no-image";
    const main = container("main", ["sh", "-c", "exit 0"], { image: UNPULLABLE });
    await core.createNamespacedPod({ namespace: NS, body: { metadata: { name }, spec: podSpec([main]) } });
    const pod = await podWhere(
      name,
      "ImagePullBackOff",
      (p) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason === "ImagePullBackOff",
    );
    assert.equal(pod.status?.phase, "Pending");
    assert.match(pod.status?.containerStatuses?.[0]?.state?.waiting?.message ?? "", /registry\.invalid/);
    assert.equal(pod.status?.containerStatuses?.[0]?.ready, false);

    await core.deleteNamespacedPod({ namespace: NS, name });
    await eventually("the pod to be deleted", async () => {
      const pods = await core.listNamespacedPod({ namespace: NS, fieldSelector: `metadata.name=${name}` });
      return pods.items.length === 0 ? true : undefined;
    });
    assert.deepEqual(agent.pids(name), []);
  });

  test("beforeStart crashes the first attempt with exit 1: the Job retries and completes with 2 pods", async () => {
    const name = "flaky";
    await batch.createNamespacedJob({
      namespace: NS,
      body: job(name, { backoffLimit: 2 }, podSpec([container("main", ["sh", "-c", "exit 0"])]), {
        [CRASH_FIRST_LABEL]: "true",
      }),
    });
    await jobCondition(name, "Complete");
    const pods = await jobPods(name);
    assert.equal(pods.length, 2);
    const byPhase = (phase: string) => pods.filter((p) => p.status?.phase === phase);
    assert.equal(byPhase("Failed").length, 1);
    assert.equal(byPhase("Succeeded").length, 1);
    const crash = terminated(byPhase("Failed")[0]!);
    assert.equal(crash?.exitCode, 1);
    assert.equal(crash?.reason, "Error");
    assert.equal(crash?.message, "injected fault");
    const j = await batch.readNamespacedJob({ namespace: NS, name });
    assert.equal(j.status?.failed, 1);
    assert.equal(j.status?.succeeded, 1);
  });

  test("evict(): pod Failed, Evicted, DisruptionTarget; the Job ignores it and a Background delete kills the replacement", async () => {
    const name = "evicted";
    await batch.createNamespacedJob({
      namespace: NS,
      body: job(
        name,
        {
          podFailurePolicy: {
            rules: [{ action: "Ignore", onPodConditions: [{ type: "DisruptionTarget", status: "True" }] }],
          },
        },
        podSpec([container("main", ["sleep", "120"])]),
      ),
    });
    const first = (await onlyPod(name)).metadata!.name!;
    const running = await podWhere(first, "Ready", (p) =>
      Boolean(p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")),
    );
    assert.equal(running.status?.phase, "Running");
    assert.ok(running.status?.containerStatuses?.[0]?.state?.running?.startedAt instanceof Date);
    assert.equal(running.status?.containerStatuses?.[0]?.ready, true);
    const [pid] = agent.pids(first);
    assert.ok(pid, "the pod has a process");

    await agent.evict(first);
    const evicted = await core.readNamespacedPod({ namespace: NS, name: first });
    assert.equal(evicted.status?.phase, "Failed");
    assert.equal(evicted.status?.reason, "Evicted");
    assert.match(evicted.status?.message ?? "", /low on resource/);
    const disruption = evicted.status?.conditions?.find((c) => c.type === "DisruptionTarget");
    assert.equal(disruption?.status, "True");
    assert.equal(disruption?.reason, "TerminationByKubelet");
    assert.equal(isAlive(pid), false);

    // Ignored by the pod failure policy: a replacement, and no failure counted.
    const second = await eventually("a replacement pod", async () => {
      const pods = await jobPods(name);
      return pods.find((p) => p.metadata?.name !== first && p.status?.phase === "Running");
    });
    const secondName = second.metadata!.name!;
    const [secondPid] = await eventually("the replacement's process", async () => {
      const pids = agent.pids(secondName);
      return pids.length > 0 ? pids : undefined;
    });
    assert.equal((await batch.readNamespacedJob({ namespace: NS, name })).status?.failed ?? 0, 0);

    await batch.deleteNamespacedJob({ namespace: NS, name, propagationPolicy: "Background" });
    await eventually("the Job's pods to be deleted", async () =>
      (await jobPods(name)).length === 0 ? true : undefined,
    );
    assert.equal(isAlive(secondPid!), false);
  });

  test("a Deployment with args only runs through the image's entrypoint, is restarted after a crash and turns Available", async () => {
    const name = "entry-app";
    const port = await freePort();
    const labels = { app: name };
    const app: V1Container = {
      name: "app",
      image: APP_IMAGE,
      args: ["serve", "--port=$(PORT)", "--state=/state"],
      env: [{ name: "PORT", value: String(port) }],
      ports: [{ name: "http", containerPort: port }],
      readinessProbe: { httpGet: { path: "/healthz", port: "http" }, periodSeconds: 1 },
      volumeMounts: [{ name: "state", mountPath: "/state" }],
    };
    // restartPolicy Always (the only one a Deployment allows), and the default ServiceAccount token
    // volume (kube-api-access-…) that the ServiceAccount admission plugin adds.
    await apps.createNamespacedDeployment({
      namespace: NS,
      body: {
        metadata: { name },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: { containers: [app], volumes: [{ name: "state", emptyDir: {} }] },
          },
        },
      },
    });
    const available = await eventually("the Deployment to be Available", async () => {
      const d = await apps.readNamespacedDeployment({ namespace: NS, name });
      const condition = d.status?.conditions?.find((c) => c.type === "Available" && c.status === "True");
      return condition && d.status?.readyReplicas === 1 ? d : undefined;
    });
    assert.equal(available.status?.availableReplicas, 1);

    const pods = await core.listNamespacedPod({ namespace: NS, labelSelector: `app=${name}` });
    assert.equal(pods.items.length, 1);
    const pod = pods.items[0]!;
    const podName = pod.metadata!.name!;
    assert.equal(pod.spec?.restartPolicy, "Always");
    assert.equal(pod.spec?.nodeName, agent.nodeName);
    assert.equal(pod.status?.phase, "Running");
    const status = pod.status?.containerStatuses?.[0];
    assert.equal(status?.ready, true);
    assert.ok(status?.state?.running, "running again");
    assert.equal(status?.restartCount, 1);
    assert.equal(status?.lastState?.terminated?.exitCode, 3);
    assert.equal(status?.lastState?.terminated?.reason, "Error");

    // entrypoint + args, $(VAR) expanded, the --flag=<path> under a mount rewritten to the emptyDir.
    const log = await agent.logs(podName);
    const argvs = [...log.matchAll(/^argv=(.*)$/gm)].map((m) => JSON.parse(m[1]!) as string[]);
    assert.equal(argvs.length, 2, "started twice");
    const [serve, portArg, stateArg] = argvs[1]!;
    assert.equal(serve, "serve");
    assert.equal(portArg, `--port=${port}`);
    assert.ok(stateArg?.startsWith(`--state=${agent.dir}/`), `state dir rewritten: ${stateArg}`);
    assert.match(log, /^first start: crashing$/m);
    assert.match(log, /^probe \/healthz 200 kube-probe\/\d+\.\d+$/m);

    // The ServiceAccount volume's files: a token bound to the pod, the cluster CA, the namespace.
    const saVolume = pod.spec?.volumes?.find((v) => v.name.startsWith("kube-api-access-"));
    assert.ok(saVolume?.projected, "the ServiceAccount admission plugin added its projected volume");
    const saDir = join(agent.dir, "pods", pod.metadata!.uid!, "volumes", saVolume.name);
    const token = await readFile(join(saDir, "token"), "utf8");
    const claims = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()) as {
      sub: string;
      "kubernetes.io": { pod: { name: string } };
    };
    assert.equal(claims.sub, `system:serviceaccount:${NS}:default`);
    assert.equal(claims["kubernetes.io"].pod.name, podName);
    assert.match(await readFile(join(saDir, "ca.crt"), "utf8"), /^-----BEGIN CERTIFICATE-----/);
    assert.equal(await readFile(join(saDir, "namespace"), "utf8"), NS);

    const [pid] = agent.pids(podName);
    assert.ok(pid);
    await apps.deleteNamespacedDeployment({ namespace: NS, name, propagationPolicy: "Foreground" });
    await eventually("the Deployment's pod to be deleted", async () => {
      const left = await core.listNamespacedPod({ namespace: NS, labelSelector: `app=${name}` });
      return left.items.length === 0 ? true : undefined;
    });
    assert.equal(isAlive(pid), false);
  });

  test("no command and an image without a known entrypoint: StartError", async () => {
    const name = "no-entrypoint";
    const main: V1Container = { name: "main", image: "registry.test/unknown:1", args: ["serve"] };
    await core.createNamespacedPod({ namespace: NS, body: { metadata: { name }, spec: podSpec([main]) } });
    const pod = await podWhere(name, "Failed", (p) => p.status?.phase === "Failed");
    const t = terminated(pod);
    assert.equal(t?.reason, "StartError");
    assert.equal(t?.exitCode, 128);
    assert.match(t?.message ?? "", /no command and image "registry\.test\/unknown:1" has no entrypoint/);
  });

  test("configMap, secret (subPath), projected and optional volumes are files the process reads; a missing ConfigMap holds it in ContainerCreating", async () => {
    const name = "volumes";
    await core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: "app-secret" }, stringData: { token: "t0k3n", other: "o" } },
    });
    const script = `const fs = require("node:fs");
const e = process.env;
const tokenParts = fs.readFileSync(e.PROJECTED + "/token", "utf8").split(".");
const out = {
  files: fs.readdirSync(e.CONFIG_DIR).sort(),
  config: fs.readFileSync(e.CONFIG_DIR + "/config.yaml", "utf8"),
  blob: [...fs.readFileSync(e.CONFIG_DIR + "/blob.bin")],
  secret: fs.readFileSync(process.argv[1], "utf8"),
  secretMode: (fs.statSync(process.argv[1]).mode & 0o777).toString(8),
  picked: fs.readFileSync(e.PICKED, "utf8"),
  extra: fs.readFileSync(e.PROJECTED + "/extra", "utf8"),
  other: fs.readFileSync(e.PROJECTED + "/sec/other", "utf8"),
  labels: fs.readFileSync(e.PROJECTED + "/labels", "utf8"),
  tokenSub: JSON.parse(Buffer.from(tokenParts[1], "base64url").toString()).sub,
  absent: fs.readdirSync(e.ABSENT),
};
fs.writeFileSync(e.TERMINATION_MESSAGE_PATH, JSON.stringify(out));`;
    const main = container("main", ["node", "-e", script, "/etc/app-secret/token"], {
      env: [
        { name: "CONFIG_DIR", value: "/etc/app" },
        { name: "PICKED", value: "/etc/picked/nested/settings.yaml" },
        { name: "PROJECTED", value: "/var/run/projected" },
        { name: "ABSENT", value: "/etc/absent" },
        { name: "TERMINATION_MESSAGE_PATH", value: "/dev/termination-log" },
      ],
      volumeMounts: [
        { name: "config", mountPath: "/etc/app", readOnly: true },
        { name: "secret", mountPath: "/etc/app-secret/token", subPath: "token", readOnly: true },
        { name: "picked", mountPath: "/etc/picked" },
        { name: "projected", mountPath: "/var/run/projected" },
        { name: "absent", mountPath: "/etc/absent" },
      ],
    });
    const volumes = [
      { name: "config", configMap: { name: "app-files" } },
      { name: "secret", secret: { secretName: "app-secret", defaultMode: 0o400 } },
      {
        name: "picked",
        configMap: { name: "app-files", items: [{ key: "config.yaml", path: "nested/settings.yaml" }] },
      },
      {
        name: "projected",
        projected: {
          sources: [
            { configMap: { name: "app-files", items: [{ key: "extra.txt", path: "extra" }] } },
            { secret: { name: "app-secret", items: [{ key: "other", path: "sec/other" }] } },
            { downwardAPI: { items: [{ path: "labels", fieldRef: { fieldPath: "metadata.labels" } }] } },
            { serviceAccountToken: { path: "token", expirationSeconds: 600 } },
          ],
        },
      },
      { name: "absent", configMap: { name: "absent", optional: true } },
    ];
    await core.createNamespacedPod({
      namespace: NS,
      body: { metadata: { name, labels: { tier: "files" } }, spec: podSpec([main], { volumes }) },
    });
    const waiting = await podWhere(
      name,
      "waiting for its ConfigMap",
      (p) => p.status?.containerStatuses?.[0]?.state?.waiting?.message !== undefined,
    );
    assert.equal(waiting.status?.phase, "Pending");
    assert.equal(waiting.status?.containerStatuses?.[0]?.state?.waiting?.reason, "ContainerCreating");
    assert.equal(
      waiting.status?.containerStatuses?.[0]?.state?.waiting?.message,
      'MountVolume.SetUp failed for volume "config" : configmap "app-files" not found',
    );
    assert.ok(!agent.running().includes(`${NS}/${name}`));

    await core.createNamespacedConfigMap({
      namespace: NS,
      body: {
        metadata: { name: "app-files" },
        data: { "config.yaml": "mode: fast\n", "extra.txt": "extra" },
        binaryData: { "blob.bin": Buffer.from([0, 1, 2, 255]).toString("base64") },
      },
    });
    const done = await podWhere(name, "Succeeded", (p) => p.status?.phase === "Succeeded");
    const out = JSON.parse(terminated(done)?.message ?? "{}") as Record<string, unknown>;
    assert.deepEqual(out, {
      files: ["blob.bin", "config.yaml", "extra.txt"],
      config: "mode: fast\n",
      blob: [0, 1, 2, 255],
      secret: "t0k3n",
      secretMode: "400",
      picked: "mode: fast\n",
      extra: "extra",
      other: "o",
      labels: 'tier="files"',
      tokenSub: `system:serviceaccount:${NS}:default`,
      absent: [],
    });
  });

  test("a readinessProbe: Ready only once the HTTP server answers 2xx, not Ready again when it stops", async () => {
    const name = "probed";
    const port = await freePort();
    const signals = await mkdtemp(join(tmpdir(), "node-agent-test-signals-"));
    try {
      const app: V1Container = {
        name: "app",
        image: APP_IMAGE,
        args: ["serve", `--port=${port}`, "--ready-file=/signals/ready"],
        readinessProbe: { httpGet: { path: "/ready", port }, periodSeconds: 1, failureThreshold: 1 },
        volumeMounts: [{ name: "signals", mountPath: "/signals" }],
      };
      const volumes = [{ name: "signals", hostPath: { path: signals } }];
      await core.createNamespacedPod({
        namespace: NS,
        body: { metadata: { name }, spec: podSpec([app], { volumes }) },
      });
      await eventually("the server to answer a probe with 503", async () =>
        /^probe \/ready 503 /m.test(await agent.logs(name)) ? true : undefined,
      );
      const unready = await podWhere(name, "Running", (p) => p.status?.phase === "Running");
      assert.equal(isPodReady(unready), false);
      const ready = unready.status?.conditions?.find((c) => c.type === "Ready");
      assert.equal(ready?.reason, "ContainersNotReady");
      assert.equal(ready?.message, "containers with unready status: [app]");
      assert.equal(unready.status?.containerStatuses?.[0]?.ready, false);
      assert.ok(unready.status?.containerStatuses?.[0]?.state?.running);

      await writeFile(join(signals, "ready"), "");
      const readyPod = await podWhere(name, "Ready", isPodReady);
      assert.equal(readyPod.status?.containerStatuses?.[0]?.ready, true);
      assert.equal(readyPod.status?.conditions?.find((c) => c.type === "ContainersReady")?.status, "True");

      await rm(join(signals, "ready"));
      const again = await podWhere(name, "not Ready again", (p) => !isPodReady(p));
      assert.equal(again.status?.phase, "Running");
      assert.equal(again.status?.containerStatuses?.[0]?.ready, false);
      assert.match(await agent.logs(name), /^probe \/ready 200 /m);

      await core.deleteNamespacedPod({ namespace: NS, name });
      await eventually("the pod to be deleted", async () => {
        const pods = await core.listNamespacedPod({ namespace: NS, fieldSelector: `metadata.name=${name}` });
        return pods.items.length === 0 ? true : undefined;
      });
    } finally {
      await rm(signals, { recursive: true, force: true });
    }
  });
});
