import { Type } from "../../core/typebox.js";
import { JobTypeSchema } from "../../core/jobs/records.js";
import { isEntryId } from "../../core/store/event-follower.js";
import type { StoreEvent } from "../../core/store/events.js";
import { canSee, shownBatchId, type Viewer } from "../../core/store/visibility.js";
import { shown } from "../../core/text.js";
import { viewerOf } from "../auth.js";
import type { ApiContext, App } from "../context.js";
import { API_KEY_SECURITY, errorResponses } from "../schemas.js";
import { eventStreamResponse, openEventStream, type EventStream, type OpenStreams } from "../sse.js";

/** How many missed events a stream resumed with Last-Event-ID is told at most. */
const RESUME_LIMIT = 1000;

const EventsQuery = Type.Object(
  {
    type: Type.Optional(JobTypeSchema),
    batch_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
);

/** The `job` event of a store event, or undefined for one that is not about a job. */
function jobChange(event: StoreEvent, viewer: Viewer): Record<string, unknown> | undefined {
  if (!("job_id" in event)) return undefined;
  return {
    id: event.job_id,
    type: event.type,
    status: event.status,
    ...(event.batch_id ? { batch_id: shownBatchId(event.batch_id, viewer) } : {}),
    ...(event.event === "job.cancelled" ? { cancelled: true } : {}),
    ...(event.event === "job.requeued" ? { reason: event.reason } : {}),
    ...(event.at ? { at: event.at } : {}),
  };
}

/**
 * GET /events: every change of the jobs the caller may see, as Server-Sent Events, from the store's
 * events stream (one follower per API process, however many streams are open). Each event's id is
 * its stream entry id, so a client that reconnects with Last-Event-ID is told what it missed.
 */
export function eventsRoutes(app: App, ctx: ApiContext, open: OpenStreams): void {
  app.get(
    "/events",
    {
      schema: {
        summary: "Follow every job over Server-Sent Events",
        description:
          "One `job` event per change of a job the API key may see: {id, type, status, batch_id?, cancelled?, reason?, at}. `type` and `batch_id` narrow it. Send `Last-Event-ID` when reconnecting to be told what was missed (up to 1000 changes); one that is not a position in the events stream is a 400. Comment lines are heartbeats.",
        tags: ["jobs"],
        security: API_KEY_SECURITY,
        querystring: EventsQuery,
        response: {
          200: eventStreamResponse(["job"], "The change as a JSON object", {
            description: "Its position in the events stream",
            required: true,
          }),
          ...errorResponses(400),
        },
      },
    },
    async (request, reply) => {
      const viewer = viewerOf(request);
      const { type, batch_id } = request.query;
      const lastEventId = request.headers["last-event-id"];
      if (lastEventId !== undefined && (typeof lastEventId !== "string" || !isEntryId(lastEventId))) {
        return reply.code(400).send({
          error: `Last-Event-ID ${shown(lastEventId, 80)} is not a position in the events stream: send the id: of an event of this stream (<ms>-<seq>, each part at most 2^64-1), or leave it out to follow from now`,
        });
      }
      const resume = lastEventId;
      // Events that come before the answer's head is written wait for it.
      let stream: EventStream | undefined = undefined;
      const send = (event: StoreEvent) => {
        if (!stream) return;
        if (type && "type" in event && event.type !== type) return;
        // batch_id as the caller knows it (keys.ts storedBatchId).
        if (batch_id && (!event.batch_id || shownBatchId(event.batch_id, viewer) !== batch_id)) return;
        if (!canSee(viewer, "client" in event ? event.client : undefined)) return;
        const change = jobChange(event, viewer);
        if (change) stream.write(`id: ${event.entryId}\nevent: job\ndata: ${JSON.stringify(change)}\n\n`);
      };
      const early: StoreEvent[] = [];
      const unsubscribe = await ctx.storeEvents.subscribe(
        (event) => (stream ? send(event) : early.push(event)),
        resume ? { id: resume, limit: RESUME_LIMIT } : undefined,
      );

      stream = openEventStream(request, reply, {
        heartbeatMs: ctx.config.server.sseHeartbeatMs,
        open,
        onEnd: unsubscribe,
      });
      for (const event of early.splice(0)) send(event);
      request.log.debug({ resume }, "events stream opened");
    },
  );
}
