import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import { api, ApiError } from "../api.js";
import { LiveState, Loading, Notice, ProgressBar, StatusBadge } from "../components.js";
import { describeTimeLeft } from "../../../core/jobs/eta.js";
import { formatDateTime, formatSeconds, formatTime, typeLabel } from "../format.js";
import { throttle, type LiveStateName } from "../live.js";
import { downloadObject, fileName, useJobLinks, type ObjectOf } from "../preview.js";
import { isLive, resultView } from "../result-views.js";
import { FactList } from "../results.js";
import { Link, navigate } from "../router.js";
import { dataOf, openSse } from "../sse.js";
import type { Job, JobEvents, Submitted } from "../types.js";

const FINISHED = new Set(["completed", "failed"]);

/** One job: what was asked, what happened, what came of it; live while it runs. */
export function JobPage(props: { id: string }) {
  const { id } = props;
  const [job, setJob] = useState<Job | null>(null);
  const [missing, setMissing] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [events, setEvents] = useState<JobEvents["events"] | null>(null);
  const [eventsError, setEventsError] = useState<string | null>(null);
  const [progress, setProgress] = useState<number | null>(null);
  // The runner's estimate of the seconds left, with the percent it came with (none until it can tell).
  const [eta, setEta] = useState<number | null>(null);
  const [live, setLive] = useState<LiveStateName>("off");
  const [busy, setBusy] = useState(false);
  const [actionError, setActionError] = useState<string | null>(null);

  const path = `/jobs/${encodeURIComponent(id)}`;
  const loadJob = useCallback(async () => {
    try {
      const next = await api<Job>(path);
      setJob(next);
      if (next.progress !== undefined) setProgress(next.progress);
      setEta(next.eta_seconds ?? null);
      setError(null);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) setMissing(true);
      else setError((err as Error).message);
    }
  }, [path]);
  const loadEvents = useCallback(async () => {
    try {
      setEvents((await api<JobEvents>(`${path}/events`)).events);
      setEventsError(null);
    } catch (err) {
      setEventsError((err as Error).message);
    }
  }, [path]);
  const refreshEvents = useMemo(() => throttle(() => void loadEvents(), 1000), [loadEvents]);

  useEffect(() => {
    setJob(null);
    setMissing(false);
    setEvents(null);
    setProgress(null);
    setEta(null);
    setActionError(null);
    void loadJob();
    void loadEvents();
    return () => refreshEvents.cancel();
  }, [loadJob, loadEvents, refreshEvents]);

  const finished = job ? FINISHED.has(job.status) : true;
  // While the job runs: its stream (status, progress, complete), which the server ends at completion.
  useEffect(() => {
    if (finished) {
      setLive("off");
      return;
    }
    setLive("connecting");
    const stream = openSse(
      `${path}/stream`,
      {
        onOpen: () => setLive("live"),
        onDown: (retryMs) => setLive(retryMs === null ? "off" : "retrying"),
        onEvent: (message) => {
          const data =
            dataOf<{
              status?: Job["status"];
              percent?: number;
              eta_seconds?: number;
              steps?: Record<string, number>;
            }>(message) ?? {};
          if (message.event === "status" && data.status) {
            setJob((j) => (j ? { ...j, status: data.status! } : j));
            refreshEvents();
          } else if (message.event === "progress" && typeof data.percent === "number") {
            setProgress(data.percent);
            setEta(typeof data.eta_seconds === "number" ? data.eta_seconds : null);
            // A pipeline's percent per step, for its graph (the record's steps_progress).
            const steps = data.steps;
            setJob((j) =>
              j && (j.status === "pending" || steps)
                ? {
                    ...j,
                    status: j.status === "pending" ? "processing" : j.status,
                    ...(steps ? { steps_progress: steps } : {}),
                  }
                : j,
            );
          } else if (message.event === "complete" || message.event === "error") {
            stream.close();
            setLive("off");
            void loadJob();
            void loadEvents();
          }
        },
      },
      true,
    );
    return () => stream.close();
  }, [path, finished, loadJob, loadEvents, refreshEvents]);

  const act = async (action: "cancel" | "retry" | "retry again") => {
    setBusy(true);
    setActionError(null);
    try {
      if (action === "cancel") {
        setJob(await api<Job>(`${path}/cancel`, { method: "POST" }));
        void loadEvents();
      } else {
        // A job retried before answers with its retry (200) unless forced: either way, open it.
        const submitted = await api<Submitted>(`${path}/retry`, {
          method: "POST",
          ...(action === "retry again" ? { json: { force: true } } : {}),
        });
        navigate(`/jobs/${encodeURIComponent(submitted.job_id)}`);
      }
    } catch (err) {
      setActionError(`Could not ${action} the job: ${(err as Error).message}`);
    } finally {
      setBusy(false);
    }
  };

  if (missing) {
    return (
      <main id="main" tabIndex={-1}>
        <h1>Job not found</h1>
        <Notice kind="error">
          There is no job <code>{id}</code> that this key may see (it may have been removed after its
          retention time).
        </Notice>
        <p>
          <Link href="/jobs">Back to the jobs</Link>
        </p>
      </main>
    );
  }

  return (
    <main id="main" tabIndex={-1}>
      <nav class="breadcrumbs" aria-label="Breadcrumbs">
        <Link href="/jobs">Jobs</Link> <span aria-hidden="true">/</span>{" "}
        <span class="mono">{id.slice(0, 8)}</span>
      </nav>
      <div class="page-head">
        <h1>
          {job ? typeLabel(job.type) : "Job"} <span class="mono subtle">{id}</span>
        </h1>
        {!finished && <LiveState state={live} />}
      </div>
      {error && <Notice kind="error">Could not read the job: {error}</Notice>}
      {!job && !error && <Loading what="the job" />}
      {job && (
        <>
          <section class="job-status" aria-label="Status">
            <p class="status-line" data-testid="job-status">
              <StatusBadge
                status={job.status}
                cancelled={job.state === "cancelled" || job.cancelled_at !== undefined}
              />
              <span>{statusSentence(job)}</span>
            </p>
            <Lineage job={job} />
            {job.status === "processing" && <ProgressBar percent={progress ?? 0} label="Job progress" />}
            {job.status === "processing" && eta !== null && (
              <p class="subtle" data-testid="job-eta">
                {describeTimeLeft(eta)}
              </p>
            )}
            <div class="actions">
              {(job.status === "pending" || job.status === "processing") && (
                <button type="button" class="danger" disabled={busy} onClick={() => void act("cancel")}>
                  Cancel job
                </button>
              )}
              {job.status === "failed" && !job.retried_as && (
                <button type="button" class="primary" disabled={busy} onClick={() => void act("retry")}>
                  Retry as a new job
                </button>
              )}
              {job.status === "failed" && job.retried_as && (
                <>
                  <Link href={`/jobs/${encodeURIComponent(job.retried_as)}`} class="button primary">
                    Open retry
                  </Link>
                  <button type="button" disabled={busy} onClick={() => void act("retry again")}>
                    Retry again
                  </button>
                </>
              )}
            </div>
            {actionError && <Notice kind="error">{actionError}</Notice>}
          </section>
          {job.status === "failed" && <FailureView job={job} />}
          <LiveView job={job} />
          {/* A failed job with a result: a pipeline's completed steps, kept with keep_partial. */}
          {(job.status === "completed" || (job.status === "failed" && job.result)) && (
            <ResultView job={job} />
          )}
          <section aria-labelledby="timeline-heading">
            <h2 id="timeline-heading">Timeline</h2>
            {eventsError && <Notice kind="error">Could not read the job's events: {eventsError}</Notice>}
            {!events && !eventsError && <Loading what="the timeline" />}
            {events && <Timeline events={events} />}
          </section>
          <section aria-labelledby="params-heading">
            <h2 id="params-heading">What was asked</h2>
            <JobDetails job={job} />
          </section>
        </>
      )}
    </main>
  );
}

function statusSentence(job: Job): string {
  switch (job.status) {
    case "pending":
      return `Waiting to run since ${formatDateTime(job.created_at)}.`;
    case "processing":
      return `Running since ${formatDateTime(job.started_at)}.`;
    case "completed":
      return `Completed ${formatDateTime(job.completed_at)}${job.duration_seconds !== undefined ? ` in ${formatSeconds(job.duration_seconds)}` : ""}.`;
    case "failed":
      return job.cancelled_at
        ? `Cancelled ${formatDateTime(job.cancelled_at)}.`
        : `Failed ${formatDateTime(job.completed_at ?? job.updated_at)}.`;
  }
}

/** The error in words: what it means and what can be done. */
function explain(error: string): string {
  if (error === "cancelled by request") return "Someone cancelled this job. Retry it to run it again.";
  if (error.startsWith("cancelled: batch"))
    return "Its batch stops at the first failure (fail_fast), and another job of the batch failed first.";
  if (error.startsWith("job timed out"))
    return "The job ran out of time. Retry it with a longer timeout_seconds, or raise the executor's timeout.";
  if (/attempt|runner (crashed|lost)|out of memory/i.test(error))
    return "The job failed for a reason outside its input (its runner was lost) on every attempt it had.";
  if (/not found|NoSuchKey|does not exist/i.test(error))
    return "The source file could not be found: check the bucket and key.";
  return "The job could not be done with this input: the message above says why. Retrying runs it again unchanged.";
}

function FailureView(props: { job: Job }) {
  const error = props.job.error ?? "the job failed";
  return (
    <section class="failure" aria-labelledby="failure-heading">
      <h2 id="failure-heading">
        <span aria-hidden="true">✕ </span>
        {props.job.cancelled_at ? "Cancelled" : "What went wrong"}
      </h2>
      <p class="error-message" data-testid="job-error">
        {error}
      </p>
      <p>{explain(error)}</p>
    </section>
  );
}

/** The view of a type shown at every state of the job (a pipeline's steps as a graph), if any. */
function LiveView(props: { job: Job }) {
  const View = isLive(props.job.type) ? resultView(props.job.type) : undefined;
  return View ? <View job={props.job} result={props.job.result ?? {}} /> : null;
}

/** The result shown for what it is. */
function ResultView(props: { job: Job }) {
  const { job } = props;
  const result = (job.result ?? {}) as Record<string, unknown>;
  const writesFile = typeof result.output_url === "string";
  const links = useJobLinks(job.id, writesFile, job.status);
  // A live view is shown above at every state (LiveView), not again here.
  const View = isLive(job.type) ? undefined : resultView(job.type);
  return (
    <section class="result" aria-labelledby="result-heading" data-testid="job-result">
      <h2 id="result-heading">Result</h2>
      {View && <View job={job} result={result} />}
      <div class="output-links" data-testid="downloads">
        {writesFile && <DownloadButton job={job} of="output" label="Download the output" primary />}
        <DownloadButton job={job} of="source" label="Download the source" />
        {writesFile && (
          <p class="subtle">
            {job.dest_bucket}/{job.dest_key}
            {links?.output && (
              <>
                {" "}
                ·{" "}
                <a href={links.output.url} data-testid="store-link">
                  direct link to the object store
                </a>
                , valid until {formatTime(links.output.expires_at, true)}
              </>
            )}
          </p>
        )}
      </div>
    </section>
  );
}

/** Saves one of the job's objects, read through the API with the key. */
function DownloadButton(props: { job: Job; of: ObjectOf; label: string; primary?: boolean }) {
  const { job, of } = props;
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const key = of === "output" ? job.dest_key : job.source_key;
  const save = async () => {
    setBusy(true);
    setError(null);
    try {
      await downloadObject(job.id, of, fileName(key, `${job.id}-${of}`));
    } catch (err) {
      setError(`Could not download the ${of}: ${(err as Error).message}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button
        type="button"
        class={props.primary ? "primary" : ""}
        disabled={busy}
        onClick={() => void save()}
        data-testid={`download-${of}`}
      >
        {busy ? "Downloading…" : props.label}
      </button>{" "}
      {error && <Notice kind="error">{error}</Notice>}
    </>
  );
}

const EVENT_WORDS: Record<JobEvents["events"][number]["event"], string> = {
  submitted: "Submitted",
  claimed: "Claimed by an executor",
  pooled: "Handed to the warm runner pool",
  waiting: "Waiting",
  started: "Started",
  progress: "Progress",
  requeued: "Handed back to its queue",
  completed: "Completed",
  failed: "Failed",
  cancelled: "Cancelled",
  retried: "Retried as",
  webhook: "Webhook",
};

function Timeline(props: { events: JobEvents["events"] }) {
  if (props.events.length === 0) return <p>No events recorded.</p>;
  return (
    <ol class="timeline" data-testid="timeline">
      {props.events.map((e) => (
        <li class={`timeline-${e.event}`}>
          <time dateTime={e.at}>{formatTime(e.at, true)}</time>
          <span class="timeline-what">
            <strong>{EVENT_WORDS[e.event] ?? e.event}</strong>
            {e.percent !== undefined && ` ${Math.round(e.percent)} %`}
            {e.attempt !== undefined && ` (attempt ${e.attempt})`}
            {e.status_code !== undefined && ` HTTP ${e.status_code}`}
            {e.result && ` ${e.result}`}
            {e.message && e.event === "retried" ? (
              <span class="subtle">
                {" — "}
                <Link href={`/jobs/${encodeURIComponent(e.message)}`} class="mono">
                  {e.message}
                </Link>
              </span>
            ) : (
              e.message && <span class="subtle"> — {e.message}</span>
            )}
          </span>
        </li>
      ))}
    </ol>
  );
}

/** Where the job stands among its retries: the job it retries, the job that retries it. */
function Lineage(props: { job: Job }) {
  const { retry_of: of, retried_as: as } = props.job;
  if (!of && !as) return null;
  const link = (id: string) => (
    <Link href={`/jobs/${encodeURIComponent(id)}`} class="mono">
      {id.slice(0, 8)}
      <span class="visually-hidden">{id.slice(8)}</span>
    </Link>
  );
  return (
    <p class="lineage" data-testid="job-lineage">
      {of && <span data-lineage="retry-of">Retry of {link(of)}</span>}
      {of && as && <span aria-hidden="true"> · </span>}
      {as && <span data-lineage="retried-as">Retried as {link(as)}</span>}
    </p>
  );
}

function JobDetails(props: { job: Job }) {
  const { job } = props;
  const rows: Array<[string, ComponentChildren]> = [
    ["Type", typeLabel(job.type)],
    ["Source", <span class="mono">{`${job.source_bucket}/${job.source_key}`}</span>],
  ];
  if (job.dest_bucket)
    rows.push(["Output", <span class="mono">{`${job.dest_bucket}/${job.dest_key ?? ""}`}</span>]);
  for (const [name, value] of Object.entries(job.parameters ?? {})) {
    rows.push([name, <span class="mono">{typeof value === "string" ? value : JSON.stringify(value)}</span>]);
  }
  if (job.template) rows.push(["Template", `${job.template.name}, version ${job.template.version}`]);
  if (job.priority !== undefined) rows.push(["Priority", String(job.priority)]);
  if (job.timeout_seconds !== undefined) rows.push(["Timeout", `${job.timeout_seconds} s`]);
  if (job.resources) rows.push(["Resources", JSON.stringify(job.resources)]);
  if (job.batch_id)
    rows.push(["Batch", <Link href={`/batches/${encodeURIComponent(job.batch_id)}`}>{job.batch_id}</Link>]);
  if (job.retry_of)
    rows.push([
      "Retry of",
      <Link href={`/jobs/${encodeURIComponent(job.retry_of)}`} class="mono">
        {job.retry_of}
      </Link>,
    ]);
  if (job.retried_as)
    rows.push([
      "Retried as",
      <Link href={`/jobs/${encodeURIComponent(job.retried_as)}`} class="mono">
        {job.retried_as}
      </Link>,
    ]);
  if (job.webhook_url) rows.push(["Webhook", <span class="mono">{job.webhook_url}</span>]);
  if (job.webhook_delivery)
    rows.push([
      "Webhook delivery",
      `${job.webhook_delivery.status} after ${job.webhook_delivery.attempts} attempt(s): ${job.webhook_delivery.last_result}`,
    ]);
  if (job.attempts !== undefined) rows.push(["Attempts", String(job.attempts)]);
  if (job.request_id) rows.push(["Request id", <span class="mono">{job.request_id}</span>]);
  rows.push(["Created", formatDateTime(job.created_at)]);
  if (job.started_at) rows.push(["Started", formatDateTime(job.started_at)]);
  if (job.completed_at) rows.push(["Ended", formatDateTime(job.completed_at)]);
  return <FactList rows={rows} class="details" testId="job-parameters" />;
}
