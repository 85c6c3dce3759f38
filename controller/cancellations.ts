import type { Redis } from "ioredis";
import type { Logger } from "../core/logger.js";
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
  const loop = (async () => {
    const stream = store.keys.events();
    let last = "$";
    while (!stopping) {
      let reply: Array<[string, Array<[string, string[]]>]> | null;
      try {
        reply = (await connection.xread(
          "COUNT",
          200,
          "BLOCK",
          2000,
          "STREAMS",
          stream,
          last,
        )) as typeof reply;
      } catch (err) {
        if (stopping) return;
        logger.warn({ err: (err as Error).message }, "reading the events stream failed; retrying");
        await new Promise((r) => setTimeout(r, RETRY_MS));
        continue;
      }
      for (const [, entries] of reply ?? []) {
        for (const [entryId, fields] of entries) {
          last = entryId;
          const jobId = fieldOf(fields, "job_id");
          if (!jobId || fieldOf(fields, "event") !== "job.cancelled") continue;
          await cancel(jobId).catch((err: Error) =>
            logger.warn({ job_id: jobId, err: err.message }, "stopping a cancelled job failed"),
          );
        }
      }
    }
  })();
  return async () => {
    stopping = true;
    connection.disconnect();
    await loop;
  };
}

function fieldOf(fields: string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}
