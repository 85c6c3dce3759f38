// Kueue itself beside the test control plane: its manager, built from its Go module by
// scripts/k8s/build-kueue.sh, runs as a host process against the API server (admin kubeconfig), with
// the CRDs and the webhook configurations of the same module. The API server reaches the webhooks at
// https://127.0.0.1:<port>/<path> and trusts them through a CA bundle of a throw-away PKI: Kueue's own
// certificate management is off (it would issue a certificate for a Service the host process is not).
// Only the webhooks of Kueue's own objects and of batch/v1 Jobs are installed (the only integration
// enabled); the others (pods, Deployments) would refuse every such object while no handler serves them.
//
// Kueue without internal certificate management reads its metrics server's certificate from a fixed
// path, /etc/kueue/metrics/certs: the manager runs in a mount namespace of its own where that path is
// a bind mount of the temp dir (only the empty directory /etc/kueue is made on the host).
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import {
  AdmissionregistrationV1Api,
  ApiextensionsV1Api,
  CoreV1Api,
  loadAllYaml,
  type V1CustomResourceDefinition,
  type V1MutatingWebhookConfiguration,
  type V1ValidatingWebhookConfiguration,
} from "@kubernetes/client-node";
import { onFreePorts, PortTakenError } from "../../support/ports.js";
import { kubeConfigFrom } from "./cluster-stack.js";
import { Pki, type ControlPlane } from "./control-plane.js";
import { eventually } from "./eventually.js";
import { deathSignalPrefix, onTestExit } from "./processes.js";

const execFileP = promisify(execFile);
const BUILD_SCRIPT = resolve(dirname(fileURLToPath(import.meta.url)), "../../../scripts/k8s/build-kueue.sh");
export const KUEUE_GROUP = "kueue.x-k8s.io";
export const KUEUE_VERSION = "v1beta2";
const NAMESPACE = "kueue-system";
const CONFIGS = { mutating: "kueue-mutating-webhooks", validating: "kueue-validating-webhooks" };

export interface Kueue {
  /** The manager's log. */
  logPath: string;
  logTail(lines?: number): Promise<string>;
  /** Removes the webhook configurations, then stops the manager and removes its temp dir. */
  stop(): Promise<void>;
}

/** The version directory of the Kueue build (bin/kueue, crd/, webhook/), built the first time. */
async function kueueBuild(): Promise<string> {
  try {
    const { stdout } = await execFileP("bash", [BUILD_SCRIPT], {
      env: { ...process.env, MEDIA_KUEUE_PRINT_DIR: "1" },
      maxBuffer: 64 << 20,
    });
    const dir = stdout.trim().split("\n").pop() ?? "";
    if (!dir) throw new Error("it printed no directory");
    return dir;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${BUILD_SCRIPT} failed:\n${(e.stderr ?? e.message).split("\n").slice(-30).join("\n")}`);
  }
}

async function installCrds(ext: ApiextensionsV1Api, dir: string): Promise<void> {
  const names: string[] = [];
  for (const file of (await readdir(dir)).filter((f) => f.endsWith(".yaml")).sort()) {
    // loadAllYaml builds the typed model, so the client serializes fields such as
    // x-kubernetes-int-or-string back under their API names.
    for (const body of loadAllYaml(
      await readFile(join(dir, file), "utf8"),
    ) as Array<V1CustomResourceDefinition | null>) {
      if (!body?.metadata?.name) continue;
      await ext.createCustomResourceDefinition({ body });
      names.push(body.metadata.name);
    }
  }
  for (const name of names) {
    await eventually(`CRD ${name} established`, async () => {
      const crd = await ext.readCustomResourceDefinition({ name });
      return (
        crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True") || undefined
      );
    });
  }
}

type Webhook = {
  name: string;
  clientConfig?: { service?: { path?: string }; url?: string; caBundle?: string };
  rules?: Array<{ apiGroups?: string[] }>;
};

/** The module's webhook configurations, for Kueue's objects and Jobs only, pointed at `base` with `caBundle`. */
async function webhookConfigs(file: string, base: string, caBundle: string) {
  const wanted = (w: Webhook) =>
    (w.rules ?? []).every((r) => (r.apiGroups ?? []).every((g) => g === KUEUE_GROUP || g === "batch"));
  const configs: {
    mutating?: V1MutatingWebhookConfiguration;
    validating?: V1ValidatingWebhookConfiguration;
  } = {};
  for (const body of loadAllYaml(await readFile(file, "utf8")) as Array<{
    kind?: string;
    webhooks?: Webhook[];
  } | null>) {
    if (!body?.kind) continue;
    const webhooks = (body.webhooks ?? []).filter(wanted).map((w) => {
      const path = w.clientConfig?.service?.path ?? "";
      return { ...w, clientConfig: { url: `${base}${path}`, caBundle } };
    });
    if (body.kind === "MutatingWebhookConfiguration") {
      configs.mutating = {
        ...body,
        metadata: { name: CONFIGS.mutating },
        webhooks,
      } as V1MutatingWebhookConfiguration;
    } else if (body.kind === "ValidatingWebhookConfiguration") {
      configs.validating = {
        ...body,
        metadata: { name: CONFIGS.validating },
        webhooks,
      } as V1ValidatingWebhookConfiguration;
    }
  }
  if (!configs.mutating || !configs.validating) throw new Error(`${file} lacks a webhook configuration`);
  return configs as Required<typeof configs>;
}

function healthy(port: number): Promise<boolean> {
  return new Promise((res) => {
    const req = request({ host: "127.0.0.1", port, path: "/readyz", timeout: 2000 }, (r) => {
      r.resume();
      res(r.statusCode === 200);
    });
    req.on("error", () => res(false));
    req.on("timeout", () => req.destroy());
    req.end();
  });
}

async function tail(path: string, lines: number): Promise<string> {
  try {
    return (await readFile(path, "utf8")).trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

/** Kueue's CRDs, its manager and its webhooks on the control plane `cp`. */
export async function startKueue(cp: ControlPlane, log: (m: string) => void = () => {}): Promise<Kueue> {
  const started = Date.now();
  const build = await kueueBuild();
  log(`kueue build: ${build} (${Date.now() - started} ms)`);
  const kc = kubeConfigFrom(cp.kubeconfigPath);
  await installCrds(kc.makeApiClient(ApiextensionsV1Api), join(build, "crd"));
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NAMESPACE } } });

  const dir = await mkdtemp(join(tmpdir(), "media-service-kueue-"));
  const pki = await Pki.create(join(dir, "pki"));
  const serving = await pki.issue("webhook", "kueue-webhook", {
    server: { ips: ["127.0.0.1"], dns: ["localhost"] },
  });
  const certs = join(dir, "certs");
  const metricsCerts = join(dir, "etc-kueue", "metrics", "certs");
  for (const to of [certs, metricsCerts]) {
    await mkdir(to, { recursive: true });
    await copyFile(serving.cert, join(to, "tls.crt"));
    await copyFile(serving.key, join(to, "tls.key"));
  }
  const logPath = join(dir, "kueue.log");
  let child: ChildProcess | undefined;
  const kill = () => child?.kill("SIGKILL");
  onTestExit(kill);

  const webhookPort = await onFreePorts(2, 3, async (ports) => {
    const [webhook, health] = ports as [number, number];
    const config = join(dir, "config.yaml");
    await writeFile(
      config,
      [
        "apiVersion: config.kueue.x-k8s.io/v1beta2",
        "kind: Configuration",
        `namespace: ${NAMESPACE}`,
        `health: { healthProbeBindAddress: "127.0.0.1:${health}" }`,
        'metrics: { bindAddress: "0" }',
        `webhook: { host: 127.0.0.1, port: ${webhook}, certDir: ${certs} }`,
        "leaderElection: { leaderElect: false }",
        "internalCertManagement: { enable: false }",
        "manageJobsWithoutQueueName: false",
        "integrations: { frameworks: [batch/job] }",
        "",
      ].join("\n"),
    );
    const fd = openSync(logPath, "a");
    const argv: string[] = [
      ...deathSignalPrefix(),
      "unshare", "--mount", "--propagation", "private", "--",
      "sh", "-c", 'mkdir -p /etc/kueue && mount --bind "$0" /etc/kueue && exec "$@"', join(dir, "etc-kueue"),
      join(build, "bin", "kueue"), `--config=${config}`, "--feature-gates=VisibilityOnDemand=false",
    ]; // prettier-ignore
    const [command, ...args] = argv as [string, ...string[]];
    try {
      child = spawn(command, args, {
        stdio: ["ignore", fd, fd],
        env: { ...process.env, KUBECONFIG: cp.kubeconfigPath },
      });
    } finally {
      closeSync(fd);
    }
    child.unref();
    const exited = new Promise<void>((res) => child!.once("exit", () => res()));
    let gone = false;
    void exited.then(() => (gone = true));
    try {
      await eventually(
        "Kueue's manager ready",
        async () => {
          if (gone) throw new Error("it exited");
          return (await healthy(health)) || undefined;
        },
        90_000,
      );
    } catch (err) {
      const text = await tail(logPath, 40);
      if (/address already in use/i.test(text)) throw new PortTakenError(String(err));
      throw new Error(`${String(err)}\n--- kueue log ---\n${text}`);
    }
    return webhook;
  });

  const caBundle = (await readFile(pki.caCert)).toString("base64");
  const configs = await webhookConfigs(
    join(build, "webhook", "manifests.yaml"),
    `https://127.0.0.1:${webhookPort}`,
    caBundle,
  );
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  await admission.createMutatingWebhookConfiguration({ body: configs.mutating });
  await admission.createValidatingWebhookConfiguration({ body: configs.validating });
  log(`kueue ready with its webhooks (${Date.now() - started} ms)`);

  return {
    logPath,
    logTail: (lines = 40) => tail(logPath, lines),
    async stop() {
      await admission.deleteMutatingWebhookConfiguration({ name: CONFIGS.mutating }).catch(() => {});
      await admission.deleteValidatingWebhookConfiguration({ name: CONFIGS.validating }).catch(() => {});
      if (child && child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((res) => child!.once("exit", () => res()));
        child.kill("SIGTERM");
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
        kill();
      }
      if (process.env.MEDIA_K8S_KEEP !== "1") await rm(dir, { recursive: true, force: true });
    },
  };
}
