// The runner's progress reporter: throttled reports, and nothing written during its quiet start.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { EtaEstimator } from "../../runner/eta.js";
import { ProgressReporter } from "../../runner/progress.js";

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

function recorder(quietMs: number) {
  const sent: Array<[number, string]> = [];
  const reporter = new ProgressReporter(
    async (percent, message) => void sent.push([percent, message]),
    1,
    500,
    quietMs,
  );
  return { sent, reporter };
}

describe("ProgressReporter", () => {
  test("without a quiet start, reports go out at once, never backwards", async () => {
    const { sent, reporter } = recorder(0);
    reporter.report(10, "a");
    reporter.report(5, "back");
    reporter.report(10.04, "same");
    reporter.report(30, "b");
    await reporter.flush();
    assert.deepEqual(sent, [
      [10, "a"],
      [30, "b"],
    ]);
  });

  test("during the quiet start nothing is sent; the latest report goes out when it ends", async () => {
    const { sent, reporter } = recorder(40);
    reporter.report(10, "a");
    reporter.report(50, "b");
    reporter.report(20, "c");
    await reporter.flush();
    assert.deepEqual(sent, []);
    await tick(120);
    await reporter.flush();
    assert.deepEqual(sent, [[50, "b"]]);
    reporter.report(80, "d");
    await reporter.close();
    assert.deepEqual(sent, [
      [50, "b"],
      [80, "d"],
    ]);
  });

  test("closed during the quiet start (a short job), it never sends", async () => {
    const { sent, reporter } = recorder(40);
    reporter.report(10, "a");
    reporter.report(90, "b");
    await reporter.close();
    await tick(120);
    reporter.report(95, "late");
    await reporter.flush();
    assert.deepEqual(sent, []);
  });

  test("each report carries the estimate of the seconds left, once there is one; 0 at 100 %", async () => {
    const sent: Array<[number, number | undefined]> = [];
    const reporter = new ProgressReporter(
      async (percent, _message, eta) => void sent.push([percent, eta]),
      1,
      0,
      0,
      new EtaEstimator({ minSeconds: 0.02, minPercent: 1 }),
    );
    reporter.report(10);
    await tick(40);
    reporter.report(20);
    await tick(40);
    reporter.report(100);
    await reporter.close();
    assert.equal(sent.length, 3);
    assert.deepEqual(sent[0], [10, undefined], "nothing to say from one report");
    assert.ok(sent[1]![1] !== undefined && sent[1]![1] >= 0, `an estimate: ${String(sent[1]![1])}`);
    assert.deepEqual(sent[2], [100, 0]);
  });
});

describe("ProgressReporter: a pipeline's steps", () => {
  test("each write carries the latest per-step percents reported, kept until new ones come", async () => {
    const sent: Array<[number, Record<string, number> | undefined]> = [];
    const reporter = new ProgressReporter(
      async (percent, _message, _eta, steps) => void sent.push([percent, steps]),
    );
    reporter.report(10, "", { a: 20, b: 0 });
    reporter.report(20, "");
    reporter.report(30, "", { a: 100, b: 20 });
    await reporter.flush();
    assert.deepEqual(sent, [
      [10, { a: 20, b: 0 }],
      [20, { a: 20, b: 0 }],
      [30, { a: 100, b: 20 }],
    ]);
  });
});
