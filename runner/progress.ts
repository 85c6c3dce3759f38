import { EtaEstimator } from "./eta.js";

/**
 * Turns a processor's frequent progress calls into few store writes: a report when the percent
 * has moved by at least `step` or `intervalMs` has passed, never backwards, never twice the same.
 *
 * Nothing is sent during the first `quietMs`: a job that ends by then (most image jobs) costs no
 * progress write at all, its completion says 100 %. Past it, the latest report held back goes out.
 *
 * Every report also goes to `eta` (the job's own rate of progress); each write carries its estimate
 * of the seconds left, when it has one, and the latest per-step percents reported (a pipeline's).
 */
export class ProgressReporter {
  private last = -1;
  private lastAt = 0;
  private pending: Promise<unknown> = Promise.resolve();
  private readonly quietUntil: number;
  private held: { percent: number; message: string; eta: number | undefined } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private quietOver = false;
  private steps: Record<string, number> | undefined;

  constructor(
    private readonly send: (
      percent: number,
      message: string,
      etaSeconds?: number,
      steps?: Record<string, number>,
    ) => Promise<unknown>,
    private readonly step = 1,
    private readonly intervalMs = 500,
    quietMs = 0,
    private readonly eta = new EtaEstimator(),
  ) {
    this.quietUntil = Date.now() + quietMs;
  }

  report(percent: number, message = "", steps?: Record<string, number>): void {
    if (this.closed || !Number.isFinite(percent)) return;
    if (steps) this.steps = { ...steps };
    const value = Math.round(Math.min(100, Math.max(0, percent)) * 10) / 10;
    const now = Date.now();
    const eta = this.eta.update(percent, now);
    this.write(value, message, eta, now);
  }

  private write(value: number, message: string, eta: number | undefined, now: number): void {
    if (value <= this.last) return;
    if (!this.quietOver && now < this.quietUntil) {
      if (value > (this.held?.percent ?? -1)) this.held = { percent: value, message, eta };
      this.timer ??= setTimeout(() => {
        this.quietOver = true;
        const held = this.held;
        this.held = undefined;
        if (held && !this.closed) this.write(held.percent, held.message, held.eta, Date.now());
      }, this.quietUntil - now);
      return;
    }
    if (value - this.last < this.step && now - this.lastAt < this.intervalMs) return;
    this.last = value;
    this.lastAt = now;
    // Reports go out in order; a failed report is not worth failing the job for.
    const steps = this.steps;
    this.pending = this.pending.then(() => this.send(value, message, eta, steps)).catch(() => undefined);
  }

  /** Waits for the reports already sent. */
  flush(): Promise<unknown> {
    return this.pending;
  }

  /** Sends nothing more (a report still held back is dropped) and waits for those already sent. */
  close(): Promise<unknown> {
    this.closed = true;
    clearTimeout(this.timer);
    this.held = undefined;
    return this.pending;
  }
}
