// A runner over its local disk limit, on the real node: the kubelet evicts its pod for writing more
// than its scratch emptyDir's sizeLimit (its job type's ephemeral_storage limit), and the job fails
// at once saying so and naming the setting to raise, its Job deleted, rather than each retry filling
// the same disk (the kubelet marks the eviction as no disruption, so the Job would retry it).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { makeAudio, removeMediaDirs } from "../support/av.js";
import { startTestCluster, type TestCluster } from "./support/cluster.js";
import {
  eventually,
  startClusterStack,
  type ClusterStack,
  type ControllerProcess,
} from "./support/cluster-stack.js";

let cluster: TestCluster;
let cs: ClusterStack;
let controller: ControllerProcess;

before(async () => {
  cluster = await startTestCluster();
  cs = await startClusterStack({
    cluster,
    kubernetes: {
      resources: {
        // 4Mi of disk, and a tenth of a CPU so that the conversion below outlasts the kubelet's
        // measure of its scratch (every 10 s on this node) and its eviction check (every 10 s).
        audio_convert: {
          requests: { cpu: "100m", ephemeral_storage: "1Mi" },
          limits: { cpu: "100m", ephemeral_storage: "4Mi" },
        },
      },
    },
  });
  controller = await cs.startController("controller");
});

after(async () => {
  await cs?.close();
  await cluster?.stop();
  removeMediaDirs();
});

describe("a runner over its disk limit", () => {
  test("is evicted by the kubelet, and its job fails at once naming the limit and the setting", async () => {
    // A 20-minute WAV (19 MB) downloaded into a 4Mi scratch, then converted to AAC.
    const wav = await readFile(await makeAudio({ durationSeconds: 1200, sampleRate: 8000, channels: 1 }));
    assert.ok(wav.length > 16 * 2 ** 20);
    await cs.put("in/long.wav", wav);
    const id = await cs.submit("audio/convert", {
      source_bucket: cs.stack.bucket, source_key: "in/long.wav", dest_bucket: cs.stack.bucket,
      dest_key: "out/long.aac", format: "aac",
    }); // prettier-ignore
    const job = await cs.finished(id, 240_000);
    assert.equal(job.status, "failed");
    assert.match(
      job.error ?? "",
      /^disk limit exceeded: the runner wrote more than its local disk limit of 4Mi \(raise kubernetes\.resources\.audio_convert\.limits\.ephemeral_storage\): (Usage of EmptyDir volume "scratch" exceeds the limit "4Mi"|Pod ephemeral local storage usage exceeds the total limit of containers 4Mi|Container runner exceeded its local ephemeral storage limit "4Mi")/,
    );
    // One attempt: no second pod filled the same disk, and the Job is gone.
    assert.equal(job.attempts ?? 1, 1);
    await eventually("the runner Job to be deleted", async () =>
      (await cs.kubeJobs(id)).length === 0 ? true : undefined,
    );
    assert.equal(await controller.metric('media_controller_jobs_failed_total{reason="disk_limit"}'), 1);
  });
});
