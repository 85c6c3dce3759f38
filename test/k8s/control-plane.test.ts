// The container-less test control plane works as a real cluster would for what the controller needs:
// the Job controller (kube-controller-manager) creates pods for a batch/v1 Job, the scheduler sees them
// (and, with no node, leaves them Pending/Unschedulable), RBAC is enforced for a client limited by a
// Role (both a client-certificate user and a ServiceAccount token), and a coordination.k8s.io Lease can
// be created and updated with optimistic concurrency (what leader election relies on).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import {
  ApiException,
  AuthenticationV1Api,
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  V1MicroTime,
  type V1Job,
  type V1Pod,
} from "@kubernetes/client-node";
import { startControlPlane, type ControlPlane } from "./support/control-plane.js";
import { eventually } from "./support/eventually.js";

const NS = `media-${randomBytes(3).toString("hex")}`;
const OTHER_NS = `${NS}-other`;
const USER = "media-controller";
const SA = "media-controller";

function kubeConfig(path: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
}

/** The HTTP status an API call fails with (fails the test when the call succeeds). */
async function statusOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
  } catch (err) {
    if (err instanceof ApiException) return err.code;
    throw err;
  }
  assert.fail("expected the call to be rejected");
}

function testJob(name: string): V1Job {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name, labels: { "app.kubernetes.io/name": "media-service" } },
    spec: {
      backoffLimit: 0,
      template: {
        spec: {
          restartPolicy: "Never",
          automountServiceAccountToken: false,
          containers: [{ name: "runner", image: "media-service:test", command: ["media-service", "runner"] }],
        },
      },
    },
  };
}

describe("test control plane (etcd + kube-apiserver + kube-controller-manager + kube-scheduler)", () => {
  let cp: ControlPlane;
  let admin: KubeConfig;

  before(async () => {
    cp = await startControlPlane({ scheduler: true, log: (m) => console.log(`# ${m}`) });
    admin = kubeConfig(cp.kubeconfigPath);
    const core = admin.makeApiClient(CoreV1Api);
    for (const name of [NS, OTHER_NS]) {
      await core.createNamespace({ body: { metadata: { name } } });
    }
  });

  after(async () => {
    await cp?.stop();
  });

  test("the API server reports the built version and RBAC is on", async () => {
    const version = await fetchVersion(cp);
    assert.match(version.gitVersion, /^v1\.\d+\.\d+$/);
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    const roles = await rbac.listClusterRole();
    assert.ok(roles.items.some((r) => r.metadata?.name === "system:controller:job-controller"));
  });

  test("the Job controller creates a pod for a batch/v1 Job; with no node it stays Pending", async () => {
    const batch = admin.makeApiClient(BatchV1Api);
    const core = admin.makeApiClient(CoreV1Api);
    const name = "hello-job";
    await batch.createNamespacedJob({ namespace: NS, body: testJob(name) });

    const pod = await eventually<V1Pod>(
      "the Job's pod",
      async () => {
        const pods = await core.listNamespacedPod({
          namespace: NS,
          labelSelector: `batch.kubernetes.io/job-name=${name}`,
        });
        return pods.items[0];
      },
      60_000,
      () => cp.logTail("kube-controller-manager"),
    );
    assert.equal(pod.metadata?.ownerReferences?.[0]?.kind, "Job");
    assert.equal(pod.metadata?.ownerReferences?.[0]?.name, name);
    assert.equal(pod.status?.phase, "Pending");

    // kube-scheduler looked at it and found no node.
    const unschedulable = await eventually(
      "PodScheduled=False/Unschedulable",
      async () => {
        const p = await core.readNamespacedPod({ namespace: NS, name: pod.metadata!.name! });
        const c = p.status?.conditions?.find((x) => x.type === "PodScheduled");
        return c?.status === "False" && c.reason === "Unschedulable" ? c : undefined;
      },
      30_000,
      () => cp.logTail("kube-scheduler"),
    );
    assert.match(unschedulable.message ?? "", /no nodes available/);

    // The Job controller counts it as active.
    const job = await eventually("job status.active=1", async () => {
      const j = await batch.readNamespacedJob({ namespace: NS, name });
      return j.status?.active === 1 ? j : undefined;
    });
    assert.equal(job.status?.succeeded ?? 0, 0);

    // Background deletion: the garbage collector removes the pod.
    await batch.deleteNamespacedJob({ namespace: NS, name, propagationPolicy: "Background" });
    await eventually("the pod to be garbage-collected", async () => {
      const pods = await core.listNamespacedPod({
        namespace: NS,
        labelSelector: `batch.kubernetes.io/job-name=${name}`,
      });
      return pods.items.length === 0 ? true : undefined;
    });
  });

  describe("RBAC: a client limited by a Role", () => {
    let userKc: KubeConfig;
    let saKc: KubeConfig;

    before(async () => {
      const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
      const core = admin.makeApiClient(CoreV1Api);
      await rbac.createNamespacedRole({
        namespace: NS,
        body: {
          metadata: { name: "media-controller" },
          rules: [
            {
              apiGroups: ["batch"],
              resources: ["jobs"],
              verbs: ["get", "list", "watch", "create", "delete"],
            },
            { apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch"] },
            {
              apiGroups: ["coordination.k8s.io"],
              resources: ["leases"],
              verbs: ["get", "create", "update"],
            },
          ],
        },
      });
      await core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: SA } } });
      await rbac.createNamespacedRoleBinding({
        namespace: NS,
        body: {
          metadata: { name: "media-controller" },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "media-controller" },
          subjects: [
            { apiGroup: "rbac.authorization.k8s.io", kind: "User", name: USER },
            { kind: "ServiceAccount", name: SA, namespace: NS },
          ],
        },
      });
      userKc = kubeConfig(await cp.kubeconfigForUser(USER));
      const tokenRequest = await core.createNamespacedServiceAccountToken({
        namespace: NS,
        name: SA,
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      });
      const token = tokenRequest.status?.token;
      assert.ok(token, "TokenRequest returned a token");
      saKc = kubeConfig(await cp.kubeconfigForToken(SA, token));
    });

    const identities = [
      { label: "client certificate (User media-controller)", kc: () => userKc, username: USER },
      {
        label: "ServiceAccount token (TokenRequest)",
        kc: () => saKc,
        username: () => `system:serviceaccount:${NS}:${SA}`,
      },
    ];

    for (const id of identities) {
      test(`${id.label}: allowed what the Role grants, 403 for the rest`, async () => {
        const kc = id.kc();
        const who = await kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({ body: {} });
        const expected = typeof id.username === "function" ? id.username() : id.username;
        assert.equal(who.status?.userInfo?.username, expected);

        const batch = kc.makeApiClient(BatchV1Api);
        const core = kc.makeApiClient(CoreV1Api);
        const name = `rbac-${randomBytes(3).toString("hex")}`;
        const created = await batch.createNamespacedJob({ namespace: NS, body: testJob(name) });
        assert.equal(created.metadata?.name, name);
        const listed = await batch.listNamespacedJob({ namespace: NS });
        assert.ok(listed.items.some((j) => j.metadata?.name === name));

        assert.equal(await statusOf(core.listNamespacedSecret({ namespace: NS })), 403, "list secrets");
        assert.equal(
          await statusOf(batch.createNamespacedJob({ namespace: OTHER_NS, body: testJob(name) })),
          403,
          "create a job in another namespace",
        );
        assert.equal(await statusOf(batch.listJobForAllNamespaces()), 403, "list jobs cluster-wide");
        assert.equal(
          await statusOf(
            core.createNamespacedPod({
              namespace: NS,
              body: { metadata: { name }, spec: { containers: [{ name: "x", image: "x" }] } },
            }),
          ),
          403,
          "create pods directly",
        );
        await batch.deleteNamespacedJob({ namespace: NS, name, propagationPolicy: "Background" });
      });
    }

    test("a coordination.k8s.io Lease can be created and updated; a stale update conflicts (409)", async () => {
      const leases = userKc.makeApiClient(CoordinationV1Api);
      // MicroTime fields must be sent with microseconds ("…:05.123000Z"): a plain Date serializes with
      // milliseconds, which the API server rejects — V1MicroTime is client-node's Date that does it right.
      const now = new V1MicroTime(Date.now());
      assert.equal(
        await statusOf(
          leases.createNamespacedLease({
            namespace: NS,
            body: { metadata: { name: "plain-date" }, spec: { renewTime: new Date() } },
          }),
        ),
        400,
        "a plain Date in a MicroTime field",
      );
      const created = await leases.createNamespacedLease({
        namespace: NS,
        body: {
          metadata: { name: "media-service-controller" },
          spec: {
            holderIdentity: "replica-a",
            leaseDurationSeconds: 15,
            acquireTime: now,
            renewTime: now,
            leaseTransitions: 0,
          },
        },
      });
      assert.equal(created.spec?.holderIdentity, "replica-a");

      const renewed = await leases.replaceNamespacedLease({
        namespace: NS,
        name: "media-service-controller",
        body: { ...created, spec: { ...created.spec, renewTime: new V1MicroTime(now.getTime() + 1000) } },
      });
      assert.notEqual(renewed.metadata?.resourceVersion, created.metadata?.resourceVersion);

      // Another replica acting on the stale copy loses: this is what makes leader election safe.
      const stale = {
        ...created,
        spec: { ...created.spec, holderIdentity: "replica-b", leaseTransitions: 1 },
      };
      assert.equal(
        await statusOf(
          leases.replaceNamespacedLease({ namespace: NS, name: "media-service-controller", body: stale }),
        ),
        409,
      );
      const read = await leases.readNamespacedLease({ namespace: NS, name: "media-service-controller" });
      assert.equal(read.spec?.holderIdentity, "replica-a");
      assert.equal(
        new Date(read.spec.renewTime as unknown as string).getTime(),
        now.getTime() + 1000,
        "renewTime round-trips (microsecond precision)",
      );
    });
  });
});

async function fetchVersion(cp: ControlPlane): Promise<{ gitVersion: string }> {
  const kc = kubeConfig(cp.kubeconfigPath);
  const opts: { ca?: Buffer; cert?: Buffer; key?: Buffer } = {};
  await kc.applyToHTTPSOptions(opts);
  const { request } = await import("node:https");
  return await new Promise((resolve, reject) => {
    const req = request(`${cp.server}/version`, { ...opts, method: "GET" }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (body += d));
      res.on("end", () => {
        try {
          resolve(JSON.parse(body) as { gitVersion: string });
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
    });
    req.on("error", reject);
    req.end();
  });
}
