// `helm install --dry-run=server` of the chart against the real control plane: the API server
// validates every object with the default values, with every option on, and with the warm runner pool
// scaled by KEDA (the Prometheus Operator's and KEDA's own CRDs installed first). The real
// installation, on a node, is install.test.ts.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { ApiextensionsV1Api, loadYaml, type V1CustomResourceDefinition } from "@kubernetes/client-node";
import { eventually, kubeConfigFrom } from "./support/cluster-stack.js";
import { startControlPlane, type ControlPlane } from "./support/control-plane.js";
import { ALL_ON_VALUES, CHART, helm } from "./support/helm.js";

const run = promisify(execFile);
// The Prometheus Operator release whose CRDs (ServiceMonitor, PrometheusRule) the chart is checked
// against, fetched as a Go module through the module proxy and read from the module cache.
const PROMETHEUS_OPERATOR = "github.com/prometheus-operator/prometheus-operator@v0.85.0";
// The KEDA release whose CRDs (ScaledObject, TriggerAuthentication) the pool's autoscaling is checked
// against, the same way.
const KEDA = "github.com/kedacore/keda/v2@v2.17.2";

let cp: ControlPlane;

before(async () => {
  cp = await startControlPlane();
  await installCrds(PROMETHEUS_OPERATOR, "example/prometheus-operator-crd", [
    "monitoring.coreos.com_servicemonitors.yaml",
    "monitoring.coreos.com_prometheusrules.yaml",
  ]);
  await installCrds(KEDA, "config/crd/bases", [
    "keda.sh_scaledobjects.yaml",
    "keda.sh_triggerauthentications.yaml",
  ]);
});

after(async () => {
  await cp?.stop();
});

/** The CRDs in `files` of a Go module's `dir`, created and waited for until established. */
async function installCrds(module: string, dir: string, files: string[]): Promise<void> {
  const { stdout } = await run("go", ["mod", "download", "-json", module], {
    env: { ...process.env, GOFLAGS: "-mod=mod", GO111MODULE: "on" },
    cwd: cp.dir,
  });
  const root = (JSON.parse(stdout) as { Dir: string }).Dir;
  const api = kubeConfigFrom(cp.kubeconfigPath).makeApiClient(ApiextensionsV1Api);
  for (const name of files) {
    const file = join(root, dir, name);
    // loadYaml builds the typed model, so the client serializes fields such as
    // x-kubernetes-int-or-string back under their API names.
    const crd = loadYaml<V1CustomResourceDefinition>(await readFile(file, "utf8"));
    await api.createCustomResourceDefinition({ body: crd });
    await eventually(`CRD ${name} established`, async () => {
      const got = await api.readCustomResourceDefinition({ name: crd.metadata!.name! });
      return (
        got.status?.conditions?.some((c) => c.type === "Established" && c.status === "True") || undefined
      );
    });
  }
}

describe("server-side validation (helm install --dry-run=server)", () => {
  for (const [name, args] of [
    ["default values", []],
    ["every option on", ["--values", ALL_ON_VALUES]],
    [
      "the warm runner pool scaled by KEDA",
      [
        "--values",
        ALL_ON_VALUES,
        "--set",
        "pool.autoscaling.hpa.enabled=false",
        "--set",
        "pool.autoscaling.keda.enabled=true",
      ],
    ],
  ] as const) {
    test(`passes with ${name}`, async () => {
      const namespace = `media-dry-${randomBytes(3).toString("hex")}`;
      const result = await helm(
        [
          "install",
          "media",
          CHART,
          "--namespace",
          namespace,
          "--create-namespace",
          "--dry-run=server",
          ...args,
        ],
        { kubeconfig: cp.kubeconfigPath },
      );
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /STATUS: pending-install/);
      if (name.includes("KEDA")) {
        assert.match(result.stdout, /^kind: ScaledObject$/m);
        assert.match(result.stdout, /^kind: TriggerAuthentication$/m);
      }
    });
  }
});
