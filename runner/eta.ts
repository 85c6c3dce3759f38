// How long a job has left, from its own rate of progress: the percent it reports over time. Pure:
// the caller says when each report came.
//
// No estimate until the job has run `minSeconds` and moved `minPercent` since its first report
// (before that, a rate says little: the first reports of a job are a download, a probe). The rate
// starts as the average since that first report, then follows the job's recent pace, smoothed
// exponentially with a half-life of `halfLifeSeconds` (so a burst or a pause moves it, but not at
// once). The estimate is the percent left at that rate, in whole seconds, never negative; 0 once
// the job reports 100 %.

export interface EtaOptions {
  /** Seconds since the first report before any estimate. */
  minSeconds: number;
  /** Percent moved since the first report before any estimate. */
  minPercent: number;
  /** How fast the rate follows the recent pace: a sample this old counts half. */
  halfLifeSeconds: number;
}

export const ETA_DEFAULTS: EtaOptions = { minSeconds: 2, minPercent: 2, halfLifeSeconds: 5 };

interface Sample {
  at: number;
  percent: number;
}

export class EtaEstimator {
  private first: Sample | undefined;
  private last: Sample | undefined;
  /** Percent per second, once there is enough to say. */
  private rate: number | undefined;
  private readonly options: EtaOptions;

  constructor(options: Partial<EtaOptions> = {}) {
    this.options = { ...ETA_DEFAULTS, ...options };
  }

  /**
   * Takes a report (percent 0-100 at `atMs`, a millisecond clock) and answers the seconds left, or
   * undefined while there is not enough to say. A report that goes back, or comes before the last
   * one, changes nothing.
   */
  update(percent: number, atMs: number): number | undefined {
    if (!Number.isFinite(percent) || !Number.isFinite(atMs)) return this.estimate();
    const p = Math.min(100, Math.max(0, percent));
    if (p >= 100) {
      this.last = { at: atMs, percent: 100 };
      return 0;
    }
    if (!this.first || !this.last) {
      this.first = this.last = { at: atMs, percent: p };
      return undefined;
    }
    if (p < this.last.percent || atMs < this.last.at) return this.estimate();
    const seconds = (atMs - this.last.at) / 1000;
    const { minSeconds, minPercent, halfLifeSeconds } = this.options;
    if (this.rate === undefined) {
      const sinceFirst = (atMs - this.first.at) / 1000;
      const moved = p - this.first.percent;
      this.last = { at: atMs, percent: p };
      if (sinceFirst <= 0 || sinceFirst < minSeconds || moved < minPercent) return undefined;
      this.rate = moved / sinceFirst;
    } else if (seconds > 0) {
      const pace = (p - this.last.percent) / seconds;
      const weight = 1 - Math.pow(2, -seconds / halfLifeSeconds);
      this.rate += weight * (pace - this.rate);
      this.last = { at: atMs, percent: p };
    } else {
      // Two reports at the same moment: the later percent counts from then on.
      this.last = { at: atMs, percent: p };
    }
    return this.estimate();
  }

  private estimate(): number | undefined {
    if (!this.last) return undefined;
    if (this.last.percent >= 100) return 0;
    if (this.rate === undefined || !(this.rate > 0)) return undefined;
    return Math.max(0, Math.ceil((100 - this.last.percent) / this.rate));
  }
}
