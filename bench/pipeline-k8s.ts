// Part k8s of the pipeline benchmark (bench/pipeline.ts): on the real node the Kubernetes benchmark
// builds (test/k8s/support/cluster.ts, bench/k8s-cluster.ts, bench/k8s-targets.ts), a batch of
// BENCH_PIPELINE_K8S_SOURCES photos, each made into the ten outputs of bench/pipeline.ts: as one
// pipeline job per source, then as ten single jobs per source (each source's watermark submitted once
// its 1920 WebP has completed). Each batch runs in a namespace of its own, with one controller
// (max_running_jobs BENCH_PIPELINE_K8S_CAP) and a watch on the namespace's pods, started before
// the controller: every runner pod created is counted. Wall time: from the first POST to the last
// completed_at the store wrote. Machine time: the CPU seconds the whole machine spent meanwhile
// (/proc/stat: every CPU's time but idle and iowait), which holds what the cluster does for a job
// (the node's kubelet and containerd, a pod's start, the control plane's work) beside the runners'
// own and the local API's. One run of each: a batch of tens of jobs is its own average.
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import type { Job } from "../core/jobs/records.js";
import { startTestCluster, type TestCluster } from "../test/k8s/support/cluster.js";
import { DIST_CLI, kubeConfigFrom } from "../test/k8s/support/cluster-stack.js";
import { photo } from "./fixtures.js";
import { runJobs, type StackJob } from "./jobs-round.js";
import { ensureImage, watchPods } from "./k8s-cluster.js";
import { errorText, knob, load, log, ratio, step } from "./k8s-common.js";
import { startKube } from "./k8s-targets.js";
import { pipelineJob, singleJobs, sourceSize, tenOutputs } from "./pipeline.js";
import { machineCpuSeconds } from "./procs.js";
import { printTable } from "./stats.js";

interface BatchFigures {
  jobs: number;
  completed: number;
  failed: number;
  firstError?: string;
  /** Runner pods the watch saw created. */
  pods: number;
  seconds: number;
  /** CPU seconds of the whole machine meanwhile. */
  machineCpu: number;
}

const sourceKey = (i: number) => `in/photo-${i}.jpg`;

async function batch(
  cluster: TestCluster,
  name: string,
  jobs: StackJob[],
  sources: { file: string; count: number },
  cap: number,
  limitMs: number,
): Promise<BatchFigures> {
  const pods = new Set<string>();
  let watch: { stop(): Promise<void> } | undefined;
  const kube = await startKube(cluster, cap, async (cs) => {
    watch = await watchPods(kubeConfigFrom(cluster.cp.kubeconfigPath), cs.namespace, (_event, pod) =>
      pods.add(pod),
    );
  }).catch(async (err: unknown) => {
    await watch?.stop();
    throw err;
  });
  try {
    step(`pipeline k8s ${name}: uploading ${sources.count} sources`);
    const body = await readFile(sources.file);
    for (let i = 0; i < sources.count; i++) {
      await kube.stack.services.s3.send(
        new PutObjectCommand({
          Bucket: kube.bucket,
          Key: sourceKey(i),
          Body: body,
          ContentType: "image/jpeg",
        }),
      );
    }
    log(`pipeline ${name}: ${jobs.length} jobs, max_running_jobs ${cap} (load ${load()})`);
    step(`pipeline k8s ${name}: ${jobs.length} jobs`);
    const started = Date.now();
    const cpuBefore = machineCpuSeconds();
    let timer: NodeJS.Timeout | undefined;
    const records = await Promise.race([
      runJobs(jobs, {
        bucket: kube.bucket,
        sourceKey: sourceKey(0),
        dest: (i) => `out/${name}-${i}`,
        submit: async (path, json) => {
          const res = await kube.stack.request(`/api/v1${path}`, { method: "POST", json });
          const answer = (await res.json()) as { job_id?: string; error?: string };
          if (res.status !== 202 || !answer.job_id)
            throw new Error(`POST ${path} answered ${res.status}: ${answer.error}`);
          return answer.job_id;
        },
        getJob: (id) => kube.stack.services.store.getJob(id),
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`${name}: not done within BENCH_PIPELINE_K8S_LIMIT (${limitMs / 1000} s)`)),
          limitMs,
        );
      }),
    ]).finally(() => clearTimeout(timer));
    const machineCpu = machineCpuSeconds() - cpuBefore;
    const last = Math.max(...records.map((j) => Date.parse(j?.completed_at ?? "") || 0));
    const failed = records.filter((j): j is Job => j?.status === "failed");
    const figures = {
      jobs: jobs.length,
      completed: records.length - failed.length,
      failed: failed.length,
      ...(failed[0] ? { firstError: failed[0].error } : {}),
      pods: pods.size,
      seconds: ((last > started ? last : Date.now()) - started) / 1000,
      machineCpu,
    };
    log(
      `pipeline ${name}: ${figures.completed} completed, ${figures.pods} runner pods, ${figures.seconds.toFixed(1)} s, machine CPU ${machineCpu.toFixed(1)} s`,
    );
    return figures;
  } finally {
    await watch
      ?.stop()
      .catch((err: unknown) => log(`pipeline ${name}: stopping the watch: ${errorText(err)}`));
    await kube.close();
  }
}

export async function pipelineK8sPart(): Promise<void> {
  const major = Number(process.versions.node.split(".")[0]);
  if (major < 24)
    throw new Error(`the k8s part needs Node 24 (@kubernetes/client-node); this is ${process.version}`);
  if (!existsSync(DIST_CLI)) throw new Error(`${DIST_CLI} is missing: run \`npm run build\` first`);
  const count = knob("BENCH_PIPELINE_K8S_SOURCES", 20);
  const cap = knob("BENCH_PIPELINE_K8S_CAP", 10);
  const limitMs = knob("BENCH_PIPELINE_K8S_LIMIT", 1800) * 1000;
  const size = sourceSize();
  const sources = { file: await photo(size.width, size.height), count };
  const steps = tenOutputs(size);
  const perSource = Object.keys(steps).length;
  const keys = Array.from({ length: count }, (_, i) => sourceKey(i));
  const batches = {
    pipeline: keys.map((key) => pipelineJob(steps, key)),
    single: keys.flatMap((key, i) => singleJobs(steps, key, i * perSource)),
  };
  const started = Date.now();
  // A handle of this process's own while the cluster stops (see k8sBenchmark's keep-alive).
  const keepAlive = setInterval(() => undefined, 10_000);
  const figures: Record<string, BatchFigures> = {};
  try {
    step("pipeline k8s: starting the cluster");
    const cluster = await startTestCluster({ log: (m) => log(m) });
    try {
      log(`cluster up in ${((Date.now() - started) / 1000).toFixed(1)} s; image ${cluster.image}`);
      await ensureImage(cluster);
      for (const [name, jobs] of Object.entries(batches)) {
        figures[name] = await batch(cluster, name, jobs, sources, cap, limitMs);
      }
    } finally {
      step("pipeline k8s: stopping the cluster");
      await cluster.stop();
    }
  } finally {
    clearInterval(keepAlive);
  }
  const { pipeline, single } = figures as { pipeline: BatchFigures; single: BatchFigures };
  const row = (f: BatchFigures) => ({
    jobs: f.jobs,
    "runner pods": f.pods,
    "wall s": f.seconds.toFixed(1),
    "pods per source": (f.pods / count).toFixed(1),
    "s per source": (f.seconds / count).toFixed(2),
    "machine CPU s per source": (f.machineCpu / count).toFixed(2),
    failed: f.failed,
  });
  console.log(
    `\nPipeline on Kubernetes: ${count} ${size.width}×${size.height} JPEGs, ten outputs each, on one real node (max_running_jobs ${cap}); one batch of each (${((Date.now() - started) / 1000).toFixed(0)} s with the cluster's start)\n`,
  );
  printTable({ "one pipeline job per source": row(pipeline), "ten single jobs per source": row(single) });
  const podsRatio = single.pods / pipeline.pods;
  const wallRatio = single.seconds / pipeline.seconds;
  console.log(
    `runner pods single/pipeline: ${ratio(single.pods, pipeline.pods)} (target >= 5×: ${podsRatio >= 5 ? "met" : "missed"})`,
  );
  console.log(
    `wall time single/pipeline:   ${ratio(single.seconds, pipeline.seconds)} (target >= 3×: ${wallRatio >= 3 ? "met" : "missed"})`,
  );
  const cpuRatio = single.machineCpu / pipeline.machineCpu;
  console.log(
    `machine CPU single/pipeline: ${ratio(single.machineCpu, pipeline.machineCpu)} (target >= 2.5×: ${cpuRatio >= 2.5 ? "met" : "missed"})`,
  );
  for (const [name, f] of Object.entries(figures)) {
    if (f.firstError) console.log(`${name}: ${f.failed} failed, first: ${f.firstError}`);
  }
}
