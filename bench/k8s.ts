// npm run bench -- k8s: the Kubernetes executor on a real node, beside the local executor.
//
// One test cluster for the whole run (test/k8s/support/cluster.ts): etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler as processes, and one real node (containerd + runc,
// kubelet, kube-proxy, CNI bridge, CoreDNS) whose pods are containers of the project's image, loaded
// into the node's containerd and never pulled (imagePullPolicy Never). Each part runs in a namespace of
// its own, removed (and waited for) before the next part starts. The API runs in this process with its
// own redis-server and embedded S3 store, which pods reach through the node's relays; one
// `media-service controller` process (the built dist/cli.js: run `npm run build` first) creates the
// runner Jobs. The local executor's figures come from the same service with the local executor
// (test/support/api.ts startTestStack({ executor: true }): runner child processes on this machine,
// kept warm between jobs), measured in the same run while the cluster is up.
//
// Each part measures and prints in a module of its own (bench/k8s-pods.ts, k8s-latency.ts,
// k8s-throughput.ts, k8s-pool.ts), over the two executors (k8s-targets.ts), the cluster's watches,
// image and namespaces (k8s-cluster.ts) and the run's helpers (k8s-common.ts).
//
//   pods        Pod start latency: BENCH_K8S_PODS pods of the project's image (`tini -- sleep 3600`,
//               requests 10m CPU / 16Mi) in waves of BENCH_K8S_POD_WAVE created at once; each wave is
//               deleted (and gone) before the next. Latency = from just before a pod's create request
//               to the moment a watch on the namespace's pods (started before) sees its container
//               started (state.running, or terminated with startedAt). Beside it Kubernetes' pod
//               startup SLO: p99 <= 5 s, excluding image pull.
//   latency     Submit → completed of a tiny image resize (a 64x48 PNG → 32x24 WebP), one job at a
//               time: POST /api/v1/jobs/image/resize, then the job's "complete" event. The Kubernetes
//               executor (max_running_jobs BENCH_K8S_CAP) and the local executor alternate job by job,
//               so drift on the machine hits both alike.
//   throughput  BENCH_K8S_JOBS tiny resizes submitted as POST /api/v1/jobs/batch of up to 100, drained:
//               jobs/s from the first POST to the last job ended, the local executor (its default
//               concurrency: one runner per CPU) first, then the Kubernetes executor under
//               max_running_jobs BENCH_K8S_CAP, with the peak of unfinished runner Jobs (no Complete or
//               Failed condition) a watch on the namespace's Jobs ever saw, which must never pass the cap.
//
// Runner pods request CPU (image jobs 250m by default) and the node has what this machine has: on
// 2 CPUs about 7 runner pods fit at once (CoreDNS takes 50m), so under a cap of 10 the rest wait
// Pending for a slot. That is part of what is measured.
//
// Knobs (environment):
//   pool        Small resizes (a 1-megapixel JPEG → 320x240 JPEG) through the warm runner pool: the
//               controller with executor.pool on (image_resize: pool) and a Deployment of one
//               `media-service pool` pod (concurrency BENCH_K8S_POOL_CONCURRENCY, requesting 1 CPU, no CPU limit),
//               beside one Job per task (the same controller without the pool, max_running_jobs
//               BENCH_K8S_CAP) and the local executor, in one run: BENCH_K8S_POOL_JOBS jobs through
//               the pool and the local executor (each after BENCH_K8S_POOL_WARMUP jobs not counted, so
//               that their runner processes are warm), BENCH_K8S_POOL_TASK_JOBS through one Job per
//               task (a pod per job: its rate is steady from the first), as batches of 100.
//
//   BENCH_K8S_PARTS        parts to run, comma-separated, in this order ("pods,latency,throughput,pool")
//   BENCH_K8S_PODS         pods measured in part pods (60)
//   BENCH_K8S_POD_WAVE     pods created at once (10)
//   BENCH_K8S_POD_WARMUP   pods started and deleted before the measured ones, not counted (2)
//   BENCH_K8S_SEQ          jobs per executor in part latency (30)
//   BENCH_K8S_SEQ_WARMUP   jobs per executor before those, not counted (2)
//   BENCH_K8S_JOBS         jobs per executor in part throughput (200)
//   BENCH_K8S_CAP          max_running_jobs of the controller (10)
//   BENCH_K8S_POOL_JOBS    jobs through the pool and through the local executor in part pool (600)
//   BENCH_K8S_POOL_TASK_JOBS  jobs through one Job per task in part pool (150)
//   BENCH_K8S_POOL_WARMUP  jobs drained before the pool's and the local executor's, not counted (40)
//   BENCH_K8S_POOL_CONCURRENCY  executor.pool.concurrency of the pool's pod (one per CPU)
//   BENCH_K8S_DRAIN_LIMIT  seconds allowed to one drain of part throughput (900)
//   MEDIA_K8S_IMAGE        the project's image to run (e.g. media-service:dev, already built); unset:
//                          built from the Dockerfile by scripts/build-image.sh (test/k8s/support/cluster.ts)
import { existsSync } from "node:fs";
import { cpus, release, totalmem } from "node:os";
import { CoreV1Api } from "@kubernetes/client-node";
import { startTestCluster } from "../test/k8s/support/cluster.js";
import { DIST_CLI, kubeConfigFrom } from "../test/k8s/support/cluster-stack.js";
import { ensureImage } from "./k8s-cluster.js";
import { currentStep, errorText, load, log, step, type Row } from "./k8s-common.js";
import { printLatency, sequentialLatency, type LatencyResult } from "./k8s-latency.js";
import { podStartLatency, printPods, type PodsResult } from "./k8s-pods.js";
import { poolPart, printPool, type PoolResult } from "./k8s-pool.js";
import { printThroughput, throughput, type ThroughputResult } from "./k8s-throughput.js";

const PARTS = ["pods", "latency", "throughput", "pool"] as const;
type Part = (typeof PARTS)[number];

export async function k8sBenchmark(): Promise<void> {
  const major = Number(process.versions.node.split(".")[0]);
  if (major < 24) {
    throw new Error(`the k8s benchmark needs Node 24 (@kubernetes/client-node); this is ${process.version}`);
  }
  if (!existsSync(DIST_CLI)) throw new Error(`${DIST_CLI} is missing: run \`npm run build\` first`);
  const asked = (process.env.BENCH_K8S_PARTS ?? PARTS.join(","))
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean);
  const unknown = asked.filter((p) => !(PARTS as readonly string[]).includes(p));
  if (unknown.length > 0) {
    throw new Error(
      `BENCH_K8S_PARTS: unknown part(s) ${unknown.join(", ")}; choose from ${PARTS.join(", ")}`,
    );
  }
  const parts = asked as Part[];
  const date = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const loadAtStart = load();
  const cpuModel = cpus()[0]?.model.trim() ?? "unknown CPU";
  log(`start (load ${loadAtStart}); parts: ${parts.join(", ")}`);

  // The cluster's processes are unref'd children, and stopping one that outlives its SIGTERM grace ends
  // with a SIGKILL whose exit nothing else waits for: without a handle of its own this process could
  // find its event loop empty in the middle of cluster.stop() and exit (code 13) before the table.
  // The same timer names a step that runs long.
  let warnedFor = "";
  const keepAlive = setInterval(() => {
    const { stage, since } = currentStep();
    const s = Math.round((Date.now() - since) / 1000);
    if (s >= 300 && warnedFor !== `${stage}@${since}`) {
      warnedFor = `${stage}@${since}`;
      log(`still ${stage} after ${s} s`);
    }
  }, 10_000);
  try {
    await runParts(parts, date, loadAtStart, cpuModel);
  } finally {
    clearInterval(keepAlive);
  }
}

async function runParts(parts: Part[], date: string, loadAtStart: string, cpuModel: string): Promise<void> {
  const started = Date.now();
  step("starting the cluster");
  const cluster = await startTestCluster({ log: (m) => log(m) });
  const rows: Row[] = [];
  const failures: string[] = [];
  let versions = "";
  let pods: PodsResult | undefined;
  let latency: LatencyResult | undefined;
  let drains: ThroughputResult | undefined;
  let pooled: PoolResult | undefined;
  try {
    const node = await kubeConfigFrom(cluster.cp.kubeconfigPath)
      .makeApiClient(CoreV1Api)
      .readNode({ name: cluster.node.name });
    const info = node.status?.nodeInfo;
    const allocatable = node.status?.allocatable ?? {};
    versions =
      `Kubernetes ${info?.kubeletVersion ?? "?"}, ${info?.containerRuntimeVersion ?? "?"}; ` +
      `node allocatable cpu ${allocatable.cpu ?? "?"}, memory ${allocatable.memory ?? "?"}`;
    log(`cluster up in ${((Date.now() - started) / 1000).toFixed(1)} s: ${versions}; image ${cluster.image}`);
    await ensureImage(cluster);
    for (const part of parts) {
      try {
        if (part === "pods") pods = await podStartLatency(cluster);
        if (part === "latency") latency = await sequentialLatency(cluster);
        if (part === "throughput") drains = await throughput(cluster);
        if (part === "pool") pooled = await poolPart(cluster);
      } catch (err) {
        failures.push(`${part}: ${errorText(err)}`);
        log(`part ${part} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      }
    }
  } finally {
    step("stopping the cluster");
    await cluster.stop();
    step("reporting");
  }

  // Each part's figures, then the summary.
  if (pods) rows.push(...printPods(pods));
  if (latency) rows.push(...printLatency(latency));
  if (drains) rows.push(...printThroughput(drains));
  if (pooled) rows.push(...printPool(pooled));

  const loadAtEnd = load();
  console.log(`\n## Kubernetes executor on a real node (${date})\n`);
  console.log(
    `Machine: ${cpus().length} × ${cpuModel}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Linux ${release()}, ` +
      `Node ${process.version}; load average at start ${loadAtStart}, at the end ${loadAtEnd}`,
  );
  if (versions) console.log(`Cluster: one node, ${versions}; image ${cluster.image}`);
  console.log(`Run: ${((Date.now() - started) / 1000).toFixed(0)} s in all\n`);
  const header: Row = {
    figure: "Figure",
    kube: "Kubernetes executor (real node)",
    local: "Local executor",
    ratio: "k8s/local",
    note: "Note",
  };
  const cols: Array<keyof Row> = ["figure", "kube", "local", "ratio", "note"];
  const widths = cols.map((c) => Math.max(3, ...[header, ...rows].map((r) => r[c].length)));
  const fmtRow = (r: Row) => `| ${cols.map((c, i) => r[c].padEnd(widths[i]!)).join(" | ")} |`;
  console.log(fmtRow(header));
  console.log(`| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`);
  for (const r of rows) console.log(fmtRow(r));
  if (failures.length > 0) {
    console.log(`\nParts that failed:\n${failures.map((f) => `- ${f}`).join("\n")}`);
    process.exitCode = 1;
  }
}
