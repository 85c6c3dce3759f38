// The policy every executor and the runner take their verdicts from, alone: the exit-code contract,
// the deadline rule and its message, the pod retries that give a Kubernetes job its attempts.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  EXIT,
  isPermanentExit,
  jobDeadline,
  podRetries,
  runVerdict,
  timeoutMessage,
} from "../../core/policy.js";
import { JOB_TYPES, type JobType } from "../../core/jobs/types.js";

const timeouts = Object.fromEntries(JOB_TYPES.map((t) => [t, 120_000])) as Record<JobType, number>;
timeouts.audio_convert = 1_800_000;
timeouts.image_colors = 1500;

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
});

describe("retry rule on Kubernetes", () => {
  test("a Job retries its pod so that the job gets executor.max_attempts attempts in all", () => {
    assert.equal(podRetries(3), 2);
    assert.equal(podRetries(1), 0);
  });
});
