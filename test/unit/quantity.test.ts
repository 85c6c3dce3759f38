import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseQuantity, QuantityError } from "../../core/quantity.js";

describe("Kubernetes quantities", () => {
  test("the examples of the Kubernetes documentation", () => {
    // https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/
    assert.equal(parseQuantity("100m"), 0.1);
    assert.equal(parseQuantity("0.5"), 0.5);
    assert.equal(parseQuantity("1"), 1);
    // 128974848, 129e6, 129M, 123Mi: "roughly the same value".
    assert.equal(parseQuantity("128974848"), 128_974_848);
    assert.equal(parseQuantity("129e6"), 129_000_000);
    assert.equal(parseQuantity("129M"), 129_000_000);
    assert.equal(parseQuantity("123Mi"), 123 * 1024 ** 2);
    assert.equal(parseQuantity("123Mi"), 128_974_848);
    assert.equal(parseQuantity("1.5Gi"), 1_610_612_736);
  });

  test("every decimal suffix", () => {
    const cases: Array<[string, number]> = [
      ["5n", 5e-9],
      ["5u", 5e-6],
      ["5m", 5e-3],
      ["5", 5],
      ["5k", 5e3],
      ["5M", 5e6],
      ["5G", 5e9],
      ["5T", 5e12],
      ["5P", 5e15],
      ["5E", 5e18],
    ];
    for (const [text, value] of cases) assert.equal(parseQuantity(text), value, text);
  });

  test("every binary suffix", () => {
    const cases: Array<[string, number]> = [
      ["3Ki", 3 * 2 ** 10],
      ["3Mi", 3 * 2 ** 20],
      ["3Gi", 3 * 2 ** 30],
      ["3Ti", 3 * 2 ** 40],
      ["3Pi", 3 * 2 ** 50],
      ["3Ei", 3 * 2 ** 60],
    ];
    for (const [text, value] of cases) assert.equal(parseQuantity(text), value, text);
  });

  test("decimal exponents, signs and the number forms Kubernetes accepts", () => {
    const cases: Array<[string, number]> = [
      ["1e3", 1000],
      ["1E3", 1000],
      ["1e+3", 1000],
      ["15e-1", 1.5],
      ["2.5e2", 250],
      ["0", 0],
      ["0Mi", 0],
      ["0.0", 0],
      ["007", 7],
      [".5", 0.5],
      ["5.", 5],
      ["1.G", 1e9],
      ["+2", 2],
      ["-2", -2],
      ["-100m", -0.1],
      ["4000m", 4],
      ["8192Mi", 8 * 2 ** 30],
      ["0.1", 0.1],
      ["1.1", 1.1],
    ];
    for (const [text, value] of cases) assert.equal(parseQuantity(text), value, text);
  });

  test("equal amounts in different forms compare equal", () => {
    assert.equal(parseQuantity("4000m"), parseQuantity("4"));
    assert.equal(parseQuantity("8192Mi"), parseQuantity("8Gi"));
    assert.equal(parseQuantity("8589934592"), parseQuantity("8Gi"));
    assert.equal(parseQuantity("1000k"), parseQuantity("1M"));
    assert.equal(parseQuantity("1e9"), parseQuantity("1G"));
    assert.ok(parseQuantity("1G") < parseQuantity("1Gi"));
    assert.ok(parseQuantity("8193Mi") > parseQuantity("8Gi"));
    assert.ok(parseQuantity("4001m") > parseQuantity("4"));
  });

  test("what Kubernetes refuses is refused", () => {
    for (const bad of [
      "",
      " 1",
      "1 ",
      "K",
      "Mi",
      "e3",
      ".",
      "+",
      "1K",
      "1k8",
      "1KB",
      "1mi",
      "1ki",
      "1Gb",
      "1e",
      "1e1.5",
      "1e+",
      "1.2.3",
      "1,5",
      "0x10",
      "1_000",
      "--1",
      "ten",
    ]) {
      assert.throws(() => parseQuantity(bad), QuantityError, JSON.stringify(bad));
    }
  });

  test("the message names the value and the suffix", () => {
    assert.throws(() => parseQuantity("16GB"), {
      name: "QuantityError",
      message: /"16GB" is not a Kubernetes quantity: unknown suffix "GB"/,
    });
    assert.throws(() => parseQuantity("lots"), { message: /"lots" is not a Kubernetes quantity/ });
  });

  test("a quantity beyond a double is refused rather than made infinite", () => {
    assert.throws(() => parseQuantity("1e400"), /too large/);
    assert.equal(parseQuantity("1e-400"), 0);
  });
});
