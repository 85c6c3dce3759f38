// How many CPUs this process may use: its cgroup's CPU quota (what a Kubernetes CPU limit becomes:
// cgroup v2's `cpu.max`, or cgroup v1's `cpu.cfs_quota_us` over `cpu.cfs_period_us` on nodes that
// still run v1), else the CPUs the process may run on (os.availableParallelism). ffmpeg's encoders
// start a thread per core of the machine, whatever the container may use: on a 64-core node with a
// 2-CPU limit they are throttled and wait, so every ffmpeg the runner starts gets `-threads` of this.
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";

/** Where a container sees its own cgroup's controller files. */
const CGROUP_ROOT = "/sys/fs/cgroup";

/**
 * CPUs a cgroup v2 `cpu.max` allows ("<quota> <period>" in microseconds, or "max <period>": no
 * quota), rounded down to whole CPUs and at least 1; undefined when it sets no quota or cannot be read.
 */
export function parseCpuMax(text: string): number | undefined {
  const m = /^\s*(max|\d+)\s+(\d+)\s*$/.exec(text);
  if (!m || m[1] === "max") return undefined;
  const quota = Number(m[1]);
  const period = Number(m[2]);
  if (!(quota > 0) || !(period > 0)) return undefined;
  return Math.max(1, Math.floor(quota / period));
}

/** The CPUs a process may use: the quota when there is one, within the CPUs it may run on. */
export function cpusFrom(cpuMax: string | undefined, parallelism: number): number {
  const cores = Math.max(1, Math.floor(parallelism));
  const quota = cpuMax === undefined ? undefined : parseCpuMax(cpuMax);
  return quota === undefined ? cores : Math.min(quota, cores);
}

const readTrimmed = (path: string): string | undefined => {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return undefined;
  }
};

/**
 * The process's CPU quota as cgroup v2's `cpu.max` says it ("200000 100000", "max 100000"), read
 * from `<root>/cpu.max`, else from cgroup v1's `<root>/cpu/cpu.cfs_quota_us` and `cpu.cfs_period_us`
 * (a quota of -1 is none: "max"); undefined when neither can be read (macOS, no cgroup mounted).
 */
export function readCpuMax(root = CGROUP_ROOT): string | undefined {
  const v2 = readTrimmed(join(root, "cpu.max"));
  if (v2 !== undefined) return v2;
  const quota = readTrimmed(join(root, "cpu", "cpu.cfs_quota_us"));
  const period = readTrimmed(join(root, "cpu", "cpu.cfs_period_us"));
  if (quota === undefined || period === undefined) return undefined;
  return `${quota === "-1" ? "max" : quota} ${period}`;
}

/** What the process's CPUs were found from: what the runner logs when it starts ffmpeg. */
export interface CpuLimit {
  /** The CPUs it may use: ffmpeg's `-threads`. */
  cpus: number;
  /** Its cgroup's quota in `cpu.max`'s form, when one could be read. */
  quota?: string;
  /** The CPUs it may run on (os.availableParallelism). */
  cores: number;
}

let cached: CpuLimit | undefined;

/** This process's CPUs and where they come from (read once). */
export function cpuLimit(): CpuLimit {
  if (cached === undefined) {
    const quota = readCpuMax();
    const cores = availableParallelism();
    cached = { cpus: cpusFrom(quota, cores), ...(quota !== undefined ? { quota } : {}), cores };
  }
  return cached;
}

/** This process's CPUs (read once): what ffmpeg's `-threads` is set to. */
export function availableCpus(): number {
  return cpuLimit().cpus;
}
