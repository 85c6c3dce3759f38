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
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { cpus, loadavg, release, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import {
  BatchV1Api,
  CoreV1Api,
  Watch,
  type KubeConfig,
  type KubernetesObject,
  type V1Job,
  type V1Pod,
} from "@kubernetes/client-node";
import { RUNNER_ENV } from "../core/config/runner-env.js";
import type { Job } from "../core/jobs/records.js";
import { startTestStack, type TestStack } from "../test/support/api.js";
import { makeImage } from "../test/support/media.js";
import { startTestCluster, type TestCluster } from "../test/k8s/support/cluster.js";
import {
  DIST_CLI,
  kubeConfigFrom,
  startClusterStack,
  type ClusterStack,
  type ControllerProcess,
} from "../test/k8s/support/cluster-stack.js";

function knob(name: string, fallback: number, min = 1): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name}=${raw}: an integer >= ${min}`);
  return value;
}

const PARTS = ["pods", "latency", "throughput", "pool"] as const;
type Part = (typeof PARTS)[number];

const log = (line: string) => console.error(`k8s bench: ${line}`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");
const ms = (x: number) => (Number.isFinite(x) ? `${Math.round(x)} ms` : "–");
function ratio(a: number, b: number): string {
  const r = a / b;
  if (!Number.isFinite(r) || b <= 0) return "–";
  return `${r >= 10 ? r.toFixed(0) : r >= 0.1 ? r.toFixed(2) : r.toPrecision(2)}×`;
}
const secs = (x: number) => (Number.isFinite(x) ? `${(x / 1000).toFixed(1)} s` : "–");
/** What the run is doing: named when one step takes long (see k8sBenchmark's keep-alive). */
let stage = "starting";
let stageSince = Date.now();
const step = (what: string) => {
  stage = what;
  stageSince = Date.now();
};
const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

const SOURCE_KEY = "in/tiny.png";
const SLO_P99_MS = 5000;
/** The image jobs' default CPU request (core/config/schema.ts) and what CoreDNS requests on the node. */
const RUNNER_CPU_MILLI = 250;
const COREDNS_CPU_MILLI = 50;

interface Summary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentiles. */
function summarize(values: number[]): Summary {
  const s = [...values].sort((a, b) => a - b);
  const at = (p: number) =>
    s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
  return { n: s.length, p50: at(50), p90: at(90), p99: at(99), max: s.at(-1) ?? NaN };
}

type WatchEvent = "ADDED" | "MODIFIED" | "DELETED";

/**
 * Lists, then watches a collection from that list's resourceVersion; the watch is resumed from the
 * last resourceVersion seen (bookmarks on) when it ends, and the list is redone when the server answers
 * 410 Gone. Objects found by a (re)list are reported as ADDED.
 */
async function watchCollection<T extends KubernetesObject>(
  kc: KubeConfig,
  path: string,
  list: () => Promise<{ items: T[]; metadata?: { resourceVersion?: string } }>,
  handler: (event: WatchEvent, obj: T) => void,
): Promise<{ stop(): Promise<void> }> {
  const watch = new Watch(kc);
  let resourceVersion = "";
  let stopped = false;
  let abort: AbortController | undefined;
  const relist = async () => {
    const listed = await list();
    for (const obj of listed.items) handler("ADDED", obj);
    resourceVersion = listed.metadata?.resourceVersion ?? "";
  };
  await relist();
  const loop = (async () => {
    while (!stopped) {
      let gone = false;
      const ended = await new Promise<unknown>((resolve) => {
        watch
          .watch(
            path,
            { resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 60 },
            (phase: string, obj: T & { code?: number }) => {
              if (phase === "ERROR") {
                gone = obj.code === 410;
                return;
              }
              if (obj.metadata?.resourceVersion) resourceVersion = obj.metadata.resourceVersion;
              if (phase === "ADDED" || phase === "MODIFIED" || phase === "DELETED") handler(phase, obj);
            },
            resolve,
          )
          .then((a) => {
            abort = a;
            if (stopped) a.abort();
          })
          .catch(resolve);
      });
      if (stopped) break;
      if (gone) await relist().catch(() => sleep(200));
      else if (ended) await sleep(200);
    }
  })();
  return {
    async stop() {
      stopped = true;
      abort?.abort();
      await loop;
    },
  };
}

/** Watches the pods of `namespace` (watchCollection), calling `onPod` for each event of a named pod. */
function watchPods(
  kc: KubeConfig,
  namespace: string,
  onPod: (event: WatchEvent, name: string, pod: V1Pod) => void,
): Promise<{ stop(): Promise<void> }> {
  const core = kc.makeApiClient(CoreV1Api);
  return watchCollection<V1Pod>(
    kc,
    `/api/v1/namespaces/${namespace}/pods`,
    () => core.listNamespacedPod({ namespace }),
    (event, pod) => {
      const name = pod.metadata?.name;
      if (name) onPod(event, name, pod);
    },
  );
}

/** A container of the pod has started: it runs, or it ran. */
const containerStarted = (pod: V1Pod): boolean =>
  pod.status?.containerStatuses?.some((c) => c.state?.running || c.state?.terminated?.startedAt) ?? false;

/** Polls until `check` gives a value; undefined when `limitMs` passed first. */
async function waitUntil<T>(
  check: () => T | undefined | Promise<T | undefined>,
  limitMs: number,
  everyMs = 20,
) {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) return undefined;
    await sleep(everyMs);
  }
}

/** How containerd names a Docker reference: media-service:dev → docker.io/library/media-service:dev. */
function containerdRef(ref: string): string {
  const first = ref.split("/")[0]!;
  if (!ref.includes("/")) return `docker.io/library/${ref}`;
  return /[.:]/.test(first) || first === "localhost" ? ref : `docker.io/${ref}`;
}

/**
 * Makes sure the node's containerd has the image under the name pods use. The node loads images from
 * `docker save` archives cached by image id, and an archive keeps the tag it was first saved under: an
 * image saved earlier as media-service:<hash> and named media-service:dev now is loaded under the
 * former, and every pod fails with ErrImageNeverPull. Then the image is saved under its name and
 * imported again (its layers are already there).
 */
async function ensureImage(cluster: TestCluster): Promise<void> {
  const want = containerdRef(cluster.image);
  const has = async () => (await cluster.node.ctr(["images", "ls", "-q"])).split("\n").includes(want);
  if (await has()) return;
  log(`the node has no image named ${want}: importing it again under that name`);
  const dir = await mkdtemp(join(tmpdir(), "media-service-bench-image-"));
  try {
    const archive = join(dir, "image.tar");
    await promisify(execFile)("docker", ["save", "-o", archive, cluster.image], { maxBuffer: 16 << 20 });
    await cluster.node.ctr(["images", "import", "--snapshotter", "overlayfs", archive]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  if (!(await has())) throw new Error(`the node's containerd still has no image ${want}`);
}

/** Deletes a namespace (if still there) and waits until it is gone, so the next part starts clean. */
async function removeNamespace(cluster: TestCluster, namespace: string): Promise<void> {
  const core = kubeConfigFrom(cluster.cp.kubeconfigPath).makeApiClient(CoreV1Api);
  await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  const gone = await waitUntil(
    async () => ((await core.readNamespace({ name: namespace }).catch(() => undefined)) ? undefined : true),
    180_000,
    250,
  );
  if (!gone) log(`namespace ${namespace} still terminating after 180 s; going on`);
}

// ---------------------------------------------------------------------------------------------
// Part pods: pod start latency

interface PodsResult {
  pods: number;
  wave: number;
  started: Summary;
  bound: Summary;
  missing: number;
  loadAfter: string;
}

async function podStartLatency(cluster: TestCluster): Promise<PodsResult> {
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

// ---------------------------------------------------------------------------------------------
// The two executors, as parts latency and throughput use them

interface Target {
  name: string;
  stack: TestStack;
  bucket: string;
  close(): Promise<void>;
}

async function putSource(stack: TestStack): Promise<void> {
  const png = await makeImage({ width: 64, height: 48, format: "png", photo: true });
  await stack.services.s3.send(
    new PutObjectCommand({ Bucket: stack.bucket, Key: SOURCE_KEY, Body: png, ContentType: "image/png" }),
  );
}

/** The service with the local executor at its default concurrency (one runner per CPU). */
async function startLocal(): Promise<Target> {
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

interface KubeTarget extends Target {
  cs: ClusterStack;
  controller: ControllerProcess;
}

/**
 * The cluster stack in a fresh namespace and one controller, leading. `beforeController` runs once
 * the namespace exists and before any Job can be created (to start watches).
 */
async function startKube(
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

const resizeBody = (t: Target, n: number) => ({
  source_bucket: t.bucket,
  source_key: SOURCE_KEY,
  dest_bucket: t.bucket,
  dest_key: `out/${n}.webp`,
  width: 32,
  height: 24,
  format: "webp",
});

/** Waits for a job to end: its "complete" event, with a slow poll as a backstop. */
async function ended(stack: TestStack, id: string, limitMs: number): Promise<Job | undefined> {
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

// ---------------------------------------------------------------------------------------------
// Part latency: one tiny resize at a time

interface SequentialFigures {
  total: Summary;
  /** Submit → processing (the runner started the job), from the record's started_at. */
  toStart: Summary;
  /** Processing → completed, from the record's started_at and completed_at. */
  run: Summary;
  failed: number;
  firstError?: string;
}

interface LatencyResult {
  jobs: number;
  cap: number;
  kube: SequentialFigures;
  local: SequentialFigures;
  localConcurrency: number;
  loadAfter: string;
}

async function sequentialLatency(cluster: TestCluster): Promise<LatencyResult> {
  const jobs = knob("BENCH_K8S_SEQ", 30);
  const warmup = knob("BENCH_K8S_SEQ_WARMUP", 2, 0);
  const cap = knob("BENCH_K8S_CAP", 10);
  const kube = await startKube(cluster, cap);
  let local: Target | undefined;
  try {
    local = await startLocal();
    const samples = new Map<
      Target,
      { total: number[]; toStart: number[]; run: number[]; errors: string[] }
    >();
    for (const t of [kube, local]) samples.set(t, { total: [], toStart: [], run: [], errors: [] });
    let n = 0;
    const one = async (t: Target, counted: boolean) => {
      const wall0 = Date.now();
      const t0 = performance.now();
      const res = await t.stack.request("/api/v1/jobs/image/resize", {
        method: "POST",
        json: resizeBody(t, n++),
      });
      const answer = (await res.json()) as { job_id?: string; error?: string };
      if (res.status !== 202 || !answer.job_id)
        throw new Error(`${t.name}: submit answered ${res.status}: ${answer.error}`);
      step(`latency: waiting for ${t.name} job ${answer.job_id}`);
      const job = await ended(t.stack, answer.job_id, 300_000);
      const t1 = performance.now();
      if (!job) throw new Error(`${t.name}: job ${answer.job_id} did not end within 300 s`);
      if (!counted) return;
      const s = samples.get(t)!;
      if (job.status !== "completed") {
        s.errors.push(job.error ?? job.status);
        return;
      }
      s.total.push(t1 - t0);
      if (job.started_at && job.completed_at) {
        s.toStart.push(Date.parse(job.started_at) - wall0);
        s.run.push(Date.parse(job.completed_at) - Date.parse(job.started_at));
      }
    };
    for (let i = 0; i < warmup; i++) {
      await one(kube, false);
      await one(local, false);
    }
    log(`latency: ${jobs} resizes per executor, one at a time, alternating (load ${load()})`);
    for (let i = 0; i < jobs; i++) {
      // Alternating which goes first too, so neither always follows the other.
      for (const t of i % 2 === 0 ? [kube, local] : [local, kube]) await one(t, true);
      if ((i + 1) % 10 === 0 || i + 1 === jobs) {
        const k = summarize(samples.get(kube)!.total);
        const l = summarize(samples.get(local)!.total);
        log(`latency: ${i + 1}/${jobs}: kubernetes p50 ${ms(k.p50)}, local p50 ${ms(l.p50)}`);
      }
    }
    const figures = (t: Target): SequentialFigures => {
      const s = samples.get(t)!;
      return {
        total: summarize(s.total),
        toStart: summarize(s.toStart),
        run: summarize(s.run),
        failed: s.errors.length,
        ...(s.errors[0] ? { firstError: s.errors[0] } : {}),
      };
    };
    return {
      jobs,
      cap,
      kube: figures(kube),
      local: figures(local),
      localConcurrency: local.stack.config.executor.localConcurrency,
      loadAfter: load(),
    };
  } finally {
    await local?.close().catch((e: unknown) => log(`cleanup: ${errorText(e)}`));
    await kube.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Part throughput: a drain of many tiny jobs

interface DrainFigures {
  jobs: number;
  seconds: number;
  completed: number;
  failed: number;
  allEnded: boolean;
  firstError?: string;
}

interface ThroughputResult {
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

/** What a drain submits: the tiny resize, or another source and size. */
interface DrainWork {
  key: string;
  parameters: Record<string, unknown>;
}
const TINY_WORK: DrainWork = { key: SOURCE_KEY, parameters: { width: 32, height: 24, format: "webp" } };

async function drain(
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

async function throughput(cluster: TestCluster): Promise<ThroughputResult> {
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

const PHOTO_KEY = "in/photo-1mp.jpg";
const POOL_WORK: DrainWork = { key: PHOTO_KEY, parameters: { width: 320, height: 240, format: "jpeg" } };

async function putPhoto(stack: TestStack): Promise<void> {
  const jpeg = await makeImage({ width: 1224, height: 816, format: "jpeg", photo: true });
  await stack.services.s3.send(
    new PutObjectCommand({ Bucket: stack.bucket, Key: PHOTO_KEY, Body: jpeg, ContentType: "image/jpeg" }),
  );
}

interface PoolResult {
  jobs: number;
  cap: number;
  concurrency: number;
  local: DrainFigures;
  pool: DrainFigures;
  perTask: DrainFigures;
  /** Kubernetes Jobs created during the pool's drain (none expected). */
  jobsDuringPool: number;
}

async function poolPart(cluster: TestCluster): Promise<PoolResult> {
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

// ---------------------------------------------------------------------------------------------

interface Row {
  figure: string;
  kube: string;
  local: string;
  ratio: string;
  note: string;
}

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
    const s = Math.round((Date.now() - stageSince) / 1000);
    if (s >= 300 && warnedFor !== `${stage}@${stageSince}`) {
      warnedFor = `${stage}@${stageSince}`;
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
  if (pods) {
    const p = pods;
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
          `Kubernetes SLO: p99 <= 5 s excluding image pull` +
          (p.missing ? `; ${p.missing} never started` : ""),
      },
    );
  }
  if (latency) {
    const l = latency;
    console.log(
      `\nSubmit → completed, one tiny resize at a time (64x48 PNG → 32x24 WebP, ${l.jobs} per executor, ` +
        `alternating): Kubernetes executor (max_running_jobs ${l.cap}) vs local executor\n`,
    );
    const line = (f: SequentialFigures) => ({
      "p50 ms": Math.round(f.total.p50),
      "p99 ms": Math.round(f.total.p99),
      "max ms": Math.round(f.total.max),
      "→ processing p50 ms": Math.round(f.toStart.p50),
      "runner p50 ms": Math.round(f.run.p50),
      failed: f.failed,
    });
    console.table({ kubernetes: line(l.kube), local: line(l.local) });
    console.log(
      `kubernetes/local: p50 ${ratio(l.kube.total.p50, l.local.total.p50)}, p99 ${ratio(l.kube.total.p99, l.local.total.p99)}` +
        ` ("→ processing" = submit → the runner started the job; "runner" = processing → completed)`,
    );
    for (const [name, f] of [["kubernetes", l.kube] as const, ["local", l.local] as const]) {
      if (f.firstError) console.log(`${name}: ${f.failed} failed, first: ${f.firstError}`);
    }
    rows.push(
      {
        figure: `Resize submit → completed p50 (sequential, ${l.jobs} each)`,
        kube: ms(l.kube.total.p50),
        local: ms(l.local.total.p50),
        ratio: ratio(l.kube.total.p50, l.local.total.p50),
        note: `of which submit → runner started: ${ms(l.kube.toStart.p50)} vs ${ms(l.local.toStart.p50)}`,
      },
      {
        figure: `Resize submit → completed p99`,
        kube: ms(l.kube.total.p99),
        local: ms(l.local.total.p99),
        ratio: ratio(l.kube.total.p99, l.local.total.p99),
        note:
          `one pod per job vs ${l.localConcurrency} warm local runners` +
          (l.kube.failed + l.local.failed > 0 ? `; failed ${l.kube.failed} vs ${l.local.failed}` : ""),
      },
    );
  }
  if (drains) {
    const d = drains;
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
  }

  if (pooled) {
    const p = pooled;
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
  }

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
