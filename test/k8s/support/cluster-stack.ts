// The whole service on the test control plane: the API with its own redis-server and embedded S3
// store (test/support/api.ts), a namespace with the controller's ServiceAccount, Role (exactly
// CONTROLLER_RULES) and the Secrets runner pods read, and `media-service controller` processes
// (the built dist/cli.js) running the Kubernetes executor with that ServiceAccount's token. Its runner
// Jobs run as containers of the project's image on the real node; they reach the stack's Redis and S3
// store through the node's relays (node.expose).
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, openSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import {
  AppsV1Api,
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1Job,
  type V1Pod,
} from "@kubernetes/client-node";
import { buildJobManifest, kubernetesSettings } from "../../../controller/kubernetes/job-manifest.js";
import { CONTROLLER_RULES } from "../../../controller/kubernetes/rbac.js";
import { loadConfig } from "../../../core/config/load.js";
import { RUNNER_ENV } from "../../../core/config/runner-env.js";
import type { Job } from "../../../core/jobs/records.js";
import { startTestStack, type TestStack } from "../../support/api.js";
import { onFreePorts, PortTakenError } from "../../support/ports.js";
import type { TestCluster } from "./cluster.js";
import { deathSignalPrefix, onTestExit } from "./processes.js";
import { eventually } from "./eventually.js";

export { eventually };

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const DIST_CLI = join(ROOT, "dist/cli.js");
export const JOB_ID_LABEL = "media-service.io/job-id";
const CONTROLLER_SA = "media-service-controller";
const REDIS_SECRET = "media-service-redis";
const S3_SECRET = "media-service-s3";

export interface ClusterStackOptions {
  cluster: TestCluster;
  /** Raw overrides of the controller's `kubernetes` section (snake_case, as in config.yaml). */
  kubernetes?: Record<string, unknown>;
  /** Raw overrides of the controller's `executor` section. */
  executor?: Record<string, unknown>;
  /** The `ai` section of the API and the controller (snake_case, as in config.yaml). */
  ai?: Record<string, unknown>;
  /** The controller's log level (default debug: every step of every job, for the tests' diagnostics). */
  controllerLogLevel?: string;
  /** Secrets created in the namespace before anything starts: name → string data. */
  secrets?: Record<string, Record<string, string>>;
}

export interface PoolOptions {
  replicas: number;
  /** Jobs each worker runs at once (executor.pool.concurrency). */
  concurrency: number;
  /** Environment of the workers beyond the runner's (e.g. a quieter LOG_LEVEL). */
  env?: Record<string, string>;
  /** The container's resources; default: requests 250m / 256Mi, limits 2 CPUs / 2Gi. */
  resources?: { requests: Record<string, string>; limits: Record<string, string> };
}

export interface ControllerProcess {
  name: string;
  child: ChildProcess;
  port: number;
  logPath: string;
  exited: Promise<void>;
  /** GET on the controller's own server (/metrics, /healthz, /readyz). */
  get(path: string): Promise<{ status: number; body: string }>;
  /** The value of a metric sample (name with labels as printed), or undefined. */
  metric(sample: string): Promise<number | undefined>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export interface ClusterStack {
  namespace: string;
  stack: TestStack;
  /** The stack's Redis and S3 store as runner pods reach them. */
  podUrls: { redis: string; s3: string };
  admin: { core: CoreV1Api; batch: BatchV1Api; coordination: CoordinationV1Api };
  startController(name: string): Promise<ControllerProcess>;
  put(key: string, body: Buffer | Uint8Array, contentType?: string): Promise<void>;
  submit(path: string, body: Record<string, unknown>): Promise<string>;
  finished(id: string, limitMs?: number): Promise<Job>;
  /**
   * A Deployment of `media-service pool` workers in the namespace: the runner pod's hardened spec and
   * environment (as the controller builds it for a Job), the command `pool`, executor.pool's
   * concurrency, and CPU for its runners. Its pods are labelled `app=<name>`.
   */
  startPool(options: PoolOptions): Promise<{ name: string; pods(): Promise<V1Pod[]> }>;
  /** The runner Jobs (admin view) of one media job, by label. */
  kubeJobs(id: string): Promise<V1Job[]>;
  kubePods(id: string): Promise<V1Pod[]>;
  close(): Promise<void>;
}

const liveChildren = new Set<ChildProcess>();
/** Attempts at starting a controller when another process takes its port first. */
const PORT_ATTEMPTS = 3;
const killControllers = () => {
  for (const c of liveChildren) c.kill("SIGKILL");
};

export function kubeConfigFrom(path: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
}

export async function startClusterStack(options: ClusterStackOptions): Promise<ClusterStack> {
  const { cp, node } = options.cluster;
  const namespace = `media-${randomBytes(4).toString("hex")}`;
  const adminKc = kubeConfigFrom(cp.kubeconfigPath);
  const core = adminKc.makeApiClient(CoreV1Api);
  const batch = adminKc.makeApiClient(BatchV1Api);
  const coordination = adminKc.makeApiClient(CoordinationV1Api);
  const rbac = adminKc.makeApiClient(RbacAuthorizationV1Api);

  const stack = await startTestStack({
    config: {
      kubernetes: { ...(options.kubernetes ?? {}), namespace },
      ...(options.ai ? { ai: options.ai } : {}),
      log_level: "info",
    },
  });
  const dir = await mkdtemp(join(tmpdir(), "media-service-cluster-"));
  const podUrls = { redis: await node.expose(stack.redis.url), s3: await node.expose(stack.s3.url) };

  await core.createNamespace({ body: { metadata: { name: namespace } } });
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: CONTROLLER_SA } } });
  await rbac.createNamespacedRole({
    namespace,
    body: { metadata: { name: CONTROLLER_SA }, rules: CONTROLLER_RULES },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: CONTROLLER_SA },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: CONTROLLER_SA },
      subjects: [{ kind: "ServiceAccount", name: CONTROLLER_SA, namespace }],
    },
  });
  await core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: REDIS_SECRET }, stringData: { "redis-url": podUrls.redis } },
  });
  await core.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name: S3_SECRET },
      stringData: { "access-key-id": stack.s3.accessKeyId, "secret-access-key": stack.s3.secretAccessKey },
    },
  });
  for (const [name, stringData] of Object.entries(options.secrets ?? {})) {
    await core.createNamespacedSecret({ namespace, body: { metadata: { name }, stringData } });
  }
  const tokenRequest = await core.createNamespacedServiceAccountToken({
    name: CONTROLLER_SA,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 2 * 3600 } },
  });
  const token = tokenRequest.status?.token;
  if (!token) throw new Error("TokenRequest returned no token");
  const controllerKubeconfig = await cp.kubeconfigForToken(CONTROLLER_SA, token);

  const controllerConfig = {
    redis: { url: stack.redis.url, key_prefix: stack.config.redis.keyPrefix },
    storage: {
      // What the controller hands to runner pods, so the address pods reach.
      endpoint: podUrls.s3,
      region: stack.s3.region,
      access_key_id: stack.s3.accessKeyId,
      secret_access_key: stack.s3.secretAccessKey,
      force_path_style: true,
    },
    executor: { kind: "kubernetes", ...(options.executor ?? {}) },
    kubernetes: {
      namespace,
      image: options.cluster.image,
      image_pull_policy: "Never",
      redis_secret: { name: REDIS_SECRET },
      s3_secret: { name: S3_SECRET },
      reconcile_interval: "2s",
      leader_election: { lease_duration: "4s", renew_deadline: "3s", retry_period: "1s" },
      ...(options.kubernetes ?? {}),
    },
    ...(options.ai ? { ai: options.ai } : {}),
    data_dir: dir,
    log_level: options.controllerLogLevel ?? "debug",
  };
  const settings = kubernetesSettings(loadConfig({ env: {}, overrides: controllerConfig }));
  const configPath = join(dir, "controller.json");
  await writeFile(configPath, JSON.stringify(controllerConfig, null, 2));
  const controllers: ControllerProcess[] = [];

  // A controller on a free port; on another one when a process took the port between freePort() and
  // the controller's listen (its log then says EADDRINUSE and it exits), as the control plane's
  // components and versitygw are started.
  const startController = (name: string): Promise<ControllerProcess> =>
    onFreePorts(1, PORT_ATTEMPTS, ([port]) => launchController(name, port!));

  const launchController = async (name: string, port: number): Promise<ControllerProcess> => {
    const logPath = join(dir, `${name}.log`);
    const logged = statSync(logPath, { throwIfNoEntry: false })?.size ?? 0;
    const fd = openSync(logPath, "a");
    const env: NodeJS.ProcessEnv = {};
    for (const k of ["PATH", "HOME", "LANG", "TMPDIR"]) if (process.env[k]) env[k] = process.env[k];
    Object.assign(env, {
      CONFIG_FILE: configPath,
      KUBECONFIG: controllerKubeconfig,
      PORT: String(port),
      HOSTNAME: name,
    });
    let child: ChildProcess;
    try {
      const [command = process.execPath, ...args] = [
        ...deathSignalPrefix(),
        process.execPath,
        DIST_CLI,
        "controller",
      ];
      child = spawn(command, args, { env, stdio: ["ignore", fd, fd] });
    } finally {
      closeSync(fd);
    }
    onTestExit(killControllers);
    liveChildren.add(child);
    const exited = new Promise<void>((res) => child.once("exit", () => res()));
    void exited.then(() => liveChildren.delete(child));
    const base = `http://127.0.0.1:${port}`;
    const get = async (path: string) => {
      const res = await fetch(`${base}${path}`);
      return { status: res.status, body: await res.text() };
    };
    const controller: ControllerProcess = {
      name,
      child,
      port,
      logPath,
      exited,
      get,
      async metric(sample) {
        const { body } = await get("/metrics");
        for (const line of body.split("\n")) {
          if (line.startsWith(`${sample} `)) return Number(line.slice(sample.length + 1));
        }
        return undefined;
      },
      async kill(signal = "SIGTERM") {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        await exited;
      },
    };
    const portTaken = () =>
      child.exitCode !== null && readFileSync(logPath).subarray(logged).toString().includes("EADDRINUSE");
    controllers.push(controller);
    const state = await eventually(
      `controller ${name} to serve /healthz`,
      async () => {
        if (portTaken()) return "port taken";
        return (await get("/healthz").catch(() => undefined))?.status === 200 ? "up" : undefined;
      },
      30_000,
      async () => readFileSync(logPath, "utf8").split("\n").slice(-30).join("\n"),
    );
    if (state === "port taken") {
      controllers.splice(controllers.indexOf(controller), 1);
      throw new PortTakenError(`port ${port} was taken before the controller listened on it`);
    }
    return controller;
  };

  const startPool = async (pool: PoolOptions) => {
    const name = "media-pool";
    const template = buildJobManifest(
      { id: "00000000-0000-4000-8000-000000000000", type: "image_resize" } as Job,
      settings,
      60,
    ).spec!.template.spec!;
    const container = template.containers[0]!;
    const apps = adminKc.makeApiClient(AppsV1Api);
    await apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name },
        spec: {
          replicas: pool.replicas,
          selector: { matchLabels: { app: name } },
          template: {
            metadata: { labels: { app: name } },
            spec: {
              ...template,
              restartPolicy: "Always",
              terminationGracePeriodSeconds: 30,
              containers: [
                {
                  ...container,
                  name: "pool",
                  command: ["tini", "--", "media-service", "pool"],
                  env: [
                    ...(container.env ?? []).filter(
                      (e) => e.name !== RUNNER_ENV.jobTimeoutSeconds && !(e.name in (pool.env ?? {})),
                    ),
                    { name: "POOL_CONCURRENCY", value: String(pool.concurrency) },
                    { name: "PORT", value: "8080" },
                    ...Object.entries(pool.env ?? {}).map(([name, value]) => ({ name, value })),
                  ],
                  resources: pool.resources ?? {
                    requests: { cpu: "250m", memory: "256Mi" },
                    limits: { cpu: "2", memory: "2Gi" },
                  },
                },
              ],
            },
          },
        },
      },
    });
    const pods = async () =>
      (await core.listNamespacedPod({ namespace, labelSelector: `app=${name}` })).items;
    await eventually(
      `${pool.replicas} pool pods running`,
      async () => {
        const running = (await pods()).filter(
          (p) => !p.metadata?.deletionTimestamp && p.status?.containerStatuses?.[0]?.ready,
        );
        return running.length >= pool.replicas ? true : undefined;
      },
      120_000,
    );
    return { name, pods };
  };

  return {
    namespace,
    stack,
    podUrls,
    admin: { core, batch, coordination },
    startController,
    startPool,
    async put(key, body, contentType = "application/octet-stream") {
      await stack.services.s3.send(
        new PutObjectCommand({ Bucket: stack.bucket, Key: key, Body: body, ContentType: contentType }),
      );
    },
    async submit(path, body) {
      const res = await stack.request(`/api/v1/jobs/${path}`, { method: "POST", json: body });
      const json = (await res.json()) as { job_id: string; error?: string };
      if (res.status !== 202) throw new Error(`submit ${path} answered ${res.status}: ${json.error}`);
      return json.job_id;
    },
    async finished(id, limitMs = 120_000) {
      return await eventually(
        `job ${id} to finish`,
        async () => {
          const job = await stack.services.store.getJob(id);
          return job && (job.status === "completed" || job.status === "failed") ? job : undefined;
        },
        limitMs,
      );
    },
    async kubeJobs(id) {
      const list = await batch.listNamespacedJob({ namespace, labelSelector: `${JOB_ID_LABEL}=${id}` });
      return list.items;
    },
    async kubePods(id) {
      const list = await core.listNamespacedPod({ namespace, labelSelector: `${JOB_ID_LABEL}=${id}` });
      return list.items;
    },
    async close() {
      await Promise.all(controllers.map((c) => c.kill("SIGKILL")));
      await core.deleteNamespace({ name: namespace }).catch(() => undefined);
      await stack.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
