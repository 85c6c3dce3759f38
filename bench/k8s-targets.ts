// The two executors of the Kubernetes benchmark (bench/k8s.ts), the local one and the Kubernetes one
// in a namespace of its own, and what the parts do through them: wait for one job, drain many.
import { PutObjectCommand } from "@aws-sdk/client-s3";
import type { Job } from "../core/jobs/records.js";
import { startTestStack, type TestStack } from "../test/support/api.js";
import { makeImage } from "../test/support/media.js";
import type { TestCluster } from "../test/k8s/support/cluster.js";
import {
  startClusterStack,
  type ClusterStack,
  type ControllerProcess,
} from "../test/k8s/support/cluster-stack.js";
import { removeNamespace } from "./k8s-cluster.js";
import { errorText, load, log, step, waitUntil } from "./k8s-common.js";

export const SOURCE_KEY = "in/tiny.png";

export interface Target {
  name: string;
  stack: TestStack;
  bucket: string;
  close(): Promise<void>;
}

export async function putSource(stack: TestStack): Promise<void> {
  const png = await makeImage({ width: 64, height: 48, format: "png", photo: true });
  await stack.services.s3.send(
    new PutObjectCommand({ Bucket: stack.bucket, Key: SOURCE_KEY, Body: png, ContentType: "image/png" }),
  );
}

/** The service with the local executor at its default concurrency (one runner per CPU). */
export async function startLocal(): Promise<Target> {
  const stack = await startTestStack({
    executor: true,
    // 0 is the default: one runner per CPU (the test stack otherwise pins 2).
    // Its runner processes write their logs to this process's stdout, where the figures go: warnings only.
    config: { executor: { local_concurrency: 0 }, log_level: "warn" },
  });
  try {
    await putSource(stack);
  } catch (err) {
    await stack.close();
    throw err;
  }
  return { name: "local", stack, bucket: stack.bucket, close: () => stack.close() };
}

export interface KubeTarget extends Target {
  cs: ClusterStack;
  controller: ControllerProcess;
}

/**
 * The cluster stack in a fresh namespace and one controller, leading. `beforeController` runs once
 * the namespace exists and before any Job can be created (to start watches).
 */
export async function startKube(
  cluster: TestCluster,
  cap: number,
  beforeController: (cs: ClusterStack) => Promise<void> = async () => undefined,
  executor?: Record<string, unknown>,
  controllerLogLevel?: string,
): Promise<KubeTarget> {
  const cs = await startClusterStack({
    cluster,
    kubernetes: { max_running_jobs: cap },
    ...(executor ? { executor } : {}),
    ...(controllerLogLevel ? { controllerLogLevel } : {}),
  });
  const close = async () => {
    step("closing the cluster stack");
    await cs.close();
    step(`removing namespace ${cs.namespace}`);
    await removeNamespace(cluster, cs.namespace);
  };
  try {
    await putSource(cs.stack);
    await beforeController(cs);
    const controller = await cs.startController("controller");
    // Ready = leading with synced caches (a standby would be ready too, hence the leader gauge).
    const leading = await waitUntil(
      async () => {
        const ready = (await controller.get("/readyz").catch(() => undefined))?.status === 200;
        const leader = ready ? await controller.metric("media_controller_leader").catch(() => 0) : 0;
        return leader === 1 ? true : undefined;
      },
      60_000,
      100,
    );
    if (!leading) throw new Error(`the controller did not lead within 60 s (log: ${controller.logPath})`);
    return { name: "kubernetes", stack: cs.stack, bucket: cs.stack.bucket, cs, controller, close };
  } catch (err) {
    await close().catch((e: unknown) => log(`cleanup: ${errorText(e)}`));
    throw err;
  }
}

export const resizeBody = (t: Target, n: number) => ({
  source_bucket: t.bucket,
  source_key: SOURCE_KEY,
  dest_bucket: t.bucket,
  dest_key: `out/${n}.webp`,
  width: 32,
  height: 24,
  format: "webp",
});

/** Waits for a job to end: its "complete" event, with a slow poll as a backstop. */
export async function ended(stack: TestStack, id: string, limitMs: number): Promise<Job | undefined> {
  const store = stack.services.store;
  let wake: () => void = () => undefined;
  const unsubscribe = await stack.services.events.subscribe(id, (m) => {
    if (m.event === "complete") wake();
  });
  try {
    const deadline = Date.now() + limitMs;
    for (;;) {
      const job = await store.getJob(id);
      if (job && (job.status === "completed" || job.status === "failed")) return job;
      if (Date.now() > deadline) return undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 250);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    await unsubscribe();
  }
}

export interface DrainFigures {
  jobs: number;
  seconds: number;
  completed: number;
  failed: number;
  allEnded: boolean;
  firstError?: string;
}

/** What a drain submits: the tiny resize, or another source and size. */
export interface DrainWork {
  key: string;
  parameters: Record<string, unknown>;
}
const TINY_WORK: DrainWork = { key: SOURCE_KEY, parameters: { width: 32, height: 24, format: "webp" } };

export async function drain(
  t: Target,
  jobs: number,
  limitMs: number,
  work: DrainWork = TINY_WORK,
): Promise<DrainFigures> {
  const store = t.stack.services.store;
  // The counters are the store's since it began: a drain counts from where they stand now.
  const before = { ...(await store.counters()).image_resize };
  const started = performance.now();
  const ids: string[] = [];
  step(`throughput ${t.name}: submitting`);
  for (let offset = 0; offset < jobs; offset += 100) {
    const batch = Array.from({ length: Math.min(100, jobs - offset) }, (_, i) => ({
      type: "image_resize",
      source_bucket: t.bucket,
      source_key: work.key,
      dest_bucket: t.bucket,
      dest_key: `out/${offset + i}.${String(work.parameters.format)}`,
      parameters: work.parameters,
    }));
    const res = await t.stack.request("/api/v1/jobs/batch", { method: "POST", json: { jobs: batch } });
    const answer = (await res.json()) as { job_ids?: string[]; error?: string };
    if (res.status !== 201 || !answer.job_ids) {
      throw new Error(`${t.name}: POST /api/v1/jobs/batch answered ${res.status}: ${answer.error}`);
    }
    ids.push(...answer.job_ids);
  }
  let lastReport = Date.now();
  step(`throughput ${t.name}: waiting for ${jobs} jobs to end`);
  const counts = async () => {
    const c = (await store.counters()).image_resize;
    return { completed: c.completed - before.completed, failed: c.failed - before.failed };
  };
  const allEnded = await waitUntil(
    async () => {
      const { completed, failed } = await counts();
      if (completed + failed >= jobs) return true;
      if (Date.now() - lastReport >= 15_000) {
        lastReport = Date.now();
        log(`throughput ${t.name}: ${completed + failed}/${jobs} ended (load ${load()})`);
      }
      return undefined;
    },
    limitMs,
    50,
  );
  const seconds = (performance.now() - started) / 1000;
  step(`throughput ${t.name}: reading the results`);
  const { completed, failed } = await counts();
  log(`throughput ${t.name}: ${completed} completed, ${failed} failed in ${seconds.toFixed(1)} s`);
  let firstError: string | undefined;
  if (failed > 0) {
    for (const id of ids) {
      const job = await store.getJob(id);
      if (job?.status === "failed") {
        firstError = job.error;
        break;
      }
    }
  }
  return {
    jobs,
    seconds,
    completed,
    failed,
    allEnded: allEnded === true,
    ...(firstError ? { firstError } : {}),
  };
}
