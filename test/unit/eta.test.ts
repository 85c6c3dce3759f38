// The runner's estimate of a job's time left (runner/eta.ts), from reports at given moments.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { describeTimeLeft } from "../../core/jobs/eta.js";
import { EtaEstimator } from "../../runner/eta.js";

/** Feeds [seconds, percent] reports; answers each estimate. */
function feed(estimator: EtaEstimator, reports: Array<[number, number]>): Array<number | undefined> {
  return reports.map(([seconds, percent]) => estimator.update(percent, seconds * 1000));
}

describe("EtaEstimator", () => {
  test("no estimate before the job has run long enough and moved far enough", () => {
    const eta = new EtaEstimator({ minSeconds: 2, minPercent: 2 });
    assert.deepEqual(
      feed(eta, [
        [0, 5],
        [0.5, 20], // far, but too soon
        [1.9, 30],
      ]),
      [undefined, undefined, undefined],
    );
    const slow = new EtaEstimator({ minSeconds: 2, minPercent: 2 });
    assert.deepEqual(
      feed(slow, [
        [0, 5],
        [3, 6], // long enough, not far enough
      ]),
      [undefined, undefined],
    );
  });

  test("at a steady pace, the percent left at that pace", () => {
    const eta = new EtaEstimator({ minSeconds: 2, minPercent: 2 });
    // 10 % a second from 0 %.
    const answers = feed(
      eta,
      Array.from({ length: 9 }, (_, i) => [i, i * 10] as [number, number]),
    );
    assert.deepEqual(answers.slice(0, 2), [undefined, undefined]);
    assert.deepEqual(answers.slice(2), [8, 7, 6, 5, 4, 3, 2]);
  });

  test("smoothed: a sudden burst moves the estimate only part of the way", () => {
    const eta = new EtaEstimator({ minSeconds: 2, minPercent: 2, halfLifeSeconds: 5 });
    feed(eta, [
      [0, 0],
      [2, 2],
      [4, 4],
    ]);
    // 1 %/s so far; then one second at 20 %/s.
    const after = eta.update(24, 5000)!;
    const atNewPace = Math.ceil(76 / 20);
    const atOldPace = 76;
    assert.ok(after > atNewPace && after < atOldPace, `estimate ${after}`);
    // Kept up, the new pace takes over.
    let latest = after;
    for (let s = 6, p = 44; p < 100; s++, p += 20) latest = eta.update(p, s * 1000)!;
    assert.ok(latest <= 2, `estimate ${latest}`);
  });

  test("never negative, and 0 at the end", () => {
    const eta = new EtaEstimator({ minSeconds: 1, minPercent: 1 });
    const answers = feed(eta, [
      [0, 0],
      [1, 50],
      [1.5, 99.9],
      [2, 100],
    ]);
    for (const answer of answers) assert.ok(answer === undefined || answer >= 0, String(answer));
    assert.equal(answers.at(-1), 0);
    assert.equal(eta.update(100, 2500), 0, "and stays 0");
  });

  test("a report that goes back, or comes from before the last, changes nothing", () => {
    const eta = new EtaEstimator({ minSeconds: 1, minPercent: 1 });
    feed(eta, [
      [0, 0],
      [2, 20],
    ]);
    const before = eta.update(30, 3000);
    assert.equal(eta.update(10, 4000), before);
    assert.equal(eta.update(40, 1000), before);
    assert.equal(eta.update(Number.NaN, 5000), before);
  });

  test("a job that does not move gives no estimate", () => {
    const eta = new EtaEstimator({ minSeconds: 1, minPercent: 1 });
    assert.deepEqual(
      feed(eta, [
        [0, 5],
        [5, 5],
        [10, 5],
      ]),
      [undefined, undefined, undefined],
    );
  });
});

describe("describeTimeLeft", () => {
  const cases: Array<[number, string]> = [
    [0, "almost done"],
    [-3, "almost done"],
    [0.4, "about 1 s left"],
    [7, "about 7 s left"],
    [12, "about 10 s left"],
    [41, "about 40 s left"],
    [58, "about 55 s left"],
    [61, "about 1 min left"],
    [150, "about 3 min left"],
    [3600, "about 1 h left"],
    [3900, "about 1 h 5 min left"],
  ];
  for (const [seconds, words] of cases) {
    test(`${seconds} s: ${words}`, () => assert.equal(describeTimeLeft(seconds), words));
  }
});
