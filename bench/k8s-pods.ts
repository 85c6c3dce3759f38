// Part pods of the Kubernetes benchmark (bench/k8s.ts): pod start latency on the real node.
import { randomBytes } from "node:crypto";
import { CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import type { TestCluster } from "../test/k8s/support/cluster.js";
import { kubeConfigFrom } from "../test/k8s/support/cluster-stack.js";
import { containerStarted, removeNamespace, watchPods } from "./k8s-cluster.js";
import { knob, load, log, ms, step, summarize, waitUntil, type Row, type Summary } from "./k8s-common.js";

const SLO_P99_MS = 5000;

export interface PodsResult {
  pods: number;
  wave: number;
  started: Summary;
  bound: Summary;
  missing: number;
  loadAfter: string;
}

export async function podStartLatency(cluster: TestCluster): Promise<PodsResult> {
  const total = knob("BENCH_K8S_PODS", 60);
  const wave = knob("BENCH_K8S_POD_WAVE", 10);
  const warmup = knob("BENCH_K8S_POD_WARMUP", 2, 0);
  const kc = kubeConfigFrom(cluster.cp.kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const namespace = `bench-pods-${randomBytes(3).toString("hex")}`;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const startedAt = new Map<string, number>();
  const boundAt = new Map<string, number>();
  const deleted = new Set<string>();
  /** A container that cannot start (no image, bad config): the wave stops waiting at once. */
  const problems = new Map<string, string>();
  let watcher: { stop(): Promise<void> } | undefined;
  try {
    // Pods are admitted only once the namespace's default ServiceAccount exists.
    const sa = await waitUntil(
      () => core.readNamespacedServiceAccount({ name: "default", namespace }).catch(() => undefined),
      30_000,
      100,
    );
    if (!sa) throw new Error(`namespace ${namespace} got no default ServiceAccount within 30 s`);
    watcher = await watchPods(kc, namespace, (event, name, pod) => {
      const now = performance.now();
      if (event === "DELETED") deleted.add(name);
      if (pod.spec?.nodeName && !boundAt.has(name)) boundAt.set(name, now);
      if (containerStarted(pod) && !startedAt.has(name)) startedAt.set(name, now);
      const waiting = pod.status?.containerStatuses?.find((s) => s.state?.waiting)?.state?.waiting;
      if (waiting?.reason && /^(ErrImage|ImagePull|InvalidImage|CreateContainer)/.test(waiting.reason)) {
        problems.set(name, `${waiting.reason}: ${waiting.message ?? ""}`);
      }
    });
    const podBody = (name: string): V1Pod => ({
      metadata: { name, labels: { app: "bench-pod-start" } },
      spec: {
        restartPolicy: "Never",
        automountServiceAccountToken: false,
        enableServiceLinks: false,
        // tini passes SIGTERM on to sleep, so a deletion ends the container at once.
        terminationGracePeriodSeconds: 1,
        securityContext: { runAsNonRoot: true },
        containers: [
          {
            name: "main",
            image: cluster.image,
            imagePullPolicy: "Never",
            command: ["tini", "--", "sleep", "3600"],
            resources: { requests: { cpu: "10m", memory: "16Mi" }, limits: { memory: "64Mi" } },
            securityContext: {
              allowPrivilegeEscalation: false,
              readOnlyRootFilesystem: true,
              capabilities: { drop: ["ALL"] },
            },
          },
        ],
      },
    });

    /** Creates `names` at once, waits for their containers to start, deletes them and waits until gone. */
    const runWave = async (names: string[]) => {
      const sentAt = new Map<string, number>();
      await Promise.all(
        names.map(async (name) => {
          sentAt.set(name, performance.now());
          await core.createNamespacedPod({ namespace, body: podBody(name) });
        }),
      );
      await waitUntil(() => {
        const problem = names.find((n) => problems.has(n));
        if (problem) throw new Error(`pod ${problem} cannot start: ${problems.get(problem)}`);
        return names.every((n) => startedAt.has(n)) ? true : undefined;
      }, 120_000);
      await Promise.all(
        names.map((name) =>
          core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 1 }).catch(() => undefined),
        ),
      );
      const gone = await waitUntil(() => (names.every((n) => deleted.has(n)) ? true : undefined), 120_000);
      if (!gone) log(`pods: some pods of a wave were not gone 120 s after their deletion`);
      return sentAt;
    };

    if (warmup > 0) {
      await runWave(Array.from({ length: warmup }, (_, i) => `warmup-${i}`));
    }
    log(`pods: ${total} pods in waves of ${wave} (load ${load()})`);
    const started: number[] = [];
    const bound: number[] = [];
    let missing = 0;
    for (let offset = 0, w = 0; offset < total; offset += wave, w++) {
      const names = Array.from({ length: Math.min(wave, total - offset) }, (_, i) => `pod-${w}-${i}`);
      const sentAt = await runWave(names);
      for (const [name, t0] of sentAt) {
        const s = startedAt.get(name);
        const b = boundAt.get(name);
        if (s === undefined) missing++;
        else started.push(s - t0);
        if (b !== undefined) bound.push(b - t0);
      }
      const waveSummary = summarize(
        names.map((n) => startedAt.get(n)! - sentAt.get(n)!).filter(Number.isFinite),
      );
      log(`pods: wave ${w + 1}: started p50 ${ms(waveSummary.p50)}, max ${ms(waveSummary.max)}`);
    }
    return {
      pods: total,
      wave,
      started: summarize(started),
      bound: summarize(bound),
      missing,
      loadAfter: load(),
    };
  } finally {
    step("pods: stopping the pod watch");
    await watcher?.stop();
    step("pods: removing the namespace");
    await removeNamespace(cluster, namespace);
  }
}

/** Prints the part's figures; its rows of the summary table. */
export function printPods(p: PodsResult): Row[] {
  const rows: Row[] = [];
  console.log(
    `\nPod start on the real node: ${p.pods} pods of the project's image in waves of ${p.wave} ` +
      `(image loaded, pull policy Never; create request → watch sees the container started)\n`,
  );
  console.table({
    "create → container started": {
      "p50 ms": Math.round(p.started.p50),
      "p90 ms": Math.round(p.started.p90),
      "p99 ms": Math.round(p.started.p99),
      "max ms": Math.round(p.started.max),
    },
    "create → bound to the node": {
      "p50 ms": Math.round(p.bound.p50),
      "p90 ms": Math.round(p.bound.p90),
      "p99 ms": Math.round(p.bound.p99),
      "max ms": Math.round(p.bound.max),
    },
  });
  console.log(
    `p99 ${ms(p.started.p99)} beside Kubernetes' SLO p99 <= ${SLO_P99_MS} ms (excluding image pull)` +
      (p.missing > 0 ? `; ${p.missing} pod(s) never seen started within 120 s` : ""),
  );
  rows.push(
    {
      figure: `Pod start p50 (${p.pods} pods, waves of ${p.wave})`,
      kube: ms(p.started.p50),
      local: "",
      ratio: "",
      note: `create → bound to the node: p50 ${ms(p.bound.p50)}, p99 ${ms(p.bound.p99)}`,
    },
    {
      figure: `Pod start p99`,
      kube: ms(p.started.p99),
      local: "",
      ratio: "",
      note:
        `Kubernetes SLO: p99 <= 5 s excluding image pull` + (p.missing ? `; ${p.missing} never started` : ""),
    },
  );
  return rows;
}
