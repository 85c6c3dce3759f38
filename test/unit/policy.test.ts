// The policy every executor and the runner take their verdicts from, alone: the exit-code contract,
// the deadline rule and its message, the pod retries that give a Kubernetes job its attempts, and the
// execution class a dispatcher gives a job (its own run or the warm pool).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  activeDeadlineSeconds,
  diskLimitSetting,
  evictionVerdict,
  EXIT,
  executionClass,
  isPermanentExit,
  jobDeadline,
  pipelineProgress,
  PIPELINE_STEP_WEIGHT,
  podRetries,
  runVerdict,
  timeoutMessage,
  WAIT_SETTING,
  waitMessage,
  type PoolPolicy,
} from "../../core/policy.js";
import { JOB_TYPES, type JobType } from "../../core/jobs/types.js";

const timeouts = Object.fromEntries(JOB_TYPES.map((t) => [t, 120_000])) as Record<JobType, number>;
timeouts.audio_convert = 1_800_000;
timeouts.image_colors = 1500;

describe("a runner pod the kubelet evicted", () => {
  // The kubelet's own messages (its eviction manager's formats), one per limit of the pod's disk.
  const overLimit = [
    'Usage of EmptyDir volume "scratch" exceeds the limit "2Gi". ',
    "Pod ephemeral local storage usage exceeds the total limit of containers 2Gi. ",
    'Container runner exceeded its local ephemeral storage limit "2Gi". ',
  ];

  test("over its own disk limit: the job fails at once, naming the limit and the setting to raise", () => {
    for (const message of overLimit) {
      assert.deepEqual(evictionVerdict(message.trim(), "video_transcode", "16Gi"), {
        action: "fail",
        error: `disk limit exceeded: the runner wrote more than its local disk limit of 16Gi (raise kubernetes.resources.video_transcode.limits.ephemeral_storage): ${message.trim()}`,
      });
    }
    assert.equal(
      diskLimitSetting("image_colors"),
      "kubernetes.resources.image_colors.limits.ephemeral_storage",
    );
  });

  test("for the node's sake (pressure, a drain's eviction): retried as any transient failure", () => {
    for (const message of [
      "The node was low on resource: ephemeral-storage. Threshold quantity: 1Gi, available: 512Mi. ",
      "The node was low on resource: memory.",
      "",
    ]) {
      const verdict = evictionVerdict(message, "video_transcode", "16Gi");
      assert.equal(verdict.action, "retry", message);
      assert.match(verdict.action === "retry" ? verdict.reason : "", /^the runner pod was evicted/);
    }
  });
});

describe("exit-code contract", () => {
  test("0 with the job unfinished: failed, the runner reported nothing", () => {
    assert.deepEqual(runVerdict(EXIT.done), {
      action: "fail",
      error: "the runner finished without reporting a result",
    });
  });
  test("2: failed for good, with the runner's own words when it gave any", () => {
    assert.deepEqual(runVerdict(EXIT.permanent, "source s3://b/k not found"), {
      action: "fail",
      error: "source s3://b/k not found",
    });
    assert.deepEqual(runVerdict(EXIT.permanent), {
      action: "fail",
      error: "the runner reported a permanent failure",
    });
    assert.equal(isPermanentExit(2), true);
    assert.equal(isPermanentExit(1), false);
    assert.equal(isPermanentExit(undefined), false);
  });
  for (const code of [1, 3, 137, 143]) {
    test(`${code}: retried`, () => {
      assert.deepEqual(runVerdict(code, "storage unavailable"), {
        action: "retry",
        reason: "storage unavailable",
      });
      assert.deepEqual(runVerdict(code), { action: "retry", reason: `the runner exited with code ${code}` });
    });
  }
});

describe("deadline rule", () => {
  test("the job's timeout_seconds, else its type's timeout, each named in the message", () => {
    const own = jobDeadline({ type: "audio_convert", timeout_seconds: 90 }, timeouts);
    assert.deepEqual(own, { ms: 90_000, seconds: 90, setting: "timeout_seconds" });
    assert.equal(timeoutMessage(own), "job timed out after 90 s (timeout_seconds)");
    const typed = jobDeadline({ type: "audio_convert" }, timeouts);
    assert.deepEqual(typed, { ms: 1_800_000, seconds: 1800, setting: "executor.timeouts.audio_convert" });
    assert.equal(timeoutMessage(typed), "job timed out after 1800 s (executor.timeouts.audio_convert)");
  });
  test("a pipeline's: its waves in turn, each the longest of its steps' timeouts, at least its own", () => {
    const pipeline = (steps: Record<string, unknown>, timeout_seconds?: number) =>
      jobDeadline(
        { type: "pipeline", parameters: { steps }, ...(timeout_seconds ? { timeout_seconds } : {}) },
        { ...timeouts, pipeline: 600_000 },
      );
    // One wave: the longest of its steps (audio_convert's 30 minutes).
    assert.deepEqual(pipeline({ a: { type: "image_colors" }, b: { type: "audio_convert" } }), {
      ms: 1_800_000,
      seconds: 1800,
      setting: "executor.timeouts of its steps, the longest of each wave in turn",
    });
    // Two waves in turn: 30 minutes, then 2.
    const chain = { a: { type: "audio_convert" }, b: { type: "media_probe", input: "a" } };
    assert.equal(pipeline(chain).ms, 1_800_000 + 120_000);
    // Short steps: executor.timeouts.pipeline; timeout_seconds wins over both.
    assert.deepEqual(pipeline({ a: { type: "image_colors" } }), {
      ms: 600_000,
      seconds: 600,
      setting: "executor.timeouts.pipeline",
    });
    assert.equal(pipeline(chain, 30).setting, "timeout_seconds");
  });

  test("whole seconds round up (a Job's activeDeadlineSeconds), milliseconds stay exact for timers", () => {
    assert.deepEqual(jobDeadline({ type: "image_colors" }, timeouts), {
      ms: 1500,
      seconds: 2,
      setting: "executor.timeouts.image_colors",
    });
  });
  test("a deadline an executor gave the run wins; it is named only where it is not the job's own", () => {
    const given = { seconds: 7, setting: "JOB_TIMEOUT_SECONDS" };
    assert.deepEqual(jobDeadline({ type: "audio_convert", timeout_seconds: 90 }, timeouts, given), {
      ms: 7000,
      seconds: 7,
      setting: "JOB_TIMEOUT_SECONDS",
    });
    assert.deepEqual(jobDeadline({ type: "audio_convert", timeout_seconds: 7 }, timeouts, given), {
      ms: 7000,
      seconds: 7,
      setting: "timeout_seconds",
    });
    // Derived from the type's timeout (or the type's timeout changed since): the setting to change.
    assert.deepEqual(jobDeadline({ type: "audio_convert" }, timeouts, given), {
      ms: 7000,
      seconds: 7,
      setting: "executor.timeouts.audio_convert",
    });
  });
  test("a Kubernetes Job's deadline is the job's time plus the longest wait for a node, in whole seconds", () => {
    const own = jobDeadline({ type: "image_colors", timeout_seconds: 120 }, timeouts);
    assert.equal(activeDeadlineSeconds(own, 300_000), 420);
    assert.equal(activeDeadlineSeconds(own, 1500), 122);
    assert.equal(activeDeadlineSeconds(own, 0), 120);
  });
  test("a wait too long names what it waited for and the setting that bounds it, apart from a timeout", () => {
    assert.equal(waitMessage(301), "job waited 301 s for a node (kubernetes.unschedulable_timeout)");
    assert.equal(
      waitMessage(300, "a node", "0/1 nodes are available: 1 Insufficient cpu."),
      "job waited 300 s for a node (kubernetes.unschedulable_timeout): 0/1 nodes are available: 1 Insufficient cpu.",
    );
    assert.equal(WAIT_SETTING, "kubernetes.unschedulable_timeout");
    assert.doesNotMatch(waitMessage(301), /timed out/);
  });
});

describe("retry rule on Kubernetes", () => {
  test("a Job retries its pod so that the job gets executor.max_attempts attempts in all", () => {
    assert.equal(podRetries(3), 2);
    assert.equal(podRetries(1), 0);
  });
});

describe("execution class", () => {
  const classes = Object.fromEntries(JOB_TYPES.map((t) => [t, "job"])) as PoolPolicy["classes"];
  classes.image_resize = "auto";
  classes.image_colors = "pool";
  const pool: PoolPolicy = {
    enabled: true,
    classes,
    autoMaxSourceBytes: 1000,
    jobResources: { cpu: "1", memory: "1Gi" },
  };
  const resize = { type: "image_resize" as const };

  test("the pool off, or a type that does not use it: the job's own run, whatever the job asks", () => {
    assert.deepEqual(executionClass({ type: "image_colors" }, { ...pool, enabled: false }), {
      class: "job",
      why: "the pool is off (executor.pool.enabled)",
    });
    const thumb = executionClass({ type: "video_thumbnail", execution_class: "pool" }, pool);
    assert.equal(thumb.class, "job");
    assert.match(thumb.why, /executor\.pool\.classes\.video_thumbnail/);
  });

  test("pool: the pool; auto: its source's size decides, at most the limit goes to the pool", () => {
    assert.equal(executionClass({ type: "image_colors" }, pool).class, "pool");
    assert.equal(executionClass(resize, pool).class, "auto", "a HEAD is needed");
    assert.equal(executionClass(resize, pool, 1000).class, "pool");
    const big = executionClass(resize, pool, 1001);
    assert.equal(big.class, "job");
    assert.match(big.why, /1001 bytes\) is larger than executor\.pool\.auto_max_source_bytes \(1000\)/);
    assert.equal(executionClass(resize, pool, null).class, "job", "a source that cannot be sized");
  });

  test("a job's own class wins over its type's, within the types that may use the pool", () => {
    assert.equal(executionClass({ ...resize, execution_class: "job" }, pool, 10).class, "job");
    assert.equal(executionClass({ ...resize, execution_class: "pool" }, pool, 10 ** 9).class, "pool");
    assert.equal(executionClass({ type: "image_colors", execution_class: "auto" }, pool, 5000).class, "job");
  });

  test("a job asking for more than a pooled job gets runs on its own, even when it asks for the pool", () => {
    const cpu = executionClass({ type: "image_colors", resources: { cpu: "1500m" } }, pool);
    assert.equal(cpu.class, "job");
    assert.match(
      cpu.why,
      /resources\.cpu 1500m, more than a pooled job gets \(executor\.pool\.job_resources\.cpu 1\)/,
    );
    const memory = executionClass(
      { type: "image_colors", execution_class: "pool", resources: { memory: "2Gi" } },
      pool,
    );
    assert.equal(memory.class, "job");
    assert.equal(
      executionClass({ type: "image_colors", resources: { cpu: "1", memory: "512Mi" } }, pool).class,
      "pool",
    );
  });
});

describe("a pipeline's overall progress", () => {
  test("each step's percent weighted by its resource class", () => {
    const classes = { a: "image", b: "image", v: "video" } as const;
    const of = (step: string) => classes[step as keyof typeof classes];
    assert.equal(pipelineProgress({ a: 0, b: 0, v: 0 }, of), 0);
    // Two image steps done of 1 + 1 + 8: a fifth.
    assert.equal(pipelineProgress({ a: 100, b: 100, v: 0 }, of), 20);
    assert.equal(pipelineProgress({ a: 100, b: 100, v: 50 }, of), 60);
    assert.equal(pipelineProgress({ a: 100, b: 100, v: 100 }, of), 100);
    assert.equal(pipelineProgress({}, of), 0);
    assert.ok(PIPELINE_STEP_WEIGHT.video > PIPELINE_STEP_WEIGHT.media);
    assert.ok(PIPELINE_STEP_WEIGHT.media > PIPELINE_STEP_WEIGHT.image);
  });
});
