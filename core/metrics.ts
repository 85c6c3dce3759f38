import {
  collectDefaultMetrics,
  Registry,
  type Metric,
  type MetricObjectWithValues,
  type MetricValueWithName,
} from "prom-client";
import { JOB_TYPES } from "./jobs/types.js";

import { JOB_DURATION_BUCKETS } from "./jobs/duration-buckets.js";
import type { JobStore } from "./store/store.js";

export { JOB_DURATION_BUCKETS };

/** What the job metrics are read from: the store's counters, histograms and webhook counts. */
export type JobFigures = Pick<
  JobStore,
  "counters" | "durationHistograms" | "webhookDeliveries" | "idempotencyOutcomes" | "clientLoads"
>;

type Snapshot = {
  counters: Awaited<ReturnType<JobFigures["counters"]>>;
  histograms: Awaited<ReturnType<JobFigures["durationHistograms"]>>;
  webhooks: Record<string, number>;
  idempotency: Record<string, number>;
  clients: Awaited<ReturnType<JobFigures["clientLoads"]>>;
};

/**
 * A registry whose job metrics are read from Redis at scrape time, so every process (API,
 * controller replicas) reports the same cluster-wide figures; plus this process's own metrics.
 */
export function createMetricsRegistry(figures: JobFigures | undefined, prefix = ""): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix });
  if (!figures) return registry;

  let inflight: Promise<Snapshot> | undefined;
  const snapshot = () =>
    (inflight ??= Promise.all([
      figures.counters(),
      figures.durationHistograms(),
      figures.webhookDeliveries(),
      figures.idempotencyOutcomes(),
      figures.clientLoads(),
    ])
      .then(([counters, histograms, webhooks, idempotency, clients]) => ({
        counters,
        histograms,
        webhooks,
        idempotency,
        clients,
      }))
      .finally(() => {
        // Metrics of one scrape share one read; the next scrape reads again.
        setImmediate(() => (inflight = undefined));
      }));

  registry.registerMetric(
    storeMetric("media_jobs_total", "Jobs that reached a status, by type and status", "counter", async () => {
      const { counters } = await snapshot();
      return JOB_TYPES.flatMap((type) => {
        const c = counters[type];
        return [
          { labels: { type, status: "pending" }, value: c.submittedTotal },
          { labels: { type, status: "completed" }, value: c.completedTotal },
          { labels: { type, status: "failed" }, value: c.failedTotal },
        ];
      });
    }),
  );
  registry.registerMetric(
    storeMetric(
      "media_jobs_from_template_total",
      "Jobs submitted with a template (counted in media_jobs_total's pending too), by type",
      "counter",
      async () => {
        const { counters } = await snapshot();
        return JOB_TYPES.map((type) => ({ labels: { type }, value: counters[type].templateTotal }));
      },
    ),
  );
  registry.registerMetric(
    storeMetric(
      "media_jobs_cancelled_total",
      "Jobs cancelled, by request or by their fail_fast batch (counted in media_jobs_total's failed too), by type",
      "counter",
      async () => {
        const { counters } = await snapshot();
        return JOB_TYPES.map((type) => ({ labels: { type }, value: counters[type].cancelledTotal }));
      },
    ),
  );
  registry.registerMetric(
    storeMetric("media_queue_depth", "Jobs waiting in each queue", "gauge", async () => {
      const { counters } = await snapshot();
      return JOB_TYPES.map((type) => ({ labels: { queue: type }, value: counters[type].pending }));
    }),
  );
  registry.registerMetric(
    storeMetric("media_job_duration_seconds", "Processing time of completed jobs", "histogram", async () => {
      const { histograms } = await snapshot();
      return JOB_TYPES.flatMap((type) => {
        const h = histograms[type];
        const name = "media_job_duration_seconds";
        return [
          ...JOB_DURATION_BUCKETS.map((le, i) => ({
            metricName: `${name}_bucket`,
            labels: { type, le },
            value: h.buckets[i]!,
          })),
          { metricName: `${name}_bucket`, labels: { type, le: "+Inf" }, value: h.count },
          { metricName: `${name}_sum`, labels: { type }, value: h.sum },
          { metricName: `${name}_count`, labels: { type }, value: h.count },
        ];
      });
    }),
  );
  registry.registerMetric(
    storeMetric(
      "media_webhook_deliveries_total",
      "Webhook delivery attempts by result: delivered, retry (another attempt follows), failed (given up), refused (target not allowed)",
      "counter",
      async () => {
        const { webhooks } = await snapshot();
        return Object.entries(webhooks).map(([result, value]) => ({ labels: { result }, value }));
      },
    ),
  );
  registry.registerMetric(
    storeMetric(
      "media_idempotent_requests_total",
      "Requests whose Idempotency-Key was not new, by outcome: replayed (the first answer again), in_flight (409: the first request was still running), mismatch (422: the key was used for a different request)",
      "counter",
      async () => {
        const { idempotency } = await snapshot();
        return Object.entries(idempotency).map(([outcome, value]) => ({ labels: { outcome }, value }));
      },
    ),
  );
  registry.registerMetric(
    storeMetric(
      "media_client_jobs",
      'Each client\'s jobs now, by client ("-": without one) and state: pending (waiting in the queues, what max_pending counts), running (claimed or processing, what max_running counts)',
      "gauge",
      async () => {
        const { clients } = await snapshot();
        return [...clients].flatMap(([client, load]) => [
          { labels: { client, state: "pending" }, value: load.pending },
          { labels: { client, state: "running" }, value: load.running },
        ]);
      },
    ),
  );
  registry.registerMetric(
    storeMetric(
      "media_client_refused_total",
      "Submissions a client's limits refused, by client and limit (max_pending: 429; job_types, max_priority: 403)",
      "counter",
      async () => {
        const { clients } = await snapshot();
        return [...clients].flatMap(([client, load]) =>
          Object.entries(load.refused).map(([limit, value]) => ({ labels: { client, limit }, value })),
        );
      },
    ),
  );
  return registry;
}

type Values = Array<MetricValueWithName<string>>;

function storeMetric(
  name: string,
  help: string,
  type: "counter" | "gauge" | "histogram",
  read: () => Promise<Values>,
): Metric<string> {
  const metric = {
    name,
    help,
    type,
    aggregator: "sum",
    collect: () => undefined,
    // prom-client's typings declare MetricType as a numeric enum; at run time it is the string.
    get: async () =>
      ({
        name,
        help,
        type,
        aggregator: "sum",
        collect: () => undefined,
        // Without Redis the job metrics are left out; the process metrics are still served.
        values: await read().catch(() => []),
      }) as unknown as MetricObjectWithValues<MetricValueWithName<string>>,
    reset: () => undefined,
  };
  return metric as unknown as Metric<string>;
}
