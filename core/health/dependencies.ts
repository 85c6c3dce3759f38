import { freemem } from "node:os";
import { statfs } from "node:fs/promises";

export interface DependencyStatus {
  status: "healthy" | "unhealthy" | "not_configured";
  latency_ms: number;
  last_check: string;
  error?: string;
}

export interface DependencyCheck {
  name: string;
  /** A critical dependency down makes the service unhealthy and not ready; others only degrade it. */
  critical: boolean;
  /** False: an optional dependency that is not set up; reported as not_configured, never probed. */
  configured?: boolean;
  probe(signal: AbortSignal): Promise<void>;
}

export interface HealthReport {
  status: "healthy" | "degraded" | "unhealthy";
  timestamp: string;
  dependencies: Record<string, DependencyStatus>;
}

/**
 * Probes dependencies with a time limit. Probes that overlap share one run, so a burst of
 * readiness requests costs one round trip per dependency.
 */
export class DependencyChecker {
  private inflight: Promise<HealthReport> | undefined;

  constructor(
    private readonly checks: DependencyCheck[],
    private readonly timeoutMs: number,
  ) {}

  check(): Promise<HealthReport> {
    this.inflight ??= this.run().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  private async run(): Promise<HealthReport> {
    const results = await Promise.all(this.checks.map((c) => this.probe(c)));
    const dependencies: Record<string, DependencyStatus> = {};
    let status: HealthReport["status"] = "healthy";
    this.checks.forEach((check, i) => {
      const result = results[i]!;
      dependencies[check.name] = result;
      if (result.status === "unhealthy") {
        if (check.critical) status = "unhealthy";
        else if (status === "healthy") status = "degraded";
      }
    });
    return { status, timestamp: new Date().toISOString(), dependencies };
  }

  private async probe(check: DependencyCheck): Promise<DependencyStatus> {
    if (check.configured === false) {
      return { status: "not_configured", latency_ms: 0, last_check: new Date().toISOString() };
    }
    const started = performance.now();
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    try {
      await Promise.race([
        check.probe(controller.signal),
        new Promise((_, reject) =>
          controller.signal.addEventListener("abort", () =>
            reject(new Error(`no answer within ${this.timeoutMs} ms`)),
          ),
        ),
      ]);
      return { status: "healthy", latency_ms: elapsed(started), last_check: new Date().toISOString() };
    } catch (err) {
      return {
        status: "unhealthy",
        latency_ms: elapsed(started),
        last_check: new Date().toISOString(),
        error: describe(err),
      };
    } finally {
      clearTimeout(timer);
    }
  }
}

function elapsed(started: number): number {
  return Math.round((performance.now() - started) * 100) / 100;
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: string }).code;
    const message = err.message || err.name;
    return code && !message.includes(code) ? `${code}: ${message}` : message;
  }
  return String(err);
}

export interface SystemReport {
  memory_free_mb: number;
  disk_free_gb: number;
  disk_used_gb: number;
  disk_total_gb: number;
}

const GB = 1024 ** 3;
const round = (n: number) => Math.round(n * 100) / 100;

/** Memory and the disk holding `path` (the data/scratch directory). */
export async function systemReport(path: string): Promise<SystemReport> {
  let disk = { free: 0, total: 0 };
  try {
    const s = await statfs(path);
    disk = { free: s.bavail * s.bsize, total: s.blocks * s.bsize };
  } catch {
    // The directory may not exist yet (nothing stored): report the working directory's disk.
    const s = await statfs(".");
    disk = { free: s.bavail * s.bsize, total: s.blocks * s.bsize };
  }
  return {
    memory_free_mb: round(freemem() / 1024 ** 2),
    disk_free_gb: round(disk.free / GB),
    disk_used_gb: round((disk.total - disk.free) / GB),
    disk_total_gb: round(disk.total / GB),
  };
}
