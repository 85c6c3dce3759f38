// The test node agent: a small kubelet for the k8s tests. It registers a Node, keeps it Ready (a Lease
// in kube-node-lease and the Ready heartbeat, renewed every 10 s), and runs the pods bound to it as
// local processes: no containers and no images, but real pod status written as a kubelet writes it,
// real memory limits (a memory cgroup per container) and real termination (SIGTERM, grace, SIGKILL).
// Everything goes through the API server; see test/k8s/README.md ("The test node agent").
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, rmdir, writeFile } from "node:fs/promises";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { connect } from "node:net";
import { constants as osConstants, release, tmpdir } from "node:os";
import { dirname, isAbsolute, join, relative } from "node:path";
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  V1MicroTime,
  VersionApi,
  Watch,
  type V1Container,
  type V1ContainerState,
  type V1ContainerStatus,
  type V1EnvVarSource,
  type V1HTTPGetAction,
  type V1KeyToPath,
  type V1Lease,
  type V1Node,
  type V1NodeCondition,
  type V1Pod,
  type V1PodCondition,
  type V1PodStatus,
  type V1Probe,
  type V1Taint,
  type V1Volume,
} from "@kubernetes/client-node";
import { parseQuantity } from "../../../core/quantity.js";
import { deathSignalPrefix, isAlive, lookPath, onTestExit } from "./processes.js";

const SERVICE_ACCOUNT_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount";

export interface NodeAgentOptions {
  /** Kubeconfig the agent talks to the API server with (the admin one is fine for tests). */
  kubeconfigPath: string;
  /** Default `test-node-<random>`. */
  nodeName?: string;
  /** Node capacity (= allocatable); merged over {cpu: "8", memory: "32Gi", pods: "250", ephemeral-storage: "100Gi"}. */
  capacity?: Record<string, string>;
  /** Extra node labels (kubernetes.io/hostname, kubernetes.io/os and kubernetes.io/arch are always set). */
  labels?: Record<string, string>;
  /** Node taints, e.g. to keep kube-scheduler from placing other pods on a second agent. */
  taints?: V1Taint[];
  /** A container's command[0] → the local argv prefix that runs it; other commands run as given. */
  commands?: Record<string, string[]>;
  /**
   * An image reference (exactly as in the pod spec, e.g. "media-service:test") → the argv of its
   * ENTRYPOINT: a container without `command` runs entrypoint + args, as a container runtime does
   * (entrypoint[0] goes through `commands` too). The image's CMD is not modelled.
   */
  entrypoints?: Record<string, string[]>;
  /** Period of every readiness probe in ms, instead of its periodSeconds (default 10 s): for tests. */
  probePeriodMs?: number;
  /** Extra environment for every process (over PATH, HOME and HOSTNAME); the pod's own env wins. */
  env?: Record<string, string>;
  /** Bind unassigned pods (of `schedulerName`, in `namespaces`) to this node, for tests without a scheduler. */
  bind?: boolean;
  /** The pods `bind` binds; default "default-scheduler". */
  schedulerName?: string;
  /** The namespaces `bind` binds pods in; default all. */
  namespaces?: string[];
  /** Images matching it never pull: ErrImagePull, then ImagePullBackOff; the pod stays Pending. */
  pullFailure?: RegExp;
  /** Fault injection: an exit code makes the container "crash" with it without running. */
  beforeStart?: (pod: V1Pod, container: V1Container) => undefined | { exitCode: number; message?: string };
  /** Enforce memory limits with a memory cgroup when one is writable (default); false: poll RSS instead. */
  memoryCgroups?: boolean;
  /** Cap on a deleted pod's grace period before SIGKILL; default 3 s. */
  maxGracePeriodSeconds?: number;
  log?: (message: string) => void;
}

export interface NodeAgent {
  readonly nodeName: string;
  /** The agent's temp dir: pods/<uid>/ (volumes, termination messages) and logs/. */
  readonly dir: string;
  /** "namespace/name" of every pod with a live container process. */
  running(): string[];
  /** The live container processes (each its own process group) of a pod ("name" or "namespace/name"). */
  pids(pod: string): number[];
  /** A container's stdout + stderr (default: the first container); kept until stop(). */
  logs(pod: string, container?: string): Promise<string>;
  /** A kubelet node-pressure eviction: kill the pod, phase Failed, reason Evicted, DisruptionTarget=True. */
  evict(pod: string, message?: string): Promise<void>;
  /** Kill every process, stop the watches and the heartbeat, remove the temp dir; the Node object stays. */
  stop(): Promise<void>;
}

const DIR_PREFIX = "media-service-node-agent-";
const CGROUP_PREFIX = "media-node-agent-";
const NODE_IP = "127.0.0.1";
const NODE_LEASE_NAMESPACE = "kube-node-lease";
const HEARTBEAT_MS = 10_000;
const LEASE_DURATION_SECONDS = 40;
const WATCH_TIMEOUT_SECONDS = 20; // under client-node's 30 s inactivity timeout
const WATCH_RETRY_MS = 1_000;
const CONFIG_RETRY_MS = 2_000;
const PULL_BACKOFF_MS = 1_000;
const RSS_POLL_MS = 100;
// kubelet's CrashLoopBackOff: the first restart is immediate, then 10 s doubling up to 5 min; a
// container that ran for 10 min starts over.
const RESTART_BACKOFF_INITIAL_MS = 10_000;
const RESTART_BACKOFF_MAX_MS = 300_000;
const RESTART_BACKOFF_RESET_MS = 600_000;
const DEFAULT_FILE_MODE = 0o644; // configMap, secret, projected and downwardAPI volumes' defaultMode
const DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600;
const EVICTION_GRACE_SECONDS = 1; // kubelet's hard-eviction grace period
const MAX_TERMINATION_MESSAGE_BYTES = 4096;
const FALLBACK_LOG_LINES = 80;
const FALLBACK_LOG_BYTES = 2048;
const DEFAULT_TERMINATION_PATH = "/dev/termination-log";
const DEFAULT_EVICTION_MESSAGE = "The node was low on resource: memory. ";
const NOT_READY_TAINTS = ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"];
const DEFAULT_CAPACITY = { cpu: "8", memory: "32Gi", pods: "250", "ephemeral-storage": "100Gi" };

const delay = (ms: number) => new Promise<void>((res) => setTimeout(res, ms));

/** Sleeps, waking early when the signal aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((res) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      res();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done);
  });
}

function isStatus(err: unknown, code: number): boolean {
  return err instanceof ApiException && err.code === code;
}

function errorText(err: unknown): string {
  if (err instanceof ApiException) {
    const body = err.body as { message?: string } | string | undefined;
    return `HTTP ${err.code}: ${typeof body === "string" ? body : (body?.message ?? "")}`;
  }
  return err instanceof Error ? err.message : String(err);
}

// ---------------------------------------------------------------------------------------------------
// Nothing the agent starts may outlive the test process.

const liveGroups = new Set<number>();
const liveCgroups = new Set<MemoryCgroup>();
const liveDirs = new Set<string>();

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

function killPid(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}

function killAllSync(): void {
  for (const pgid of liveGroups) killGroup(pgid, "SIGKILL");
  for (const cgroup of liveCgroups) cgroup.killAll();
  for (const cgroup of liveCgroups) {
    try {
      rmdirSync(cgroup.dir);
    } catch {
      // still busy for a moment after SIGKILL: the next agent start removes it
    }
  }
  for (const dir of liveDirs) rmSync(dir, { recursive: true, force: true });
}

function ownerAlive(name: string, prefix: string): boolean {
  const pid = Number(/^(\d+)-/.exec(name.slice(prefix.length))?.[1]);
  return !Number.isInteger(pid) || pid === process.pid || isAlive(pid);
}

// ---------------------------------------------------------------------------------------------------
// Memory cgroups: one per container, under the agent's own memory cgroup (v1) or the nearest cgroup v2
// ancestor with the memory controller enabled for its children.

interface CgroupParent {
  version: 1 | 2;
  dir: string;
}

interface Mount {
  root: string;
  mountPoint: string;
  fsType: string;
  options: string[];
}

function readMounts(): Mount[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .flatMap((line) => {
      const fields = line.split(" ");
      const sep = fields.indexOf("-");
      if (sep < 0) return [];
      return [
        {
          root: fields[3] ?? "/",
          mountPoint: fields[4] ?? "",
          fsType: fields[sep + 1] ?? "",
          options: (fields[sep + 3] ?? "").split(","),
        },
      ];
    });
}

function findCgroupParent(): CgroupParent | undefined {
  if (process.platform !== "linux") return undefined;
  let self: string[];
  let mounts: Mount[];
  try {
    self = readFileSync("/proc/self/cgroup", "utf8").split("\n");
    mounts = readMounts();
  } catch {
    return undefined;
  }
  for (const line of self) {
    const [, controllers = "", path = "/"] = line.split(":");
    if (!controllers.split(",").includes("memory")) continue;
    const mount = mounts.find((m) => m.fsType === "cgroup" && m.options.includes("memory"));
    if (mount)
      return probeCgroupParent({ version: 1, dir: join(mount.mountPoint, relative(mount.root, path)) });
  }
  const own = self.find((l) => l.startsWith("0::"));
  const mount = mounts.find((m) => m.fsType === "cgroup2");
  if (!own || !mount) return undefined;
  // cgroup v2's "no internal processes" rule: our own cgroup usually cannot enable memory for children
  // while it holds processes, so the containers' cgroups may have to go under an ancestor.
  for (let dir = join(mount.mountPoint, relative(mount.root, own.slice(3))); ; dir = dirname(dir)) {
    try {
      if (readFileSync(join(dir, "cgroup.controllers"), "utf8").split(/\s+/).includes("memory")) {
        const subtree = join(dir, "cgroup.subtree_control");
        if (!readFileSync(subtree, "utf8").split(/\s+/).includes("memory")) writeFileSync(subtree, "+memory");
        return probeCgroupParent({ version: 2, dir });
      }
    } catch {
      // not here: try the parent
    }
    if (dir === mount.mountPoint || dir === dirname(dir)) return undefined;
  }
}

function probeCgroupParent(parent: CgroupParent): CgroupParent | undefined {
  const probe = join(parent.dir, `${CGROUP_PREFIX}${process.pid}-probe`);
  try {
    mkdirSync(probe);
    writeFileSync(join(probe, parent.version === 1 ? "memory.limit_in_bytes" : "memory.max"), "67108864");
    return parent;
  } catch {
    return undefined;
  } finally {
    try {
      rmdirSync(probe);
    } catch {
      // was not created
    }
  }
}

class MemoryCgroup {
  private constructor(
    readonly dir: string,
    private readonly version: 1 | 2,
  ) {}

  static async create(parent: CgroupParent, name: string, limitBytes?: number): Promise<MemoryCgroup> {
    const cgroup = new MemoryCgroup(join(parent.dir, name), parent.version);
    await mkdir(cgroup.dir);
    liveCgroups.add(cgroup);
    if (limitBytes !== undefined) {
      const limit = String(limitBytes);
      if (parent.version === 1) {
        await writeFile(join(cgroup.dir, "memory.limit_in_bytes"), limit);
        // No swapping past the limit either (only where swap accounting exists).
        await writeFile(join(cgroup.dir, "memory.memsw.limit_in_bytes"), limit).catch(() => {});
      } else {
        await writeFile(join(cgroup.dir, "memory.max"), limit);
        await writeFile(join(cgroup.dir, "memory.swap.max"), "0").catch(() => {});
      }
    }
    return cgroup;
  }

  get procsFile(): string {
    return join(this.dir, "cgroup.procs");
  }

  /** Whether the kernel OOM killer killed a process of this cgroup. */
  async oomKilled(signal: NodeJS.Signals | null): Promise<boolean> {
    const read = (file: string) => readFile(join(this.dir, file), "utf8").catch(() => "");
    const events = await read(this.version === 1 ? "memory.oom_control" : "memory.events");
    const kills = /^oom_kill (\d+)$/m.exec(events);
    if (kills) return Number(kills[1]) > 0;
    // Older v1 kernels have no oom_kill counter: the limit was hit and the process died by SIGKILL.
    return Number(await read("memory.failcnt")) > 0 && signal === "SIGKILL";
  }

  killAll(): void {
    let pids: string[];
    try {
      pids = readFileSync(this.procsFile, "utf8").split("\n").filter(Boolean);
    } catch {
      return;
    }
    for (const pid of pids) killPid(Number(pid));
  }

  async remove(): Promise<void> {
    for (let attempt = 0; attempt < 50; attempt++) {
      this.killAll();
      try {
        await rmdir(this.dir);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") break;
        await delay(50);
      }
    }
    liveCgroups.delete(this);
  }
}

/** Cgroups and temp dirs of agents whose test process died by SIGKILL (no exit hook ran). */
async function removeStale(cgroupParent: CgroupParent | undefined): Promise<void> {
  if (cgroupParent) {
    const names = await readdir(cgroupParent.dir).catch(() => [] as string[]);
    for (const name of names) {
      if (!name.startsWith(CGROUP_PREFIX) || ownerAlive(name, CGROUP_PREFIX)) continue;
      const dir = join(cgroupParent.dir, name);
      const procs = await readFile(join(dir, "cgroup.procs"), "utf8").catch(() => "");
      for (const pid of procs.split("\n").filter(Boolean)) killPid(Number(pid));
      await delay(50);
      await rmdir(dir).catch(() => {});
    }
  }
  const dirs = await readdir(tmpdir()).catch(() => [] as string[]);
  for (const name of dirs) {
    if (name.startsWith(DIR_PREFIX) && !ownerAlive(name, DIR_PREFIX)) {
      await rm(join(tmpdir(), name), { recursive: true, force: true });
    }
  }
}

/** Resident memory of a process group (all processes with that pgid), from /proc. */
let pageSize: number | undefined;
function groupRss(pgid: number): number {
  pageSize ??= Number(spawnSync("getconf", ["PAGESIZE"], { encoding: "utf8" }).stdout) || 4096;
  let total = 0;
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue;
    }
    // Fields after "(comm) ": state ppid pgrp … rss is the 22nd of them.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid) total += Number(fields[21]) * pageSize;
  }
  return total;
}

// ---------------------------------------------------------------------------------------------------
// List + watch of pods, with a relist after 410 Gone and a restart after any error.

type PodEvent = "ADDED" | "MODIFIED" | "DELETED";

class PodListWatch {
  private resourceVersion: string | undefined;
  private readonly known = new Map<string, V1Pod>();
  private abort: AbortController | undefined;
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly kc: KubeConfig,
    private readonly core: CoreV1Api,
    private readonly fieldSelector: string,
    private readonly onEvent: (type: PodEvent, pod: V1Pod) => void,
    private readonly log: (message: string) => void,
  ) {}

  /** Resolves after the first list. */
  async start(): Promise<void> {
    await this.relist();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort?.abort();
    await this.loop;
  }

  private async relist(): Promise<void> {
    const list = await this.core.listPodForAllNamespaces({ fieldSelector: this.fieldSelector });
    const seen = new Set<string>();
    for (const pod of list.items) {
      const uid = pod.metadata?.uid;
      if (!uid) continue;
      seen.add(uid);
      const type = this.known.has(uid) ? "MODIFIED" : "ADDED";
      this.known.set(uid, pod);
      this.onEvent(type, pod);
    }
    for (const [uid, pod] of this.known) {
      if (seen.has(uid)) continue;
      this.known.delete(uid);
      this.onEvent("DELETED", pod);
    }
    this.resourceVersion = list.metadata?.resourceVersion;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let failed: boolean;
      try {
        if (this.resourceVersion === undefined) await this.relist();
        failed = await this.watchOnce();
      } catch (err) {
        failed = true;
        this.log(`watch ${this.fieldSelector}: ${errorText(err)}`);
      }
      if (failed && !this.stopped) await delay(WATCH_RETRY_MS);
    }
  }

  /** One watch request until the server closes it; true when it failed. */
  private watchOnce(): Promise<boolean> {
    return new Promise((resolve) => {
      const params = {
        fieldSelector: this.fieldSelector,
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: WATCH_TIMEOUT_SECONDS,
      };
      const onEvent = (type: string, obj: unknown) => {
        if (type === "ERROR") {
          const status = obj as { code?: number; message?: string };
          // 410 Gone: our resourceVersion is too old; list again.
          if (status.code === 410) this.resourceVersion = undefined;
          else this.log(`watch ${this.fieldSelector}: ${status.message ?? JSON.stringify(obj)}`);
          return;
        }
        // Watch events carry the JSON object: timestamps are strings, not Dates.
        const pod = obj as V1Pod;
        const uid = pod.metadata?.uid;
        if (pod.metadata?.resourceVersion) this.resourceVersion = pod.metadata.resourceVersion;
        if (type === "BOOKMARK" || !uid) return;
        if (type === "DELETED") this.known.delete(uid);
        else this.known.set(uid, pod);
        this.onEvent(type as PodEvent, pod);
      };
      const done = (err: unknown) => {
        if (err && !this.stopped) {
          if ((err as { statusCode?: number }).statusCode === 410) this.resourceVersion = undefined;
          else this.log(`watch ${this.fieldSelector}: ${errorText(err)}`);
        }
        resolve(Boolean(err));
      };
      new Watch(this.kc).watch("/api/v1/pods", params, onEvent, done).then(
        (abort) => {
          this.abort = abort;
          if (this.stopped) abort.abort();
        },
        (err: unknown) => done(err ?? new Error("watch failed")),
      );
    });
  }
}

// ---------------------------------------------------------------------------------------------------
// Pods

class ConfigError extends Error {}

interface ContainerRun {
  spec: V1Container;
  state: V1ContainerState;
  /** The previous instance's end (restartPolicy Always / OnFailure). */
  lastState: V1ContainerState;
  restartCount: number;
  /** The next restart's back-off (0: immediate). */
  backoffMs: number;
  started: boolean;
  child?: ChildProcess;
  /** The readiness probe's verdict; undefined without one (ready when running). */
  probeReady?: boolean;
  stopProbe?: AbortController;
  dir: string;
  terminationPath: string;
  logPath: string;
}

/** A file of a configMap, secret, downwardAPI or projected volume. */
interface VolumeFile {
  path: string;
  data: Buffer;
  mode: number;
}

interface Termination {
  reason: string;
  message: string;
  disruption?: boolean;
}

interface PodRun {
  key: string;
  namespace: string;
  name: string;
  uid: string;
  pod: V1Pod;
  dir: string;
  volumes: Map<string, string>;
  startTime: Date;
  containers: ContainerRun[];
  /** Aborted when the pod is being terminated: nothing more may start. */
  abort: AbortController;
  termination?: Termination;
  deleting: boolean;
  gone: boolean;
  dirty: boolean;
  writing?: Promise<void>;
  done: Promise<void>;
}

function isReady(c: ContainerRun): boolean {
  return Boolean(c.state.running) && c.probeReady !== false;
}

function isLive(c: ContainerRun): c is ContainerRun & { child: ChildProcess & { pid: number } } {
  return c.child?.pid !== undefined && c.child.exitCode === null && c.child.signalCode === null;
}

function memoryLimit(container: V1Container): number | undefined {
  const limit = container.resources?.limits?.memory;
  return limit === undefined ? undefined : Math.ceil(parseQuantity(limit));
}

/** Kubernetes' $(VAR) expansion: "$$" is "$", unknown variables are left as they are. */
function expand(value: string, env: Record<string, string>): string {
  return value.replace(/\$(?:\$|\(([^)]*)\))/g, (match, name: string | undefined) =>
    name === undefined ? "$" : (env[name] ?? match),
  );
}

function restartPolicy(pod: V1Pod): string {
  return pod.spec?.restartPolicy ?? "Always";
}

function unsupported(pod: V1Pod): string | undefined {
  if (pod.spec?.initContainers?.length) return "the test node agent does not run init containers";
  if (!pod.spec?.containers.length) return "the pod has no containers";
  return undefined;
}

/** kubelet's getPhase: a container waiting to be restarted counts as stopped, not as not started. */
function podPhase(run: PodRun): string {
  const states = run.containers.map((c) => c.state);
  if (run.termination && states.every((s) => s.terminated)) return "Failed";
  if (run.containers.some((c) => c.state.waiting && !c.lastState.terminated)) return "Pending";
  if (states.some((s) => s.running)) return "Running";
  // Every container has stopped: it is restarted unless the pod is terminating.
  const policy = restartPolicy(run.pod);
  const terminal = run.abort.signal.aborted;
  if (policy === "Always" && !terminal) return "Running";
  if (states.every((s) => s.terminated?.exitCode === 0)) return "Succeeded";
  return policy === "Never" || terminal ? "Failed" : "Running";
}

function resolvePort(port: number | string, container: V1Container): number | undefined {
  if (typeof port === "number") return port;
  if (/^\d+$/.test(port)) return Number(port);
  return container.ports?.find((p) => p.name === port)?.containerPort;
}

/** An httpGet probe, as kubelet's: a 2xx or 3xx answer within the timeout (redirects not followed). */
function httpProbe(
  action: V1HTTPGetAction,
  port: number,
  timeoutMs: number,
  userAgent: string,
): Promise<boolean> {
  const headers: Record<string, string> = { "User-Agent": userAgent, Accept: "*/*" };
  for (const h of action.httpHeaders ?? []) headers[h.name] = h.value;
  const path = action.path ?? "/";
  const options = {
    host: action.host || NODE_IP,
    port,
    path: path.startsWith("/") ? path : `/${path}`,
    method: "GET",
    headers,
    agent: false as const,
    signal: AbortSignal.timeout(timeoutMs),
  };
  return new Promise((resolve) => {
    const onResponse = (res: IncomingMessage) => {
      res.resume();
      const status = res.statusCode ?? 0;
      resolve(status >= 200 && status < 400);
    };
    const req =
      (action.scheme ?? "HTTP").toUpperCase() === "HTTPS"
        ? httpsRequest({ ...options, rejectUnauthorized: false }, onResponse)
        : httpRequest(options, onResponse);
    req.on("error", () => resolve(false));
    req.end();
  });
}

/** A tcpSocket probe: the port accepts a connection within the timeout. */
function tcpProbe(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once("connect", () => done(true));
    socket.once("timeout", () => done(false));
    socket.once("error", () => done(false));
  });
}

/** kubelet's FormatMap, for metadata.labels / metadata.annotations in a downwardAPI volume. */
function formatMap(map: Record<string, string> = {}): string {
  return Object.keys(map)
    .sort()
    .map((k) => `${k}=${JSON.stringify(map[k])}`)
    .join("\n");
}

/** Conditions of a type we set replace the old ones (keeping lastTransitionTime when unchanged). */
function mergeConditions<T extends { type: string; status: string; lastTransitionTime?: Date }>(
  current: T[],
  desired: T[],
): T[] {
  const now = new Date();
  const merged = current.filter((c) => !desired.some((d) => d.type === c.type));
  for (const d of desired) {
    const old = current.find((c) => c.type === d.type);
    merged.push({
      ...d,
      lastTransitionTime: old && old.status === d.status ? (old.lastTransitionTime ?? now) : now,
    });
  }
  return merged;
}

// ---------------------------------------------------------------------------------------------------

class Agent implements NodeAgent {
  readonly nodeName: string;
  dir = "";
  private readonly kc = new KubeConfig();
  private readonly core: CoreV1Api;
  private readonly leases: CoordinationV1Api;
  private readonly log: (message: string) => void;
  private readonly runs = new Map<string, PodRun>();
  private readonly watches: PodListWatch[] = [];
  private cgroupParent: CgroupParent | undefined;
  private heartbeat: ReturnType<typeof setInterval> | undefined;
  private stopped = false;
  private stopping: Promise<void> | undefined;
  private cgroupSeq = 0;
  private probeUserAgent = "kube-probe";

  constructor(private readonly options: NodeAgentOptions) {
    this.nodeName = options.nodeName ?? `test-node-${randomBytes(3).toString("hex")}`;
    this.kc.loadFromFile(options.kubeconfigPath);
    this.core = this.kc.makeApiClient(CoreV1Api);
    this.leases = this.kc.makeApiClient(CoordinationV1Api);
    const log = options.log ?? (() => {});
    this.log = (message) => log(`node-agent ${this.nodeName}: ${message}`);
  }

  async start(): Promise<void> {
    onTestExit(killAllSync);
    if (this.options.memoryCgroups !== false) this.cgroupParent = findCgroupParent();
    this.log(
      this.cgroupParent
        ? `memory limits: cgroup v${this.cgroupParent.version} under ${this.cgroupParent.dir}`
        : "memory limits: polling RSS (no writable memory cgroup)",
    );
    await removeStale(this.cgroupParent);
    this.dir = await mkdtemp(join(tmpdir(), `${DIR_PREFIX}${process.pid}-`));
    liveDirs.add(this.dir);
    await mkdir(join(this.dir, "pods"));
    await mkdir(join(this.dir, "logs"));

    await this.registerNode();
    await this.renewLease();
    this.heartbeat = setInterval(() => void this.beat(), HEARTBEAT_MS);
    this.heartbeat.unref();

    const onPod = (type: PodEvent, pod: V1Pod) => this.onPod(type, pod);
    this.watches.push(
      new PodListWatch(this.kc, this.core, `spec.nodeName=${this.nodeName}`, onPod, this.log),
    );
    if (this.options.bind) {
      const scheduler = this.options.schedulerName ?? "default-scheduler";
      const onUnbound = (type: PodEvent, pod: V1Pod) => {
        if (type !== "DELETED") void this.bind(pod);
      };
      this.watches.push(
        new PodListWatch(
          this.kc,
          this.core,
          `spec.nodeName=,spec.schedulerName=${scheduler}`,
          onUnbound,
          this.log,
        ),
      );
    }
    for (const w of this.watches) await w.start();
    this.log("started");
  }

  // -------------------------------------------------------------------------------------------------
  // The Node, its Lease and heartbeat

  private nodeConditions(current: V1NodeCondition[] = []): V1NodeCondition[] {
    const now = new Date();
    const desired: V1NodeCondition[] = [
      ["MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"],
      ["DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"],
      ["PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"],
      ["Ready", "True", "KubeletReady", "kubelet is posting ready status"],
    ].map(([type, status, reason, message]) => ({
      type: type!,
      status: status!,
      reason,
      message,
      lastHeartbeatTime: now,
    }));
    return mergeConditions(current, desired);
  }

  private async registerNode(): Promise<void> {
    const version = await this.kc.makeApiClient(VersionApi).getCode();
    const resources = { ...DEFAULT_CAPACITY, ...this.options.capacity };
    const arch = process.arch === "x64" ? "amd64" : process.arch;
    const node: V1Node = {
      metadata: {
        name: this.nodeName,
        labels: {
          "kubernetes.io/hostname": this.nodeName,
          "kubernetes.io/os": "linux",
          "kubernetes.io/arch": arch,
          ...this.options.labels,
        },
      },
      spec: { taints: this.options.taints ?? [] },
      status: {
        capacity: resources,
        allocatable: resources,
        conditions: this.nodeConditions(),
        addresses: [
          { type: "InternalIP", address: NODE_IP },
          { type: "Hostname", address: this.nodeName },
        ],
        daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
        nodeInfo: {
          machineID: randomBytes(16).toString("hex"),
          systemUUID: randomUUID(),
          bootID: randomUUID(),
          kernelVersion: release(),
          osImage: "media-service test node agent",
          containerRuntimeVersion: "node-agent://0.1.0",
          kubeletVersion: version.gitVersion,
          kubeProxyVersion: "",
          operatingSystem: "linux",
          architecture: arch,
        },
      },
    };
    let created: V1Node;
    try {
      created = await this.core.createNode({ body: node });
    } catch (err) {
      if (!isStatus(err, 409)) throw err;
      // Registered before (a fixed nodeName): take the Node over, as a restarted kubelet does.
      const existing = await this.core.readNode({ name: this.nodeName });
      existing.metadata = {
        ...existing.metadata,
        labels: { ...existing.metadata?.labels, ...node.metadata?.labels },
      };
      existing.spec = { ...existing.spec, taints: node.spec?.taints };
      created = await this.core.replaceNode({ name: this.nodeName, body: existing });
      created.status = { ...node.status, conditions: this.nodeConditions(created.status?.conditions) };
      created = await this.core.replaceNodeStatus({ name: this.nodeName, body: created });
    }
    if (!created.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")) {
      await this.core.replaceNodeStatus({ name: this.nodeName, body: { ...created, status: node.status } });
    }
    // The TaintNodesByCondition admission plugin taints every new node not-ready:NoSchedule; the node
    // lifecycle controller lifts it once it sees Ready=True. Lift it now instead of waiting for that.
    await this.updateNode(async () => {
      const current = await this.core.readNode({ name: this.nodeName });
      const taints = current.spec?.taints ?? [];
      if (!taints.some((t) => NOT_READY_TAINTS.includes(t.key))) return undefined;
      current.spec = { ...current.spec, taints: taints.filter((t) => !NOT_READY_TAINTS.includes(t.key)) };
      return await this.core.replaceNode({ name: this.nodeName, body: current });
    });
    const minor = /^v(\d+\.\d+)/.exec(version.gitVersion)?.[1];
    if (minor) this.probeUserAgent = `kube-probe/${minor}`;
    this.log(`registered node (kubelet version ${version.gitVersion})`);
  }

  /** Read-modify-write with retries on 409 Conflict. */
  private async updateNode(update: () => Promise<unknown>): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await update();
        return;
      } catch (err) {
        if (!isStatus(err, 409) || attempt >= 5) throw err;
      }
    }
  }

  private async renewLease(): Promise<void> {
    const name = this.nodeName;
    const namespace = NODE_LEASE_NAMESPACE;
    const spec = () => ({
      holderIdentity: name,
      leaseDurationSeconds: LEASE_DURATION_SECONDS,
      renewTime: new V1MicroTime(Date.now()),
    });
    let lease: V1Lease;
    try {
      lease = await this.leases.readNamespacedLease({ name, namespace });
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
      const node = await this.core.readNode({ name });
      await this.leases.createNamespacedLease({
        namespace,
        body: {
          metadata: {
            name,
            ownerReferences: [{ apiVersion: "v1", kind: "Node", name, uid: node.metadata!.uid! }],
          },
          spec: spec(),
        },
      });
      return;
    }
    lease.spec = { ...lease.spec, ...spec() };
    await this.leases.replaceNamespacedLease({ name, namespace, body: lease });
  }

  private async beat(): Promise<void> {
    try {
      await this.renewLease();
      await this.updateNode(async () => {
        const node = await this.core.readNode({ name: this.nodeName });
        node.status = { ...node.status, conditions: this.nodeConditions(node.status?.conditions) };
        return await this.core.replaceNodeStatus({ name: this.nodeName, body: node });
      });
    } catch (err) {
      if (!this.stopped) this.log(`heartbeat: ${errorText(err)}`);
    }
  }

  private async bind(pod: V1Pod): Promise<void> {
    const { name, namespace } = pod.metadata ?? {};
    if (!name || !namespace || pod.spec?.nodeName || pod.metadata?.deletionTimestamp || this.stopped) return;
    if (this.options.namespaces && !this.options.namespaces.includes(namespace)) return;
    try {
      await this.core.createNamespacedPodBinding({
        name,
        namespace,
        body: { metadata: { name }, target: { apiVersion: "v1", kind: "Node", name: this.nodeName } },
      });
      this.log(`bound ${namespace}/${name}`);
    } catch (err) {
      // 409: bound meanwhile (by us on an earlier event, or by someone else).
      if (!isStatus(err, 409) && !isStatus(err, 404))
        this.log(`bind ${namespace}/${name}: ${errorText(err)}`);
    }
  }

  // -------------------------------------------------------------------------------------------------
  // Pod events

  private onPod(type: PodEvent, pod: V1Pod): void {
    const { uid, name, namespace, deletionTimestamp } = pod.metadata ?? {};
    if (!uid || !name || !namespace || this.stopped) return;
    const run = this.runs.get(uid);
    if (type === "DELETED") {
      if (run && !run.gone) this.forget(run);
      return;
    }
    if (!run) {
      // Not ours to run: deleted before we saw it, or finished before this agent started.
      if (deletionTimestamp) void this.confirmDeletion(namespace, name, uid);
      else if (pod.status?.phase !== "Succeeded" && pod.status?.phase !== "Failed") this.admit(pod);
      return;
    }
    run.pod = pod;
    if (deletionTimestamp && !run.deleting) {
      run.deleting = true;
      const grace = this.gracePeriod(pod.metadata?.deletionGracePeriodSeconds, run);
      this.log(`${run.key}: deleted, terminating (grace ${grace} s)`);
      void this.terminate(run, grace).then(() => this.confirmDeletion(namespace, name, uid));
    }
  }

  private gracePeriod(requested: number | undefined, run?: PodRun): number {
    const spec = requested ?? run?.pod.spec?.terminationGracePeriodSeconds ?? 30;
    return Math.min(spec, this.options.maxGracePeriodSeconds ?? 3);
  }

  private admit(pod: V1Pod): void {
    const { uid, name, namespace } = pod.metadata as { uid: string; name: string; namespace: string };
    const dir = join(this.dir, "pods", uid);
    const logDir = join(this.dir, "logs", `${namespace}_${name}_${uid}`);
    const run: PodRun = {
      key: `${namespace}/${name}`,
      namespace,
      name,
      uid,
      pod,
      dir,
      volumes: new Map(),
      startTime: new Date(),
      containers: (pod.spec?.containers ?? []).map((spec) => ({
        spec,
        state: { waiting: { reason: "ContainerCreating" } },
        lastState: {},
        restartCount: 0,
        backoffMs: 0,
        started: false,
        dir: join(dir, "containers", spec.name),
        terminationPath: join(dir, "containers", spec.name, "termination-log"),
        logPath: join(logDir, `${spec.name}.log`),
      })),
      abort: new AbortController(),
      deleting: false,
      gone: false,
      dirty: false,
      done: Promise.resolve(),
    };
    this.runs.set(uid, run);
    this.log(`${run.key}: admitted`);
    run.done = this.runPod(run, logDir);
  }

  /** The pod is gone from the API server (e.g. deleted with grace period 0): kill what is left. */
  private forget(run: PodRun): void {
    run.gone = true;
    run.abort.abort();
    for (const c of run.containers) if (isLive(c)) killGroup(c.child.pid, "SIGKILL");
    void run.done.then(() => rm(run.dir, { recursive: true, force: true }));
  }

  private async confirmDeletion(namespace: string, name: string, uid: string): Promise<void> {
    if (this.stopped) return;
    try {
      await this.core.deleteNamespacedPod({
        name,
        namespace,
        gracePeriodSeconds: 0,
        body: { gracePeriodSeconds: 0, preconditions: { uid } },
      });
      this.log(`${namespace}/${name}: deletion confirmed`);
    } catch (err) {
      if (!isStatus(err, 404) && !isStatus(err, 409)) {
        this.log(`${namespace}/${name}: delete: ${errorText(err)}`);
      }
    }
  }

  /** Stops a pod's containers (SIGTERM, SIGKILL after the grace period) and waits for its final status. */
  private async terminate(run: PodRun, graceSeconds: number, termination?: Termination): Promise<void> {
    run.termination ??= termination;
    run.abort.abort();
    const live = run.containers.filter(isLive);
    for (const c of live) killGroup(c.child.pid, graceSeconds > 0 ? "SIGTERM" : "SIGKILL");
    const timer = setTimeout(() => {
      for (const c of live) killGroup(c.child.pid, "SIGKILL");
    }, graceSeconds * 1000);
    try {
      await run.done;
    } finally {
      clearTimeout(timer);
    }
    await this.syncStatus(run);
  }

  // -------------------------------------------------------------------------------------------------
  // Running a pod

  private async runPod(run: PodRun, logDir: string): Promise<void> {
    let deadline: ReturnType<typeof setTimeout> | undefined;
    try {
      const reason = unsupported(run.pod);
      if (reason) {
        run.termination = { reason: "UnsupportedPod", message: reason };
        for (const c of run.containers) this.notStarted(c, reason);
        return;
      }
      // Started by an earlier agent of this node name: its processes are gone, and restartPolicy Never.
      const statuses = run.pod.status?.containerStatuses ?? [];
      if (statuses.some((s) => s.state?.running || s.state?.terminated)) {
        for (const c of run.containers) this.notStarted(c);
        return;
      }
      await mkdir(logDir, { recursive: true });
      for (const c of run.containers) {
        await mkdir(c.dir, { recursive: true });
        await writeFile(c.terminationPath, "");
      }
      void this.syncStatus(run);
      const activeDeadline = run.pod.spec?.activeDeadlineSeconds;
      if (activeDeadline !== undefined) {
        deadline = setTimeout(() => {
          const message = "Pod was active on the node longer than the specified deadline";
          void this.terminate(run, this.gracePeriod(undefined, run), { reason: "DeadlineExceeded", message });
        }, activeDeadline * 1000);
      }
      if (!(await this.waitForVolumes(run))) {
        for (const c of run.containers) this.notStarted(c);
        return;
      }
      await Promise.all(
        run.containers.map((c) =>
          this.runContainer(run, c).catch((err: unknown) => {
            this.log(`${run.key}/${c.spec.name}: ${errorText(err)}`);
            if (!c.state.terminated) this.failedToStart(c, errorText(err));
          }),
        ),
      );
    } catch (err) {
      this.log(`${run.key}: ${errorText(err)}`);
      for (const c of run.containers) if (!c.state.terminated) this.failedToStart(c, errorText(err));
    } finally {
      clearTimeout(deadline);
      this.log(`${run.key}: ${podPhase(run)}`);
      await this.syncStatus(run);
    }
  }

  private notStarted(c: ContainerRun, message?: string): void {
    c.state = {
      terminated: {
        exitCode: 137,
        reason: "ContainerStatusUnknown",
        message: message ?? "The container could not be located when the pod was terminated",
      },
    };
  }

  private failedToStart(c: ContainerRun, message: string): void {
    const now = new Date();
    c.state = {
      terminated: { exitCode: 128, reason: "StartError", message, startedAt: now, finishedAt: now },
    };
  }

  /** Runs a container, restarting it as its pod's restartPolicy says (with kubelet's back-off). */
  private async runContainer(run: PodRun, c: ContainerRun): Promise<void> {
    const signal = run.abort.signal;
    const policy = restartPolicy(run.pod);
    for (;;) {
      const attemptStart = Date.now();
      try {
        await this.runContainerOnce(run, c);
      } catch (err) {
        this.log(`${run.key}/${c.spec.name}: ${errorText(err)}`);
        if (!c.state.terminated) this.failedToStart(c, errorText(err));
      }
      const last = c.state.terminated;
      if (!last || signal.aborted || this.stopped) return;
      if (policy === "Never" || (policy === "OnFailure" && last.exitCode === 0)) return;
      if (Date.now() - attemptStart >= RESTART_BACKOFF_RESET_MS) c.backoffMs = 0;
      const previous = c.lastState;
      c.lastState = { terminated: last };
      if (c.backoffMs > 0) {
        const message =
          `back-off ${c.backoffMs / 1000}s restarting failed container=${c.spec.name} ` +
          `pod=${run.name}_${run.namespace}(${run.uid})`;
        c.state = { waiting: { reason: "CrashLoopBackOff", message } };
        this.log(`${run.key}/${c.spec.name}: CrashLoopBackOff: ${message}`);
        void this.syncStatus(run);
        await sleep(c.backoffMs, signal);
        if (signal.aborted || this.stopped) {
          c.state = { terminated: last };
          c.lastState = previous;
          return;
        }
      }
      c.backoffMs = Math.min(Math.max(2 * c.backoffMs, RESTART_BACKOFF_INITIAL_MS), RESTART_BACKOFF_MAX_MS);
      c.restartCount++;
      this.log(`${run.key}/${c.spec.name}: restarting (restartPolicy ${policy}, restart ${c.restartCount})`);
    }
  }

  /** One instance of a container, from its environment to its end. */
  private async runContainerOnce(run: PodRun, c: ContainerRun): Promise<void> {
    const signal = run.abort.signal;
    if (this.options.pullFailure?.test(c.spec.image ?? "")) {
      await this.failPull(run, c);
      return this.notStarted(c);
    }
    // Each instance has a termination message file of its own.
    if (c.restartCount > 0) await writeFile(c.terminationPath, "");
    const env = await this.waitForEnv(run, c);
    if (!env) return this.notStarted(c);

    // No image: its ENTRYPOINT comes from options.entrypoints. Like kubelet, only the container's own
    // command and args get $(VAR) expansion (and here the path rewrite), not the image's entrypoint.
    const image = c.spec.image ?? "";
    const ownCommand = c.spec.command?.length ? c.spec.command : undefined;
    const entrypoint = ownCommand ? [] : this.options.entrypoints?.[image];
    if (!entrypoint) {
      return this.failedToStart(
        c,
        `test node agent: the container has no command and image "${image}" has no entrypoint ` +
          "(NodeAgentOptions.entrypoints)",
      );
    }
    const own = [...(ownCommand ?? []), ...(c.spec.args ?? [])].map((a) =>
      expand(this.hostPathArg(run, c, a), env),
    );
    const [first, ...rest] = [...entrypoint, ...own];
    if (first === undefined) return this.failedToStart(c, "test node agent: the container has no command");
    const argv = [...(this.options.commands?.[first] ?? [first]), ...rest];
    const executable = lookPath(argv[0]!, env.PATH);
    if (!executable) {
      return this.failedToStart(c, `exec: "${argv[0]}": executable file not found in $PATH`);
    }
    const cwd = c.spec.workingDir ? this.hostPath(run, c, c.spec.workingDir) : run.dir;
    await mkdir(cwd, { recursive: true });
    // As kubelet does, a subPath missing from its volume is created as a directory.
    for (const mount of c.spec.volumeMounts ?? []) {
      const volume = run.volumes.get(mount.name);
      if (volume !== undefined && mount.subPath && !existsSync(join(volume, mount.subPath))) {
        await mkdir(join(volume, mount.subPath), { recursive: true });
      }
    }

    const fault = this.options.beforeStart?.(run.pod, c.spec);
    if (signal.aborted) return this.notStarted(c);
    if (fault) {
      const now = new Date();
      c.started = true;
      const { exitCode, message } = fault;
      const reason = exitCode === 0 ? "Completed" : "Error";
      c.state = { terminated: { exitCode, reason, message, startedAt: now, finishedAt: now } };
      this.log(`${run.key}/${c.spec.name}: beforeStart: exit ${exitCode}`);
      return;
    }

    const limit = memoryLimit(c.spec);
    const cgroup = this.cgroupParent
      ? await MemoryCgroup.create(
          this.cgroupParent,
          `${CGROUP_PREFIX}${process.pid}-${++this.cgroupSeq}`,
          limit,
        )
      : undefined;
    try {
      // Checked right before the (synchronous) spawn: a pod deleted meanwhile never starts.
      if (signal.aborted) return this.notStarted(c);
      await this.execute(run, c, [executable, ...argv.slice(1)], { env, cwd, cgroup, limit });
    } finally {
      await cgroup?.remove();
    }
  }

  /** ErrImagePull, then ImagePullBackOff until the pod is terminated. */
  private async failPull(run: PodRun, c: ContainerRun): Promise<void> {
    const signal = run.abort.signal;
    const image = c.spec.image ?? "";
    const error = `test node agent: image "${image}" matches pullFailure ${String(this.options.pullFailure)}`;
    c.state = { waiting: { reason: "ErrImagePull", message: `Failed to pull image "${image}": ${error}` } };
    void this.syncStatus(run);
    await sleep(PULL_BACKOFF_MS, signal);
    if (signal.aborted) return;
    const message = `Back-off pulling image "${image}": ErrImagePull: ${error}`;
    c.state = { waiting: { reason: "ImagePullBackOff", message } };
    void this.syncStatus(run);
    await new Promise((res) => signal.addEventListener("abort", res, { once: true }));
  }

  /** The container's environment; like kubelet, retried while a Secret or ConfigMap is missing. */
  private async waitForEnv(run: PodRun, c: ContainerRun): Promise<Record<string, string> | undefined> {
    for (;;) {
      if (run.abort.signal.aborted) return undefined;
      try {
        return await this.containerEnv(run, c);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        if (c.state.waiting?.message !== err.message) {
          this.log(`${run.key}/${c.spec.name}: CreateContainerConfigError: ${err.message}`);
          c.state = { waiting: { reason: "CreateContainerConfigError", message: err.message } };
          void this.syncStatus(run);
        }
        await sleep(CONFIG_RETRY_MS, run.abort.signal);
      }
    }
  }

  /** Runs the container's process to its end and records how it ended. */
  private async execute(
    run: PodRun,
    c: ContainerRun,
    argv: string[],
    {
      env,
      cwd,
      cgroup,
      limit,
    }: { env: Record<string, string>; cwd: string; cgroup?: MemoryCgroup; limit?: number },
  ): Promise<void> {
    // The process joins its cgroup before it execs the container's command.
    const wrapped = cgroup
      ? ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', cgroup.procsFile, ...argv]
      : argv;
    const [program, ...args] = [...deathSignalPrefix(), ...wrapped] as [string, ...string[]];
    const fd = openSync(c.logPath, "a");
    let child: ChildProcess;
    try {
      // detached: its own process group (and session), so signals reach its children too.
      child = spawn(program, args, { cwd, env, detached: true, stdio: ["ignore", fd, fd] });
    } finally {
      closeSync(fd);
    }
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>(
      (res) => {
        child.once("exit", (code, sig) => res({ code, signal: sig }));
        child.once("error", (error) => res({ code: null, signal: null, error }));
      },
    );
    c.child = child;
    c.started = true;
    const pid = child.pid;
    const startedAt = new Date();
    if (pid !== undefined) {
      liveGroups.add(pid);
      c.state = { running: { startedAt } };
      this.log(`${run.key}/${c.spec.name}: started pid ${pid}: ${argv.join(" ")}`);
      this.startReadinessProbe(run, c);
      void this.syncStatus(run);
    }

    let rssKilled = false;
    const poll =
      pid !== undefined && !cgroup && limit !== undefined
        ? setInterval(() => {
            if (groupRss(pid) > limit) {
              rssKilled = true;
              killGroup(pid, "SIGKILL");
            }
          }, RSS_POLL_MS)
        : undefined;
    const result = await exited;
    clearInterval(poll);
    c.stopProbe?.abort();
    c.stopProbe = undefined;
    if (c.probeReady !== undefined) c.probeReady = false;
    if (pid !== undefined) {
      // As with a container, nothing of it outlives its main process.
      killGroup(pid, "SIGKILL");
      liveGroups.delete(pid);
    }
    if (result.error) return this.failedToStart(c, result.error.message);

    const oom = rssKilled || ((await cgroup?.oomKilled(result.signal)) ?? false);
    const exitCode = result.code ?? 128 + (result.signal ? osConstants.signals[result.signal] : 0);
    const reason = oom ? "OOMKilled" : exitCode === 0 ? "Completed" : "Error";
    const message = await this.terminationMessage(c, exitCode);
    c.state = {
      terminated: {
        exitCode,
        reason,
        ...(result.signal ? { signal: osConstants.signals[result.signal] } : {}),
        ...(message ? { message } : {}),
        startedAt,
        finishedAt: new Date(),
        containerID: this.containerID(run, c),
      },
    };
    const how = result.signal ? `, ${result.signal}` : "";
    this.log(`${run.key}/${c.spec.name}: exited ${exitCode} (${reason}${how})`);
  }

  private async terminationMessage(c: ContainerRun, exitCode: number): Promise<string> {
    const file = await readFile(c.terminationPath).catch(() => Buffer.alloc(0));
    const message = file.subarray(0, MAX_TERMINATION_MESSAGE_BYTES).toString("utf8");
    if (message || exitCode === 0 || c.spec.terminationMessagePolicy !== "FallbackToLogsOnError") {
      return message;
    }
    const log = await readFile(c.logPath, "utf8").catch(() => "");
    const lines = log.replace(/\n$/, "").split("\n").slice(-FALLBACK_LOG_LINES).join("\n");
    const bytes = Buffer.from(lines, "utf8");
    return bytes.subarray(Math.max(0, bytes.length - FALLBACK_LOG_BYTES)).toString("utf8");
  }

  private containerID(run: PodRun, c: ContainerRun): string {
    return `node-agent://${run.uid}/${c.spec.name}`;
  }

  // -------------------------------------------------------------------------------------------------
  // Readiness probes

  /** Probes the container's readinessProbe until it exits; its verdict is the container's readiness. */
  private startReadinessProbe(run: PodRun, c: ContainerRun): void {
    const probe = c.spec.readinessProbe;
    if (!probe) return;
    if (!probe.httpGet && !probe.tcpSocket) {
      this.log(`${run.key}/${c.spec.name}: readinessProbe kind not supported, ignored (ready when running)`);
      return;
    }
    const stop = new AbortController();
    c.stopProbe = stop;
    c.probeReady = false;
    const periodMs = this.options.probePeriodMs ?? (probe.periodSeconds ?? 10) * 1000;
    const successThreshold = probe.successThreshold ?? 1;
    const failureThreshold = probe.failureThreshold ?? 3;
    void (async () => {
      await sleep((probe.initialDelaySeconds ?? 0) * 1000, stop.signal);
      let successes = 0;
      let failures = 0;
      while (!stop.signal.aborted) {
        const ok = await this.probe(c.spec, probe);
        if (stop.signal.aborted) break;
        successes = ok ? successes + 1 : 0;
        failures = ok ? 0 : failures + 1;
        // Not ready until successThreshold successes in a row; ready until failureThreshold failures.
        const ready = c.probeReady ? failures < failureThreshold : successes >= successThreshold;
        if (ready !== c.probeReady) {
          c.probeReady = ready;
          this.log(
            `${run.key}/${c.spec.name}: readiness probe ${ready ? "succeeded" : "failed"}: ready=${ready}`,
          );
          void this.syncStatus(run);
        }
        await sleep(periodMs, stop.signal);
      }
    })();
  }

  private async probe(container: V1Container, probe: V1Probe): Promise<boolean> {
    const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
    const action = probe.httpGet ?? probe.tcpSocket;
    const port = action ? resolvePort(action.port, container) : undefined;
    if (port === undefined) return false;
    if (probe.httpGet) return await httpProbe(probe.httpGet, port, timeoutMs, this.probeUserAgent);
    return await tcpProbe(probe.tcpSocket?.host || NODE_IP, port, timeoutMs);
  }

  // -------------------------------------------------------------------------------------------------
  // Volumes and paths

  /**
   * The container is not in a chroot: a path under one of its volume mounts is the volume's host dir
   * (or, mounted with subPath, the file or dir it names), and its terminationMessagePath is a host
   * file of its own.
   */
  private hostPath(run: PodRun, c: ContainerRun, value: string): string {
    if (value === (c.spec.terminationMessagePath ?? DEFAULT_TERMINATION_PATH)) return c.terminationPath;
    const mounts = [...(c.spec.volumeMounts ?? [])].sort((a, b) => b.mountPath.length - a.mountPath.length);
    for (const mount of mounts) {
      const mountPath = mount.mountPath.replace(/\/+$/, "");
      const volume = run.volumes.get(mount.name);
      if (volume === undefined) continue;
      if (value === mountPath || value.startsWith(`${mountPath}/`)) {
        return join(volume, mount.subPath ?? "", value.slice(mountPath.length));
      }
    }
    return value;
  }

  /** An argument of the container's command/args that is such a path, whole or as `--flag=<path>`. */
  private hostPathArg(run: PodRun, c: ContainerRun, arg: string): string {
    const flag = /^(-{1,2}[^=\s/]+=)(\/.*)$/.exec(arg);
    return flag ? `${flag[1]}${this.hostPath(run, c, flag[2]!)}` : this.hostPath(run, c, arg);
  }

  /** Materialises the pod's volumes; like kubelet, retried while a ConfigMap, Secret or token is missing. */
  private async waitForVolumes(run: PodRun): Promise<boolean> {
    for (;;) {
      if (run.abort.signal.aborted) return false;
      try {
        await this.setUpVolumes(run);
        for (const c of run.containers) {
          if (c.state.waiting?.message) c.state = { waiting: { reason: "ContainerCreating" } };
        }
        return true;
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        // kubelet reports this as a FailedMount event, the containers staying ContainerCreating.
        if (run.containers.some((c) => c.state.waiting?.message !== err.message)) {
          this.log(`${run.key}: ${err.message}`);
          for (const c of run.containers) {
            c.state = { waiting: { reason: "ContainerCreating", message: err.message } };
          }
          void this.syncStatus(run);
        }
        await sleep(CONFIG_RETRY_MS, run.abort.signal);
      }
    }
  }

  private async setUpVolumes(run: PodRun): Promise<void> {
    for (const volume of run.pod.spec?.volumes ?? []) {
      if (volume.hostPath) {
        run.volumes.set(volume.name, volume.hostPath.path);
        continue;
      }
      // emptyDir, and any other kind, is an empty dir; configMap, secret, downwardAPI and projected
      // volumes get their files (written once, not updated when their sources change).
      const dir = join(run.dir, "volumes", volume.name);
      let files: VolumeFile[];
      try {
        files = await this.volumeFiles(run, volume);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        throw new ConfigError(`MountVolume.SetUp failed for volume "${volume.name}" : ${err.message}`);
      }
      await mkdir(dir, { recursive: true });
      for (const file of files) {
        const target = join(dir, file.path);
        if (isAbsolute(file.path) || relative(dir, target).startsWith("..")) {
          throw new ConfigError(
            `MountVolume.SetUp failed for volume "${volume.name}" : bad path ${file.path}`,
          );
        }
        await mkdir(dirname(target), { recursive: true });
        await rm(target, { force: true }); // a read-only file from an earlier attempt
        await writeFile(target, file.data);
        await chmod(target, file.mode);
      }
      run.volumes.set(volume.name, dir);
    }
  }

  private async volumeFiles(run: PodRun, volume: V1Volume): Promise<VolumeFile[]> {
    const { namespace } = run;
    if (volume.configMap) {
      const { name, items, optional, defaultMode = DEFAULT_FILE_MODE } = volume.configMap;
      return await this.keyFiles(namespace, "ConfigMap", name, items, optional, defaultMode);
    }
    if (volume.secret) {
      const { secretName, items, optional, defaultMode = DEFAULT_FILE_MODE } = volume.secret;
      return await this.keyFiles(namespace, "Secret", secretName, items, optional, defaultMode);
    }
    if (volume.downwardAPI) {
      const defaultMode = volume.downwardAPI.defaultMode ?? DEFAULT_FILE_MODE;
      return this.downwardFiles(run, volume.downwardAPI.items, defaultMode);
    }
    if (!volume.projected) return [];
    const defaultMode = volume.projected.defaultMode ?? DEFAULT_FILE_MODE;
    const files: VolumeFile[] = [];
    for (const source of volume.projected.sources ?? []) {
      if (source.configMap) {
        const { name, items, optional } = source.configMap;
        files.push(...(await this.keyFiles(namespace, "ConfigMap", name, items, optional, defaultMode)));
      } else if (source.secret) {
        const { name, items, optional } = source.secret;
        files.push(...(await this.keyFiles(namespace, "Secret", name, items, optional, defaultMode)));
      } else if (source.downwardAPI) {
        files.push(...this.downwardFiles(run, source.downwardAPI.items, defaultMode));
      } else if (source.serviceAccountToken) {
        const { audience, expirationSeconds, path } = source.serviceAccountToken;
        files.push({
          path,
          data: Buffer.from(await this.token(run, audience, expirationSeconds)),
          mode: defaultMode,
        });
      }
      // clusterTrustBundle and podCertificate sources: not supported, no files.
    }
    return files;
  }

  /** A ConfigMap's or Secret's keys as files (all of them, or `items`); errors read like kubelet's. */
  private async keyFiles(
    namespace: string,
    kind: "Secret" | "ConfigMap",
    name: string | undefined,
    items: V1KeyToPath[] | undefined,
    optional: boolean | undefined,
    defaultMode: number,
  ): Promise<VolumeFile[]> {
    const data = await this.sourceBytes(namespace, kind, name);
    if (!data) {
      if (optional) return [];
      throw new ConfigError(`${kind.toLowerCase()} "${name}" not found`);
    }
    if (!items?.length) {
      return Object.entries(data).map(([key, bytes]) => ({ path: key, data: bytes, mode: defaultMode }));
    }
    const files: VolumeFile[] = [];
    for (const item of items) {
      const bytes = data[item.key];
      if (bytes !== undefined) files.push({ path: item.path, data: bytes, mode: item.mode ?? defaultMode });
      else if (!optional) {
        throw new ConfigError(
          kind === "Secret"
            ? `references non-existent secret key: ${item.key}`
            : `configmap references non-existent config key: ${item.key}`,
        );
      }
    }
    return files;
  }

  private downwardFiles(
    run: PodRun,
    items: { path: string; mode?: number; fieldRef?: { fieldPath: string } }[] = [],
    defaultMode: number,
  ): VolumeFile[] {
    return items.map((item) => {
      const path = item.fieldRef?.fieldPath;
      const meta = run.pod.metadata;
      const value =
        path === "metadata.labels"
          ? formatMap(meta?.labels)
          : path === "metadata.annotations"
            ? formatMap(meta?.annotations)
            : path === undefined
              ? undefined
              : this.fieldValue(run, path);
      if (value === undefined) {
        throw new ConfigError(`test node agent: unsupported downwardAPI item ${JSON.stringify(item)}`);
      }
      return { path: item.path, data: Buffer.from(value), mode: item.mode ?? defaultMode };
    });
  }

  /** A ServiceAccount token bound to the pod (TokenRequest), as kubelet gets one; not rotated. */
  private async token(run: PodRun, audience?: string, expirationSeconds?: number): Promise<string> {
    const serviceAccount = run.pod.spec?.serviceAccountName || "default";
    try {
      const request = await this.core.createNamespacedServiceAccountToken({
        name: serviceAccount,
        namespace: run.namespace,
        body: {
          apiVersion: "authentication.k8s.io/v1",
          kind: "TokenRequest",
          spec: {
            audiences: audience ? [audience] : [],
            expirationSeconds: expirationSeconds ?? DEFAULT_TOKEN_EXPIRATION_SECONDS,
            boundObjectRef: { apiVersion: "v1", kind: "Pod", name: run.name, uid: run.uid },
          },
        },
      });
      return request.status?.token ?? "";
    } catch (err) {
      throw new ConfigError(`failed to fetch token: ${errorText(err)}`);
    }
  }

  private async containerEnv(run: PodRun, c: ContainerRun): Promise<Record<string, string>> {
    const own: Record<string, string> = {};
    for (const from of c.spec.envFrom ?? []) {
      const ref = from.secretRef ?? from.configMapRef;
      const kind = from.secretRef ? "Secret" : "ConfigMap";
      const data = await this.sourceData(run.namespace, kind, ref?.name);
      if (!data && !ref?.optional) throw new ConfigError(`${kind.toLowerCase()} "${ref?.name}" not found`);
      for (const [key, value] of Object.entries(data ?? {})) own[`${from.prefix ?? ""}${key}`] = value;
    }
    for (const v of c.spec.env ?? []) {
      const value = v.valueFrom ? await this.valueFrom(run, v.valueFrom) : expand(v.value ?? "", own);
      if (value !== undefined) own[v.name] = value;
    }
    for (const [name, value] of Object.entries(own)) own[name] = this.hostPath(run, c, value);
    const kubeconfig = this.inClusterKubeconfig(run, c);
    return {
      PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
      HOME: process.env.HOME ?? "/",
      HOSTNAME: run.name,
      ...(kubeconfig ? { KUBECONFIG: kubeconfig } : {}),
      ...this.options.env,
      ...own,
    };
  }

  /**
   * Programs find in-cluster credentials at fixed paths (/var/run/secrets/kubernetes.io/serviceaccount)
   * that a process outside a chroot cannot see. For a container with that mount, the agent writes a
   * kubeconfig holding the same credentials (the pod's bound token, the cluster CA, the API server
   * this agent uses) and points KUBECONFIG at it, which client libraries read first.
   */
  private inClusterKubeconfig(run: PodRun, c: ContainerRun): string | undefined {
    const mounted = (c.spec.volumeMounts ?? []).some(
      (m) => m.mountPath.replace(/\/+$/, "") === SERVICE_ACCOUNT_MOUNT,
    );
    if (!mounted) return undefined;
    const dir = this.hostPath(run, c, SERVICE_ACCOUNT_MOUNT);
    const server = this.kc.getCurrentCluster()?.server;
    if (!server) return undefined;
    const path = join(run.dir, `kubeconfig-${c.spec.name}`);
    const config = {
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "in-cluster", cluster: { server, "certificate-authority": join(dir, "ca.crt") } }],
      users: [{ name: "service-account", user: { token: readFileSync(join(dir, "token"), "utf8").trim() } }],
      contexts: [
        {
          name: "in-cluster",
          context: { cluster: "in-cluster", user: "service-account", namespace: run.namespace },
        },
      ],
      "current-context": "in-cluster",
    };
    writeFileSync(path, JSON.stringify(config), { mode: 0o600 });
    return path;
  }

  /** A Secret's (decoded) or a ConfigMap's data (and binaryData); null when it does not exist. */
  private async sourceBytes(
    namespace: string,
    kind: "Secret" | "ConfigMap",
    name = "",
  ): Promise<Record<string, Buffer> | null> {
    const bytes = (data: Record<string, string> = {}, encoding: BufferEncoding) =>
      Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, encoding)]));
    try {
      if (kind === "Secret") {
        return bytes((await this.core.readNamespacedSecret({ name, namespace })).data, "base64");
      }
      const configMap = await this.core.readNamespacedConfigMap({ name, namespace });
      return { ...bytes(configMap.binaryData, "base64"), ...bytes(configMap.data, "utf8") };
    } catch (err) {
      if (isStatus(err, 404)) return null;
      throw err;
    }
  }

  /** As sourceBytes, as UTF-8 strings (for env). */
  private async sourceData(
    namespace: string,
    kind: "Secret" | "ConfigMap",
    name = "",
  ): Promise<Record<string, string> | null> {
    const data = await this.sourceBytes(namespace, kind, name);
    return data && Object.fromEntries(Object.entries(data).map(([k, v]) => [k, v.toString("utf8")]));
  }

  /** An env var's valueFrom; undefined when an optional source is missing. Errors read like kubelet's. */
  private async valueFrom(run: PodRun, from: V1EnvVarSource): Promise<string | undefined> {
    const { namespace } = run;
    const keyRef = from.secretKeyRef ?? from.configMapKeyRef;
    if (keyRef) {
      const kind = from.secretKeyRef ? "Secret" : "ConfigMap";
      const { name, key, optional } = keyRef;
      const data = await this.sourceData(namespace, kind, name);
      const value = data?.[key];
      if (value !== undefined) return value;
      if (optional) return undefined;
      throw new ConfigError(
        data
          ? `couldn't find key ${key} in ${kind} ${namespace}/${name}`
          : `${kind.toLowerCase()} "${name}" not found`,
      );
    }
    const value = from.fieldRef ? this.fieldValue(run, from.fieldRef.fieldPath) : undefined;
    if (value !== undefined) return value;
    throw new ConfigError(`test node agent: unsupported env source ${JSON.stringify(from)}`);
  }

  /** A downward API fieldRef's value; undefined when not supported. */
  private fieldValue(run: PodRun, path: string): string | undefined {
    const meta = run.pod.metadata;
    const fields: Record<string, string | undefined> = {
      "metadata.name": run.name,
      "metadata.namespace": run.namespace,
      "metadata.uid": run.uid,
      "spec.nodeName": this.nodeName,
      "spec.serviceAccountName": run.pod.spec?.serviceAccountName,
      "status.podIP": NODE_IP,
      "status.podIPs": NODE_IP,
      "status.hostIP": NODE_IP,
      "status.hostIPs": NODE_IP,
    };
    const labelOrAnnotation = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
    if (labelOrAnnotation) {
      const map = labelOrAnnotation[1] === "labels" ? meta?.labels : meta?.annotations;
      return map?.[labelOrAnnotation[2]!] ?? "";
    }
    return Object.hasOwn(fields, path) ? (fields[path] ?? "") : undefined;
  }

  // -------------------------------------------------------------------------------------------------
  // Status

  private podStatus(run: PodRun, current: V1PodStatus | undefined): V1PodStatus {
    const phase = podPhase(run);
    const terminal = phase === "Succeeded" || phase === "Failed";
    const unready = run.containers.filter((c) => !isReady(c)).map((c) => c.spec.name);
    const ready: Omit<V1PodCondition, "type"> = terminal
      ? { status: "False", reason: "PodCompleted" }
      : unready.length > 0
        ? {
            status: "False",
            reason: "ContainersNotReady",
            message: `containers with unready status: [${unready.join(" ")}]`,
          }
        : { status: "True" };
    const desired: V1PodCondition[] = [
      { type: "PodReadyToStartContainers", status: terminal ? "False" : "True" },
      { type: "Initialized", status: "True" },
      { type: "Ready", ...ready },
      { type: "ContainersReady", ...ready },
      { type: "PodScheduled", status: "True" },
    ];
    if (run.termination?.disruption) {
      desired.push({
        type: "DisruptionTarget",
        status: "True",
        reason: "TerminationByKubelet",
        message: run.termination.message,
      });
    }
    const containerStatuses: V1ContainerStatus[] = run.containers.map((c) => ({
      name: c.spec.name,
      image: c.spec.image ?? "",
      imageID: "",
      ...(c.started ? { containerID: this.containerID(run, c) } : {}),
      ready: isReady(c),
      started: Boolean(c.state.running),
      restartCount: c.restartCount,
      state: c.state,
      lastState: c.lastState,
    }));
    return {
      ...current,
      phase,
      conditions: mergeConditions(current?.conditions ?? [], desired),
      hostIP: NODE_IP,
      hostIPs: [{ ip: NODE_IP }],
      podIP: NODE_IP,
      podIPs: [{ ip: NODE_IP }],
      startTime: run.startTime,
      containerStatuses,
      reason: run.termination?.reason,
      message: run.termination?.message,
      observedGeneration: run.pod.metadata?.generation,
    };
  }

  /** Writes the pod's current status; concurrent calls coalesce into one more write. */
  private syncStatus(run: PodRun): Promise<void> {
    if (this.stopped || run.gone) return Promise.resolve();
    run.dirty = true;
    run.writing ??= (async () => {
      try {
        while (run.dirty && !this.stopped) {
          run.dirty = false;
          await this.writeStatus(run);
        }
      } finally {
        run.writing = undefined;
      }
    })();
    return run.writing;
  }

  private async writeStatus(run: PodRun): Promise<void> {
    for (let attempt = 1; attempt <= 10 && !run.gone && !this.stopped; attempt++) {
      try {
        const pod = await this.core.readNamespacedPod({ name: run.name, namespace: run.namespace });
        if (pod.metadata?.uid !== run.uid) return;
        pod.status = this.podStatus(run, pod.status);
        await this.core.replaceNamespacedPodStatus({ name: run.name, namespace: run.namespace, body: pod });
        return;
      } catch (err) {
        if (isStatus(err, 404)) return;
        if (!isStatus(err, 409)) {
          this.log(`${run.key}: status update: ${errorText(err)}`);
          await delay(100 * attempt);
        }
      }
    }
  }

  // -------------------------------------------------------------------------------------------------
  // The API for tests

  private find(pod: string): PodRun | undefined {
    const runs = [...this.runs.values()].reverse();
    return runs.find((r) => r.key === pod && !r.gone) ?? runs.find((r) => r.key === pod || r.name === pod);
  }

  running(): string[] {
    return [...this.runs.values()].filter((r) => r.containers.some(isLive)).map((r) => r.key);
  }

  pids(pod: string): number[] {
    return (this.find(pod)?.containers ?? []).filter(isLive).map((c) => c.child.pid);
  }

  async logs(pod: string, container?: string): Promise<string> {
    const run = this.find(pod);
    if (!run) throw new Error(`no pod ${pod} on node ${this.nodeName}`);
    const c = container ? run.containers.find((x) => x.spec.name === container) : run.containers[0];
    if (!c) throw new Error(`pod ${run.key} has no container ${container}`);
    return await readFile(c.logPath, "utf8").catch(() => "");
  }

  async evict(pod: string, message = DEFAULT_EVICTION_MESSAGE): Promise<void> {
    const run = this.find(pod);
    if (!run || run.gone || run.containers.every((c) => c.state.terminated)) {
      throw new Error(`no running pod ${pod} on node ${this.nodeName}`);
    }
    this.log(`${run.key}: evicting`);
    await this.terminate(run, EVICTION_GRACE_SECONDS, { reason: "Evicted", message, disruption: true });
  }

  stop(): Promise<void> {
    return (this.stopping ??= (async () => {
      this.stopped = true;
      clearInterval(this.heartbeat);
      await Promise.all(this.watches.map((w) => w.stop()));
      for (const run of this.runs.values()) {
        run.abort.abort();
        for (const c of run.containers) if (isLive(c)) killGroup(c.child.pid, "SIGKILL");
      }
      await Promise.all([...this.runs.values()].map((r) => r.done));
      if (this.dir) {
        await rm(this.dir, { recursive: true, force: true });
        liveDirs.delete(this.dir);
      }
      this.log("stopped");
    })());
  }
}

/** Registers a Node and runs the pods bound to it until stop(). */
export async function startNodeAgent(options: NodeAgentOptions): Promise<NodeAgent> {
  const agent = new Agent(options);
  try {
    await agent.start();
  } catch (err) {
    await agent.stop();
    throw err;
  }
  return agent;
}
