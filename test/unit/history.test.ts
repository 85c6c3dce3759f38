// The figures per minute (GET /stats/history) from the hashes the scripts write: the quantile
// estimate from cumulative buckets, and queue depths carried across minutes without a change.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { historyPoints, quantile, type MinuteHash } from "../../core/stats/history.js";
import { JOB_DURATION_BUCKETS } from "../../core/jobs/duration-buckets.js";

describe("quantile from cumulative buckets", () => {
  const bounds = [1, 2, 4];
  test("interpolates inside the bucket that holds the rank", () => {
    // 10 jobs: 4 took ≤ 1 s, 8 ≤ 2 s, 10 ≤ 4 s.
    assert.equal(quantile(0.5, [4, 8, 10], 10, bounds), 1.25);
    assert.equal(quantile(0.2, [4, 8, 10], 10, bounds), 0.5);
    assert.equal(quantile(0.95, [4, 8, 10], 10, bounds), 3.5);
  });
  test("skips empty buckets; beyond the last bound is the last bound; none is null", () => {
    assert.equal(quantile(0.5, [0, 0, 2], 2, bounds), 3);
    assert.equal(quantile(0.95, [0, 0, 1], 3, bounds), 4);
    assert.equal(quantile(0.5, [0, 0, 0], 0, bounds), null);
  });
});

describe("history points", () => {
  const at = (minute: number) => new Date(minute * 60_000).toISOString();
  const b = (i: number) => `image_resize:b${i}`;
  test("one point per hash, totals and per type, durations from the completed jobs' buckets", () => {
    // Cumulative buckets: one job took at most 0.5 s, both at most 1 s.
    const hashes: MinuteHash[] = [
      {},
      {
        "image_resize:completed": "2",
        "image_resize:failed": "1",
        ...Object.fromEntries(
          JOB_DURATION_BUCKETS.map((bound, i) => [b(i + 1), bound >= 1 ? "2" : bound >= 0.5 ? "1" : "0"]),
        ),
        "image_colors:failed": "3",
      },
    ];
    const points = historyPoints(1000, hashes, [], {});
    assert.deepEqual(
      points.map((p) => p.at),
      [at(1000), at(1001)],
    );
    assert.deepEqual([points[0]!.completed, points[0]!.failed, points[0]!.p50_seconds], [0, 0, null]);
    const last = points[1]!;
    assert.deepEqual([last.completed, last.failed], [2, 4]);
    assert.deepEqual([last.by_type.image_resize!.failed, last.by_type.image_colors!.failed], [1, 3]);
    // One job in (0.25, 0.5], one in (0.5, 1]: the median is the top of the first, 0.5 s.
    assert.equal(last.by_type.image_resize!.p50_seconds, 0.5);
    assert.equal(last.p50_seconds, 0.5);
    assert.ok(last.p95_seconds! > 0.5 && last.p95_seconds! <= 1);
  });

  test("a queue's depth is carried over minutes without a change, from before the window too", () => {
    const before: MinuteHash[] = [{ "image_resize:pending": "7" }, {}];
    const hashes: MinuteHash[] = [
      {},
      { "image_resize:pending": "3", "image_resize:pending_before": "7" },
      {},
      { "audio_convert:pending": "2", "audio_convert:pending_before": "0" },
    ];
    const points = historyPoints(0, hashes, before, { image_resize: 3, audio_convert: 2 });
    assert.deepEqual(
      points.map((p) => p.by_type.image_resize!.pending),
      [7, 3, 3, 3],
    );
    // No note before the window: the minutes before its first change have the depth it started from.
    assert.deepEqual(
      points.map((p) => p.by_type.audio_convert!.pending),
      [0, 0, 0, 2],
    );
    assert.deepEqual(
      points.map((p) => p.pending),
      [7, 3, 3, 5],
    );
  });

  test("a queue that did not change in sight has its depth now", () => {
    const points = historyPoints(0, [{}, {}], [], { video_thumbnail: 4 });
    assert.deepEqual(
      points.map((p) => p.by_type.video_thumbnail!.pending),
      [4, 4],
    );
  });

  test("with a step, a point per stretch aligned on the step: counts and buckets summed, the last depth", () => {
    const ended = (completed: number, bucket: number): MinuteHash => ({
      "image_resize:completed": String(completed),
      ...Object.fromEntries(
        JOB_DURATION_BUCKETS.map((_, i) => [b(i + 1), i + 1 >= bucket ? String(completed) : "0"]),
      ),
    });
    // Minutes 8 to 21 with a step of 5: stretches 5-9 (minutes 8, 9), 10-14, 15-19 and 20-24 (20, 21).
    const hashes: MinuteHash[] = Array.from({ length: 14 }, () => ({}));
    hashes[0] = {
      "image_resize:failed": "1",
      "image_resize:pending": "4",
      "image_resize:pending_before": "5",
    };
    hashes[3] = ended(3, 1); // minute 11: three jobs in the first bucket
    hashes[5] = { ...ended(1, JOB_DURATION_BUCKETS.length), "image_resize:pending": "2" }; // minute 13
    hashes[6] = { "image_resize:pending": "6", "image_resize:pending_before": "2" }; // minute 14
    hashes[13] = { "image_resize:failed": "2" };
    const points = historyPoints(8, hashes, [], {}, 5);
    assert.deepEqual(
      points.map((p) => p.at),
      [at(8), at(10), at(15), at(20)],
    );
    assert.deepEqual(
      points.map((p) => [p.completed, p.failed, p.pending]),
      [
        [0, 1, 4],
        [4, 0, 6],
        [0, 0, 6],
        [0, 2, 6],
      ],
    );
    // Four jobs: three in the first bucket, one in the last; the median is in the first.
    const stretch = points[1]!.by_type.image_resize!;
    assert.ok(stretch.p50_seconds! <= JOB_DURATION_BUCKETS[0]!);
    assert.ok(stretch.p95_seconds! > JOB_DURATION_BUCKETS.at(-2)!);
    assert.equal(points[0]!.p50_seconds, null);
  });
});
