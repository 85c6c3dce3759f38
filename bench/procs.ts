// What the bench servers read of their child processes from /proc: the runner processes among
// them, a process's memory figures, and the CPU time of this process and every process below it.
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";

/** Linux's USER_HZ: the unit of the times in /proc/<pid>/stat (100 on every Linux this runs on). */
const CLOCK_TICKS = 100;

/** A status line of /proc/<pid>/status in kB (0 when the process or the line is gone). */
export async function procKb(pid: number, field: string): Promise<number> {
  const text = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? 0);
}

/** The children of a process (none once it is gone, or without /proc). */
export async function childPids(pid: number = process.pid): Promise<number[]> {
  const text = await readFile(`/proc/${pid}/task/${pid}/children`, "utf8").catch(() => "");
  return text.trim().split(/\s+/).filter(Boolean).map(Number);
}

/** This process's own children running `runner --serve` (none without /proc). */
export async function runnerPids(): Promise<number[]> {
  const runners: number[] = [];
  for (const pid of await childPids()) {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
    if (cmdline.replaceAll("\0", " ").includes("runner --serve")) runners.push(pid);
  }
  return runners;
}

/**
 * CPU seconds of a process from /proc/<pid>/stat: its own (utime + stime) and that of its children
 * it has waited for (cutime + cstime), which hold their own waited-for children in turn. Undefined
 * once the process is gone.
 */
export async function processCpu(pid: number): Promise<{ own: number; children: number } | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
  if (stat === undefined) return undefined;
  // After the command's name (in parentheses, which may hold spaces): state is field 3; utime,
  // stime, cutime and cstime are fields 14 to 17.
  const fields = stat
    .slice(stat.lastIndexOf(")") + 2)
    .split(" ")
    .map(Number);
  return {
    own: (fields[11]! + fields[12]!) / CLOCK_TICKS,
    children: (fields[13]! + fields[14]!) / CLOCK_TICKS,
  };
}

/** CPU seconds of this process and of its children, at one moment (see cpuSince). */
export interface CpuSnapshot {
  /** This process's own, and its ended children's (the kernel adds a child's total when it is waited for). */
  own: number;
  reaped: number;
  /** Each living child's own and its ended children's, by pid. */
  children: Map<number, number>;
  /** Each living child's own alone (a runner's Node process without its ffmpeg), by pid. */
  childrenOwn: Map<number, number>;
}

export async function cpuSnapshot(): Promise<CpuSnapshot> {
  const self = await processCpu(process.pid);
  const children = new Map<number, number>();
  const childrenOwn = new Map<number, number>();
  for (const pid of await childPids()) {
    const cpu = await processCpu(pid);
    if (cpu) children.set(pid, cpu.own + cpu.children);
    if (cpu) childrenOwn.set(pid, cpu.own);
  }
  return { own: self?.own ?? 0, reaped: self?.children ?? 0, children, childrenOwn };
}

/**
 * The CPU seconds spent between two snapshots by this process (`own`), and by its children and all
 * their descendants that have ended (`children`), and of those by the children `apart` picks (by
 * pid; long-lived ones such as redis-server, which must not end in between). A child's time counts
 * whole, from the start snapshot or its birth up to the end snapshot or, if it ended and was waited
 * for, its end (what it adds to `reaped`). A descendant still running at the end (a grandchild not
 * yet waited for) is not counted: the caller takes the end snapshot once its work is done.
 * `childrenOwn`: of `children`, what the living children not `apart` spent themselves, without their
 * own children (the runners' Node processes without their ffmpeg and ffprobe).
 */
export function cpuSince(
  start: CpuSnapshot,
  end: CpuSnapshot,
  apart: (pid: number) => boolean = () => false,
): { own: number; children: number; apart: number; childrenOwn: number } {
  let children = end.reaped - start.reaped;
  let picked = 0;
  let childrenOwn = 0;
  for (const [pid, total] of end.children) {
    const spent = total - (start.children.get(pid) ?? 0);
    children += spent;
    if (apart(pid)) picked += spent;
    else childrenOwn += end.childrenOwn.get(pid)! - (start.childrenOwn.get(pid) ?? 0);
  }
  // Children alive at the start and gone at the end: their whole time is in `reaped`; what they had
  // spent before the start is not the round's.
  for (const [pid, total] of start.children) {
    if (end.children.has(pid)) continue;
    if (apart(pid)) throw new Error(`process ${pid}, counted apart, ended during the measurement`);
    children -= total;
  }
  return { own: end.own - start.own, children, apart: picked, childrenOwn };
}

/** The machine's busy CPU seconds so far: /proc/stat's first line, all but idle and iowait. */
export function machineCpuSeconds(): number {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is inside user already)
  const [user, nice, system, , , irq, softirq, steal] = fields as [number, ...number[]];
  return (user + nice! + system! + irq! + softirq! + steal!) / CLOCK_TICKS;
}
