// In-process locks keyed by name. The embedded store is the only writer of its data directory, so
// these are enough to make multi-file updates (object metadata + blob, part metadata + part data)
// appear atomic to concurrent requests. Lock entries are dropped as soon as nobody holds or waits
// for them, so the maps stay as small as the set of keys currently being written.

/** FIFO mutex per key. */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const current = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => current);
    this.tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}

interface RWState {
  readers: number;
  writer: boolean;
  queue: Array<{ exclusive: boolean; grant: () => void }>;
}

/** Readers-writer lock per key, FIFO so a waiting writer is not starved by a stream of readers. */
export class KeyedRWLock {
  private readonly states = new Map<string, RWState>();

  shared<T>(key: string, fn: () => Promise<T>): Promise<T> {
    return this.run(key, false, fn);
  }

  exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    return this.run(key, true, fn);
  }

  private async run<T>(key: string, exclusive: boolean, fn: () => Promise<T>): Promise<T> {
    await this.acquire(key, exclusive);
    try {
      return await fn();
    } finally {
      this.release(key, exclusive);
    }
  }

  private acquire(key: string, exclusive: boolean): Promise<void> {
    let state = this.states.get(key);
    if (!state) {
      state = { readers: 0, writer: false, queue: [] };
      this.states.set(key, state);
    }
    const free = exclusive ? !state.writer && state.readers === 0 : !state.writer;
    if (state.queue.length === 0 && free) {
      if (exclusive) state.writer = true;
      else state.readers++;
      return Promise.resolve();
    }
    return new Promise((grant) => state.queue.push({ exclusive, grant }));
  }

  private release(key: string, exclusive: boolean): void {
    const state = this.states.get(key);
    if (!state) return;
    if (exclusive) state.writer = false;
    else state.readers--;
    while (state.queue.length > 0) {
      const next = state.queue[0]!;
      if (next.exclusive) {
        if (state.writer || state.readers > 0) break;
        state.queue.shift();
        state.writer = true;
        next.grant();
        break;
      }
      if (state.writer) break;
      state.queue.shift();
      state.readers++;
      next.grant();
    }
    if (!state.writer && state.readers === 0 && state.queue.length === 0) this.states.delete(key);
  }
}
