// The test node agent on a real control plane (with kube-scheduler): it registers a Ready node that the
// scheduler uses, runs the pods bound to it as real processes, and reports them through the API as a
// kubelet would, so that the Job controller completes, retries and fails Jobs on what it reports.
// The scenarios run concurrently in one namespace.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import {
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

function terminated(pod: V1Pod, containerName?: string): V1ContainerStateTerminated | undefined {
  const statuses = pod.status?.containerStatuses ?? [];
  const status = containerName ? statuses.find((s) => s.name === containerName) : statuses[0];
  return status?.state?.terminated;
}

describe("test node agent on a real control plane", { concurrency: true }, () => {
  let cp: ControlPlane;
  let core: CoreV1Api;
  let batch: BatchV1Api;
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
    leases = kc.makeApiClient(CoordinationV1Api);
    const common = {
      kubeconfigPath: cp.kubeconfigPath,
      commands: { node: [process.execPath] },
      log,
    };
    agent = await startNodeAgent({
      ...common,
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
});
