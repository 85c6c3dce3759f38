// Part pool of the Kubernetes benchmark (bench/k8s.ts): small resizes through the warm runner pool,
// beside one Job per task and the local executor.
import { cpus } from "node:os";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { RUNNER_ENV } from "../core/config/runner-env.js";
import type { TestStack } from "../test/support/api.js";
import { makeImage } from "../test/support/media.js";
import type { TestCluster } from "../test/k8s/support/cluster.js";
import { knob, load, log, ratio, step, type Row } from "./k8s-common.js";
import { drain, startKube, startLocal, type DrainFigures, type DrainWork } from "./k8s-targets.js";

const PHOTO_KEY = "in/photo-1mp.jpg";
const POOL_WORK: DrainWork = { key: PHOTO_KEY, parameters: { width: 320, height: 240, format: "jpeg" } };

async function putPhoto(stack: TestStack): Promise<void> {
  const jpeg = await makeImage({ width: 1224, height: 816, format: "jpeg", photo: true });
  await stack.services.s3.send(
    new PutObjectCommand({ Bucket: stack.bucket, Key: PHOTO_KEY, Body: jpeg, ContentType: "image/jpeg" }),
  );
}

export interface PoolResult {
  jobs: number;
  cap: number;
  concurrency: number;
  local: DrainFigures;
  pool: DrainFigures;
  perTask: DrainFigures;
  /** Kubernetes Jobs created during the pool's drain (none expected). */
  jobsDuringPool: number;
}

export async function poolPart(cluster: TestCluster): Promise<PoolResult> {
  const jobs = knob("BENCH_K8S_POOL_JOBS", 600);
  const taskJobs = knob("BENCH_K8S_POOL_TASK_JOBS", 150);
  const warmup = knob("BENCH_K8S_POOL_WARMUP", 40, 0);
  const cap = knob("BENCH_K8S_CAP", 10);
  const limitMs = knob("BENCH_K8S_DRAIN_LIMIT", 900) * 1000;
  const concurrency = knob("BENCH_K8S_POOL_CONCURRENCY", cpus().length);

  const local = await startLocal();
  let localFigures: DrainFigures;
  try {
    await putPhoto(local.stack);
    if (warmup > 0) await drain(local, warmup, limitMs, POOL_WORK);
    log(`pool: local executor, ${jobs} jobs (load ${load()})`);
    step("pool: local drain");
    localFigures = await drain(local, jobs, limitMs, POOL_WORK);
  } finally {
    await local.close();
  }

  // Both Kubernetes targets log as the local one does: warnings only, not a line per job.
  const pooled = await startKube(
    cluster,
    cap,
    async () => undefined,
    { pool: { enabled: true, classes: { image_resize: "pool" }, concurrency } },
    "warn",
  );
  let poolFigures: DrainFigures;
  let jobsDuringPool: number;
  try {
    await putPhoto(pooled.stack);
    step("pool: starting the pool's Deployment");
    await pooled.cs.startPool({
      replicas: 1,
      concurrency,
      // As quiet as the local executor's runners here (warnings only): not a log line per job.
      env: { [RUNNER_ENV.logLevel]: "warn" },
      // No CPU limit (a CFS quota throttles a burst of sharp's threads mid-job), as the local
      // executor's runners have none; a request so that it is scheduled with room.
      resources: { requests: { cpu: "1", memory: "512Mi" }, limits: { memory: "2Gi" } },
    });
    if (warmup > 0) await drain(pooled, warmup, limitMs, POOL_WORK);
    log(`pool: the pool (one pod, concurrency ${concurrency}), ${jobs} jobs (load ${load()})`);
    step("pool: pool drain");
    poolFigures = await drain(pooled, jobs, limitMs, POOL_WORK);
    jobsDuringPool = (await pooled.cs.admin.batch.listNamespacedJob({ namespace: pooled.cs.namespace })).items
      .length;
  } finally {
    await pooled.close();
  }

  const perTask = await startKube(cluster, cap, async () => undefined, undefined, "warn");
  let perTaskFigures: DrainFigures;
  try {
    await putPhoto(perTask.stack);
    log(`pool: one Job per task, max_running_jobs ${cap}, ${taskJobs} jobs (load ${load()})`);
    step("pool: one-Job-per-task drain");
    perTaskFigures = await drain(perTask, taskJobs, limitMs, POOL_WORK);
  } finally {
    await perTask.close();
  }
  return {
    jobs,
    cap,
    concurrency,
    local: localFigures,
    pool: poolFigures,
    perTask: perTaskFigures,
    jobsDuringPool,
  };
}

/** Prints the part's figures; its rows of the summary table. */
export function printPool(p: PoolResult): Row[] {
  const rows: Row[] = [];
  const rate = (f: DrainFigures) => (f.completed + f.failed) / f.seconds;
  console.log(
    `\nSmall resizes (1-megapixel JPEG → 320x240 JPEG), ${p.jobs} jobs (${p.perTask.jobs} for one Job per task) as batches of 100, drained: the warm ` +
      `runner pool (one pod, concurrency ${p.concurrency}) vs one Job per task (max_running_jobs ${p.cap}) vs ` +
      `the local executor\n`,
  );
  const line = (f: DrainFigures) => ({
    "jobs/s": Number(rate(f).toFixed(2)),
    "drain s": Number(f.seconds.toFixed(1)),
    completed: f.completed,
    failed: f.failed,
  });
  console.table({ pool: line(p.pool), "one Job per task": line(p.perTask), local: line(p.local) });
  console.log(
    `pool / one Job per task: ${ratio(rate(p.pool), rate(p.perTask))}; pool / local: ` +
      `${ratio(rate(p.pool), rate(p.local))}; Kubernetes Jobs created during the pool's drain: ${p.jobsDuringPool}`,
  );
  for (const [name, f] of [
    ["pool", p.pool],
    ["one Job per task", p.perTask],
    ["local", p.local],
  ] as const) {
    if (!f.allEnded) console.log(`${name}: not drained within BENCH_K8S_DRAIN_LIMIT`);
    if (f.firstError) console.log(`${name}: ${f.failed} failed, first: ${f.firstError}`);
  }
  rows.push(
    {
      figure: `Small resizes through the pool (${p.jobs} jobs)`,
      kube: `${rate(p.pool).toFixed(2)} jobs/s`,
      local: `${rate(p.local).toFixed(2)} jobs/s`,
      ratio: ratio(rate(p.pool), rate(p.local)),
      note: `one pod, concurrency ${p.concurrency}; ${p.jobsDuringPool} Kubernetes Jobs created`,
    },
    {
      figure: `Small resizes, one Job per task (${p.perTask.jobs} jobs)`,
      kube: `${rate(p.perTask).toFixed(2)} jobs/s`,
      local: `${rate(p.local).toFixed(2)} jobs/s`,
      ratio: ratio(rate(p.perTask), rate(p.local)),
      note: `max_running_jobs ${p.cap}; the pool does ${ratio(rate(p.pool), rate(p.perTask))} of it`,
    },
  );
  return rows;
}
