// Following one job to its end over its event stream (GET /api/v1/jobs/{id}/stream, api/routes/stream.ts):
// `status` {status, message}, `progress` {percent, message, eta_seconds?}, `complete` {status, result, error?} and
// `error` {error}. fetch() rather than EventSource, which cannot send the X-API-Key header;
// eventsource-parser reads the events.
import type { EventSourceMessage } from "eventsource-parser";
import { EventSourceParserStream } from "eventsource-parser/stream";
import { describeTimeLeft } from "../core/jobs/eta.js";
import type { Job } from "../core/jobs/records.js";
import { NetworkError, networkReason, type ApiClient } from "./api.js";
import { CliError, EXIT } from "./errors.js";
import type { Output } from "./output.js";
import { createBar } from "./progress.js";

/** Reconnects in a row before giving up on a stream that keeps breaking (the server restarting). */
const MAX_RECONNECTS = 10;

interface StreamEvent {
  event: string;
  data: Record<string, unknown>;
}

/** The job's events until it ends; the last one is `complete`. Reconnects as the server asks. */
async function* jobEvents(api: ApiClient, id: string): AsyncGenerator<StreamEvent> {
  let retryMs = 3000;
  let failures = 0;
  for (;;) {
    let broken: string;
    try {
      const response = await api.open("GET", `/jobs/${encodeURIComponent(id)}/stream`, {
        headers: { accept: "text/event-stream" },
      });
      const events = response
        .body!.pipeThrough(new TextDecoderStream())
        .pipeThrough(new EventSourceParserStream({ onRetry: (ms) => (retryMs = ms) }));
      broken = "the stream ended before the job did";
      for await (const message of readAll(events, (reason) => (broken = reason))) {
        failures = 0;
        const event = message.event ?? "message";
        const data = parseData(id, message.data);
        if (event === "error") {
          const error = typeof data.error === "string" ? data.error : "the stream failed";
          // The server is going away and asks clients to reconnect, which resumes the job's stream.
          if (/reconnect/.test(error)) {
            broken = error;
            break;
          }
          throw new CliError(`job ${id}: ${error}`);
        }
        yield { event, data };
        if (event === "complete") return;
      }
    } catch (err) {
      // An answer (404, 401, …) is final; a connection that could not be made is tried again.
      if (!(err instanceof NetworkError)) throw err;
      broken = err.message;
    }
    if (++failures > MAX_RECONNECTS) {
      throw new CliError(`lost the stream of job ${id} (${broken}); see: media-service job ${id}`);
    }
    await new Promise((resolve) => setTimeout(resolve, retryMs));
  }
}

/** The stream's messages until it ends or breaks (a broken connection is reported, not thrown). */
async function* readAll(
  events: ReadableStream<EventSourceMessage>,
  onBreak: (reason: string) => void,
): AsyncGenerator<EventSourceMessage> {
  const reader = events.getReader();
  try {
    for (;;) {
      let next: Awaited<ReturnType<typeof reader.read>>;
      try {
        next = await reader.read();
      } catch (err) {
        onBreak(`the connection broke: ${networkReason(err)}`);
        return;
      }
      if (next.done) return;
      yield next.value;
    }
  } finally {
    // Done with it (the job ended, or the caller stopped): close the connection.
    await reader.cancel().catch(() => undefined);
  }
}

function parseData(id: string, data: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(data) as unknown;
    if (parsed && typeof parsed === "object") return parsed as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw new CliError(`the stream of job ${id} sent an event that is not a JSON object: ${data.slice(0, 80)}`);
}

/**
 * Follows a job to its end with a progress bar on a terminal and returns its final record.
 * Ctrl-C stops following (the job goes on) and exits 130.
 */
export async function followJob(api: ApiClient, id: string, out: Output): Promise<Job> {
  const bar = createBar(out, 100, "{bar} {percentage}% | {left}{state}", { state: "waiting", left: "" });
  const interrupt = () => {
    bar.stop();
    out.note(`stopped following job ${id}; it goes on (media-service watch ${id})`);
    process.exit(EXIT.interrupted);
  };
  process.once("SIGINT", interrupt);
  let percent = 0;
  try {
    for await (const { event, data } of jobEvents(api, id)) {
      if (event === "status") {
        const status = String(data.status);
        bar.update(percent, { state: status, left: "" });
      } else if (event === "progress") {
        percent = Math.max(0, Math.min(100, Number(data.percent) || 0));
        const message = typeof data.message === "string" && data.message ? `: ${data.message}` : "";
        // The runner's estimate, once it has one: "about 40 s left | processing: converting".
        const eta = typeof data.eta_seconds === "number" ? `${describeTimeLeft(data.eta_seconds)} | ` : "";
        bar.update(percent, { state: `processing${message}`, left: eta });
      } else if (event === "complete") {
        // What a person reads: `state` (cancelled) where the API sends it, else the status.
        const state = String(data.state ?? data.status);
        bar.update(state === "completed" ? 100 : percent, {
          left: "",
          state:
            state === "completed"
              ? out.err.green(state)
              : state === "cancelled"
                ? out.err.yellow(state)
                : out.err.red(state),
        });
      }
    }
  } finally {
    bar.stop();
    process.off("SIGINT", interrupt);
  }
  return api.json<Job>("GET", `/jobs/${encodeURIComponent(id)}`);
}
