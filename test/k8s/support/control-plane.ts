// A real, container-less Kubernetes control plane for the k8s tests: etcd, kube-apiserver (RBAC on) and
// kube-controller-manager (optionally kube-scheduler) as child processes on free loopback ports, with a
// throw-away PKI made by openssl, all in one temp dir that stop() removes. The binaries come from
// scripts/k8s/build-control-plane.sh (built from the Go modules once, cached outside the repository).
// There is no node and no kubelet: pods are created (by the Job controller) but stay Pending.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, openSync, rmSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { onFreePorts, PortTakenError } from "../../support/ports.js";
import { hostAddress, KUBERNETES_SERVICE_IP as SERVICE_IP, SERVICE_CIDR } from "./network.js";
import { deathSignalPrefix, isAlive, onTestExit } from "./processes.js";

const execFileP = promisify(execFile);

const BUILD_SCRIPT = resolve(
  dirname(fileURLToPath(import.meta.url)),
  "../../../scripts/k8s/build-control-plane.sh",
);
const SA_ISSUER = "https://kubernetes.default.svc.cluster.local";
const STOP_GRACE_MS = 5_000;
const LOG_TAIL_LINES = 40;
const PORT_ATTEMPTS = 3;
const DIR_PREFIX = "media-service-k8s-";

export interface ControlPlaneOptions {
  /** Also run kube-scheduler (pods then get PodScheduled=False/Unschedulable: there are no nodes). */
  scheduler?: boolean;
  /** Keep the temp dir (PKI, logs, etcd data) after stop() or a failed start. Also MEDIA_K8S_KEEP=1. */
  keepDir?: boolean;
  /** Progress messages (build, start timings); default: none. */
  log?: (message: string) => void;
  /** Per-component readiness timeout; default 90 s. */
  readyTimeoutMs?: number;
}

export interface ControlPlane {
  /** https://127.0.0.1:<port> */
  server: string;
  /** Admin kubeconfig (user in group system:masters). */
  kubeconfigPath: string;
  /** The temp dir: pki/, logs/<component>.log, etcd/. */
  dir: string;
  binDir: string;
  caCertPath: string;
  /** Milliseconds each start phase took (pki, etcd, kube-apiserver, kube-controller-manager, …, total). */
  timings: Record<string, number>;
  /** A kubeconfig for a client certificate signed by the cluster CA (CN=user, O=groups). */
  kubeconfigForUser(user: string, groups?: string[]): Promise<string>;
  /** A kubeconfig authenticating with a bearer token (e.g. from a ServiceAccount TokenRequest). */
  kubeconfigForToken(name: string, token: string): Promise<string>;
  /** The last lines of a component's log (etcd, kube-apiserver, kube-controller-manager, kube-scheduler). */
  logTail(component: string, lines?: number): Promise<string>;
  /** SIGTERM every component (SIGKILL after 5 s), then remove the temp dir. Idempotent. */
  stop(): Promise<void>;
}

export class ControlPlaneStartError extends Error {
  constructor(
    message: string,
    readonly component: string,
    readonly logTail: string,
  ) {
    super(logTail ? `${message}\n--- ${component} log (last lines) ---\n${logTail}` : message);
    this.name = "ControlPlaneStartError";
  }
}

// ---------------------------------------------------------------------------------------------------
// Child processes that must not outlive this process.

interface Component {
  name: string;
  child: ChildProcess;
  logPath: string;
  exited: Promise<void>;
}

const liveChildren = new Set<ChildProcess>();
const liveDirs = new Set<string>();

function killAllSync(): void {
  for (const child of liveChildren) {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
  for (const dir of liveDirs) rmSync(dir, { recursive: true, force: true });
}

function launch(name: string, binary: string, args: string[], logDir: string): Component {
  const logPath = join(logDir, `${name}.log`);
  const fd = openSync(logPath, "a");
  const prefix = deathSignalPrefix();
  const [command, ...rest] = [...prefix, binary, ...args] as [string, ...string[]];
  let child: ChildProcess;
  try {
    child = spawn(command, rest, { stdio: ["ignore", fd, fd] });
  } finally {
    closeSync(fd);
  }
  // Never keeps the test process alive by itself; the exit hook kills it.
  child.unref();
  liveChildren.add(child);
  const exited = new Promise<void>((res) => {
    child.once("exit", () => res());
    child.once("error", () => res());
  });
  void exited.then(() => liveChildren.delete(child));
  return { name, child, logPath, exited };
}

function isRunning(c: Component): boolean {
  return c.child.exitCode === null && c.child.signalCode === null && c.child.pid !== undefined;
}

async function terminate(c: Component): Promise<void> {
  if (!isRunning(c)) return;
  c.child.kill("SIGTERM");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = await Promise.race([
    c.exited.then(() => false),
    new Promise<boolean>((res) => {
      timer = setTimeout(() => res(true), STOP_GRACE_MS);
    }),
  ]);
  clearTimeout(timer);
  if (timedOut) {
    c.child.kill("SIGKILL");
    await c.exited;
  }
}

async function tail(path: string, lines = LOG_TAIL_LINES): Promise<string> {
  try {
    const text = await readFile(path, "utf8");
    return text.trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

const delay = (ms: number) => new Promise<void>((res) => setTimeout(res, ms));

// Polls `check` until it returns true; fails early (with the log tail) when the component exits.
async function waitUntil(
  c: Component,
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = "";
  for (;;) {
    if (!isRunning(c)) {
      const how = c.child.signalCode ? `signal ${c.child.signalCode}` : `code ${c.child.exitCode}`;
      throw new ControlPlaneStartError(
        `${c.name} exited (${how}) before ${what}`,
        c.name,
        await tail(c.logPath),
      );
    }
    try {
      if (await check()) return;
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) {
      throw new ControlPlaneStartError(
        `${c.name}: not ${what} after ${timeoutMs} ms${lastError ? ` (last error: ${lastError})` : ""}`,
        c.name,
        await tail(c.logPath),
      );
    }
    await delay(150);
  }
}

// Starts a component on fresh free ports, retrying with new ports when another process grabbed one
// between freePort() and the component's bind.
async function startWithPorts(
  ports: number,
  start: (p: number[]) => Promise<Component>,
): Promise<{ component: Component; ports: number[] }> {
  return onFreePorts(ports, PORT_ATTEMPTS, async (p) => {
    try {
      return { component: await start(p), ports: p };
    } catch (err) {
      if (err instanceof ControlPlaneStartError && /address already in use/i.test(err.logTail)) {
        throw new PortTakenError(err.message, { cause: err });
      }
      throw err;
    }
  });
}

// ---------------------------------------------------------------------------------------------------
// HTTP probes

interface Tls {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

function get(
  url: string,
  tls?: Partial<Tls> & { insecure?: boolean },
): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const u = new URL(url);
    const options = {
      method: "GET",
      timeout: 5_000,
      ...(u.protocol === "https:"
        ? { ca: tls?.ca, cert: tls?.cert, key: tls?.key, rejectUnauthorized: !tls?.insecure }
        : {}),
    };
    const req = (u.protocol === "https:" ? httpsRequest : httpRequest)(u, options, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (body += chunk));
      response.on("end", () => res({ status: response.statusCode ?? 0, body }));
      response.on("error", rej);
    });
    req.on("timeout", () => req.destroy(new Error(`timeout: GET ${url}`)));
    req.on("error", rej);
    req.end();
  });
}

// ---------------------------------------------------------------------------------------------------
// PKI (openssl; Node's crypto cannot issue X.509 certificates)

const OPENSSL_CNF = `[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
`;

export class Pki {
  private constructor(
    readonly dir: string,
    readonly caCert: string,
    readonly caKey: string,
  ) {}

  static async create(dir: string): Promise<Pki> {
    await mkdir(dir, { recursive: true });
    const cnf = join(dir, "openssl.cnf");
    await writeFile(cnf, OPENSSL_CNF);
    const caCert = join(dir, "ca.crt");
    const caKey = join(dir, "ca.key");
    await openssl(dir, [
      "req", "-x509", "-new", "-nodes", "-config", cnf, "-extensions", "ca_ext",
      "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
      "-keyout", caKey, "-out", caCert, "-days", "3650", "-subj", "/CN=media-service-test-ca",
    ]); // prettier-ignore
    return new Pki(dir, caCert, caKey);
  }

  /** Issues name.crt/name.key; subject "/O=g1/O=g2/CN=cn". */
  async issue(
    name: string,
    cn: string,
    opts: { groups?: string[]; server?: { ips: string[]; dns: string[] } },
  ): Promise<{ cert: string; key: string }> {
    const cert = join(this.dir, `${name}.crt`);
    const key = join(this.dir, `${name}.key`);
    const csr = join(this.dir, `${name}.csr`);
    const ext = join(this.dir, `${name}.ext`);
    const subject = [...(opts.groups ?? []).map((g) => `/O=${escapeDn(g)}`), `/CN=${escapeDn(cn)}`].join("");
    const lines = [
      "basicConstraints = critical,CA:FALSE",
      "keyUsage = critical,digitalSignature,keyEncipherment",
      `extendedKeyUsage = ${opts.server ? "serverAuth" : "clientAuth"}`,
      "authorityKeyIdentifier = keyid",
    ];
    if (opts.server) {
      const sans = [...opts.server.ips.map((ip) => `IP:${ip}`), ...opts.server.dns.map((d) => `DNS:${d}`)];
      lines.push(`subjectAltName = ${sans.join(",")}`);
    }
    await writeFile(ext, lines.join("\n") + "\n");
    await openssl(this.dir, [
      "req", "-new", "-nodes", "-config", join(this.dir, "openssl.cnf"),
      "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
      "-keyout", key, "-out", csr, "-subj", subject,
    ]); // prettier-ignore
    await openssl(this.dir, [
      "x509", "-req", "-in", csr, "-CA", this.caCert, "-CAkey", this.caKey,
      "-set_serial", `0x${randomBytes(16).toString("hex")}`, "-days", "3650",
      "-extfile", ext, "-out", cert,
    ]); // prettier-ignore
    await rm(csr, { force: true });
    return { cert, key };
  }

  /** The ServiceAccount token signing key pair (RSA, as kubeadm makes it). */
  async serviceAccountKeys(): Promise<{ key: string; pub: string }> {
    const key = join(this.dir, "sa.key");
    const pub = join(this.dir, "sa.pub");
    await openssl(this.dir, [
      "genpkey",
      "-algorithm",
      "RSA",
      "-pkeyopt",
      "rsa_keygen_bits:2048",
      "-out",
      key,
    ]);
    await openssl(this.dir, ["pkey", "-in", key, "-pubout", "-out", pub]);
    return { key, pub };
  }
}

function escapeDn(value: string): string {
  return value.replace(/[\\/=+,]/g, (c) => `\\${c}`);
}

async function openssl(cwd: string, args: string[]): Promise<void> {
  try {
    await execFileP("openssl", args, { cwd });
  } catch (err) {
    const e = err as Error & { stderr?: string; code?: string };
    if (e.code === "ENOENT") throw new Error("openssl is not installed (apt-get install -y openssl)");
    throw new Error(`openssl ${args[0]} failed: ${e.stderr ?? e.message}`);
  }
}

async function writeKubeconfig(
  path: string,
  server: string,
  caCertPath: string,
  user: string,
  auth: { certPath: string; keyPath: string } | { token: string },
): Promise<string> {
  const b64 = async (p: string) => (await readFile(p)).toString("base64");
  const userEntry =
    "token" in auth
      ? { token: auth.token }
      : { "client-certificate-data": await b64(auth.certPath), "client-key-data": await b64(auth.keyPath) };
  // JSON is YAML: both client-go and @kubernetes/client-node read it.
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "test", cluster: { server, "certificate-authority-data": await b64(caCertPath) } }],
    users: [{ name: user, user: userEntry }],
    contexts: [{ name: user, context: { cluster: "test", user } }],
    "current-context": user,
  };
  await writeFile(path, JSON.stringify(config, null, 2) + "\n", { mode: 0o600 });
  return path;
}

// Temp dirs of test processes that were SIGKILLed (their components died with them, see above, but
// no exit hook could remove the dir): removed when their owner.pid is no longer alive.
async function removeStaleDirs(): Promise<void> {
  let names: string[];
  try {
    names = (await readdir(tmpdir())).filter((n) => n.startsWith(DIR_PREFIX));
  } catch {
    return;
  }
  for (const name of names) {
    const path = join(tmpdir(), name);
    let pid: number;
    try {
      pid = Number((await readFile(join(path, "owner.pid"), "utf8")).trim());
    } catch {
      continue; // still being created, or not ours
    }
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) continue;
    if (isAlive(pid)) continue;
    await rm(path, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------------
// Binaries

async function findBinaries(log: (m: string) => void): Promise<string> {
  const fromEnv = process.env.MEDIA_K8S_BIN_DIR;
  if (fromEnv) {
    for (const b of ["etcd", "kube-apiserver", "kube-controller-manager"]) {
      if (!existsSync(join(fromEnv, b))) throw new Error(`MEDIA_K8S_BIN_DIR=${fromEnv} has no ${b}`);
    }
    return fromEnv;
  }
  // The script returns at once when the binaries are cached; otherwise it builds them (minutes).
  return await new Promise<string>((res, rej) => {
    const child = spawn("bash", [BUILD_SCRIPT], {
      env: { ...process.env, MEDIA_K8S_PRINT_BIN: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderrTail: string[] = [];
    let announced = false;
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    let partial = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      const lines = (partial + d).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        if (line === "") continue;
        stderrTail = [...stderrTail.slice(-30), line];
        if (/^\[k8s-build\] cached/.test(line)) continue;
        if (!announced) {
          announced = true;
          process.stderr.write(
            "test control plane: binaries not cached yet, building them with scripts/k8s/build-control-plane.sh " +
              "(first run only: about 10-20 min on 2 cores)\n",
          );
        }
        process.stderr.write(`${line}\n`);
      }
    });
    child.on("error", rej);
    child.on("close", (code) => {
      if (partial) stderrTail.push(partial);
      const dir = stdout.trim().split("\n").pop() ?? "";
      if (code === 0 && dir && existsSync(join(dir, "kube-apiserver"))) {
        log(`binaries: ${dir}`);
        res(dir);
      } else {
        rej(new Error(`${BUILD_SCRIPT} failed (exit ${code}):\n${stderrTail.join("\n")}`));
      }
    });
  });
}

// ---------------------------------------------------------------------------------------------------

export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const log = options.log ?? (() => {});
  const readyTimeoutMs = options.readyTimeoutMs ?? 90_000;
  const keep = options.keepDir ?? process.env.MEDIA_K8S_KEEP === "1";
  const timings: Record<string, number> = {};
  const t0 = Date.now();
  let phaseStart = t0;
  const phase = (name: string) => {
    const now = Date.now();
    timings[name] = now - phaseStart;
    phaseStart = now;
  };

  const binDir = await findBinaries(log);
  phase("binaries");
  onTestExit(killAllSync);
  await removeStaleDirs();
  const dir = await mkdtemp(join(tmpdir(), DIR_PREFIX));
  if (!keep) {
    // Removed by the exit hook, or by a later run when this process dies by SIGKILL.
    liveDirs.add(dir);
    await writeFile(join(dir, "owner.pid"), `${process.pid}\n`);
  }
  const logDir = join(dir, "logs");
  await mkdir(logDir);
  const components: Component[] = [];
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // Controllers first, then the API server, etcd last.
      const order = ["kube-controller-manager", "kube-scheduler", "kube-apiserver", "etcd"];
      for (const name of order) {
        await Promise.all(components.filter((c) => c.name === name).map(terminate));
      }
      await Promise.all(components.map(terminate));
      if (!keep) {
        await rm(dir, { recursive: true, force: true });
      }
      liveDirs.delete(dir);
    })());

  try {
    // PKI
    const pki = await Pki.create(join(dir, "pki"));
    const nodeIp = hostAddress();
    const [serving, admin, kubeletClient, kcm, scheduler, sa] = await Promise.all([
      pki.issue("apiserver", "kube-apiserver", {
        server: {
          ips: ["127.0.0.1", SERVICE_IP, nodeIp],
          dns: [
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
          ],
        },
      }),
      pki.issue("admin", "media-service-test-admin", { groups: ["system:masters"] }),
      // How the API server authenticates to kubelets (logs, exec), as kubeadm's apiserver-kubelet-client.
      pki.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client", { groups: ["system:masters"] }),
      pki.issue("kube-controller-manager", "system:kube-controller-manager", {}),
      options.scheduler ? pki.issue("kube-scheduler", "system:kube-scheduler", {}) : undefined,
      pki.serviceAccountKeys(),
    ]);
    const adminTls: Tls = {
      ca: await readFile(pki.caCert),
      cert: await readFile(admin.cert),
      key: await readFile(admin.key),
    };
    phase("pki");

    // etcd
    const etcdStart = await startWithPorts(2, async ([client, peer]) => {
      const c = launch(
        "etcd",
        join(binDir, "etcd"),
        [
          "--name=default",
          `--data-dir=${join(dir, "etcd")}`,
          `--listen-client-urls=http://127.0.0.1:${client}`,
          `--advertise-client-urls=http://127.0.0.1:${client}`,
          `--listen-peer-urls=http://127.0.0.1:${peer}`,
          `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
          `--initial-cluster=default=http://127.0.0.1:${peer}`,
          "--initial-cluster-state=new",
          // Test data: durability is not wanted, speed is.
          "--unsafe-no-fsync",
          "--log-level=warn",
        ],
        logDir,
      );
      components.push(c);
      await waitUntil(c, "healthy", readyTimeoutMs, async () => {
        const r = await get(`http://127.0.0.1:${client}/health`);
        return r.status === 200 && /"health":\s*"true"/.test(r.body);
      });
      return c;
    });
    const etcdUrl = `http://127.0.0.1:${etcdStart.ports[0]}`;
    phase("etcd");

    // kube-apiserver
    const api = await startWithPorts(1, async ([port]) => {
      const c = launch(
        "kube-apiserver",
        join(binDir, "kube-apiserver"),
        [
          `--etcd-servers=${etcdUrl}`,
          // On every interface: pods reach it through the kubernetes Service (10.0.0.1:443), whose
          // endpoint is this host's address.
          "--bind-address=0.0.0.0",
          `--advertise-address=${nodeIp}`,
          `--secure-port=${port}`,
          `--cert-dir=${join(dir, "apiserver-certs")}`,
          `--kubelet-client-certificate=${kubeletClient.cert}`,
          `--kubelet-client-key=${kubeletClient.key}`,
          "--kubelet-preferred-address-types=InternalIP",
          `--tls-cert-file=${serving.cert}`,
          `--tls-private-key-file=${serving.key}`,
          `--client-ca-file=${pki.caCert}`,
          "--authorization-mode=Node,RBAC",
          // Default plugins (NamespaceLifecycle, LimitRanger, ServiceAccount, Priority, ResourceQuota,
          // PodSecurity, webhooks, …) plus NodeRestriction, which holds each kubelet to its own Node.
          "--enable-admission-plugins=NodeRestriction",
          `--service-account-issuer=${SA_ISSUER}`,
          `--service-account-key-file=${sa.pub}`,
          `--service-account-signing-key-file=${sa.key}`,
          `--service-cluster-ip-range=${SERVICE_CIDR}`,
          "--allow-privileged=false",
          "--profiling=false",
          "--v=1",
        ],
        logDir,
      );
      components.push(c);
      await waitUntil(c, "ready (/readyz)", readyTimeoutMs, async () => {
        const r = await get(`https://127.0.0.1:${port}/readyz`, adminTls);
        return r.status === 200;
      });
      return c;
    });
    const server = `https://127.0.0.1:${api.ports[0]}`;
    const kubeconfigPath = await writeKubeconfig(join(dir, "admin.kubeconfig"), server, pki.caCert, "admin", {
      certPath: admin.cert,
      keyPath: admin.key,
    });
    phase("kube-apiserver");

    // kube-controller-manager
    const kcmKubeconfig = await writeKubeconfig(
      join(dir, "kube-controller-manager.kubeconfig"),
      server,
      pki.caCert,
      "system:kube-controller-manager",
      { certPath: kcm.cert, keyPath: kcm.key },
    );
    await startWithPorts(1, async ([port]) => {
      const c = launch(
        "kube-controller-manager",
        join(binDir, "kube-controller-manager"),
        [
          `--kubeconfig=${kcmKubeconfig}`,
          `--authentication-kubeconfig=${kcmKubeconfig}`,
          `--authorization-kubeconfig=${kcmKubeconfig}`,
          "--bind-address=127.0.0.1",
          `--secure-port=${port}`,
          `--cert-dir=${join(dir, "kcm-certs")}`,
          "--leader-elect=false",
          // Every default controller (job, ttl-after-finished, garbage collector, namespace,
          // serviceaccount, …), each with its own ServiceAccount and bootstrap RBAC role, as kubeadm runs it.
          "--controllers=*",
          "--use-service-account-credentials=true",
          `--service-account-private-key-file=${sa.key}`,
          `--root-ca-file=${pki.caCert}`,
          `--cluster-signing-cert-file=${pki.caCert}`,
          `--cluster-signing-key-file=${pki.caKey}`,
          `--service-cluster-ip-range=${SERVICE_CIDR}`,
          "--profiling=false",
          "--v=1",
        ],
        logDir,
      );
      components.push(c);
      await waitUntil(c, "healthy (/healthz)", readyTimeoutMs, async () => {
        const r = await get(`https://127.0.0.1:${port}/healthz`, { insecure: true });
        return r.status === 200;
      });
      // The controllers run (with RBAC) once the serviceaccount controller has made `default/default`.
      await waitUntil(c, "running controllers (ServiceAccount default/default)", readyTimeoutMs, async () => {
        const r = await get(`${server}/api/v1/namespaces/default/serviceaccounts/default`, adminTls);
        return r.status === 200;
      });
      return c;
    });
    phase("kube-controller-manager");

    if (scheduler) {
      const schedKubeconfig = await writeKubeconfig(
        join(dir, "kube-scheduler.kubeconfig"),
        server,
        pki.caCert,
        "system:kube-scheduler",
        { certPath: scheduler.cert, keyPath: scheduler.key },
      );
      await startWithPorts(1, async ([port]) => {
        const c = launch(
          "kube-scheduler",
          join(binDir, "kube-scheduler"),
          [
            `--kubeconfig=${schedKubeconfig}`,
            `--authentication-kubeconfig=${schedKubeconfig}`,
            `--authorization-kubeconfig=${schedKubeconfig}`,
            "--bind-address=127.0.0.1",
            `--secure-port=${port}`,
            "--leader-elect=false",
            "--profiling=false",
            "--v=1",
          ],
          logDir,
        );
        components.push(c);
        await waitUntil(c, "healthy (/healthz)", readyTimeoutMs, async () => {
          const r = await get(`https://127.0.0.1:${port}/healthz`, { insecure: true });
          return r.status === 200;
        });
        return c;
      });
      phase("kube-scheduler");
    }
    timings.total = Date.now() - t0;
    log(
      `control plane up at ${server} in ${timings.total} ms (${Object.entries(timings)
        .map(([k, v]) => `${k} ${v} ms`)
        .join(", ")})`,
    );

    let userSeq = 0;
    return {
      server,
      kubeconfigPath,
      dir,
      binDir,
      caCertPath: pki.caCert,
      timings,
      async kubeconfigForUser(user, groups = []) {
        const name = `user-${++userSeq}`;
        const { cert, key } = await pki.issue(name, user, { groups });
        return await writeKubeconfig(join(dir, `${name}.kubeconfig`), server, pki.caCert, user, {
          certPath: cert,
          keyPath: key,
        });
      },
      async kubeconfigForToken(name, token) {
        return await writeKubeconfig(join(dir, `token-${++userSeq}.kubeconfig`), server, pki.caCert, name, {
          token,
        });
      },
      async logTail(component, lines) {
        return await tail(join(logDir, `${component}.log`), lines);
      },
      stop,
    };
  } catch (err) {
    await stop();
    if (keep && err instanceof Error) err.message += `\n(kept ${dir})`;
    throw err;
  }
}
