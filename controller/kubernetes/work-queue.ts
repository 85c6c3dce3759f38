// The names waiting to be synced: each at most once however often it is added (the sync looks at the
// state, not at what changed), `concurrency` synced at a time, one drain at a time.

export class WorkQueue {
  private readonly dirty = new Set<string>();
  private draining: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly sync: (name: string) => Promise<void>,
    private readonly concurrency: number,
  ) {}

  /** Marks `name` to be synced, and starts a drain unless one runs. */
  add(name: string): void {
    this.dirty.add(name);
    void this.drained();
  }

  /** Syncs the names marked; resolves when none is left. */
  drained(): Promise<void> {
    this.draining ??= this.drain().finally(() => {
      this.draining = undefined;
      // Marked after the loop's last look, before this ran.
      if (this.dirty.size > 0 && !this.stopped) void this.drained();
    });
    return this.draining;
  }

  /** Syncs nothing more; resolves when the sync in progress has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.draining;
  }

  private async drain(): Promise<void> {
    await Promise.resolve();
    while (this.dirty.size > 0 && !this.stopped) {
      const names = [...this.dirty].slice(0, this.concurrency);
      for (const n of names) this.dirty.delete(n);
      await Promise.all(names.map((n) => this.sync(n)));
    }
  }
}
