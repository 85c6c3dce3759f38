import type { FastifyReply, FastifyRequest } from "fastify";

/**
 * The OpenAPI answer (200) of an event stream: the schema of one event, its `event` one of `events`,
 * its `data` a JSON object, and its `id` (required when `id.required`).
 */
export function eventStreamResponse(
  events: readonly string[],
  data: string,
  id: { description: string; pattern?: string; required?: boolean },
) {
  const { required, ...idSchema } = id;
  return {
    description: "An event stream",
    // One event: what its fields hold (OpenAPI 3.0 has no itemSchema; the schema of a
    // text/event-stream is read per event).
    content: {
      "text/event-stream": {
        schema: {
          type: "object",
          required: ["event", "data", ...(required ? ["id"] : [])],
          properties: {
            event: { type: "string", enum: [...events] },
            data: { type: "string", description: data },
            id: { type: "string", ...idSchema },
          },
        },
      },
    },
  };
}

/** Open Server-Sent Events answers, so shutdown can end them cleanly. */
export class OpenStreams {
  private readonly streams = new Set<() => void>();
  add(end: () => void): () => void {
    this.streams.add(end);
    return () => this.streams.delete(end);
  }
  get size(): number {
    return this.streams.size;
  }
  endAll(): void {
    for (const end of [...this.streams]) end();
  }
}

/** An event stream being answered: written to until it ends, once. */
export interface EventStream {
  /** Writes text (whole frames); nothing once the stream has ended. */
  write: (text: string) => void;
  /** Ends the stream (idempotent); its `onEnd` runs once. */
  end: () => void;
  readonly ended: boolean;
}

/**
 * Takes the answer over as a text/event-stream: writes the head and the reconnection delay, sends a
 * heartbeat comment every `heartbeatMs` (so proxies keep an idle stream open), and ends the stream
 * when the client goes away, the socket fails or the server shuts down (`onShutdown` may write a
 * last frame first). `onEnd` releases what the stream held (subscriptions).
 */
export function openEventStream(
  request: FastifyRequest,
  reply: FastifyReply,
  options: {
    heartbeatMs: number;
    open: OpenStreams;
    onEnd: () => void;
    onShutdown?: (stream: EventStream) => void;
  },
): EventStream {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache, no-transform",
    Connection: "keep-alive",
    "X-Accel-Buffering": "no",
    "X-Request-ID": request.id,
  });
  res.write("retry: 3000\n\n");
  let ended = false;
  const heartbeat = setInterval(() => {
    if (!ended) res.write(`: heartbeat ${new Date().toISOString()}\n\n`);
  }, options.heartbeatMs);
  heartbeat.unref();
  const stream: EventStream = {
    write: (text) => {
      if (!ended) res.write(text);
    },
    end: () => {
      if (ended) return;
      ended = true;
      clearInterval(heartbeat);
      forget();
      options.onEnd();
      if (!res.writableEnded) res.end();
    },
    get ended() {
      return ended;
    },
  };
  const forget = options.open.add(() => {
    options.onShutdown?.(stream);
    stream.end();
  });
  request.raw.on("close", stream.end);
  res.on("error", stream.end);
  return stream;
}
