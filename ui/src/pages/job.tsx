import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import { api, ApiError } from "../api.js";
import { LiveState, Loading, Notice, ProgressBar, StatusBadge } from "../components.js";
import {
  formatBytes,
  formatDateTime,
  formatPercent,
  formatSeconds,
  formatTime,
  typeLabel,
} from "../format.js";
import { throttle, type LiveStateName } from "../live.js";
import { useJobLinks } from "../preview.js";
import { Link, navigate } from "../router.js";
import { dataOf, openSse } from "../sse.js";
import type { Job, JobEvents, JobLinks, Submitted } from "../types.js";

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
  const [live, setLive] = useState<LiveStateName>("off");
  const [busy, setBusy] = useState(false);
  const [actionError, setActionError] = useState<string | null>(null);

  const path = `/jobs/${encodeURIComponent(id)}`;
  const loadJob = useCallback(async () => {
    try {
      const next = await api<Job>(path);
      setJob(next);
      if (next.progress !== undefined) setProgress(next.progress);
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
          const data = dataOf<{ status?: Job["status"]; percent?: number }>(message) ?? {};
          if (message.event === "status" && data.status) {
            setJob((j) => (j ? { ...j, status: data.status! } : j));
            refreshEvents();
          } else if (message.event === "progress" && typeof data.percent === "number") {
            setProgress(data.percent);
            setJob((j) => (j && j.status === "pending" ? { ...j, status: "processing" } : j));
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

  const act = async (action: "cancel" | "retry") => {
    setBusy(true);
    setActionError(null);
    try {
      if (action === "cancel") {
        setJob(await api<Job>(`${path}/cancel`, { method: "POST" }));
        void loadEvents();
      } else {
        const submitted = await api<Submitted>(`${path}/retry`, { method: "POST" });
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
              <StatusBadge status={job.status} cancelled={job.cancelled_at !== undefined} />
              <span>{statusSentence(job)}</span>
            </p>
            {job.status === "processing" && <ProgressBar percent={progress ?? 0} label="Job progress" />}
            <div class="actions">
              {(job.status === "pending" || job.status === "processing") && (
                <button type="button" class="danger" disabled={busy} onClick={() => void act("cancel")}>
                  Cancel job
                </button>
              )}
              {job.status === "failed" && (
                <button type="button" class="primary" disabled={busy} onClick={() => void act("retry")}>
                  Retry as a new job
                </button>
              )}
            </div>
            {actionError && <Notice kind="error">{actionError}</Notice>}
          </section>
          {job.status === "failed" && <FailureView job={job} />}
          {job.status === "completed" && <ResultView job={job} />}
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

interface ImageResult {
  output_url?: string;
  file_size?: number;
  duration?: number;
  timestamp?: string;
  metadata?: {
    width?: number;
    height?: number;
    format?: string;
    codec?: string;
    bitrate?: number;
    sample_rate?: number;
    channels?: number;
  };
}

/** The result shown for what it is. */
function ResultView(props: { job: Job }) {
  const { job } = props;
  const result = (job.result ?? {}) as Record<string, unknown>;
  const writesFile = typeof result.output_url === "string";
  const links = useJobLinks(job.id, true, job.status);
  return (
    <section class="result" aria-labelledby="result-heading" data-testid="job-result">
      <h2 id="result-heading">Result</h2>
      {(() => {
        switch (job.type) {
          case "image_resize":
          case "image_optimize":
          case "image_watermark":
            return <BeforeAfter job={job} result={result} links={links} />;
          case "video_thumbnail":
            return <Thumbnail job={job} result={result} links={links} />;
          case "audio_convert":
            return <AudioResult result={result} links={links} />;
          case "image_colors":
            return <Colors result={result} />;
          case "image_ai_keywords":
            return <Keywords result={result} />;
          case "analyze":
            return <Analysis result={result} />;
        }
      })()}
      {writesFile && (
        <p class="output-links">
          {links?.output ? (
            <a href={links.output.url} download>
              Download the output
            </a>
          ) : (
            <span>Output link unavailable.</span>
          )}{" "}
          <span class="subtle">
            {job.dest_bucket}/{job.dest_key}
            {links?.output && <> · link valid until {formatTime(links.output.expires_at, true)}</>}
          </span>
        </p>
      )}
    </section>
  );
}

function describeImage(result: ImageResult): string {
  const m = result.metadata ?? {};
  const parts = [
    m.width && m.height ? `${m.width} × ${m.height}` : undefined,
    m.format?.toUpperCase(),
    result.file_size !== undefined ? formatBytes(result.file_size) : undefined,
  ];
  return parts.filter(Boolean).join(" · ");
}

function BeforeAfter(props: { job: Job; result: ImageResult; links: JobLinks | null }) {
  const { job, result, links } = props;
  return (
    <div class="before-after">
      <figure>
        {links ? (
          <img src={links.source.url} alt={`Source image ${job.source_key}`} data-testid="source-image" />
        ) : (
          <div class="media-placeholder">Source not available</div>
        )}
        <figcaption>
          <strong>Before</strong> · <span class="mono">{job.source_key}</span>
        </figcaption>
      </figure>
      <figure>
        {links?.output ? (
          <img src={links.output.url} alt={`Output image ${job.dest_key ?? ""}`} data-testid="output-image" />
        ) : (
          <div class="media-placeholder">Output not available</div>
        )}
        <figcaption>
          <strong>After</strong> · {describeImage(result)}
        </figcaption>
      </figure>
    </div>
  );
}

function Thumbnail(props: { job: Job; result: ImageResult; links: JobLinks | null }) {
  const { result, links } = props;
  return (
    <figure class="single-media">
      {links?.output ? (
        <img
          src={links.output.url}
          alt={`Frame at ${result.timestamp ?? "the requested time"}`}
          data-testid="output-image"
        />
      ) : (
        <div class="media-placeholder">Thumbnail not available</div>
      )}
      <figcaption>
        Frame at <strong>{result.timestamp ?? "—"}</strong> · {describeImage(result)}
      </figcaption>
    </figure>
  );
}

function AudioResult(props: { result: ImageResult; links: JobLinks | null }) {
  const { result, links } = props;
  const m = result.metadata ?? {};
  return (
    <div class="audio-result">
      {links?.output ? (
        <audio controls preload="metadata" src={links.output.url} data-testid="output-audio">
          <a href={links.output.url}>Download the audio</a>
        </audio>
      ) : (
        <div class="media-placeholder">Audio not available</div>
      )}
      <dl class="facts">
        <div>
          <dt>Length</dt>
          <dd>{formatSeconds(result.duration)}</dd>
        </div>
        <div>
          <dt>Format</dt>
          <dd>
            {m.format ?? "—"} ({m.codec ?? "—"})
          </dd>
        </div>
        <div>
          <dt>Bitrate</dt>
          <dd>{m.bitrate ? `${Math.round(m.bitrate / 1000)} kbit/s` : "—"}</dd>
        </div>
        <div>
          <dt>Sample rate, channels</dt>
          <dd>
            {m.sample_rate ? `${m.sample_rate} Hz` : "—"}, {m.channels ?? "—"}
          </dd>
        </div>
        <div>
          <dt>Size</dt>
          <dd>{formatBytes(result.file_size)}</dd>
        </div>
      </dl>
    </div>
  );
}

function Colors(props: { result: { colors?: string[]; percentages?: number[] } }) {
  const colors = props.result.colors ?? [];
  const shares = props.result.percentages ?? [];
  return (
    <ul class="swatches" aria-label="Dominant colours">
      {colors.map((color, i) => (
        <li class="swatch" data-testid="swatch">
          <span class="swatch-chip" style={{ backgroundColor: color }} aria-hidden="true" />
          <span class="mono">{color}</span>
          <span class="swatch-share">{(shares[i] ?? 0).toFixed(1)} %</span>
        </li>
      ))}
    </ul>
  );
}

function Keywords(props: { result: { keywords?: string[]; confidence_scores?: number[] } }) {
  const keywords = props.result.keywords ?? [];
  const scores = props.result.confidence_scores ?? [];
  return (
    <ul class="chips" aria-label="Keywords">
      {keywords.map((keyword, i) => {
        const score = scores[i] ?? 0;
        return (
          <li class="chip">
            <span class="chip-word">{keyword}</span>
            <span class="chip-bar" aria-hidden="true">
              <span class="chip-fill" style={{ width: `${Math.round(score * 100)}%` }} />
            </span>
            <span class="chip-score">{formatPercent(score)}</span>
          </li>
        );
      })}
    </ul>
  );
}

function Analysis(props: { result: Record<string, unknown> }) {
  const { result } = props;
  const text = typeof result.text === "string" ? result.text : "";
  const tags = Array.isArray(result.tags) ? (result.tags as string[]) : [];
  return (
    <div class="analysis">
      <div class="ai-text">
        {text.split(/\n{2,}/).map((paragraph) => (
          <p>{paragraph}</p>
        ))}
      </div>
      {tags.length > 0 && (
        <ul class="chips" aria-label="Tags">
          {tags.map((tag) => (
            <li class="chip">
              <span class="chip-word">{tag}</span>
            </li>
          ))}
        </ul>
      )}
      {typeof result.transcript === "string" && (
        <details>
          <summary>Transcript</summary>
          <p class="transcript">{result.transcript}</p>
        </details>
      )}
      <p class="subtle">
        Answered by {typeof result.model === "string" ? result.model : "—"} (
        {typeof result.provider === "string" ? result.provider : "—"}).
      </p>
    </div>
  );
}

const EVENT_WORDS: Record<JobEvents["events"][number]["event"], string> = {
  submitted: "Submitted",
  claimed: "Claimed by an executor",
  pooled: "Handed to the warm runner pool",
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
            {e.message && <span class="subtle"> — {e.message}</span>}
          </span>
        </li>
      ))}
    </ol>
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
  return (
    <dl class="details" data-testid="job-parameters">
      {rows.map(([name, value]) => (
        <div>
          <dt>{name}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}
