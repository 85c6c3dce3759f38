import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import { api, ApiError } from "../api.js";
import { TimeChart, type Series } from "../chart.js";
import { ClientTable } from "../client-table.js";
import { LiveState, Loading, Notice } from "../components.js";
import { formatCount, formatSeconds, typeLabel } from "../format.js";
import { throttle, useJobChanges } from "../live.js";
import { Link, navigate, useLocation } from "../router.js";
import type { HistoryFigures, QueueStats, StatsHistory } from "../types.js";
import { JOB_TYPES } from "virtual:job-types";

/**
 * The time ranges of the charts: how many minutes, and how many of them one point covers (the API
 * adds them up: a day is 73 points, not 1,440).
 */
export const RANGES = {
  "1h": { minutes: 60, step: 1, label: "1 h", heading: "Last hour", per: "minute" },
  "6h": { minutes: 360, step: 5, label: "6 h", heading: "Last 6 hours", per: "5 minutes" },
  "24h": { minutes: 1440, step: 20, label: "24 h", heading: "Last 24 hours", per: "20 minutes" },
} as const;
export type RangeName = keyof typeof RANGES;
type Range = (typeof RANGES)[RangeName];

/** The overview: the queues now, the last hour (or 6 or 24), webhook delivery. */
export function OverviewPage() {
  const { query: params } = useLocation();
  const asked = params.get("range");
  const rangeName: RangeName = asked && asked in RANGES ? (asked as RangeName) : "1h";
  const range = RANGES[rangeName];
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
      setHistory(await api<StatsHistory>(`/stats/history?minutes=${range.minutes}&step=${range.step}`));
      setHistoryError(null);
    } catch (err) {
      setHistoryError(
        err instanceof ApiError && err.status === 404
          ? "This API has no history of its figures (GET /api/v1/stats/history answered 404)."
          : (err as Error).message,
      );
    }
  }, [range]);

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
      {stats?.clients && stats.clients.length > 0 && (
        <section aria-labelledby="clients-heading">
          <h2 id="clients-heading">Clients</h2>
          <p class="subtle">
            Each client's jobs running and waiting against its limits; within a priority, clients take turns
            of their weight.
          </p>
          <ClientTable clients={stats.clients} />
        </section>
      )}
      <section aria-labelledby="history-heading">
        <div class="section-head">
          <h2 id="history-heading">{range.heading}</h2>
          <div class="range-picker" role="group" aria-label="Time range">
            {(Object.keys(RANGES) as RangeName[]).map((name) => (
              <button
                type="button"
                aria-pressed={name === rangeName}
                onClick={() => navigate(name === "1h" ? "/" : `/?range=${name}`, { replace: true })}
              >
                {RANGES[name].label}
              </button>
            ))}
          </div>
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
        {!history && !historyError && <Loading what={range.heading.toLowerCase()} />}
        {history && <HistoryCharts history={history} type={chartType} range={range} />}
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
            <th scope="col">Cancelled</th>
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
                <StateCount type={name} state="failed" count={q.failed - (q.cancelled ?? 0)} />
              </td>
              <td data-col="cancelled">
                <StateCount type={name} state="cancelled" count={q.cancelled ?? 0} />
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
            <td>{formatCount(stats.total_failed - (stats.total_cancelled ?? 0))}</td>
            <td>{formatCount(stats.total_cancelled ?? 0)}</td>
          </tr>
        </tfoot>
      </table>
    </div>
  );
}

/** A count of a queue's failed (not cancelled) or cancelled jobs, linked to the list of them. */
function StateCount(props: { type: string; state: "failed" | "cancelled"; count: number }) {
  if (props.count <= 0) return <>0</>;
  return (
    <Link href={`/jobs?type=${encodeURIComponent(props.type)}&state=${props.state}`}>
      {formatCount(props.count)}
    </Link>
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

/**
 * The share of the jobs that ended which failed, in percent; null when none ended. A cancelled job
 * was stopped on purpose: it is left out, as neither a success nor a failure.
 */
export function failureRate(p: { completed: number; failed: number; cancelled?: number }): number | null {
  const failed = p.failed - (p.cancelled ?? 0);
  const ended = p.completed + failed;
  return ended > 0 ? (failed / ended) * 100 : null;
}

const formatRate = (v: number) => `${Math.round(v)} %`;

function HistoryCharts(props: { history: StatsHistory; type: string; range: Range }) {
  const { history, type, range } = props;
  const points = history.points.map((p) => ({
    at: p.at,
    ...(type ? (p.by_type?.[type] ?? EMPTY) : p),
  }));
  const times = points.map((p) => p.at);
  const sum = (pick: (p: HistoryFigures) => number) => points.reduce((total, p) => total + pick(p), 0);
  const completed = sum((p) => p.completed);
  // Failed without the cancelled jobs, which are a series of their own.
  const cancelledOf = (p: HistoryFigures) => p.cancelled ?? 0;
  const failed = sum((p) => p.failed - cancelledOf(p));
  const cancelled = sum(cancelledOf);
  const p95s = points.map((p) => p.p95_seconds).filter((v): v is number => v !== null);
  const depth = points.at(-1)?.pending ?? 0;
  const maxDepth = Math.max(0, ...points.map((p) => p.pending));
  const count = (v: number) => formatCount(Math.round(v));
  const scope = type ? typeLabel(type) : "all types";
  const span = range.heading.toLowerCase().replace(/^last /, "");
  const overall = failureRate({ completed, failed: failed + cancelled, cancelled });
  return (
    <div class="charts">
      <TimeChart
        title={`Jobs finished per ${range.per} (${scope})`}
        summary={`${completed} completed, ${failed} failed and ${cancelled} cancelled in the last ${span}.`}
        times={times}
        stacked
        format={count}
        series={[
          series(
            "completed",
            "bar",
            points.map((p) => p.completed),
          ),
          series(
            "failed",
            "bar",
            points.map((p) => p.failed - cancelledOf(p)),
          ),
          series("cancelled", "bar", points.map(cancelledOf)),
        ]}
      />
      <TimeChart
        title={`Failure rate: failed of the jobs that ended (${scope})`}
        summary={
          overall === null
            ? `No job ended in the last ${span}.`
            : `${formatRate(overall)} of the jobs that ended in the last ${span} failed (cancelled ones left out).`
        }
        times={times}
        format={formatRate}
        series={[series("failure rate", "line", points.map(failureRate))]}
      />
      <TimeChart
        title={`Processing time (${scope})`}
        summary={
          p95s.length > 0
            ? `The slowest minute's 95th percentile was ${formatSeconds(Math.max(...p95s))}.`
            : `No job finished in the last ${span}.`
        }
        times={times}
        format={formatSeconds}
        series={[
          series(
            "p50",
            "line",
            points.map((p) => p.p50_seconds),
          ),
          series(
            "p95",
            "line",
            points.map((p) => p.p95_seconds),
          ),
        ]}
      />
      <TimeChart
        title={`Queue depth: pending jobs (${scope})`}
        summary={`${depth} pending now; at most ${maxDepth} in the last ${span}.`}
        times={times}
        format={count}
        series={[
          series(
            "pending",
            "line",
            points.map((p) => p.pending),
          ),
        ]}
      />
    </div>
  );
}

/** A chart's series `name`, styled by the class series-<name> (styles.css). */
function series(name: string, kind: Series["kind"], values: Series["values"]): Series {
  return { name, kind, className: `series-${name.replaceAll(" ", "-")}`, values };
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
