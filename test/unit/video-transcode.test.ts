// video_transcode's rules that need no ffmpeg: the warm pool kept out of it unless an operator
// says so, its long deadline and the setting its timeout names, and the size a video is fitted to.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { loadConfig } from "../../core/config/load.js";
import { executionClass, jobDeadline, timeoutMessage } from "../../core/policy.js";
import { fitSize } from "../../runner/av/video-encode.js";

describe("video_transcode", () => {
  const config = loadConfig({ env: {} });

  test("the warm pool never runs it unless an operator says so", () => {
    const policy = { ...config.executor.pool, enabled: true };
    const job = { type: "video_transcode" as const, execution_class: "pool" as const };
    assert.deepEqual(executionClass(job, policy), {
      class: "job",
      why: "video_transcode does not use the pool (executor.pool.classes.video_transcode)",
    });
    const opted = { ...policy, classes: { ...policy.classes, video_transcode: "pool" as const } };
    assert.equal(executionClass(job, opted).class, "pool");
  });

  test("two hours by default; a timeout names the setting to raise", () => {
    const deadline = jobDeadline({ type: "video_transcode" }, config.executor.timeoutsMs);
    assert.equal(timeoutMessage(deadline), "job timed out after 7200 s (executor.timeouts.video_transcode)");
    assert.deepEqual(config.kubernetes.resources.video_transcode, {
      requests: { cpu: "2", memory: "2Gi" },
      limits: { cpu: "4", memory: "4Gi" },
    });
  });

  test("fitted inside the box, aspect kept, even sides, never enlarged", () => {
    const hd = { displayWidth: 1920, displayHeight: 1080 };
    assert.deepEqual(fitSize(hd, { width: 1280 }, 16384), { width: 1280, height: 720 });
    assert.deepEqual(fitSize(hd, { width: 1280, height: 360 }, 16384), { width: 640, height: 360 });
    assert.deepEqual(fitSize(hd, { width: 4000 }, 16384), { width: 1920, height: 1080 });
    assert.deepEqual(fitSize(hd, {}, 1000), { width: 1000, height: 562 });
    assert.deepEqual(fitSize({ displayWidth: 1080, displayHeight: 1920 }, { height: 853 }, 16384), {
      width: 478,
      height: 852,
    });
    assert.deepEqual(fitSize({ displayWidth: 321, displayHeight: 241 }, {}, 16384), {
      width: 320,
      height: 240,
    });
  });
});
