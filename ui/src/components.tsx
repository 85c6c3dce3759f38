// Small pieces the pages share: status badges (a word and a shape, never colour alone), progress
// bars, notices, pagers.
import type { ComponentChildren } from "preact";
import type { Batch, BatchStatus, JobState, JobStatus } from "./types.js";

const SHAPES: Record<JobState | BatchStatus, string> = {
  pending: "○",
  queued: "○",
  processing: "◐",
  completed: "✓",
  failed: "✕",
  cancelled: "⊘",
  partial: "◑",
};

/** A status as a word with a shape beside it; the colour only repeats what they say. */
export function StatusBadge(props: { status: JobStatus | BatchStatus; cancelled?: boolean }) {
  // A cancelled job's status is failed; what a person reads is its state, cancelled.
  const label: JobState | BatchStatus =
    props.cancelled && props.status === "failed" ? "cancelled" : props.status;
  return (
    <span class={`badge badge-${label}`} data-status={props.status} data-state={label}>
      <span class="badge-shape" aria-hidden="true">
        {SHAPES[label] ?? "•"}
      </span>
      <span class="badge-text">{label}</span>
    </span>
  );
}

/** A labelled progress bar (0-100); `label` names what progresses. */
export function ProgressBar(props: { percent: number; label: string }) {
  const percent = Math.max(0, Math.min(100, Math.round(props.percent)));
  return (
    <div class="progress">
      <div
        class="progress-track"
        role="progressbar"
        aria-label={props.label}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={percent}
      >
        <div class="progress-fill" style={{ width: `${percent}%` }} />
      </div>
      <span class="progress-text">{percent} %</span>
    </div>
  );
}

/**
 * A batch's progress: completed, failed, processing and pending as segments of one bar (each with
 * its own pattern as well as its colour), and in words beside it.
 */
export function BatchProgress({
  batch,
}: {
  batch: Pick<Batch, "id" | "total_jobs" | "completed" | "failed" | "cancelled" | "processing" | "pending">;
}) {
  const { total_jobs: total, completed, processing, pending } = batch;
  // The record's failed count includes the cancelled jobs; a person reads them apart.
  const cancelled = batch.cancelled;
  const failed = batch.failed - cancelled;
  const done = completed + batch.failed;
  const share = (n: number) => (total > 0 ? `${(n / total) * 100}%` : "0%");
  const words = `${done} of ${total} done: ${completed} completed, ${failed} failed, ${cancelled} cancelled, ${processing} running, ${pending} pending`;
  return (
    <div class="batch-progress">
      <div
        class="segments"
        role="progressbar"
        aria-label={`Batch ${batch.id}`}
        aria-valuemin={0}
        aria-valuemax={total}
        aria-valuenow={done}
        aria-valuetext={words}
      >
        <div class="segment segment-completed" style={{ width: share(completed) }} />
        <div class="segment segment-failed" style={{ width: share(failed) }} />
        <div class="segment segment-cancelled" style={{ width: share(cancelled) }} />
        <div class="segment segment-processing" style={{ width: share(processing) }} />
      </div>
      <p class="segments-text">
        <strong>
          {done} of {total}
        </strong>{" "}
        done · {completed} completed · {failed} failed · {cancelled} cancelled · {processing} running ·{" "}
        {pending} pending
      </p>
    </div>
  );
}

export function Notice(props: { kind?: "error" | "info"; children: ComponentChildren }) {
  const kind = props.kind ?? "info";
  return (
    <div class={`notice notice-${kind}`} role={kind === "error" ? "alert" : "status"}>
      {props.children}
    </div>
  );
}

export function Loading(props: { what: string }) {
  return (
    <p class="loading" role="status">
      Loading {props.what}…
    </p>
  );
}

/** Live-update state of a page: said in words, for everyone. */
export function LiveState(props: { state: "connecting" | "live" | "retrying" | "off" }) {
  const text = {
    connecting: "Connecting to live updates…",
    live: "Live",
    retrying: "Live updates interrupted, reconnecting…",
    off: "Not live",
  }[props.state];
  return (
    <span class={`live live-${props.state}`} role="status" data-live={props.state}>
      <span class="live-dot" aria-hidden="true" />
      {text}
    </span>
  );
}

/** Newer/older buttons over a cursor-paged list. */
export function Pager(props: {
  page: number;
  hasNewer: boolean;
  hasOlder: boolean;
  onNewer(): void;
  onOlder(): void;
  label: string;
}) {
  return (
    <nav class="pager" aria-label={props.label}>
      <button type="button" onClick={() => props.onNewer()} disabled={!props.hasNewer}>
        ← Newer
      </button>
      <span>Page {props.page}</span>
      <button type="button" onClick={() => props.onOlder()} disabled={!props.hasOlder}>
        Older →
      </button>
    </nav>
  );
}
