// Bulk actions of the jobs page: cancel or retry the rows chosen, or every job the filters match.
// Each asks the API for a dry run first and shows how many jobs it would change; confirmed, it calls
// POST /api/v1/jobs/bulk/{action} until the API has gone through every job (next_cursor).
import { useState } from "preact/hooks";
import { api } from "./api.js";

export type BulkAction = "cancel" | "retry";

/** The jobs an action is for: rows chosen by id, or the list's filters. */
export type BulkTarget = { ids: string[] } | { filter: Record<string, string> };

interface BulkAnswer {
  matched: number;
  changed: number;
  skipped: Record<string, number>;
  next_cursor?: string;
}

const VERB: Record<BulkAction, [string, string, string]> = {
  cancel: ["Cancel", "cancelled", "Cancelling"],
  retry: ["Retry", "retried", "Retrying"],
};

type Step =
  | { kind: "idle" }
  | { kind: "counting"; action: BulkAction; what: string }
  | { kind: "confirm"; action: BulkAction; what: string; target: BulkTarget; matched: number }
  | { kind: "running"; action: BulkAction; done: number; matched: number }
  | { kind: "done"; text: string }
  | { kind: "error"; text: string };

/** The most calls one confirmation makes: 2,000 calls of 500 jobs. */
const MAX_CALLS = 2000;

/**
 * The bulk bar: buttons for the chosen rows (when there are any) and for every job the filters match;
 * `onDone` reloads the page once an action has run.
 */
export function BulkBar(props: {
  selected: string[];
  filter: Record<string, string>;
  total: number;
  onDone: () => void;
}) {
  const [step, setStep] = useState<Step>({ kind: "idle" });
  const busy = step.kind === "counting" || step.kind === "running";

  const ask = async (action: BulkAction, target: BulkTarget, what: string) => {
    setStep({ kind: "counting", action, what });
    try {
      const dry = await api<BulkAnswer>(`/jobs/bulk/${action}`, {
        method: "POST",
        json: { ...target, dry_run: true },
      });
      setStep({ kind: "confirm", action, what, target, matched: dry.matched });
    } catch (err) {
      setStep({ kind: "error", text: (err as Error).message });
    }
  };

  const run = async (action: BulkAction, target: BulkTarget, matched: number) => {
    setStep({ kind: "running", action, done: 0, matched });
    let changed = 0;
    let done = 0;
    const skipped: Record<string, number> = {};
    let cursor: string | undefined;
    try {
      for (let calls = 0; calls < MAX_CALLS; calls++) {
        const answer = await api<BulkAnswer>(`/jobs/bulk/${action}`, {
          method: "POST",
          json: { ...target, limit: 500, ...(cursor ? { cursor } : {}) },
        });
        changed += answer.changed;
        for (const [reason, n] of Object.entries(answer.skipped)) {
          skipped[reason] = (skipped[reason] ?? 0) + n;
          done += n;
        }
        done += answer.changed;
        setStep({ kind: "running", action, done, matched });
        cursor = answer.next_cursor;
        if (!cursor) break;
      }
      const reasons = Object.entries(skipped).map(([reason, n]) => `${n} ${reason}`);
      setStep({
        kind: "done",
        text: `${changed} job${changed === 1 ? "" : "s"} ${VERB[action][1]}${reasons.length ? `; skipped: ${reasons.join(", ")}` : ""}.`,
      });
    } catch (err) {
      setStep({ kind: "error", text: `Stopped after ${done} jobs: ${(err as Error).message}` });
    }
    props.onDone();
  };

  const n = props.selected.length;
  return (
    <section class="bulk" aria-label="Bulk actions" data-testid="bulk-bar">
      <div class="bulk-buttons">
        {(["cancel", "retry"] as const).map((action) => (
          <>
            <button
              type="button"
              disabled={busy || n === 0}
              onClick={() =>
                void ask(action, { ids: props.selected }, `the ${n} chosen job${n === 1 ? "" : "s"}`)
              }
            >
              {VERB[action][0]} chosen{n > 0 ? ` (${n})` : ""}
            </button>
            <button
              type="button"
              disabled={busy || props.total === 0}
              onClick={() => void ask(action, { filter: props.filter }, "every job matching the filters")}
            >
              {VERB[action][0]} all matching…
            </button>
          </>
        ))}
      </div>
      <div role="status" aria-live="polite" class="bulk-status">
        {step.kind === "counting" && <p>Counting {step.what}…</p>}
        {step.kind === "confirm" && (
          <div class="bulk-confirm">
            <p data-testid="bulk-count">
              {step.matched === 0
                ? `No job of ${step.what} can be ${VERB[step.action][1]}.`
                : `${step.matched} job${step.matched === 1 ? "" : "s"} of ${step.what} will be ${VERB[step.action][1]}.`}
            </p>
            {step.matched > 0 && (
              <button
                type="button"
                class="primary"
                onClick={() => void run(step.action, step.target, step.matched)}
              >
                {VERB[step.action][0]} {step.matched} job{step.matched === 1 ? "" : "s"}
              </button>
            )}
            <button type="button" onClick={() => setStep({ kind: "idle" })}>
              {step.matched > 0 ? "Keep them" : "Close"}
            </button>
          </div>
        )}
        {step.kind === "running" && (
          <p>
            {VERB[step.action][2]}: {step.done} of {step.matched}…
          </p>
        )}
        {step.kind === "done" && <p data-testid="bulk-result">{step.text}</p>}
        {step.kind === "error" && (
          <p class="error" data-testid="bulk-result">
            {step.text}
          </p>
        )}
      </div>
    </section>
  );
}
