// The Kubernetes executor end to end on a real control plane: the API (own redis-server and S3
// store), `media-service controller` processes with the chart's Role, runner Jobs created by them,
// pods scheduled by kube-scheduler onto the real node, whose kubelet runs `media-service runner` in
// containers of the project's image under containerd. Every scenario asserts the job records and the
// Kubernetes objects.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { HeadObjectCommand } from "@aws-sdk/client-s3";
import type { V1Job, V1Pod } from "@kubernetes/client-node";
import type { Job } from "../../core/jobs/records.js";
import { definitionOf, JOB_DEFINITIONS, type JobType } from "../../core/jobs/types.js";
import { parseQuantity } from "../../core/quantity.js";
import { makeAudio, makeVideo, removeMediaDirs } from "../support/av.js";
import { TEST_BUCKET } from "../support/api.js";
import { makeImage } from "../support/media.js";
import { EVERY_TYPE_SOURCES, SMALL_VIDEO_REQUESTS, submission } from "../support/submission.js";
import { startTestCluster, type TestCluster } from "./support/cluster.js";
import {
  eventually,
  startClusterStack,
  type ClusterStack,
  type ControllerProcess,
} from "./support/cluster-stack.js";

/** The cluster stack's bucket (its own on an outside S3 server), set when it starts. */
let B = TEST_BUCKET;

let cluster: TestCluster;

before(async () => {
  cluster = await startTestCluster();
});

after(async () => {
  await cluster?.stop();
  removeMediaDirs();
});

/** Whether any container of the media job's pods still runs on the node (as containerd sees it). */
const runnerRunning = async (cs: ClusterStack, id: string) =>
  (await cluster.node.runningPods()).some((p) => p.startsWith(`${cs.namespace}/media-${id}-`));

const tail = async (c: ControllerProcess) =>
  (await readFile(c.logPath, "utf8")).split("\n").slice(-40).join("\n");

/**
 * A 20-minute audio conversion to AAC (several seconds of work; to MP3 it would be under one)
 * submitted and its first runner container running: something to stop from outside while it works.
 * Returns the job id and the running pod.
 */
async function runningConversion(cs: ClusterStack, name: string): Promise<{ id: string; pod: V1Pod }> {
  await cs.put(
    `in/${name}.wav`,
    await readFile(await makeAudio({ durationSeconds: 1200, sampleRate: 8000, channels: 1 })),
  );
  const id = await cs.submit("audio/convert", {
    source_bucket: cs.stack.bucket, source_key: `in/${name}.wav`, dest_bucket: cs.stack.bucket,
    dest_key: `out/${name}.aac`, format: "aac",
  }); // prettier-ignore
  const pod = await eventually("the first runner container to run", async () => {
    const [first] = await cs.kubePods(id);
    return first?.status?.containerStatuses?.[0]?.state?.running ? first : undefined;
  });
  return { id, pod };
}

/** The media job completed, and its Kubernetes Job with it. */
async function completedWithJob(cs: ClusterStack, id: string): Promise<V1Job> {
  const job = await cs.finished(id, 240_000);
  assert.equal(job.status, "completed", job.error);
  return await eventually("the Job to complete", async () => {
    const [j] = await cs.kubeJobs(id);
    return j?.status?.conditions?.some((c) => c.type === "Complete" && c.status === "True") ? j : undefined;
  });
}

describe("runner Jobs for media jobs", () => {
  let cs: ClusterStack;
  let controller: ControllerProcess;

  before(async () => {
    cs = await startClusterStack({
      cluster,
      kubernetes: { max_running_jobs: 8, unschedulable_timeout: "20s", resources: SMALL_VIDEO_REQUESTS },
    });
    B = cs.stack.bucket;
    controller = await cs.startController("controller-a");
    await cs.put("in/photo.jpg", await makeImage({ width: 640, height: 480, format: "jpeg", photo: true }));
    await cs.put("in/mark.png", await makeImage({ width: 64, height: 64, format: "png" }));
    await cs.put("in/clip.mp4", await readFile(await makeVideo({ durationSeconds: 3 })));
    await cs.put("in/tone.wav", await readFile(await makeAudio({ durationSeconds: 2, sampleRate: 8000 })));
    await cs.put("in/not-an-image.jpg", Buffer.from("this is text, not a JPEG\n".repeat(20)));
  });
  after(async () => {
    await cs?.close();
  });

  test("a job of every type runs in its own Kubernetes Job and completes (AI types fail clearly)", async () => {
    // Every registered type, as its definition says to submit one (test/support/submission.ts); the
    // resize with the size the assertion of its result below reads.
    const submitted = new Map<JobType, { id: string; output?: string }>();
    for (const definition of JOB_DEFINITIONS) {
      const { path, body, output } = submission(definition, {
        bucket: B, sources: EVERY_TYPE_SOURCES, dest: `out/every/${definition.name}`,
        ...(definition.name === "image_resize" ? { parameters: { width: 160, height: 120, format: "webp" } } : {}),
      }); // prettier-ignore
      submitted.set(definition.name, { id: await cs.submit(path, body), ...(output ? { output } : {}) });
    }

    for (const [type, { id, output }] of submitted) {
      const job = await cs.finished(id);
      if (definitionOf(type).runner.ai) {
        assert.equal(job.status, "failed", type);
        assert.match(job.error ?? "", /AI provider/, type);
      } else {
        assert.equal(job.status, "completed", `${type}: ${job.error}`);
        assert.ok(job.result, type);
        // Its output (for a type that writes under a prefix, the entry: the master playlist).
        if (output) await cs.stack.services.s3.send(new HeadObjectCommand({ Bucket: B, Key: output }));
      }
      const [kjob, ...others] = await cs.kubeJobs(id);
      assert.ok(kjob, `${type}: a Kubernetes Job exists`);
      assert.equal(others.length, 0, `${type}: exactly one Kubernetes Job`);
      assert.equal(kjob.metadata!.name, `media-${id}`);
      assert.equal(kjob.metadata!.labels!["media-service.io/job-type"], type);
      assert.equal(kjob.metadata!.labels!["app.kubernetes.io/managed-by"], "media-service-controller");
      assert.deepEqual(kjob.spec!.template.spec!.containers[0]!.command, [
        "tini",
        "--",
        "media-service",
        "runner",
        "--job",
        id,
      ]);
      const condition = await eventually(`${type}: the Job finishes`, async () => {
        const [j] = await cs.kubeJobs(id);
        return j?.status?.conditions?.find(
          (c) => c.status === "True" && ["Complete", "Failed"].includes(c.type),
        );
      });
      assert.equal(condition.type, job.status === "completed" ? "Complete" : "Failed", type);
      const pods = await cs.kubePods(id);
      assert.equal(pods.length, 1, `${type}: one pod`);
      const status = pods[0]!.status!.containerStatuses![0]!;
      assert.match(status.containerID ?? "", /^containerd:\/\/[0-9a-f]{64}$/, `${type}: a real container`);
      assert.match(status.imageID ?? "", /sha256:[0-9a-f]{64}/, `${type}: of a real image`);
    }
    const resized = await cs.stack.services.store.getJob(submitted.get("image_resize")!.id);
    assert.deepEqual((resized!.result as { metadata: unknown }).metadata, {
      width: 160,
      height: 120,
      format: "webp",
    });
    assert.equal(
      await controller.metric('media_controller_jobs_created_total{type="image_resize"}'),
      1,
      "the created-Jobs counter counts by type",
    );
  });

  test("per-job resources and the timeout reach the pod; the pod is hardened", async () => {
    const id = await cs.submit("image/resize", {
      source_bucket: B, source_key: "in/photo.jpg", dest_bucket: B, dest_key: "out/res.jpg", width: 50, height: 50,
      resources: { cpu: "300m", memory: "300Mi" }, timeout_seconds: 90,
    }); // prettier-ignore
    const job = await cs.finished(id);
    assert.equal(job.status, "completed", job.error);
    const [pod] = await cs.kubePods(id);
    assert.ok(pod);
    const container = pod.spec!.containers[0]!;
    // Local disk stays the type's: a job asks for CPU and memory only.
    assert.deepEqual(container.resources!.requests, {
      cpu: "300m",
      memory: "300Mi",
      "ephemeral-storage": "256Mi",
    });
    assert.deepEqual(container.resources!.limits, {
      cpu: "300m",
      memory: "300Mi",
      "ephemeral-storage": "2Gi",
    });
    assert.equal(container.securityContext!.readOnlyRootFilesystem, true);
    assert.deepEqual(container.securityContext!.capabilities!.drop, ["ALL"]);
    assert.equal(pod.spec!.automountServiceAccountToken, false);
    assert.equal(pod.spec!.securityContext!.runAsNonRoot, true);
    const env = new Map(container.env!.map((e) => [e.name, e]));
    assert.equal(env.get("REDIS_URL")!.value, undefined, "the Redis URL is never inlined");
    assert.equal(env.get("REDIS_URL")!.valueFrom!.secretKeyRef!.name, "media-service-redis");
    assert.equal(env.get("S3_SECRET_ACCESS_KEY")!.valueFrom!.secretKeyRef!.name, "media-service-s3");
    const [kjob] = await cs.kubeJobs(id);
    // The job's 90 s for the runner, from its start; the Job's deadline adds the wait for a node (20s).
    assert.equal(kjob!.spec!.activeDeadlineSeconds, 90 + 20);
    assert.equal(env.get("JOB_TIMEOUT_SECONDS")!.value, "90");
  });

  test("a video job's CPU limit reaches ffmpeg: its pod's limit and quota, and -threads 2 and 1", async () => {
    // One after the other: a pod asking for the node's 2 CPUs runs alone.
    for (const cpu of ["2", "1"]) {
      const resources = { cpu, memory: "512Mi" };
      const id = await cs.submit("video/transcode", {
        source_bucket: B, source_key: "in/clip.mp4", dest_bucket: B, dest_key: `out/cpu-${cpu}.mp4`, preset: "fast",
        resources,
      }); // prettier-ignore
      const job = await cs.finished(id);
      assert.equal(job.status, "completed", job.error);
      const [pod, ...others] = await cs.kubePods(id);
      assert.ok(pod);
      assert.equal(others.length, 0, "one pod");
      // Local disk stays the type's (video: 2Gi requested, 16Gi at most).
      assert.deepEqual(pod.spec!.containers[0]!.resources!.requests, {
        ...resources,
        "ephemeral-storage": "2Gi",
      });
      assert.deepEqual(pod.spec!.containers[0]!.resources!.limits, {
        ...resources,
        "ephemeral-storage": "16Gi",
      });

      // The runner's line when it started ffmpeg, read through the API server from the kubelet.
      const log = await cs.admin.core.readNamespacedPodLog({
        name: pod.metadata!.name!,
        namespace: cs.namespace,
      });
      const started = log
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((line) => line.msg === "ffmpeg started");
      assert.ok(started.length > 0, `an "ffmpeg started" line in the runner's log:\n${log}`);
      for (const line of started) {
        assert.equal(line.job_id, id);
        assert.equal(line.level, 30, "info");
        assert.equal(line.threads, Number(cpu), `-threads of a ${cpu}-CPU limit`);
      }

      // The other side: the CFS quota the kubelet gave the container (its OCI spec, which runc wrote
      // into the cgroup) is the quota the runner read from its cgroup.
      const containerId = pod.status!.containerStatuses![0]!.containerID!.replace("containerd://", "");
      const info = JSON.parse(await cluster.node.ctr(["containers", "info", containerId])) as {
        Spec: { linux: { resources: { cpu: { quota: number; period: number } } } };
      };
      const { quota, period } = info.Spec.linux.resources.cpu;
      assert.equal(quota, Number(cpu) * period, "the limit as a CFS quota");
      assert.equal(started[0]!.cpu_quota, `${quota} ${period}`, "the quota the runner found");
    }
  });

  test("a runner killed at its memory limit fails the job with an out-of-memory error", async () => {
    await cs.put("in/huge.png", await makeImage({ width: 6000, height: 6000, format: "png" }));
    const id = await cs.submit("image/resize", {
      source_bucket: B, source_key: "in/huge.png", dest_bucket: B, dest_key: "out/huge.jpg", width: 5000, height: 5000,
      format: "jpeg", resources: { memory: "64Mi" },
    }); // prettier-ignore
    const job = await cs.finished(id);
    assert.equal(job.status, "failed");
    assert.match(job.error!, /out of memory/);
    assert.match(job.error!, /64Mi/);
    const pods = await cs.kubePods(id);
    assert.equal(pods.length, 1, "an OOM kill is not retried: the same input needs the same memory");
    assert.equal(pods[0]!.status!.containerStatuses![0]!.state!.terminated!.reason, "OOMKilled");
    assert.ok((await controller.metric('media_controller_jobs_failed_total{reason="oom"}')) === 1);
    // kubectl describe job says why: a Warning Event on the Job, written with the controller's Role.
    const events = await cs.admin.core.listNamespacedEvent({
      namespace: cs.namespace,
      fieldSelector: `involvedObject.kind=Job,involvedObject.name=media-${id}`,
    });
    const failed = events.items.find((e) => e.reason === "MediaJobFailedOom");
    assert.ok(failed, JSON.stringify(events.items.map((e) => e.reason)));
    assert.equal(failed.type, "Warning");
    assert.match(failed.message ?? "", /out of memory/);
  });

  test("a job past its deadline fails with a timeout error", async () => {
    await cs.put(
      "in/long.wav",
      await readFile(await makeAudio({ durationSeconds: 1200, sampleRate: 8000, channels: 1 })),
    );
    const id = await cs.submit("audio/convert", {
      source_bucket: B, source_key: "in/long.wav", dest_bucket: B, dest_key: "out/long.opus", format: "opus",
      timeout_seconds: 2,
    }); // prettier-ignore
    const job = await cs.finished(id);
    assert.equal(job.status, "failed");
    assert.match(job.error!, /timed out after 2 s \(timeout_seconds\)/);
    const kjob = await eventually("the Job to fail", async () => {
      const [j] = await cs.kubeJobs(id);
      return j?.status?.conditions?.some((c) => c.type === "Failed" && c.status === "True") ? j : undefined;
    });
    assert.equal(kjob.spec!.activeDeadlineSeconds, 2 + 20);
    await eventually("the runner container to be gone", async () =>
      (await runnerRunning(cs, id)) ? undefined : true,
    );
  });

  test("a permanent input error fails the job at once, without a retry", async () => {
    const id = await cs.submit("image/resize", {
      source_bucket: B, source_key: "in/not-an-image.jpg", dest_bucket: B, dest_key: "out/x.jpg", width: 10, height: 10,
    }); // prettier-ignore
    const job = await cs.finished(id);
    assert.equal(job.status, "failed");
    assert.match(job.error!, /not a decodable image/);
    const kjob = await eventually("the Job to fail", async () => {
      const [j] = await cs.kubeJobs(id);
      return j?.status?.conditions?.find((c) => c.type === "Failed" && c.status === "True") ? j : undefined;
    });
    assert.equal(kjob.status!.conditions!.find((c) => c.type === "Failed")!.reason, "PodFailurePolicy");
    const pods = await cs.kubePods(id);
    assert.equal(pods.length, 1, "no second pod");
    assert.equal(pods[0]!.status!.containerStatuses![0]!.state!.terminated!.exitCode, 2);
    assert.match(
      pods[0]!.status!.containerStatuses![0]!.state!.terminated!.message ?? "",
      /not a decodable image/,
    );
  });

  test("a runner stopped mid-job (SIGTERM, as on a node shutting down) is retried by a new pod and the job completes", async () => {
    const { id, pod } = await runningConversion(cs, "stopped");
    // Stopped from outside (not the job's fault). Not SIGKILL: exit code 137 is what the kernel's OOM
    // kill gives, which fails the Job at once by its pod failure policy.
    const containerId = pod.status!.containerStatuses![0]!.containerID!.replace("containerd://", "");
    await cluster.node.ctr(["tasks", "kill", "--signal", "SIGTERM", containerId]);
    const kjob = await completedWithJob(cs, id);
    const pods = await cs.kubePods(id);
    assert.equal(pods.length, 2, "one failed pod, one that succeeded");
    const phases = pods.map((p) => p.status!.phase).sort();
    assert.deepEqual(phases, ["Failed", "Succeeded"]);
    const killed = pods.find((p) => p.status!.phase === "Failed")!;
    assert.notEqual(killed.status!.containerStatuses![0]!.state!.terminated!.exitCode, 0);
    assert.equal(kjob.status!.failed, 1);
    assert.equal(kjob.status!.succeeded, 1);
  });

  test("a runner pod evicted through the Eviction API (as a node drain does) is replaced without counting a failure", async () => {
    const { id, pod } = await runningConversion(cs, "evicted");
    const name = pod.metadata!.name!;
    await cs.admin.core.createNamespacedPodEviction({
      name,
      namespace: cs.namespace,
      body: { metadata: { name, namespace: cs.namespace } },
    });
    const kjob = await completedWithJob(cs, id);
    assert.equal(kjob.status!.failed ?? 0, 0, "the eviction is not counted against the retries");
    assert.equal(kjob.status!.succeeded, 1);
  });

  test("a job no node can take fails after unschedulable_timeout and its Job is deleted", async () => {
    const id = await cs.submit("image/colors", {
      source_bucket: B, source_key: "in/photo.jpg", resources: { cpu: "4" },
    }); // prettier-ignore
    const job = await cs.finished(id);
    assert.equal(job.status, "failed");
    assert.match(
      job.error!,
      /^job waited \d+ s for a node \(kubernetes\.unschedulable_timeout\): 0\/1 nodes are available: 1 Insufficient cpu/,
    );
    await eventually("the Job to be deleted", async () =>
      (await cs.kubeJobs(id)).length === 0 ? true : undefined,
    );
  });

  test("a job whose pod waits for a node longer than its timeout, then runs shortly, completes", async () => {
    // A pod holding the node's CPU but for 100m: the job's pod (250m) waits for a node.
    const blocker = "cpu-blocker";
    const [node] = (await cs.admin.core.listNode()).items;
    const onNode = await cs.admin.core.listPodForAllNamespaces({
      fieldSelector: `spec.nodeName=${node!.metadata!.name},status.phase!=Succeeded,status.phase!=Failed`,
    });
    const requested = onNode.items
      .flatMap((p) => p.spec?.containers ?? [])
      .reduce((sum, c) => sum + parseQuantity(String(c.resources?.requests?.cpu ?? "0")), 0);
    const free = parseQuantity(String(node!.status!.allocatable!.cpu)) - requested;
    await cs.admin.core.createNamespacedPod({
      namespace: cs.namespace,
      body: {
        metadata: { name: blocker },
        spec: {
          terminationGracePeriodSeconds: 0,
          containers: [
            {
              name: "sleep", image: cluster.image, imagePullPolicy: "Never", command: ["sleep", "600"],
              resources: { requests: { cpu: `${Math.floor((free - 0.1) * 1000)}m` } },
            },
          ],
        },
      },
    }); // prettier-ignore
    await eventually("the blocker to run", async () => {
      const p = await cs.admin.core.readNamespacedPod({ namespace: cs.namespace, name: blocker });
      return p.status?.phase === "Running" ? true : undefined;
    });

    const id = await cs.submit("image/colors", {
      source_bucket: B, source_key: "in/photo.jpg", timeout_seconds: 5, resources: { cpu: "250m" },
    }); // prettier-ignore
    await eventually("the job's pod to wait for a node", async () => {
      const [p] = await cs.kubePods(id);
      const scheduled = p?.status?.conditions?.find((c) => c.type === "PodScheduled");
      return scheduled?.status === "False" && scheduled.reason === "Unschedulable" ? true : undefined;
    });
    // Longer than the job's 5 s, shorter than kubernetes.unschedulable_timeout (20s).
    await new Promise((r) => setTimeout(r, 8000));
    const [waiting] = await cs.kubePods(id);
    assert.equal(waiting?.status?.phase, "Pending", "the pod still waits for a node after 8 s");
    assert.equal((await cs.stack.services.store.getJob(id))?.status, "pending");

    await cs.admin.core.deleteNamespacedPod({
      namespace: cs.namespace,
      name: blocker,
      gracePeriodSeconds: 0,
    });
    const job = await cs.finished(id);
    assert.equal(job.status, "completed", job.error);
    const [kjob] = await cs.kubeJobs(id);
    assert.equal(kjob!.spec!.activeDeadlineSeconds, 5 + 20);
  });

  test("a cancelled job (batch fail_fast) has its running Job deleted and its runner stopped", async () => {
    const res = await cs.stack.request("/api/v1/jobs/batch", {
      method: "POST",
      json: {
        options: { fail_fast: true },
        jobs: [
          {
            type: "audio_convert", source_bucket: B, source_key: "in/long.wav",
            dest_bucket: B, dest_key: "out/cancelled.aac", parameters: { format: "aac" },
          },
          { type: "image_colors", source_bucket: B, source_key: "in/not-an-image.jpg" },
        ],
      },
    }); // prettier-ignore
    const batch = (await res.json()) as { batch_id: string; job_ids: string[]; error?: string };
    assert.equal(res.status, 201, batch.error);
    const [longId, badId] = batch.job_ids as [string, string];
    const bad = await cs.finished(badId);
    assert.equal(bad.status, "failed");
    const long = await cs.finished(longId);
    assert.equal(long.status, "failed");
    assert.match(long.error!, /cancel/i);
    await eventually("the cancelled job's Job to be gone", async () =>
      (await cs.kubeJobs(longId)).length === 0 ? true : undefined,
    );
    await eventually("no runner container left for the cancelled job", async () =>
      (await runnerRunning(cs, longId)) ? undefined : true,
    );
  });

  test("POST /jobs/{id}/cancel of a running conversion: failed at once, its Job deleted, its runner stopped, nothing uploaded", async () => {
    const { id } = await runningConversion(cs, "cancel-by-request");
    const res = await cs.stack.request(`/api/v1/jobs/${id}/cancel`, { method: "POST" });
    assert.equal(res.status, 200);
    const job = (await res.json()) as Job;
    assert.deepEqual([job.status, job.error], ["failed", "cancelled by request"]);
    await eventually("the cancelled job's Job to be gone", async () =>
      (await cs.kubeJobs(id)).length === 0 ? true : undefined,
    );
    await eventually("no runner container left for the cancelled job", async () =>
      (await runnerRunning(cs, id)) ? undefined : true,
    );
    assert.equal((await cs.stack.services.store.getJob(id))?.error, "cancelled by request");
    await assert.rejects(
      cs.stack.services.s3.send(
        new HeadObjectCommand({ Bucket: cs.stack.bucket, Key: "out/cancel-by-request.aac" }),
      ),
      "nothing uploaded",
    );
  });

  test("the controller serves /healthz, /readyz and /metrics with the leader gauge", async () => {
    assert.equal((await controller.get("/healthz")).status, 200);
    const ready = await controller.get("/readyz");
    assert.equal(ready.status, 200, ready.body);
    assert.equal(await controller.metric("media_controller_leader"), 1);
    const metrics = (await controller.get("/metrics")).body;
    assert.match(metrics, /media_controller_reconcile_duration_seconds_count \d+/);
    assert.match(metrics, /media_controller_jobs_active\{type="image_resize"\} 0/);
    assert.match(metrics, /media_jobs_total\{type="image_resize",status="completed"\} \d+/);
  });

  test("a pending job cancelled by request never gets a Job; the next job runs", async () => {
    // No controller while the job waits, so that it is certainly still pending when cancelled.
    await controller.kill("SIGTERM");
    const id = await cs.submit("image/colors", { source_bucket: B, source_key: "in/photo.jpg" });
    const res = await cs.stack.request(`/api/v1/jobs/${id}/cancel`, { method: "POST" });
    assert.equal(res.status, 200);
    const cancelled = (await res.json()) as Job;
    assert.deepEqual(
      [cancelled.status, cancelled.error, cancelled.started_at],
      ["failed", "cancelled by request", undefined],
    );

    controller = await cs.startController("controller-b");
    const next = await cs.submit("image/colors", { source_bucket: B, source_key: "in/photo.jpg" });
    assert.equal((await cs.finished(next, 240_000)).status, "completed");
    assert.deepEqual(await cs.kubeJobs(id), [], "no Job was made for the cancelled job");
    const job = await cs.stack.services.store.getJob(id);
    assert.deepEqual([job?.status, job?.started_at, job?.attempts ?? 0], ["failed", undefined, 0]);
  });

  after(async () => {
    if (process.exitCode) console.error(await tail(controller));
  });
});

describe("a runner image that cannot be pulled", () => {
  let cs: ClusterStack;

  before(async () => {
    cs = await startClusterStack({
      cluster,
      kubernetes: {
        image: "media-service:tag-that-does-not-exist",
        image_pull_policy: "IfNotPresent",
        start_failure_timeout: "5s",
      },
    });
    await cs.startController("controller-pull");
    await cs.put("in/photo.jpg", await makeImage({ width: 64, height: 48, format: "jpeg" }));
  });
  after(async () => {
    await cs?.close();
  });

  test("fails the job with the image named, after start_failure_timeout, and deletes its Job", async () => {
    const id = await cs.submit("image/colors", {
      source_bucket: cs.stack.bucket,
      source_key: "in/photo.jpg",
    });
    const job = await cs.finished(id);
    assert.equal(job.status, "failed");
    assert.match(
      job.error!,
      /the runner image "media-service:tag-that-does-not-exist" cannot be pulled \((ErrImagePull|ImagePullBackOff)\)/,
    );
    await eventually("the Job to be deleted", async () =>
      (await cs.kubeJobs(id)).length === 0 ? true : undefined,
    );
  });
});
