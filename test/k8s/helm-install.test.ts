// `helm install` of the chart into the real control plane: server-side validation with the default
// values and with every option on (the Prometheus Operator's own CRDs installed first), then a real
// install whose API and controller pods run on the test node agent from the local build, talking to
// the test's Redis and S3 store; a job submitted through the installed API completes in a runner Job
// created by the installed controller.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import {
  ApiextensionsV1Api,
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  loadYaml,
  type V1CustomResourceDefinition,
} from "@kubernetes/client-node";
import { freePort } from "../../core/net.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { makeImage } from "../support/media.js";
import { DIST_CLI, eventually, kubeConfigFrom, startRunnerNode } from "./support/cluster-stack.js";
import { startControlPlane, type ControlPlane } from "./support/control-plane.js";
import { ALL_ON_VALUES, CHART, helm } from "./support/helm.js";
import type { NodeAgent } from "./support/node-agent.js";
import { PutObjectCommand, HeadObjectCommand } from "@aws-sdk/client-s3";

const run = promisify(execFile);
const IMAGE = { repository: "media-service", tag: "test" };
// The Prometheus Operator release whose CRDs (ServiceMonitor, PrometheusRule) the chart is checked
// against, fetched as a Go module through the module proxy and read from the module cache.
const PROMETHEUS_OPERATOR = "github.com/prometheus-operator/prometheus-operator@v0.85.0";

let cp: ControlPlane;
let agent: NodeAgent;
let stack: TestStack;

before(async () => {
  cp = await startControlPlane({ scheduler: true });
  agent = await startRunnerNode(cp, {
    entrypoints: { [`${IMAGE.repository}:${IMAGE.tag}`]: [process.execPath, DIST_CLI] },
    probePeriodMs: 500,
  });
  // Redis and the S3-protocol store of the installation (its API here is not used).
  stack = await startTestStack();
  await installMonitoringCrds();
});

after(async () => {
  await agent?.stop();
  await cp?.stop();
  await stack?.close();
});

async function installMonitoringCrds(): Promise<void> {
  const { stdout } = await run("go", ["mod", "download", "-json", PROMETHEUS_OPERATOR], {
    env: { ...process.env, GOFLAGS: "-mod=mod", GO111MODULE: "on" },
    cwd: cp.dir,
  });
  const dir = (JSON.parse(stdout) as { Dir: string }).Dir;
  const api = kubeConfigFrom(cp.kubeconfigPath).makeApiClient(ApiextensionsV1Api);
  for (const kind of ["servicemonitors", "prometheusrules"]) {
    const file = join(dir, "example/prometheus-operator-crd", `monitoring.coreos.com_${kind}.yaml`);
    // loadYaml builds the typed model, so the client serializes fields such as
    // x-kubernetes-int-or-string back under their API names.
    const crd = loadYaml<V1CustomResourceDefinition>(await readFile(file, "utf8"));
    await api.createCustomResourceDefinition({ body: crd });
    await eventually(`CRD ${kind} established`, async () => {
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
    });
  }
});

describe("helm install on the test control plane", () => {
  const namespace = `media-${randomBytes(3).toString("hex")}`;
  const kc = () => kubeConfigFrom(cp.kubeconfigPath);
  let apiPort: number;

  before(async () => {
    apiPort = await freePort();
    const values = {
      image: { ...IMAGE, pullPolicy: "Never" },
      logLevel: "info",
      config: { keyPrefix: `helm-${randomBytes(3).toString("hex")}` },
      redis: { enabled: false, external: { url: stack.redis.url } },
      s3: {
        endpoint: stack.s3.url,
        region: stack.s3.region,
        accessKeyId: stack.s3.accessKeyId,
        secretAccessKey: stack.s3.secretAccessKey,
        forcePathStyle: true,
      },
      // Pods of the test node agent share the host's network: one replica each, on free ports.
      api: { replicas: 1, port: apiPort },
      controller: { replicas: 1, port: await freePort() },
    };
    const file = join(cp.dir, "values-install.json");
    await writeFile(file, JSON.stringify(values));
    const result = await helm(
      [
        "install",
        "media",
        CHART,
        "--namespace",
        namespace,
        "--create-namespace",
        "--values",
        file,
        "--wait",
        "--timeout",
        "3m",
      ],
      { kubeconfig: cp.kubeconfigPath },
    );
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
  });

  after(async () => {
    await helm(["uninstall", "media", "--namespace", namespace, "--wait"], { kubeconfig: cp.kubeconfigPath });
  });

  test("the API and controller Deployments are available and the API is ready", async () => {
    const apps = kc().makeApiClient(AppsV1Api);
    for (const name of ["media-media-service-api", "media-media-service-controller"]) {
      const deployment = await apps.readNamespacedDeployment({ name, namespace });
      assert.equal(deployment.status?.availableReplicas, 1, name);
    }
    const res = await fetch(`http://127.0.0.1:${apiPort}/health/ready`);
    assert.equal(res.status, 200, await res.text());
  });

  test("a job submitted through the installed API completes in a runner Job of the installed controller", async () => {
    const core = kc().makeApiClient(CoreV1Api);
    const secret = await core.readNamespacedSecret({ name: "media-media-service-api-keys", namespace });
    const apiKey = Buffer.from(secret.data!["api-keys"]!, "base64").toString().split(",")[0]!;
    assert.ok(apiKey.length >= 32, "a generated key");

    const png = await makeImage({ width: 320, height: 200, format: "png" });
    await stack.services.s3.send(
      new PutObjectCommand({ Bucket: stack.bucket, Key: "helm/in.png", Body: png }),
    );
    const submit = await fetch(`http://127.0.0.1:${apiPort}/api/v1/jobs/image/resize`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": apiKey },
      body: JSON.stringify({
        source_bucket: stack.bucket,
        source_key: "helm/in.png",
        dest_bucket: stack.bucket,
        dest_key: "helm/out.webp",
        width: 160,
        height: 100,
        format: "webp",
      }),
    });
    const body = (await submit.json()) as { job_id: string; error?: string };
    assert.equal(submit.status, 202, body.error);

    let job:
      | { status: string; error?: string; result?: { metadata: { width: number; format: string } } }
      | undefined;
    await eventually(
      "the job to finish",
      async () => {
        const res = await fetch(`http://127.0.0.1:${apiPort}/api/v1/jobs/${body.job_id}`, {
          headers: { "x-api-key": apiKey },
        });
        job = (await res.json()) as typeof job;
        return job?.status === "completed" || job?.status === "failed" || undefined;
      },
      120_000,
    );
    assert.equal(job?.status, "completed", job?.error);
    assert.equal(job?.result?.metadata.width, 160);
    assert.equal(job?.result?.metadata.format, "webp");
    await stack.services.s3.send(new HeadObjectCommand({ Bucket: stack.bucket, Key: "helm/out.webp" }));

    const jobs = await kc()
      .makeApiClient(BatchV1Api)
      .listNamespacedJob({ namespace, labelSelector: `media-service.io/job-id=${body.job_id}` });
    assert.equal(jobs.items.length, 1, "one runner Job, in the release's namespace");
    const pod = jobs.items[0]!.spec!.template.spec!;
    assert.equal(pod.serviceAccountName, "media-media-service-runner");
    assert.equal(pod.automountServiceAccountToken, false);
    assert.equal(pod.containers[0]!.image, "media-service:test");
  });
});
