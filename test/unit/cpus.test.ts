// The CPUs ffmpeg's threads follow: a cgroup quota (v2's `cpu.max`, v1's CFS quota and period) read
// as Kubernetes writes it.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { cpusFrom, parseCpuMax, readCpuMax } from "../../runner/cpus.js";

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

  test("the quota is read from cgroup v2's cpu.max, else from cgroup v1's CFS quota and period", (t) => {
    const root = mkdtempSync(join(tmpdir(), "cpus-"));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    assert.equal(readCpuMax(root), undefined, "no cgroup files: no quota");
    mkdirSync(join(root, "cpu"));
    writeFileSync(join(root, "cpu", "cpu.cfs_quota_us"), "150000\n");
    writeFileSync(join(root, "cpu", "cpu.cfs_period_us"), "100000\n");
    assert.equal(readCpuMax(root), "150000 100000", "cgroup v1 (a Kubernetes limit of 1500m)");
    assert.equal(cpusFrom(readCpuMax(root), 8), 1);
    writeFileSync(join(root, "cpu", "cpu.cfs_quota_us"), "-1\n");
    assert.equal(readCpuMax(root), "max 100000", "cgroup v1 without a quota");
    assert.equal(cpusFrom(readCpuMax(root), 8), 8);
    writeFileSync(join(root, "cpu.max"), "200000 100000\n");
    assert.equal(readCpuMax(root), "200000 100000", "cgroup v2 first");
  });
});
