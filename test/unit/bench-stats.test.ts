import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatRatio, formatSummary, median, ratio, relativeSpread, summarize } from "../../bench/stats.js";

describe("benchmark statistics", () => {
  test("median of odd and even counts, whatever the order", () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 3, 2]), 2.5);
    assert.equal(median([7]), 7);
    assert.throws(() => median([]), /no values/);
  });

  test("a summary: median, min–max, quartiles, the rounds in their order", () => {
    const s = summarize([30, 10, 50, 20, 40]);
    assert.deepEqual(s, { n: 5, median: 30, min: 10, max: 50, q1: 20, q3: 40, values: [30, 10, 50, 20, 40] });
    // Quartiles interpolate between neighbours.
    const even = summarize([1, 2, 3, 4]);
    assert.equal(even.q1, 1.75);
    assert.equal(even.q3, 3.25);
    assert.throws(() => summarize([]), /at least one round/);
    assert.throws(() => summarize([1, Number.NaN]), /non-finite/);
  });

  test("a ratio is the median of the per-round ratios, not the ratio of the medians or bests", () => {
    // Round by round the API does 0.9, 0.8 and 0.5 of the bare route; the bests (100 against 110)
    // would say 0.91 and the medians (90 against 100) 0.9.
    const api = [90, 80, 100];
    const bare = [100, 100, 200];
    const r = ratio(api, bare);
    assert.equal(r.median, 0.8);
    assert.equal(r.min, 0.5);
    assert.equal(r.max, 0.9);
    assert.deepEqual(r.values, [0.9, 0.8, 0.5]);
    assert.throws(() => ratio([1, 2], [1]), /not paired/);
  });

  test("relative spread", () => {
    assert.equal(relativeSpread(summarize([0.8, 0.9, 1.0])), (1.0 - 0.8) / 0.9);
  });

  test("formatting: median [min–max], a single round without a spread", () => {
    assert.equal(formatSummary(summarize([33.71, 32.1, 34.55]), 1), "33.7 [32.1–34.5]");
    assert.equal(formatSummary(summarize([0.845])), "0.84");
    assert.equal(formatSummary(summarize([0.8456])), "0.85");
  });

  test("a ratio against its target: met, missed, or undecided at this spread", () => {
    assert.equal(
      formatRatio(summarize([0.91, 0.93, 0.95]), { atLeast: 0.9 }),
      "0.93 [0.91–0.95] over 3 rounds (target >= 0.90: met by every round)",
    );
    assert.equal(
      formatRatio(summarize([0.8, 0.84, 0.86]), { atLeast: 0.9 }),
      "0.84 [0.80–0.86] over 3 rounds (target >= 0.90: missed by every round)",
    );
    assert.equal(
      formatRatio(summarize([0.85, 0.92, 0.95]), { atLeast: 0.9 }),
      "0.92 [0.85–0.95] over 3 rounds (target >= 0.90: the spread straddles it)",
    );
    assert.equal(
      formatRatio(summarize([1.5, 2.5]), { atMost: 2 }),
      "2.00 [1.50–2.50] over 2 rounds (target <= 2.00: the spread straddles it)",
    );
    assert.equal(formatRatio(summarize([1.2])), "1.20 over 1 round (information)");
  });
});
