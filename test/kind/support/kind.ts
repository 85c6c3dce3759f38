// The kind cluster the scenarios of test/kind/ run on, as test/e2e/kind.sh hands it to each test file
// of KIND_TESTS (npm run test:kind:scenarios): its kubeconfig, the project's image loaded into its
// nodes, the control-plane node's address (where NodePorts answer this process) and its name. A node
// of a kind cluster is a Docker container of the same name, so a node is lost with `docker stop` and
// comes back with `docker start`; the cluster's pods reach this process at the gateway of kind's
// Docker network.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";

/** kubectl: test/e2e/kind.sh's KUBECTL, else the one on PATH. */
const KUBECTL = process.env.KUBECTL || "kubectl";

export interface KindTarget {
  cluster: string;
  kubeconfigPath: string;
  /** The project's image as pods name it (repository:tag), loaded into every node. */
  image: string;
  /** The control-plane node's address: its NodePorts answer this process, whichever worker is lost. */
  controlPlaneAddress: string;
  /** Where the cluster's pods reach this process (webhooks). */
  hostAddress: string;
  kc: KubeConfig;
  core: CoreV1Api;
}

export async function kindTarget(): Promise<KindTarget> {
  const env = {
    cluster: process.env.KIND_CLUSTER,
    kubeconfigPath: process.env.MEDIA_K8S_KUBECONFIG,
    image: process.env.MEDIA_K8S_IMAGE,
    controlPlaneAddress: process.env.MEDIA_K8S_NODE_ADDRESS,
  };
  const missing = Object.entries(env).filter(([, v]) => !v);
  if (missing.length > 0) {
    throw new Error(
      `test/kind/ runs from test/e2e/kind.sh (npm run test:kind:scenarios), which sets KIND_CLUSTER, MEDIA_K8S_KUBECONFIG, MEDIA_K8S_IMAGE and MEDIA_K8S_NODE_ADDRESS; missing: ${missing.map(([k]) => k).join(", ")}`,
    );
  }
  // The IPv4 gateway of kind's Docker network: this machine, as the nodes and their pods reach it.
  const gateways = await docker([
    "network",
    "inspect",
    "kind",
    "-f",
    "{{range .IPAM.Config}}{{.Gateway}} {{end}}",
  ]);
  const hostAddress =
    process.env.MEDIA_KIND_HOST_ADDRESS || gateways.split(/\s+/).find((g) => /^\d+\.\d+\.\d+\.\d+$/.test(g));
  if (!hostAddress) throw new Error(`no IPv4 gateway on Docker network kind (${gateways})`);
  const kc = new KubeConfig();
  kc.loadFromFile(env.kubeconfigPath!);
  return {
    ...(env as Omit<KindTarget, "kc" | "core" | "hostAddress">),
    hostAddress,
    kc,
    core: kc.makeApiClient(CoreV1Api),
  };
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(command: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

export async function docker(args: string[]): Promise<string> {
  const r = await run("docker", args);
  if (r.code !== 0) throw new Error(`docker ${args.join(" ")} failed: ${r.stderr}`);
  return r.stdout.trim();
}

export const kubectl = (t: KindTarget, args: string[]): Promise<Run> =>
  run(KUBECTL, ["--kubeconfig", t.kubeconfigPath, ...args]);

/** The worker nodes (no control-plane role), by name. */
export async function workers(t: KindTarget): Promise<string[]> {
  const nodes = await t.core.listNode();
  return nodes.items
    .filter((n) => !("node-role.kubernetes.io/control-plane" in (n.metadata?.labels ?? {})))
    .map((n) => n.metadata!.name!)
    .sort();
}

export async function nodeReady(t: KindTarget, name: string): Promise<boolean> {
  const node = await t.core.readNode({ name });
  return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

/**
 * `kubectl port-forward` to one pod: reaches that pod through the API server and its node's
 * kubelet, whether or not its Service has it as an endpoint (a pod that is not ready). Resolves with
 * the local URL.
 */
export async function portForward(
  t: KindTarget,
  namespace: string,
  pod: string,
  port: number,
): Promise<{ url: string; stop(): void }> {
  const child: ChildProcess = spawn(
    KUBECTL,
    ["--kubeconfig", t.kubeconfigPath, "-n", namespace, "port-forward", `pod/${pod}`, `:${port}`],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const local = await new Promise<number>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`port-forward to ${pod}: no port (${out})`)), 30_000);
    const read = (chunk: Buffer) => {
      out += chunk.toString();
      const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on("data", read);
    child.stderr!.on("data", read);
    child.once("exit", (code) => reject(new Error(`port-forward to ${pod} exited (${code}): ${out}`)));
  });
  return { url: `http://127.0.0.1:${local}`, stop: () => void child.kill() };
}

/** A figure of a scenario, printed in the test's output. */
export function figure(name: string, value: number | string): void {
  console.log(`# figure: ${name}: ${value}`);
}

export const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
