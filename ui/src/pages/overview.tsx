import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import { api, ApiError } from "../api.js";
import { TimeChart } from "../chart.js";
import { LiveState, Loading, Notice } from "../components.js";
import { formatCount, formatSeconds, typeLabel } from "../format.js";
import { throttle, useJobChanges } from "../live.js";
import { Link } from "../router.js";
import type { HistoryFigures, QueueStats, StatsHistory } from "../types.js";
import { JOB_TYPES } from "../../../core/jobs/types.js";

const MINUTES = 60;

/** The overview: the queues now, the last hour, webhook delivery. */
export function OverviewPage() {
  const [stats, setStats] = useState<QueueStats | null>(null);
  const [statsError, setStatsError] = useState<string | null>(null);
  const [history, setHistory] = useState<StatsHistory | null>(null);
  const [historyError, setHistoryError] = useState<string | null>(null);
  const [chartType, setChartType] = useState("");

  const loadStats = useCallback(async () => {
    try {
      setStats(await api<QueueStats>("/queue/stats"));
      setStatsError(null);
    } catch (err) {
      setStatsError((err as Error).message);
    }
  }, []);
  const loadHistory = useCallback(async () => {
    try {
      setHistory(await api<StatsHistory>(`/stats/history?minutes=${MINUTES}`));
      setHistoryError(null);
    } catch (err) {
      setHistoryError(
        err instanceof ApiError && err.status === 404
          ? "This API has no history of its figures (GET /api/v1/stats/history answered 404)."
          : (err as Error).message,
      );
    }
  }, []);

  // Counts follow every change at once (at most one read a second); the per-minute history at most
  // every 10 s, and every minute regardless, so that the time axis moves on an idle system.
  const refreshStats = useMemo(() => throttle(() => void loadStats(), 1000), [loadStats]);
  const refreshHistory = useMemo(() => throttle(() => void loadHistory(), 10_000), [loadHistory]);
  useEffect(() => {
    void loadStats();
    void loadHistory();
    const timer = setInterval(() => void loadHistory(), 60_000);
    return () => {
      clearInterval(timer);
      refreshStats.cancel();
      refreshHistory.cancel();
    };
  }, [loadStats, loadHistory, refreshStats, refreshHistory]);
  const live = useJobChanges(
    {},
    () => {
      refreshStats();
      refreshHistory();
    },
    () => {
      void loadStats();
      void loadHistory();
    },
  );

  return (
    <main id="main" tabIndex={-1}>
      <div class="page-head">
        <h1>Overview</h1>
        <LiveState state={live} />
      </div>
      <section aria-labelledby="queues-heading">
        <h2 id="queues-heading">Queues</h2>
        {statsError && <Notice kind="error">Could not read the queues: {statsError}</Notice>}
        {!stats && !statsError && <Loading what="the queues" />}
        {stats && <QueueTable stats={stats} />}
      </section>
      <section aria-labelledby="history-heading">
        <div class="section-head">
          <h2 id="history-heading">Last hour</h2>
          <label class="inline-field">
            Job type{" "}
            <select value={chartType} onChange={(e) => setChartType(e.currentTarget.value)}>
              <option value="">all types</option>
              {JOB_TYPES.map((t) => (
                <option value={t}>{typeLabel(t)}</option>
              ))}
            </select>
          </label>
        </div>
        {historyError && <Notice kind="error">{historyError}</Notice>}
        {!history && !historyError && <Loading what="the last hour" />}
        {history && <HistoryCharts history={history} type={chartType} />}
      </section>
      {history && (
        <section aria-labelledby="webhooks-heading">
          <h2 id="webhooks-heading">Webhook delivery</h2>
          <p class="subtle">Delivery attempts by outcome, since the store began.</p>
          <WebhookHealth webhooks={history.webhooks} />
        </section>
      )}
    </main>
  );
}

function QueueTable(props: { stats: QueueStats }) {
  const { stats } = props;
  const rows = Object.entries(stats.queues).sort(([a], [b]) => a.localeCompare(b));
  return (
    <div class="table-scroll">
      <table class="numbers" data-testid="queue-table">
        <caption class="visually-hidden">Jobs per job type and status</caption>
        <thead>
          <tr>
            <th scope="col">Job type</th>
            <th scope="col">Pending</th>
            <th scope="col">Processing</th>
            <th scope="col">Completed</th>
            <th scope="col">Failed</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(([name, q]) => (
            <tr data-type={name}>
              <th scope="row">
                <Link href={`/jobs?type=${encodeURIComponent(name)}`}>{typeLabel(name)}</Link>
              </th>
              <td data-col="pending">{formatCount(q.pending)}</td>
              <td data-col="processing">{formatCount(q.processing)}</td>
              <td data-col="completed">{formatCount(q.completed)}</td>
              <td data-col="failed">
                {q.failed > 0 ? (
                  <Link href={`/jobs?type=${encodeURIComponent(name)}&status=failed`}>
                    {formatCount(q.failed)}
                  </Link>
                ) : (
                  "0"
                )}
              </td>
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr>
            <th scope="row">All types</th>
            <td>{formatCount(stats.total_pending)}</td>
            <td>{formatCount(stats.total_processing)}</td>
            <td>{formatCount(stats.total_completed)}</td>
            <td>{formatCount(stats.total_failed)}</td>
          </tr>
        </tfoot>
      </table>
    </div>
  );
}

const EMPTY: HistoryFigures = {
  completed: 0,
  failed: 0,
  cancelled: 0,
  p50_seconds: null,
  p95_seconds: null,
  pending: 0,
};

function HistoryCharts(props: { history: StatsHistory; type: string }) {
  const { history, type } = props;
  const points = history.points.map((p) => ({
    at: p.at,
    ...(type ? (p.by_type?.[type] ?? EMPTY) : p),
  }));
  const times = points.map((p) => p.at);
  const sum = (pick: (p: HistoryFigures) => number) => points.reduce((total, p) => total + pick(p), 0);
  const completed = sum((p) => p.completed);
  const failed = sum((p) => p.failed);
  const p95s = points.map((p) => p.p95_seconds).filter((v): v is number => v !== null);
  const depth = points.at(-1)?.pending ?? 0;
  const maxDepth = Math.max(0, ...points.map((p) => p.pending));
  const count = (v: number) => formatCount(Math.round(v));
  const scope = type ? typeLabel(type) : "all types";
  return (
    <div class="charts">
      <TimeChart
        title={`Jobs finished per minute (${scope})`}
        summary={`${completed} completed and ${failed} failed in the last ${points.length} minutes.`}
        times={times}
        stacked
        format={count}
        series={[
          {
            name: "completed",
            kind: "bar",
            className: "series-completed",
            values: points.map((p) => p.completed),
          },
          { name: "failed", kind: "bar", className: "series-failed", values: points.map((p) => p.failed) },
        ]}
      />
      <TimeChart
        title={`Processing time (${scope})`}
        summary={
          p95s.length > 0
            ? `The slowest minute's 95th percentile was ${formatSeconds(Math.max(...p95s))}.`
            : "No job finished in this hour."
        }
        times={times}
        format={formatSeconds}
        series={[
          { name: "p50", kind: "line", className: "series-p50", values: points.map((p) => p.p50_seconds) },
          { name: "p95", kind: "line", className: "series-p95", values: points.map((p) => p.p95_seconds) },
        ]}
      />
      <TimeChart
        title={`Queue depth: pending jobs (${scope})`}
        summary={`${depth} pending now; at most ${maxDepth} in the last ${points.length} minutes.`}
        times={times}
        format={count}
        series={[
          {
            name: "pending",
            kind: "line",
            className: "series-pending",
            values: points.map((p) => p.pending),
          },
        ]}
      />
    </div>
  );
}

function WebhookHealth(props: { webhooks: StatsHistory["webhooks"] }) {
  const { delivered = 0, retry = 0, failed = 0, refused = 0 } = props.webhooks;
  const ended = delivered + failed + refused;
  const rate = ended > 0 ? Math.round((delivered / ended) * 100) : null;
  const health =
    ended + retry === 0
      ? "No webhook has been sent yet."
      : failed + refused === 0
        ? `Healthy: every webhook that ended was delivered, ${retry} attempt${retry === 1 ? "" : "s"} retried on the way.`
        : `${failed + refused} webhook${failed + refused === 1 ? "" : "s"} could not be delivered (${rate} % delivered).`;
  return (
    <div class="webhooks">
      <p class={`webhook-health ${failed + refused > 0 ? "is-bad" : "is-good"}`}>
        <span aria-hidden="true">{failed + refused > 0 ? "⚠ " : "✓ "}</span>
        {health}
      </p>
      <dl class="figures">
        <div>
          <dt>Delivered</dt>
          <dd>{formatCount(delivered)}</dd>
        </div>
        <div>
          <dt>Attempts retried</dt>
          <dd>{formatCount(retry)}</dd>
        </div>
        <div>
          <dt>Failed (given up)</dt>
          <dd>{formatCount(failed)}</dd>
        </div>
        <div>
          <dt>Refused (address not allowed)</dt>
          <dd>{formatCount(refused)}</dd>
        </div>
      </dl>
    </div>
  );
}
