import type { Redis } from "ioredis";
import type { Logger } from "../core/logger.js";
import { followEvents } from "../core/store/event-follower.js";
import type { JobStore } from "../core/store/store.js";

/**
 * Follows the store's events stream from now on and calls `cancel` with the id of every job the store
 * cancels (by request, or a fail_fast batch stopped by a failure), so that the executor stops its
 * execution. Returns the function that stops it.
 */
export function followCancellations(
  store: JobStore,
  redis: Redis,
  cancel: (jobId: string) => Promise<void>,
  logger: Logger,
): () => Promise<void> {
  const inFlight = new Set<Promise<void>>();
  const stopFollowing = followEvents(
    store,
    redis,
    { from: "$", name: "media-service-controller-events", logger },
    (events) => {
      // Each execution is stopped at once, not one after another: a cancelled batch's jobs all stop
      // within one grace period.
      for (const event of events) {
        if (event.event !== "job.cancelled") continue;
        const stopped = cancel(event.job_id)
          .catch((err: Error) =>
            logger.warn({ job_id: event.job_id, err: err.message }, "stopping a cancelled job failed"),
          )
          .finally(() => inFlight.delete(stopped));
        inFlight.add(stopped);
      }
    },
  );
  return async () => {
    await stopFollowing();
    await Promise.all([...inFlight]);
  };
}
