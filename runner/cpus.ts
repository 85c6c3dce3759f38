// How many CPUs this process may use: the cgroup v2 CPU quota (`cpu.max`, what a Kubernetes CPU
// limit becomes), else the CPUs the process may run on (os.availableParallelism). ffmpeg's encoders
// start a thread per core of the machine, whatever the container may use: on a 64-core node with a
// 2-CPU limit they are throttled and wait, so every ffmpeg the runner starts gets `-threads` of this.
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";

/** Where the cgroup v2 controller files of the process's own cgroup are (inside a container). */
const CPU_MAX = "/sys/fs/cgroup/cpu.max";

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

let cached: number | undefined;

/** This process's CPUs (read once): what ffmpeg's `-threads` is set to. */
export function availableCpus(): number {
  if (cached === undefined) {
    let cpuMax: string | undefined;
    try {
      cpuMax = readFileSync(CPU_MAX, "utf8");
    } catch {
      // No cgroup v2 here (cgroup v1, macOS): the CPUs the process may run on.
    }
    cached = cpusFrom(cpuMax, availableParallelism());
  }
  return cached;
}
