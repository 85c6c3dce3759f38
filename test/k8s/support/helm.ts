// The real helm CLI for the chart tests: built from its Go module by scripts/k8s/build-helm.sh and
// cached (npm run build:helm); run with its own HOME-like dirs so a developer's helm config and
// repositories never leak in.
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const CHART = join(ROOT, "charts/media-service");
export const ALL_ON_VALUES = join(CHART, "ci/all-on-values.yaml");

let bin: string | undefined;
let homeDir: string | undefined;
/** helm's own HOME, made when helm first runs (test/unit/chart-drift.test.ts imports CHART only). */
const helmHome = () => (homeDir ??= mkdtempSync(join(tmpdir(), "media-service-helm-")));

/** The helm binary: $HELM, else the cached build (building it on first use, a no-op once cached). */
export function helmBin(): string {
  bin ??=
    process.env.HELM ||
    join(
      execFileSync("bash", [join(ROOT, "scripts/k8s/build-helm.sh")], {
        env: { ...process.env, MEDIA_HELM_PRINT_BIN: "1" },
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"],
      }).trim(),
      "helm",
    );
  return bin;
}

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function helm(args: string[], options: { kubeconfig?: string } = {}): Promise<HelmResult> {
  const home = helmHome();
  return new Promise((resolvePromise) => {
    execFile(
      helmBin(),
      args,
      {
        env: {
          PATH: process.env.PATH ?? "",
          // Also where client-go keeps its discovery cache (~/.kube/cache): never the repository.
          HOME: home,
          HELM_CACHE_HOME: join(home, "cache"),
          HELM_CONFIG_HOME: join(home, "config"),
          HELM_DATA_HOME: join(home, "data"),
          ...(options.kubeconfig ? { KUBECONFIG: options.kubeconfig } : {}),
        },
        maxBuffer: 64 * 1024 * 1024,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        resolvePromise({ code, stdout, stderr });
      },
    );
  });
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [field: string]: unknown;
}

/** `helm template` of the chart, parsed; fails with helm's message when rendering fails. */
export async function renderChart(args: string[] = [], release = "media"): Promise<K8sObject[]> {
  const result = await helm(["template", release, CHART, "--namespace", "media-ns", ...args]);
  if (result.code !== 0) throw new Error(`helm template failed: ${result.stderr}`);
  return parseAllDocuments(result.stdout)
    .map((doc) => doc.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

/** The data of a rendered Secret, decoded; undefined when the render has no Secret of that name. */
export function secretData(objects: K8sObject[], name: string): Record<string, string> | undefined {
  const secret = objects.find((o) => o.kind === "Secret" && o.metadata.name === name);
  if (!secret) return undefined;
  const data = (secret.data ?? {}) as Record<string, string>;
  return Object.fromEntries(
    Object.entries(data).map(([key, value]) => [key, Buffer.from(value, "base64").toString()]),
  );
}

type EnvVar = { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } };

/**
 * The environment of a Deployment's container as the kubelet would set it: its values, and its
 * Secret references read from the rendered Secrets (one the chart does not render, an
 * existingSecret, gets a placeholder naming it).
 */
export function deploymentEnv(objects: K8sObject[], nameSuffix: string): Record<string, string> {
  const found = objects.filter((o) => o.kind === "Deployment" && o.metadata.name.endsWith(nameSuffix));
  assert.equal(found.length, 1, `one Deployment named *${nameSuffix}`);
  const spec = found[0]!.spec as { template: { spec: { containers: Array<{ env?: EnvVar[] }> } } };
  const env: Record<string, string> = {};
  for (const e of spec.template.spec.containers[0]!.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef;
    if (e.value !== undefined) {
      env[e.name] = e.value;
    } else if (ref) {
      const data = secretData(objects, ref.name);
      if (data) assert.ok(data[ref.key] !== undefined, `${e.name}: the Secret ${ref.name} has ${ref.key}`);
      env[e.name] = data ? data[ref.key]! : `external:${ref.name}/${ref.key}`;
    }
  }
  return env;
}

/** The service's config.yaml in the rendered ConfigMap. */
export function configYaml(objects: K8sObject[]): string {
  const maps = objects.filter((o) => o.kind === "ConfigMap");
  assert.equal(maps.length, 1, "one ConfigMap");
  return (maps[0]!.data as Record<string, string>)["config.yaml"]!;
}
