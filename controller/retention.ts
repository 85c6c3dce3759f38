import type { Logger } from "../core/logger.js";
import type { JobStore } from "../core/store/store.js";

/**
 * Deletes finished jobs and batches once their retention has passed (prune.lua), every interval.
 * Safe with several controllers: each prune is one atomic script over what is due.
 */
export function startRetention(store: JobStore, intervalMs: number, logger: Logger): { stop(): void } {
  let running = false;
  const tick = async () => {
    if (running) return;
    running = true;
    try {
      let removed = 0;
      for (let batch = await store.prune(); batch > 0; batch = await store.prune()) removed += batch;
      if (removed > 0) logger.info({ removed }, "pruned finished jobs and batches past retention");
    } catch (err) {
      logger.warn({ err: (err as Error).message }, "pruning finished jobs failed; will retry");
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void tick(), intervalMs);
  timer.unref();
  void tick();
  return { stop: () => clearInterval(timer) };
}
