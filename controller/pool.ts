// The warm runner pool as a controller's dispatcher sees it: the route it hands poolable jobs along
// (the class decision is core/policy.ts executionClass; a source's size comes from a HEAD). The
// workers on the other side are local executors in pool mode (startPoolWorker in main.ts).
import { HeadObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { Counter, Gauge, type Registry } from "prom-client";
import type { Config } from "../core/config/load.js";
import { JOB_TYPES } from "../core/jobs/types.js";
import type { Logger } from "../core/logger.js";
import { createS3Client } from "../core/storage/s3.js";
import type { JobStore } from "../core/store/store.js";
import type { PoolRoute } from "./dispatcher.js";

/** The claim owners of pool workers begin with this (a pool worker reaps only their leases). */
export const POOL_OWNER_PREFIX = "pool:";

/** Time a HEAD of a source may take before the job is sized as unknown (and gets its own run). */
const HEAD_TIMEOUT_MS = 5000;

/**
 * The dispatcher's route to the pool, when executor.pool.enabled: the pool's settings, a HEAD of the
 * source for `auto`, and `media_jobs_dispatched_total{type,class}` on `registry`.
 */
export function poolRoute(
  config: Config,
  store: JobStore,
  logger: Logger,
  registry?: Registry,
): PoolRoute | undefined {
  const pool = config.executor.pool;
  if (!pool.enabled) return undefined;
  if (registry) {
    new Gauge({
      name: "media_pool_queue_length",
      help: "Jobs waiting in the warm runner pool's queue (what the pool's autoscaler scales on)",
      registers: [registry],
      async collect() {
        this.set(await store.poolLength());
      },
    });
  }
  let s3: S3Client | undefined;
  const dispatched = registry
    ? new Counter({
        name: "media_jobs_dispatched_total",
        help: "Jobs the dispatcher handed on, by job type and execution class (job: the executor's own run; pool: the warm pool)",
        labelNames: ["type", "class"],
        registers: [registry],
      })
    : undefined;
  for (const type of JOB_TYPES) for (const cls of ["job", "pool"]) dispatched?.inc({ type, class: cls }, 0);
  return {
    policy: pool,
    async sourceBytes(job) {
      s3 ??= createS3Client(config.storage);
      try {
        const head = await s3.send(
          new HeadObjectCommand({ Bucket: job.source_bucket, Key: job.source_key }),
          {
            abortSignal: AbortSignal.timeout(HEAD_TIMEOUT_MS),
          },
        );
        return head.ContentLength ?? null;
      } catch (err) {
        logger.info(
          { job_id: job.id, source: `s3://${job.source_bucket}/${job.source_key}`, err: (err as Error).name },
          "the source could not be sized; the job gets its own run",
        );
        return null;
      }
    },
    dispatched: dispatched ? (type, cls) => dispatched.inc({ type, class: cls }) : undefined,
  };
}
