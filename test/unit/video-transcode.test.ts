// video_transcode's rules that need no ffmpeg: the warm pool kept out of it unless an operator
// says so, its long deadline and the setting its timeout names, and the size a video is fitted to.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { loadConfig } from "../../core/config/load.js";
import { executionClass, jobDeadline, timeoutMessage } from "../../core/policy.js";
import { withDefaults } from "../../core/jobs/parameters.js";
import { fitSize, videoEncodeOptions } from "../../runner/av/video-encode.js";

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
      requests: { cpu: "2", memory: "2Gi", ephemeralStorage: "2Gi" },
      limits: { cpu: "4", memory: "4Gi", ephemeralStorage: "16Gi" },
    });
  });

  test("encoders that ignore -threads get their own thread count; h265 in mp4 and mov is hvc1", () => {
    const options = (parameters: Record<string, unknown>, container: "mp4" | "mkv" | "mov" = "mp4") =>
      videoEncodeOptions(withDefaults("video_transcode", parameters), container, 3).join(" ");
    assert.match(options({ video_codec: "h265" }), /-x265-params pools=3:log-level=error/);
    assert.match(options({ video_codec: "h265" }), /-tag:v hvc1/);
    assert.match(options({ video_codec: "h265" }, "mov"), /-tag:v hvc1/);
    assert.doesNotMatch(options({ video_codec: "h265" }, "mkv"), /hvc1/);
    assert.match(options({ video_codec: "av1" }), /-svtav1-params lp=3/);
    assert.match(options({ video_codec: "vp9" }), /-crf 33 -b:v 0/);
    assert.match(options({ video_codec: "vp9", crf: 30, max_bitrate: "900k" }), /-crf 30 -b:v 900k/);
    assert.match(
      options({ video_bitrate: "1000k", max_bitrate: "1500k" }),
      /-b:v 1000k -maxrate 1500k -bufsize 3000k/,
    );
    assert.match(options({}), /-c:v libx264 -preset medium -crf 23 -pix_fmt yuv420p/);
    assert.equal(options({ video_codec: "copy" }), "-c:v copy");
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
