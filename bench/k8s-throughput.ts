// Part throughput of the Kubernetes benchmark (bench/k8s.ts): a drain of many tiny jobs, the local
// executor then the Kubernetes one under its cap, with what watches of its Jobs and pods saw.
import { cpus } from "node:os";
import { BatchV1Api, type V1Job } from "@kubernetes/client-node";
import type { TestCluster } from "../test/k8s/support/cluster.js";
import { kubeConfigFrom } from "../test/k8s/support/cluster-stack.js";
import { containerStarted, watchCollection, watchPods } from "./k8s-cluster.js";
import { knob, load, log, ratio, secs, step, summarize, type Row, type Summary } from "./k8s-common.js";
import { drain, startKube, startLocal, type DrainFigures } from "./k8s-targets.js";

/** The image jobs' default CPU request (core/config/schema.ts) and what CoreDNS requests on the node. */
const RUNNER_CPU_MILLI = 250;
const COREDNS_CPU_MILLI = 50;

export interface ThroughputResult {
  jobs: number;
  cap: number;
  localConcurrency: number;
  local: DrainFigures;
  kube: DrainFigures;
  /** Most runner Jobs without a Complete/Failed condition a watch saw at once. */
  peakUnfinished: number;
  jobsCreated: number;
  /** Most runner pods in phase Running at once, and the pods that were ever Unschedulable. */
  peakRunningPods: number;
  /** Runner pods Running, sampled every 100 ms through the drain, averaged. */
  meanRunningPods: number;
  podsWaitedForCpu: number;
  /** Per runner pod, seen by the watch: created → bound to the node (the wait for a CPU slot). */
  podWaitForNode: Summary;
  /** Pods deleted (their Job ended) without ever being bound. */
  podsNeverBound: number;
  /** Bound → container started, and container started → pod Succeeded/Failed. */
  podBoundToStarted: Summary;
  podStartedToEnded: Summary;
  loadAfter: string;
}

function podTimes(pods: Array<{ created: number; bound?: number; started?: number; ended?: number }>) {
  const between = (from: "created" | "bound" | "started", to: "bound" | "started" | "ended") =>
    summarize(pods.flatMap((p) => (p[from] !== undefined && p[to] !== undefined ? [p[to] - p[from]] : [])));
  return {
    podWaitForNode: between("created", "bound"),
    podsNeverBound: pods.filter((p) => p.bound === undefined).length,
    podBoundToStarted: between("bound", "started"),
    podStartedToEnded: between("started", "ended"),
  };
}

export async function throughput(cluster: TestCluster): Promise<ThroughputResult> {
  const jobs = knob("BENCH_K8S_JOBS", 200);
  const cap = knob("BENCH_K8S_CAP", 10);
  const limitMs = knob("BENCH_K8S_DRAIN_LIMIT", 900) * 1000;

  const local = await startLocal();
  let localFigures: DrainFigures;
  const localConcurrency = local.stack.config.executor.localConcurrency;
  try {
    log(`throughput: local executor, ${jobs} jobs, concurrency ${localConcurrency} (load ${load()})`);
    step("throughput: local drain");
    localFigures = await drain(local, jobs, limitMs);
  } finally {
    step("throughput: closing the local stack");
    await local.close();
  }

  const unfinished = new Set<string>();
  const created = new Set<string>();
  const runningPods = new Set<string>();
  const unschedulable = new Set<string>();
  const seen = new Map<string, { created: number; bound?: number; started?: number; ended?: number }>();
  let peakUnfinished = 0;
  let peakRunningPods = 0;
  const watchers: Array<{ stop(): Promise<void> }> = [];
  const stopWatchers = async () => {
    for (const w of watchers.splice(0)) await w.stop();
  };
  const kube = await startKube(cluster, cap, async (cs) => {
    const kc = kubeConfigFrom(cluster.cp.kubeconfigPath);
    const batch = kc.makeApiClient(BatchV1Api);
    const namespace = cs.namespace;
    watchers.push(
      await watchCollection<V1Job>(
        kc,
        `/apis/batch/v1/namespaces/${namespace}/jobs`,
        () => batch.listNamespacedJob({ namespace }),
        (event, job) => {
          const name = job.metadata?.name;
          if (!name) return;
          created.add(name);
          const done = job.status?.conditions?.some(
            (c) => c.status === "True" && (c.type === "Complete" || c.type === "Failed"),
          );
          if (event === "DELETED" || done) unfinished.delete(name);
          else unfinished.add(name);
          peakUnfinished = Math.max(peakUnfinished, unfinished.size);
        },
      ),
    );
    watchers.push(
      await watchPods(kc, namespace, (event, name, pod) => {
        if (event !== "DELETED" && pod.status?.phase === "Running") runningPods.add(name);
        else runningPods.delete(name);
        peakRunningPods = Math.max(peakRunningPods, runningPods.size);
        const scheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled");
        if (scheduled?.status === "False" && scheduled.reason === "Unschedulable") unschedulable.add(name);
        const now = performance.now();
        let times = seen.get(name);
        if (!times) seen.set(name, (times = { created: now }));
        if (pod.spec?.nodeName) times.bound ??= now;
        if (containerStarted(pod)) times.started ??= now;
        if (pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") times.ended ??= now;
      }),
    );
  }).catch(async (err: unknown) => {
    await stopWatchers();
    throw err;
  });
  try {
    log(`throughput: kubernetes executor, ${jobs} jobs, max_running_jobs ${cap} (load ${load()})`);
    const samples: number[] = [];
    const sampler = setInterval(() => samples.push(runningPods.size), 100);
    let kubeFigures: DrainFigures;
    try {
      step("throughput: kubernetes drain");
      kubeFigures = await drain(kube, jobs, limitMs);
    } finally {
      clearInterval(sampler);
    }
    return {
      jobs,
      cap,
      localConcurrency,
      local: localFigures,
      kube: kubeFigures,
      peakUnfinished,
      jobsCreated: created.size,
      peakRunningPods,
      meanRunningPods: samples.reduce((a, b) => a + b, 0) / Math.max(1, samples.length),
      podsWaitedForCpu: unschedulable.size,
      ...podTimes([...seen.values()]),
      loadAfter: load(),
    };
  } finally {
    step("throughput: stopping the watches");
    await stopWatchers();
    step("throughput: closing the kubernetes target");
    await kube.close();
  }
}

/** Prints the part's figures; its rows of the summary table. */
export function printThroughput(d: ThroughputResult): Row[] {
  const rows: Row[] = [];
  const rate = (f: DrainFigures) => (f.completed + f.failed) / f.seconds;
  console.log(
    `\nThroughput: ${d.jobs} tiny resizes as batches of 100, drained: Kubernetes executor ` +
      `(max_running_jobs ${d.cap}) vs local executor (concurrency ${d.localConcurrency})\n`,
  );
  console.table({
    kubernetes: {
      "jobs/s": Number(rate(d.kube).toFixed(2)),
      "drain s": Number(d.kube.seconds.toFixed(1)),
      completed: d.kube.completed,
      failed: d.kube.failed,
    },
    local: {
      "jobs/s": Number(rate(d.local).toFixed(2)),
      "drain s": Number(d.local.seconds.toFixed(1)),
      completed: d.local.completed,
      failed: d.local.failed,
    },
  });
  const fit = Math.floor((cpus().length * 1000 - COREDNS_CPU_MILLI) / RUNNER_CPU_MILLI);
  const line = (x: Summary) => ({
    "p50 ms": Math.round(x.p50),
    "p99 ms": Math.round(x.p99),
    "max ms": Math.round(x.max),
    pods: x.n,
  });
  console.log(
    `kubernetes/local jobs/s: ${ratio(rate(d.kube), rate(d.local))}; peak unfinished runner Jobs ` +
      `${d.peakUnfinished} (cap ${d.cap}: ${d.peakUnfinished <= d.cap ? "within" : "EXCEEDED"}), ` +
      `${d.jobsCreated} Jobs created; peak runner pods Running ${d.peakRunningPods} ` +
      `(mean ${d.meanRunningPods.toFixed(1)}; the node fits ~${fit} at ${RUNNER_CPU_MILLI}m CPU each), ` +
      `${d.podsWaitedForCpu} pods were Unschedulable for a while`,
  );
  console.log(`\nRunner pods of the Kubernetes drain (as the pod watch saw them)\n`);
  console.table({
    "created → bound to the node": line(d.podWaitForNode),
    "bound → container started": line(d.podBoundToStarted),
    "container started → pod ended": line(d.podStartedToEnded),
  });
  if (d.podsNeverBound > 0) console.log(`${d.podsNeverBound} runner pod(s) were never bound to the node`);
  for (const [name, f] of [["kubernetes", d.kube] as const, ["local", d.local] as const]) {
    if (!f.allEnded) console.log(`${name}: not drained within BENCH_K8S_DRAIN_LIMIT`);
    if (f.firstError) console.log(`${name}: ${f.failed} failed, first: ${f.firstError}`);
  }
  rows.push(
    {
      figure: `Tiny-job throughput (${d.jobs} jobs, batches of 100)`,
      kube: `${rate(d.kube).toFixed(2)} jobs/s`,
      local: `${rate(d.local).toFixed(2)} jobs/s`,
      ratio: ratio(rate(d.kube), rate(d.local)),
      note:
        `drain ${d.kube.seconds.toFixed(1)} s vs ${d.local.seconds.toFixed(1)} s; local concurrency ${d.localConcurrency}` +
        (d.kube.failed + d.local.failed > 0 ? `; failed ${d.kube.failed} vs ${d.local.failed}` : "") +
        (d.kube.allEnded && d.local.allEnded ? "" : "; drain limit reached"),
    },
    {
      figure: `Peak unfinished runner Jobs (watch)`,
      kube: String(d.peakUnfinished),
      local: "",
      ratio: "",
      note: `cap ${d.cap}: ${d.peakUnfinished <= d.cap ? "never exceeded" : "EXCEEDED"}`,
    },
    {
      figure: `Runner pods Running: peak / mean over the drain`,
      kube: `${d.peakRunningPods} / ${d.meanRunningPods.toFixed(1)}`,
      local: "",
      ratio: "",
      note: `${fit} fit at ${RUNNER_CPU_MILLI}m CPU each on ${cpus().length} CPUs; ${d.podsWaitedForCpu} pods waited Unschedulable`,
    },
    {
      figure: `Runner pod wait for the node p50 / p99 / max`,
      kube: `${secs(d.podWaitForNode.p50)} / ${secs(d.podWaitForNode.p99)} / ${secs(d.podWaitForNode.max)}`,
      local: "",
      ratio: "",
      note:
        `created → bound; then started → ended p50 ${secs(d.podStartedToEnded.p50)}` +
        (d.podsNeverBound ? `; ${d.podsNeverBound} never bound` : ""),
    },
  );
  return rows;
}
