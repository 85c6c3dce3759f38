/**
 * Turns a processor's frequent progress calls into few store writes: a report when the percent
 * has moved by at least `step` or `intervalMs` has passed, never backwards, never twice the same.
 */
export class ProgressReporter {
  private last = -1;
  private lastAt = 0;
  private pending: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly send: (percent: number, message: string) => Promise<unknown>,
    private readonly step = 1,
    private readonly intervalMs = 500,
  ) {}

  report(percent: number, message = ""): void {
    if (!Number.isFinite(percent)) return;
    const value = Math.round(Math.min(100, Math.max(0, percent)) * 10) / 10;
    const now = Date.now();
    if (value <= this.last) return;
    if (value - this.last < this.step && now - this.lastAt < this.intervalMs) return;
    this.last = value;
    this.lastAt = now;
    // Reports go out in order; a failed report is not worth failing the job for.
    this.pending = this.pending.then(() => this.send(value, message)).catch(() => undefined);
  }

  /** Waits for the reports already sent. */
  flush(): Promise<unknown> {
    return this.pending;
  }
}
