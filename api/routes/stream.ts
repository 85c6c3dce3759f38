import type { Job } from "../../core/jobs/records.js";
import type { JobEventMessage } from "../../core/store/job-events.js";
import { viewerOf } from "../auth.js";
import type { ApiContext, App } from "../context.js";
import { API_KEY_SECURITY, errorResponses, IdParams } from "../schemas.js";
import { eventStreamResponse, openEventStream, type OpenStreams } from "../sse.js";

/** The events a job's stream sends. */
const STREAM_EVENTS = ["status", "progress", "complete", "error"] as const;

function frame(event: (typeof STREAM_EVENTS)[number], data: unknown, id?: number): string {
  return `${id !== undefined ? `id: ${id}\n` : ""}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

function completeData(job: Job): Record<string, unknown> {
  return job.status === "completed"
    ? { status: job.status, state: job.state ?? job.status, result: job.result ?? {} }
    : {
        status: job.status,
        state: job.state ?? job.status,
        result: job.result ?? {},
        error: job.error ?? "job failed",
      };
}

/**
 * GET /jobs/{id}/stream. Subscribes before it reads the job, and numbers both: the snapshot holds
 * the job's change counter (seq), and messages at or below it are dropped, so no change is lost
 * or told twice between the read and the subscription.
 */
export function streamRoutes(app: App, ctx: ApiContext, open: OpenStreams): void {
  app.get(
    "/jobs/:id/stream",
    {
      schema: {
        summary: "Follow a job over Server-Sent Events",
        description:
          "Events: `status` {status, message}, `progress` {percent, message, eta_seconds?, steps?} (eta_seconds: the runner's estimate of the seconds left, once it can tell; steps: a pipeline's percent per step), `complete` {status, state, result, error?} (then the stream ends; state is cancelled for a cancelled job), `error` {error}. Comment lines are heartbeats.",
        tags: ["jobs"],
        security: API_KEY_SECURITY,
        params: IdParams,
        // The stream is text/event-stream; every error answer is JSON (errorResponses).
        response: {
          200: eventStreamResponse(STREAM_EVENTS, "The event's fields as a JSON object", {
            pattern: "^[0-9]+$",
            description: "Position in the job's events",
          }),
          ...errorResponses(400, 404),
        },
      },
    },
    async (request, reply) => {
      const id = request.params.id;
      const early: JobEventMessage[] = [];
      let deliver: (m: JobEventMessage) => void = (m) => early.push(m);
      const unsubscribe = await ctx.events.subscribe(id, (m) => deliver(m));
      let snapshot: Awaited<ReturnType<typeof ctx.store.getJobWithSeq>>;
      try {
        snapshot = await ctx.store.getJobWithSeq(id, viewerOf(request));
      } catch (err) {
        await unsubscribe();
        throw err;
      }
      if (!snapshot) {
        await unsubscribe();
        return reply.code(404).send({ error: `job ${id} not found` });
      }

      const log = request.log.child({ job_id: id });
      const res = openEventStream(request, reply, {
        heartbeatMs: ctx.config.server.sseHeartbeatMs,
        open,
        onEnd: () => {
          void unsubscribe();
          log.debug("sse stream closed");
        },
        onShutdown: (stream) =>
          stream.write(frame("error", { error: "server is shutting down; reconnect to resume" })),
      });
      const finish = res.end;

      const sendComplete = async (seq?: number) => {
        const job = await ctx.store.getJob(id);
        if (res.ended) return;
        if (job) res.write(frame("complete", completeData(job), seq));
        else res.write(frame("error", { error: `job ${id} no longer exists` }));
        finish();
      };

      const { job, seq } = snapshot;
      if (job.status === "completed" || job.status === "failed") {
        res.write(frame("complete", completeData(job), seq));
        finish();
        return;
      }
      // The snapshot's last frame carries its seq as id, so ids along a stream only increase.
      const withProgress = job.status === "processing" && job.progress !== undefined;
      res.write(
        frame(
          "status",
          { status: job.status, message: `job is ${job.status}` },
          withProgress ? undefined : seq,
        ),
      );
      if (withProgress) {
        const eta = job.eta_seconds !== undefined ? { eta_seconds: job.eta_seconds } : {};
        const steps = job.steps_progress !== undefined ? { steps: job.steps_progress } : {};
        res.write(frame("progress", { percent: job.progress, message: "", ...eta, ...steps }, seq));
      }

      let lastSeq = seq;
      const handle = (m: JobEventMessage) => {
        if (res.ended || m.seq <= lastSeq) return;
        lastSeq = m.seq;
        if (m.event === "complete") {
          void sendComplete(m.seq).catch((err) => {
            log.warn({ err }, "sse: reading the finished job failed");
            res.write(frame("error", { error: "could not read the job's result" }));
            finish();
          });
        } else {
          res.write(frame(m.event, m.data, m.seq));
        }
      };
      deliver = handle;
      for (const m of early) handle(m);

      log.debug("sse stream opened");
    },
  );
}
