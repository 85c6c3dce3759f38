// A real Kubernetes node for the test control plane: containerd 2 (runc, CNI bridge/host-local/loopback/
// portmap) under a kubelet and kube-proxy built from the same Kubernetes module as the control plane,
// and CoreDNS as the cluster DNS (a Deployment behind the kube-dns Service, as kubeadm installs it).
// Pods are real containers of local Docker images (loaded into the node's containerd, never pulled),
// with real cgroup limits, real Service networking and DNS.
//
// Everything the node makes lives under one temp dir and one cgroup name, so stop() (or the next start,
// after a test process died by SIGKILL) can remove all of it: processes, mounts, network namespaces,
// the bridge and kube-proxy's rules. Needs root. One node at a time on a machine (the bridge and
// kube-proxy's iptables chains are machine-wide), which `npm run test:k8s` guarantees by running its
// files one after another.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  statSync,
} from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import {
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1Node,
} from "@kubernetes/client-node";
import { freePort } from "../../support/ports.js";
import type { ControlPlane } from "./control-plane.js";
import { eventually } from "./eventually.js";
import {
  CLUSTER_CIDR,
  CLUSTER_DNS_IP,
  CLUSTER_DOMAIN,
  hostAddress,
  POD_CIDR,
  POD_GATEWAY,
} from "./network.js";
import { deathSignalPrefix, isAlive, lookPath, onTestExit } from "./processes.js";

/**
 * A TCP relay (`node -e RELAY_SOURCE <listen host> <target host> <target port>`): prints the port it
 * listens on, then pipes every connection to the target until it is killed. Without Nagle's
 * algorithm on either side, as the clients it stands between have: a small reply held back for the
 * peer's delayed ACK would add 40 ms to a Redis round trip.
 */
const RELAY_SOURCE = `
const net = require("node:net");
const [listenHost, host, port] = process.argv.slice(1);
const server = net.createServer({ noDelay: true }, (inbound) => {
  const outbound = net.connect({ host, port: Number(port), noDelay: true });
  inbound.pipe(outbound).pipe(inbound);
  const close = () => { inbound.destroy(); outbound.destroy(); };
  inbound.on("error", close);
  outbound.on("error", close);
});
server.listen(0, listenHost, () => process.stdout.write(server.address().port + "\\n"));
`;

const execFileP = promisify(execFile);
const SCRIPTS = resolve(dirname(fileURLToPath(import.meta.url)), "../../../scripts/k8s");
const DIR_PREFIX = "media-service-node-";
const BRIDGE = "msn0";
const CNI_BIN_DIRS = ["/usr/lib/cni", "/opt/cni/bin"];
const CGROUP_ROOT = "/sys/fs/cgroup";
const STOP_GRACE_MS = 5_000;

export interface NodeOptions {
  cp: ControlPlane;
  /** Local Docker images the node's pods run (loaded into its containerd; a pod never pulls them). */
  images?: string[];
  /** Progress messages (timings); default none. */
  log?: (message: string) => void;
  /** Keep the node's dir (logs, configs) after stop(). Also MEDIA_K8S_KEEP=1. */
  keepDir?: boolean;
}

export interface RealNode {
  /** The Node's name (also the kubelet's hostname override). */
  name: string;
  /** The node's InternalIP: the host's address, where pods reach services running on the host. */
  ip: string;
  dir: string;
  /** Milliseconds each start phase took. */
  timings: Record<string, number>;
  /** `ctr` against the node's containerd, in the CRI namespace (k8s.io). */
  ctr(args: string[]): Promise<string>;
  /**
   * The pods ("namespace/name") that have a running container on the node, as containerd sees them
   * (not as the API reports them).
   */
  runningPods(): Promise<string[]>;
  /** The last lines of containerd's, kubelet's or kube-proxy's log. */
  logTail(component: "containerd" | "kubelet" | "kube-proxy", lines?: number): Promise<string>;
  /**
   * The URL at which pods reach a server of the test process listening on loopback (Redis, the S3
   * store, a test AI provider): a TCP relay on the node's address, closed by stop().
   */
  expose(url: string): Promise<string>;
  /** Stops everything the node started and removes what it made. Idempotent. */
  stop(): Promise<void>;
}

interface NodeRecord {
  id: string;
  pid: number;
  kubeProxy: string;
}

// ---------------------------------------------------------------------------------------------------
// Binaries

function buildScript(script: string, printVar: string, log: (m: string) => void): Promise<string> {
  return new Promise<string>((res, rej) => {
    const child = spawn("bash", [join(SCRIPTS, script)], {
      env: { ...process.env, [printVar]: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    const tail: string[] = [];
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      for (const line of d.split("\n").filter(Boolean)) {
        tail.push(line);
        if (tail.length > 30) tail.shift();
        if (!/\] cached/.test(line)) process.stderr.write(`${line}\n`);
      }
    });
    child.on("error", rej);
    child.on("close", (code) => {
      const dir = stdout.trim().split("\n").pop() ?? "";
      if (code === 0 && dir) {
        log(`${script}: ${dir}`);
        res(dir);
      } else rej(new Error(`scripts/k8s/${script} failed (exit ${code}):\n${tail.join("\n")}`));
    });
  });
}

function need(path: string | undefined, what: string): string {
  if (!path || !existsSync(path)) throw new Error(`the test node needs ${what}`);
  return path;
}

// ---------------------------------------------------------------------------------------------------
// Processes

interface Proc {
  name: string;
  child: ChildProcess;
  logPath: string;
  exited: Promise<void>;
}

function launch(
  name: string,
  argv: string[],
  logDir: string,
  cgroupDirs: string[],
  env: NodeJS.ProcessEnv,
): Proc {
  const logPath = join(logDir, `${name}.log`);
  const fd = openSync(logPath, "a");
  // Joins the node's runtime cgroup before it execs, so that every process it starts (containerd's
  // shims) can be found and killed by cgroup.
  const join_ = cgroupDirs.map((d) => `echo $$ > '${d}/cgroup.procs'`).join(" && ");
  const [command, ...rest] = [
    ...deathSignalPrefix(),
    "sh",
    "-c",
    `${join_ || "true"} && exec "$@"`,
    name,
    ...argv,
  ];
  let child: ChildProcess;
  try {
    child = spawn(command!, rest, { stdio: ["ignore", fd, fd], env });
  } finally {
    closeSync(fd);
  }
  child.unref();
  const exited = new Promise<void>((res) => {
    child.once("exit", () => res());
    child.once("error", () => res());
  });
  return { name, child, logPath, exited };
}

const running = (p: Proc) => p.child.exitCode === null && p.child.signalCode === null;

async function terminate(p: Proc): Promise<void> {
  if (!running(p)) return;
  p.child.kill("SIGTERM");
  const timer = setTimeout(() => p.child.kill("SIGKILL"), STOP_GRACE_MS);
  await p.exited;
  clearTimeout(timer);
}

async function tail(path: string, lines = 40): Promise<string> {
  try {
    return (await readFile(path, "utf8")).trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

// ---------------------------------------------------------------------------------------------------
// cgroups (v1: one hierarchy per controller; v2: one). The node's pods live under /<id> (the kubelet's
// cgroupRoot), its daemons and containerd's shims under /<id>-runtime.

function cgroupHierarchies(): string[] {
  if (existsSync(join(CGROUP_ROOT, "cgroup.controllers"))) return [CGROUP_ROOT];
  return readdirSync(CGROUP_ROOT)
    .map((d) => join(CGROUP_ROOT, d))
    .filter((d) => {
      try {
        return statSync(d).isDirectory() && existsSync(join(d, "cgroup.procs")) && !d.endsWith("/unified");
      } catch {
        return false;
      }
    });
}

async function makeCgroup(name: string): Promise<string[]> {
  const dirs: string[] = [];
  for (const h of cgroupHierarchies()) {
    const dir = join(h, name);
    await mkdir(dir, { recursive: true });
    // A new cpuset has no CPUs or memory nodes until given its parent's.
    if (existsSync(join(dir, "cpuset.cpus"))) {
      for (const f of ["cpuset.cpus", "cpuset.mems"]) {
        if ((await readFile(join(dir, f), "utf8")).trim() === "") {
          await writeFile(join(dir, f), await readFile(join(h, f), "utf8"));
        }
      }
    }
    dirs.push(dir);
  }
  return dirs;
}

function pidsUnder(dir: string): number[] {
  const pids: number[] = [];
  const walk = (d: string) => {
    try {
      for (const line of readFileSync(join(d, "cgroup.procs"), "utf8").split("\n")) {
        if (line) pids.push(Number(line));
      }
      for (const entry of readdirSync(d, { withFileTypes: true })) {
        if (entry.isDirectory()) walk(join(d, entry.name));
      }
    } catch {
      // gone
    }
  };
  walk(dir);
  return pids;
}

function removeCgroupTree(dir: string): void {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) removeCgroupTree(join(dir, entry.name));
  }
  try {
    rmdirSync(dir);
  } catch {
    // still busy: the next cleanup retries
  }
}

// ---------------------------------------------------------------------------------------------------
// Teardown, shared by stop() and the clean-up of nodes left by dead test processes.

function killCgroups(id: string): void {
  const roots = cgroupHierarchies().flatMap((h) => [join(h, id), join(h, `${id}-runtime`)]);
  for (let round = 0; round < 50; round++) {
    const pids = roots.flatMap(pidsUnder);
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone
      }
    }
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
  }
  for (const root of roots) removeCgroupTree(root);
}

function mountsUnder(prefix: string): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((l) => l.split(" ")[4]?.replace(/\\040/g, " "))
    .filter((m): m is string => !!m && (m === prefix || m.startsWith(`${prefix}/`)))
    .sort((a, b) => b.length - a.length);
}

async function teardown(dir: string, record: NodeRecord): Promise<void> {
  killCgroups(record.id);
  for (const m of mountsUnder(dir)) {
    await execFileP("umount", ["-l", m]).catch((err: Error) => {
      if (process.env.MEDIA_K8S_NODE_DEBUG) process.stderr.write(`test node: umount ${m}: ${err.message}\n`);
    });
  }
  // The unmounts above also released the network namespaces of sandboxes never torn down (containerd
  // keeps them under its state dir); deleting the bridge removes what is left of their links.
  await execFileP("ip", ["link", "del", BRIDGE]).catch(() => {});
  if (record.kubeProxy && existsSync(record.kubeProxy)) {
    // Removes the KUBE-* chains, so the next node's kube-proxy starts from none.
    await execFileP(record.kubeProxy, ["--cleanup", "--v=0"]).catch(() => {});
  }
}

async function removeStaleNodes(): Promise<void> {
  for (const entry of await readdir(tmpdir()).catch(() => [] as string[])) {
    if (!entry.startsWith(DIR_PREFIX)) continue;
    const dir = join(tmpdir(), entry);
    let record: NodeRecord;
    try {
      record = JSON.parse(await readFile(join(dir, "node.json"), "utf8")) as NodeRecord;
    } catch {
      continue;
    }
    if (isAlive(record.pid)) continue;
    await teardown(dir, record);
    await rm(dir, { recursive: true, force: true }).catch(() => {});
  }
}

// One node at a time on a machine: the bridge, kube-proxy's chains and the pod range are machine-wide.
// A second test process (another `npm run test:k8s`, a benchmark) waits for the first one's node.
const LOCK = join(tmpdir(), "media-service-node.lock");

async function acquireMachineLock(log: (m: string) => void): Promise<() => void> {
  let announced = false;
  for (;;) {
    try {
      await mkdir(LOCK);
      await writeFile(join(LOCK, "pid"), String(process.pid));
      return () => rmSync(LOCK, { recursive: true, force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const holder = Number(await readFile(join(LOCK, "pid"), "utf8").catch(() => "0"));
      if (holder && !isAlive(holder)) {
        await rm(LOCK, { recursive: true, force: true });
        continue;
      }
      if (!announced) {
        announced = true;
        log(`test node: waiting for the node of process ${holder || "?"} to stop`);
        process.stderr.write(
          `test node: another test node (process ${holder || "?"}) runs on this machine; waiting for it\n`,
        );
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

const liveNodes = new Map<string, NodeRecord>();
function killNodesSync(): void {
  for (const record of liveNodes.values()) killCgroups(record.id);
}

// ---------------------------------------------------------------------------------------------------
// Images: the node's own (pause, CoreDNS) are made from the node build's binaries; all are handed from
// Docker to containerd as `docker save` archives, cached by image id.

const PAUSE_IMAGE = "media-service.test/pause:3.10";
const COREDNS_IMAGE = "media-service.test/coredns:1";
const IMAGE_CACHE = join(
  process.env.XDG_CACHE_HOME ?? join(process.env.HOME ?? "/tmp", ".cache"),
  "media-service/node-images",
);

async function docker(args: string[]): Promise<string> {
  try {
    const { stdout } = await execFileP("docker", args, { maxBuffer: 64 << 20 });
    return stdout.trim();
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`docker ${args.join(" ")} failed: ${(e.stderr ?? e.message).trim()}`);
  }
}

async function scratchImage(
  tag: string,
  binary: string,
  entrypoint: string[],
  stamp: string,
  port?: number,
): Promise<void> {
  const context = await mkdtemp(join(tmpdir(), "media-service-image-"));
  try {
    await execFileP("cp", [binary, join(context, "bin")]);
    await writeFile(
      join(context, "Dockerfile"),
      `FROM scratch\nLABEL stamp=${JSON.stringify(stamp)}\nCOPY bin /${entrypoint[0]!.replace(/^\//, "")}\n${port ? `EXPOSE ${port}\n` : ""}ENTRYPOINT ${JSON.stringify(entrypoint)}\n`,
    );
    await execFileP("docker", ["build", "-q", "-t", tag, context], {
      env: { ...process.env, DOCKER_BUILDKIT: "0" },
    });
  } finally {
    await rm(context, { recursive: true, force: true });
  }
}

/** An image reference as containerd names it (Docker's short names are docker.io/library/…). */
export function normalizedRef(ref: string): string {
  const first = ref.split("/")[0]!;
  const hasRegistry =
    ref.includes("/") && (first.includes(".") || first.includes(":") || first === "localhost");
  const named = hasRegistry ? ref : ref.includes("/") ? `docker.io/${ref}` : `docker.io/library/${ref}`;
  const last = named.slice(named.lastIndexOf("/") + 1);
  return last.includes(":") || last.includes("@") ? named : `${named}:latest`;
}

/** The first name a `docker save` archive carries (its manifest's RepoTags). */
async function archivedName(archive: string): Promise<string | undefined> {
  const { stdout } = await execFileP("tar", ["-xOf", archive, "manifest.json"], { maxBuffer: 8 << 20 });
  const manifest = JSON.parse(stdout) as Array<{ RepoTags?: string[] }>;
  return manifest[0]?.RepoTags?.[0];
}

// An archive is named by its image's repository and id; a new one replaces the archives of the same
// repository that no run has used for an hour (the image built here changes with every source
// change, ~300 MB each), and archives named by id alone (an older naming) go once an hour old too.
const ARCHIVE_KEEP_MS = 60 * 60 * 1000;

async function imageArchive(ref: string): Promise<string> {
  const id = (await docker(["image", "inspect", "-f", "{{.Id}}", ref])).replace(/^sha256:/, "");
  await mkdir(IMAGE_CACHE, { recursive: true });
  const named = normalizedRef(ref);
  const repository = named.slice(0, named.lastIndexOf(":")).replace(/[^A-Za-z0-9._-]+/g, "_");
  const archive = join(IMAGE_CACHE, `${repository}@${id.slice(0, 24)}.tar`);
  if (existsSync(archive)) {
    const now = new Date();
    await utimes(archive, now, now); // used: kept by the rule above
  } else {
    const partial = `${archive}.${process.pid}.partial`;
    await docker(["save", "-o", partial, ref]);
    await execFileP("mv", [partial, archive]);
    await dropStaleArchives(repository, archive);
  }
  return archive;
}

async function dropStaleArchives(repository: string, keep: string): Promise<void> {
  for (const name of await readdir(IMAGE_CACHE)) {
    const path = join(IMAGE_CACHE, name);
    const stale = name.startsWith(`${repository}@`) || /^[0-9a-f]{24}\.tar$/.test(name);
    if (!stale || path === keep || !name.endsWith(".tar")) continue;
    const info = await stat(path).catch(() => undefined);
    if (info && Date.now() - info.mtimeMs > ARCHIVE_KEEP_MS) await rm(path, { force: true });
  }
}

// ---------------------------------------------------------------------------------------------------
// Cluster add-ons: CoreDNS behind the kube-dns Service.

const COREFILE = `.:53 {
    errors
    health :8080
    ready :8181
    kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    forward . /etc/resolv.conf
    cache 5
    loop
}
`;

async function installCoreDns(kc: KubeConfig): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const namespace = "kube-system";
  const labels = { "k8s-app": "kube-dns" };
  await rbac.createClusterRole({
    body: {
      metadata: { name: "system:coredns" },
      rules: [
        {
          apiGroups: [""],
          resources: ["endpoints", "services", "pods", "namespaces"],
          verbs: ["list", "watch"],
        },
        { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list", "watch"] },
      ],
    },
  });
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "coredns" } } });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: "system:coredns" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "system:coredns" },
      subjects: [{ kind: "ServiceAccount", name: "coredns", namespace }],
    },
  });
  await core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: "coredns" }, data: { Corefile: COREFILE } },
  });
  await apps.createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name: "coredns", labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: "coredns",
            priorityClassName: "system-cluster-critical",
            dnsPolicy: "Default",
            containers: [
              {
                name: "coredns",
                image: COREDNS_IMAGE,
                imagePullPolicy: "Never",
                args: ["-conf", "/etc/coredns/Corefile"],
                ports: [
                  { name: "dns", containerPort: 53, protocol: "UDP" },
                  { name: "dns-tcp", containerPort: 53, protocol: "TCP" },
                ],
                // No CPU request: the node's 2 CPUs are all the runner pods' (a job that asks for
                // `resources.cpu: "2"` fits), as they are the test's subject; DNS needs little.
                resources: { requests: { memory: "32Mi" }, limits: { memory: "128Mi" } },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { add: ["NET_BIND_SERVICE"], drop: ["ALL"] },
                },
                readinessProbe: { httpGet: { path: "/ready", port: 8181 }, periodSeconds: 1 },
                livenessProbe: { httpGet: { path: "/health", port: 8080 }, periodSeconds: 10 },
                volumeMounts: [{ name: "config", mountPath: "/etc/coredns", readOnly: true }],
              },
            ],
            volumes: [{ name: "config", configMap: { name: "coredns" } }],
          },
        },
      },
    },
  });
  await core.createNamespacedService({
    namespace,
    body: {
      metadata: { name: "kube-dns", labels: { ...labels, "kubernetes.io/name": "CoreDNS" } },
      spec: {
        clusterIP: CLUSTER_DNS_IP,
        selector: labels,
        ports: [
          { name: "dns", port: 53, protocol: "UDP", targetPort: 53 },
          { name: "dns-tcp", port: 53, protocol: "TCP", targetPort: 53 },
        ],
      },
    },
  });
}

// ---------------------------------------------------------------------------------------------------

function isReady(node: V1Node | undefined): boolean {
  return !!node?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
}

export async function startNode(options: NodeOptions): Promise<RealNode> {
  const { cp } = options;
  const log = options.log ?? (() => {});
  const keep = options.keepDir ?? process.env.MEDIA_K8S_KEEP === "1";
  if (process.getuid?.() !== 0) throw new Error("the test node needs root (containers, cgroups, networking)");
  const timings: Record<string, number> = {};
  const t0 = Date.now();
  let phaseStart = t0;
  const phase = (name: string) => {
    const now = Date.now();
    timings[name] = now - phaseStart;
    phaseStart = now;
  };

  const nodeBin = await buildScript("build-node.sh", "MEDIA_NODE_PRINT_BIN", log);
  const kubelet = need(
    join(cp.binDir, "kubelet"),
    `kubelet in ${cp.binDir} (scripts/k8s/build-control-plane.sh)`,
  );
  const kubeProxy = need(join(cp.binDir, "kube-proxy"), `kube-proxy in ${cp.binDir}`);
  const runc = need(join(nodeBin, "runc"), `runc in ${nodeBin}`);
  const cniBin = CNI_BIN_DIRS.find((d) => existsSync(join(d, "bridge")));
  need(cniBin, `the CNI plugins in ${CNI_BIN_DIRS.join(" or ")} (Debian's containernetworking-plugins)`);
  need(lookPath("iptables", `/usr/sbin:/sbin:${process.env.PATH ?? ""}`), "iptables");
  phase("binaries");

  onTestExit(killNodesSync);
  const releaseLock = await acquireMachineLock(log);
  onTestExit(releaseLock);
  await removeStaleNodes();
  const id = `media-node-${randomBytes(4).toString("hex")}`;
  const name = id;
  const ip = hostAddress();
  const dir = await mkdtemp(join(tmpdir(), DIR_PREFIX));
  const record: NodeRecord = { id, pid: process.pid, kubeProxy };
  await writeFile(join(dir, "node.json"), JSON.stringify(record));
  liveNodes.set(dir, record);
  const logDir = join(dir, "logs");
  await mkdir(logDir);
  const env = {
    PATH: `${nodeBin}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
    HOME: dir,
  };
  const procs: Proc[] = [];
  const relays: ChildProcess[] = [];
  onTestExit(() => {
    for (const relay of relays) relay.kill("SIGKILL");
  });
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      for (const relay of relays) relay.kill("SIGKILL");
      for (const p of [...procs].reverse()) await terminate(p);
      await teardown(dir, record);
      liveNodes.delete(dir);
      if (!keep) await rm(dir, { recursive: true, force: true }).catch(() => {});
      releaseLock();
    })());

  const waitFor = (p: Proc, what: string, check: () => Promise<boolean>, limitMs = 120_000) =>
    eventually(
      `${p.name}: ${what}`,
      async () => {
        if (!running(p)) throw new Error(`${p.name} exited before ${what}`);
        return (await check()) ? true : undefined;
      },
      limitMs,
      async () => `--- ${p.name} log ---\n${await tail(p.logPath)}`,
    );

  try {
    // Kernel settings every node needs: forwarding, and bridged pod traffic through iptables (Services).
    await writeFile("/proc/sys/net/ipv4/ip_forward", "1");
    if (existsSync("/proc/sys/net/bridge/bridge-nf-call-iptables")) {
      await writeFile("/proc/sys/net/bridge/bridge-nf-call-iptables", "1");
    }
    // Docker Engine sets the FORWARD policy to DROP; pod traffic is let through, as its own rules do
    // for docker0.
    for (const rule of [
      ["-s", POD_CIDR],
      ["-d", POD_CIDR],
    ]) {
      const args = [
        "FORWARD",
        ...rule,
        "-j",
        "ACCEPT",
        "-m",
        "comment",
        "--comment",
        "media-service test node pods",
      ];
      await execFileP("iptables", ["-C", ...args]).catch(() => execFileP("iptables", ["-I", ...args]));
    }
    const runtimeCgroups = await makeCgroup(`${id}-runtime`);
    await makeCgroup(id);

    // CNI
    const netDir = join(dir, "cni/net.d");
    await mkdir(netDir, { recursive: true });
    await writeFile(
      join(netDir, "10-media.conflist"),
      JSON.stringify(
        {
          cniVersion: "1.0.0",
          name: "media-node",
          plugins: [
            {
              type: "bridge",
              bridge: BRIDGE,
              isGateway: true,
              ipMasq: false,
              hairpinMode: true,
              ipam: {
                type: "host-local",
                ranges: [[{ subnet: POD_CIDR, gateway: POD_GATEWAY }]],
                routes: [{ dst: "0.0.0.0/0" }],
                dataDir: join(dir, "cni/ipam"),
              },
            },
            { type: "portmap", capabilities: { portMappings: true } },
          ],
        },
        null,
        2,
      ),
    );

    // containerd
    const sock = join(dir, "containerd/containerd.sock");
    const containerdConfig = join(dir, "containerd/config.toml");
    await mkdir(dirname(sock), { recursive: true });
    await writeFile(
      containerdConfig,
      `version = 3
root = "${join(dir, "containerd/root")}"
state = "${join(dir, "containerd/state")}"

[grpc]
  address = "${sock}"

[ttrpc]
  address = "${sock}.ttrpc"

[debug]
  level = "${process.env.MEDIA_K8S_NODE_DEBUG ? "debug" : "info"}"

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = "${PAUSE_IMAGE}"
  [plugins.'io.containerd.cri.v1.runtime']
    # Pod network namespaces under the state dir, so a teardown finds them with the node's mounts.
    netns_mounts_under_state_dir = true
    # Root here lacks CAP_SYS_RESOURCE, so no process may lower its OOM score (containerd asks -998
    # for every sandbox, kubelet -997 for Guaranteed pods): keep requests within containerd's own.
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = "${runc}"
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ["${cniBin}"]
      conf_dir = "${netDir}"
  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
  [plugins.'io.containerd.nri.v1.nri']
    disable = true
`,
    );
    const containerd = launch(
      "containerd",
      [join(nodeBin, "containerd"), "--config", containerdConfig],
      logDir,
      runtimeCgroups,
      env,
    );
    procs.push(containerd);
    const ctr = async (args: string[]) => {
      const { stdout } = await execFileP(
        join(nodeBin, "ctr"),
        ["--address", sock, "--namespace", "k8s.io", ...args],
        {
          maxBuffer: 64 << 20,
        },
      );
      return stdout;
    };
    await waitFor(
      containerd,
      "serving",
      async () => existsSync(sock) && !!(await ctr(["version"]).catch(() => "")),
    );
    phase("containerd");

    // Images (Docker Engine started if it is not running: the images are handed over from it)
    await execFileP("bash", [join(SCRIPTS, "../docker-engine.sh")], { maxBuffer: 8 << 20 });
    const corednsBin = join(nodeBin, "coredns");
    const pauseBin = join(nodeBin, "pause");
    const stamp = (await readFile(join(nodeBin, ".stamp"), "utf8")).split("\n")[1] ?? "";
    const supportLabel = await docker([
      "image",
      "inspect",
      "-f",
      '{{index .Config.Labels "stamp"}}',
      PAUSE_IMAGE,
    ]).catch(() => "");
    const corednsLabel = await docker([
      "image",
      "inspect",
      "-f",
      '{{index .Config.Labels "stamp"}}',
      COREDNS_IMAGE,
    ]).catch(() => "");
    if (supportLabel !== stamp || corednsLabel !== stamp) {
      await scratchImage(PAUSE_IMAGE, pauseBin, ["/pause"], stamp);
      await scratchImage(COREDNS_IMAGE, corednsBin, ["/coredns"], stamp, 53);
    }
    for (const ref of [PAUSE_IMAGE, COREDNS_IMAGE, ...(options.images ?? [])]) {
      const archive = await imageArchive(ref);
      await ctr(["images", "import", "--snapshotter", "overlayfs", archive]);
      // An archive is kept by image id and carries the name it was first saved under; the same image
      // may be asked for by another of its tags (a content tag and media-service:dev): name it so.
      const saved = await archivedName(archive);
      if (saved && normalizedRef(saved) !== normalizedRef(ref)) {
        await ctr(["images", "tag", "--force", normalizedRef(saved), normalizedRef(ref)]);
      }
    }
    phase("images");

    // kubelet
    const kubeletDir = join(dir, "kubelet");
    await mkdir(kubeletDir, { recursive: true });
    const kubeletKubeconfig = await cp.kubeconfigForUser(`system:node:${name}`, ["system:nodes"]);
    const kubeletPort = await freePort();
    const healthzPort = await freePort();
    const kubeletConfig = join(kubeletDir, "config.yaml");
    await writeFile(
      kubeletConfig,
      JSON.stringify(
        {
          apiVersion: "kubelet.config.k8s.io/v1beta1",
          kind: "KubeletConfiguration",
          address: "0.0.0.0",
          port: kubeletPort,
          readOnlyPort: 0,
          healthzBindAddress: "127.0.0.1",
          healthzPort,
          authentication: {
            anonymous: { enabled: false },
            webhook: { enabled: true },
            x509: { clientCAFile: cp.caCertPath },
          },
          authorization: { mode: "Webhook" },
          // This machine's cgroups are v1, which kubelet 1.35+ refuses unless told.
          failCgroupV1: false,
          cgroupDriver: "cgroupfs",
          cgroupRoot: `/${id}`,
          failSwapOn: false,
          containerRuntimeEndpoint: `unix://${sock}`,
          clusterDNS: [CLUSTER_DNS_IP],
          clusterDomain: CLUSTER_DOMAIN,
          resolvConf: "/etc/resolv.conf",
          podCIDR: POD_CIDR,
          maxPods: 110,
          serializeImagePulls: false,
          // Images are loaded, never pulled: nothing may collect them.
          imageGCHighThresholdPercent: 100,
          imageGCLowThresholdPercent: 99,
          evictionHard: {
            "memory.available": "50Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
          },
          nodeStatusUpdateFrequency: "10s",
          syncFrequency: "10s",
          fileCheckFrequency: "10s",
          shutdownGracePeriod: "0s",
          protectKernelDefaults: false,
        },
        null,
        2,
      ),
    );
    const kubeletProc = launch(
      "kubelet",
      [
        kubelet,
        `--config=${kubeletConfig}`,
        `--kubeconfig=${kubeletKubeconfig}`,
        `--root-dir=${kubeletDir}/root`,
        `--cert-dir=${kubeletDir}/pki`,
        `--hostname-override=${name}`,
        `--node-ip=${ip}`,
        "--v=1",
      ],
      logDir,
      runtimeCgroups,
      env,
    );
    procs.push(kubeletProc);
    const admin = new KubeConfig();
    admin.loadFromFile(cp.kubeconfigPath);
    const core = admin.makeApiClient(CoreV1Api);
    await waitFor(kubeletProc, `Ready (Node ${name})`, async () =>
      isReady(await core.readNode({ name }).catch(() => undefined)),
    );
    phase("kubelet");

    // kube-proxy
    const proxyKubeconfig = await cp.kubeconfigForUser("system:kube-proxy");
    const proxyConfig = join(dir, "kube-proxy.yaml");
    await writeFile(
      proxyConfig,
      JSON.stringify(
        {
          apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
          kind: "KubeProxyConfiguration",
          clientConnection: { kubeconfig: proxyKubeconfig },
          hostnameOverride: name,
          bindAddress: "0.0.0.0",
          clusterCIDR: CLUSTER_CIDR,
          mode: "iptables",
          healthzBindAddress: `127.0.0.1:${await freePort()}`,
          metricsBindAddress: `127.0.0.1:${await freePort()}`,
          // Leave the machine's conntrack settings as they are.
          conntrack: { maxPerCore: 0, min: 0 },
          iptables: { syncPeriod: "10s", minSyncPeriod: "0s" },
        },
        null,
        2,
      ),
    );
    const proxy = launch(
      "kube-proxy",
      [kubeProxy, `--config=${proxyConfig}`, "--v=1"],
      logDir,
      runtimeCgroups,
      env,
    );
    procs.push(proxy);
    await waitFor(proxy, "syncing rules", async () =>
      /Starting|Syncing iptables rules|sync/i.test(await tail(proxy.logPath, 200)),
    );
    phase("kube-proxy");

    // Cluster DNS
    await installCoreDns(admin);
    const apps = admin.makeApiClient(AppsV1Api);
    await waitFor(kubeletProc, "running CoreDNS", async () => {
      const d = await apps.readNamespacedDeployment({ name: "coredns", namespace: "kube-system" });
      return (d.status?.availableReplicas ?? 0) >= 1;
    });
    phase("coredns");
    timings.total = Date.now() - t0;
    log(
      `node ${name} (${ip}) ready in ${timings.total} ms (${Object.entries(timings)
        .map(([k, v]) => `${k} ${v} ms`)
        .join(", ")})`,
    );

    return {
      name,
      ip,
      dir,
      timings,
      ctr,
      async runningPods() {
        const pods = new Set<string>();
        for (const line of (await ctr(["tasks", "ls"])).split("\n").slice(1)) {
          const [task, , status] = line.trim().split(/\s+/);
          if (!task || status !== "RUNNING") continue;
          const info = JSON.parse(await ctr(["containers", "info", task]).catch(() => "{}")) as {
            Labels?: Record<string, string>;
          };
          const labels = info.Labels ?? {};
          // Sandboxes (pause) count too: a pod is gone from the node when its sandbox is.
          const ns = labels["io.kubernetes.pod.namespace"];
          const name = labels["io.kubernetes.pod.name"];
          if (ns && name) pods.add(`${ns}/${name}`);
        }
        return [...pods].sort();
      },
      async expose(url) {
        const target = new URL(url);
        const port = Number(target.port) || (target.protocol === "https:" ? 443 : 80);
        // A process of its own, not this one's event loop: the relay carries every byte runner pods
        // send to the stack, and this process also serves the stack's API and S3 store.
        const [command = process.execPath, ...args] = [
          ...deathSignalPrefix(),
          process.execPath,
          "-e",
          RELAY_SOURCE,
          ip,
          target.hostname,
          String(port),
        ];
        const relay = spawn(command, args, { stdio: ["ignore", "pipe", "inherit"] });
        relays.push(relay);
        const listening = await new Promise<number>((res, rej) => {
          let out = "";
          relay.once("error", rej);
          relay.once("exit", (code) => rej(new Error(`the relay to ${url} exited (${code})`)));
          relay.stdout.setEncoding("utf8").on("data", (d: string) => {
            out += d;
            if (out.includes("\n")) res(Number(out.trim()));
          });
        });
        const exposed = new URL(url);
        exposed.hostname = ip;
        exposed.port = String(listening);
        return exposed.toString().replace(/\/$/, url.endsWith("/") ? "/" : "");
      },
      logTail: (component, lines) => tail(join(logDir, `${component}.log`), lines),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
