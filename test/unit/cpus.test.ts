// The CPUs ffmpeg's threads follow: a cgroup v2 quota (`cpu.max`) read as Kubernetes writes it.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { cpusFrom, parseCpuMax } from "../../runner/cpus.js";

describe("the CPUs a runner may use", () => {
  test("cpu.max: a quota over its period, rounded down, at least 1; none for max", () => {
    assert.equal(parseCpuMax("200000 100000\n"), 2);
    assert.equal(parseCpuMax("150000 100000"), 1);
    assert.equal(parseCpuMax("50000 100000"), 1);
    assert.equal(parseCpuMax("400000 100000"), 4);
    assert.equal(parseCpuMax("max 100000\n"), undefined);
    assert.equal(parseCpuMax(""), undefined);
    assert.equal(parseCpuMax("garbage"), undefined);
    assert.equal(parseCpuMax("0 100000"), undefined);
  });

  test("the quota within the CPUs the process may run on; without one, those CPUs", () => {
    assert.equal(cpusFrom("200000 100000", 64), 2);
    assert.equal(cpusFrom("800000 100000", 2), 2);
    assert.equal(cpusFrom("max 100000", 8), 8);
    assert.equal(cpusFrom(undefined, 8), 8);
    assert.equal(cpusFrom(undefined, 0), 1);
  });
});
