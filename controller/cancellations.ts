import type { Redis } from "ioredis";
import type { Logger } from "../core/logger.js";
import { decodeStreamReply, type StreamReply } from "../core/store/events.js";
import { blockingConnection, type JobStore } from "../core/store/store.js";

const RETRY_MS = 1000;

/**
 * Follows the store's events stream from now on and calls `cancel` with the id of every job the store
 * cancels (a fail_fast batch stopped by a failure), so that the executor stops its execution. Reads
 * on a connection of its own (blocking XREAD); returns the function that stops it.
 */
export function followCancellations(
  store: JobStore,
  redis: Redis,
  cancel: (jobId: string) => Promise<void>,
  logger: Logger,
): () => Promise<void> {
  const connection = blockingConnection(redis, "media-service-controller-events");
  let stopping = false;
  const inFlight = new Set<Promise<void>>();
  const loop = (async () => {
    const stream = store.keys.events();
    let last = "$";
    while (!stopping) {
      let reply: StreamReply;
      try {
        reply = await connection.xread("COUNT", 200, "BLOCK", 2000, "STREAMS", stream, last);
      } catch (err) {
        if (stopping) return;
        logger.warn({ err: (err as Error).message }, "reading the events stream failed; retrying");
        await new Promise((r) => setTimeout(r, RETRY_MS));
        continue;
      }
      const { events, lastId } = decodeStreamReply(reply);
      if (lastId) last = lastId;
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
    }
  })();
  return async () => {
    stopping = true;
    connection.disconnect();
    await loop;
    await Promise.all([...inFlight]);
  };
}
