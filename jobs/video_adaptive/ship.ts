// Ships a ladder's segments while ffmpeg still writes the ladder: each complete segment file is
// uploaded, then removed from the scratch directory, so the scratch disk holds the source and the
// segments in flight rather than the whole ladder (a two-hour 1080p ladder is gigabytes).
//
// ffmpeg's dash muxer writes each segment to `<name>.tmp` and renames it to its name once it is
// complete (its local files are renamed, never rewritten), so a file of the segments' pattern that
// is present is whole. The directory is read every `intervalMs` (a rename is seen at the next read;
// a read is a readdir of a few files).
import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";

export interface ShipOptions {
  dir: string;
  /** The names of the files to ship as they appear (complete files only: see above). */
  pattern: RegExp;
  /** Uploads one file of the directory (by name); the shipper removes it once this resolves. */
  ship: (name: string) => Promise<void>;
  /** Files uploaded at once. */
  concurrency: number;
  intervalMs: number;
  /** Told of the first failure to ship (the shipper then ships nothing more). */
  onError: (err: unknown) => void;
}

export interface Shipper {
  /** Names shipped or being shipped, in the order they were taken. */
  readonly taken: readonly string[];
  /** Stops looking for new files and waits for the uploads under way; ships nothing after. */
  stop(): Promise<void>;
}

export function shipAsWritten(options: ShipOptions): Shipper {
  const taken: string[] = [];
  const seen = new Set<string>();
  const queue: string[] = [];
  let stopped = false;
  let failed = false;
  let active = 0;
  const idle: Array<() => void> = [];

  const settleIfIdle = () => {
    if (active === 0) for (const resolve of idle.splice(0)) resolve();
  };

  const pump = () => {
    while (!failed && active < options.concurrency && queue.length > 0) {
      const name = queue.shift()!;
      active++;
      void options
        .ship(name)
        .then(() => rm(join(options.dir, name), { force: true }))
        .catch((err: unknown) => {
          if (failed) return;
          failed = true;
          queue.length = 0;
          options.onError(err);
        })
        .finally(() => {
          active--;
          pump();
          settleIfIdle();
        });
    }
  };

  const look = async () => {
    if (stopped || failed) return;
    let names: string[];
    try {
      names = await readdir(options.dir);
    } catch {
      return; // not made yet: ffmpeg makes nothing there before its first segment
    }
    if (stopped || failed) return;
    for (const name of names.sort()) {
      if (seen.has(name) || !options.pattern.test(name)) continue;
      seen.add(name);
      taken.push(name);
      queue.push(name);
    }
    pump();
  };

  let looking: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    looking = looking.then(look);
  }, options.intervalMs);

  return {
    taken,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await looking;
      // What was taken but not started is not shipped: the caller ships the rest itself.
      queue.length = 0;
      if (active > 0) await new Promise<void>((resolve) => idle.push(resolve));
    },
  };
}
