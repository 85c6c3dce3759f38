import type { Readable } from "node:stream";
import { GetObjectCommand, type GetObjectCommandOutput } from "@aws-sdk/client-s3";
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "../../core/typebox.js";
import type { Job } from "../../core/jobs/records.js";
import {
  JOB_MEDIA,
  prefixOfEntry,
  stepOutput,
  WRITES_OUTPUT,
  WRITES_UNDER_PREFIX,
  type JobType,
  type MediaKind,
  type PipelineParameters,
} from "../../core/jobs/types.js";
import { addLogContext } from "../access-log.js";
import { viewerOf } from "../auth.js";
import type { ApiContext, App } from "../context.js";
import {
  PREVIEW,
  PreviewMaker,
  PreviewRefusal,
  previewEtag,
  readWhole,
  renderPreview,
  tooLarge,
  type PreviewOf,
} from "../previews.js";
import {
  API_KEY_SECURITY,
  DownloadQuery,
  errorResponse,
  errorResponses,
  IdParams,
  LadderParams,
  PreviewQuery,
} from "../schemas.js";

const s3Uri = (bucket: string, key: string) => `s3://${bucket}/${key}`;

/** What a request asks for: a job's source or output, or the output of one of a pipeline's steps. */
interface Asked {
  id: string;
  of: PreviewOf;
  step?: string | undefined;
}

/** An object of a job: where it lives, and what media it is. */
interface JobObject {
  bucket: string;
  key: string;
  media: MediaKind | null;
}

/** The extension of an output_url's last segment (the step's file), without its dot. */
function extensionOfUrl(url: string): string {
  const name = url.split("/").pop() ?? "";
  const dot = name.lastIndexOf(".");
  return dot < 0 ? "" : decodeURIComponent(name.slice(dot + 1));
}

/** Where the output of a pipeline's step lives, or the refusal (404, 409) when it has none. */
function stepObjectOf(job: Job, of: PreviewOf, step: string): JobObject {
  // 404, not 400: the query is well formed, and what it names does not exist (a step of a job that
  // has none; a step's own source, which is the job's or another step's output).
  if (job.type !== "pipeline")
    throw new PreviewRefusal(404, `step: job ${job.id} is ${job.type}; only a pipeline has steps`);
  if (of !== "output")
    throw new PreviewRefusal(
      404,
      "step: a step's output is asked for with of=output (its steps share the job's source)",
    );
  const parameters = job.parameters as unknown as PipelineParameters;
  const type = parameters.steps?.[step]?.type as JobType | undefined;
  if (!type || !(type in WRITES_OUTPUT)) throw new PreviewRefusal(404, `job ${job.id} has no step ${step}`);
  if (!WRITES_OUTPUT[type] || WRITES_UNDER_PREFIX[type])
    throw new PreviewRefusal(404, `step ${step} of job ${job.id} is ${type}, which writes no output file`);
  const record: Record<string, unknown> = job.result ?? {};
  const results = record.steps as Record<string, { output_url?: unknown; error?: unknown }> | undefined;
  const result = results?.[step];
  if (typeof result?.output_url !== "string") {
    const why = typeof result?.error === "string" ? result.error : `the job is ${job.status}`;
    throw new PreviewRefusal(409, `step ${step} of job ${job.id} has no output: ${why}`);
  }
  const where = stepOutput(parameters, step, extensionOfUrl(result.output_url));
  if (!where) throw new PreviewRefusal(404, `step ${step} of job ${job.id} writes no output file`);
  return { ...where, media: JOB_MEDIA[type].output };
}

/** Where the object a request is of lives, or the refusal (404, 409) when it has none. */
function objectOf(job: Job, asked: Asked): JobObject {
  const { of, step } = asked;
  if (step !== undefined) return stepObjectOf(job, of, step);
  if (of === "source")
    return { bucket: job.source_bucket, key: job.source_key, media: JOB_MEDIA[job.type].source };
  if (!WRITES_OUTPUT[job.type] || !job.dest_bucket || !job.dest_key) {
    throw new PreviewRefusal(404, `job ${job.id} is ${job.type}, which writes no output file`);
  }
  if (job.status !== "completed") {
    throw new PreviewRefusal(409, `job ${job.id} is ${job.status}; its output exists once it has completed`);
  }
  return { bucket: job.dest_bucket, key: job.dest_key, media: JOB_MEDIA[job.type].output };
}

/** The object store's answer to a GET, or the refusal naming the object (404, 416, 502). */
async function getObject(
  ctx: ApiContext,
  request: FastifyRequest,
  of: PreviewOf,
  where: { bucket: string; key: string },
  range?: string,
): Promise<GetObjectCommandOutput> {
  try {
    return await ctx.s3.send(
      new GetObjectCommand({ Bucket: where.bucket, Key: where.key, ...(range ? { Range: range } : {}) }),
    );
  } catch (err) {
    const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
    const status = e.$metadata?.httpStatusCode;
    const uri = s3Uri(where.bucket, where.key);
    if (e.name === "NoSuchKey" || e.name === "NotFound" || status === 404) {
      throw new PreviewRefusal(404, `${of} ${uri} not found`);
    }
    if (status === 416 || e.name === "InvalidRange") throw new RangeRefusal(`${of} ${uri}`);
    request.log.error(
      { err: { type: e.name, status }, bucket: where.bucket, key: where.key },
      "object store GET failed",
    );
    throw new PreviewRefusal(502, `the object store did not answer the GET of ${of} ${uri}`);
  }
}

class RangeRefusal extends Error {}

function refuse(request: FastifyRequest, reply: FastifyReply, err: unknown) {
  if (err instanceof RangeRefusal) {
    return reply.code(416).send({ error: `the Range asked for lies outside ${err.message}` });
  }
  if (!(err instanceof PreviewRefusal)) throw err;
  if (err.status === 503) {
    // An operator who sees many: previews are asked for faster than PREVIEW.concurrency makes them.
    request.log.warn({ status: 503, error: err.message }, "preview refused: as many being made as allowed");
    reply.header("Retry-After", String(PREVIEW.retryAfterSeconds));
  } else if (err.status !== 502) {
    request.log.info({ status: err.status, error: err.message }, "request refused");
  }
  return reply.code(err.status).send({ error: err.message });
}

/**
 * The part both routes share: the job the request names, as its caller may see it (404 otherwise),
 * and the object asked of it, given to `answer`; a refusal on the way becomes its error answer.
 */
async function withJobObject(
  ctx: ApiContext,
  request: FastifyRequest,
  reply: FastifyReply,
  asked: Asked,
  answer: (job: Job, where: JobObject) => Promise<FastifyReply>,
): Promise<FastifyReply> {
  const { id } = asked;
  addLogContext(request, { job_id: id });
  const job = await ctx.store.getJob(id, viewerOf(request));
  if (!job) return reply.code(404).send({ error: `job ${id} not found` });
  try {
    return await answer(job, objectOf(job, asked));
  } catch (err) {
    return refuse(request, reply, err);
  }
}

/** `attachment` with the key's last segment as the file name, in ASCII and in full (RFC 6266). */
function disposition(key: string): string {
  const name = key.split("/").filter(Boolean).at(-1) ?? "download";
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

const SINGLE_RANGE = /^bytes=(\d+-\d*|-\d+)$/;

const BINARY = { schema: { type: "string", format: "binary" } };

/**
 * A job's objects through the API, with the job's own authorization: small previews of its images
 * and downloads of its source and output. A browser that reaches only the API (an ingress, a
 * port-forward) needs no route to the object store.
 */
export function objectRoutes(app: App, ctx: ApiContext): void {
  const maker = new PreviewMaker();

  app.get(
    "/jobs/:id/preview",
    {
      schema: {
        summary: "A small preview of a job's source or output image",
        description: `A WebP image of at most ${PREVIEW.maxSide} pixels on its longer side, oriented as the image's EXIF says: of the source of an image job, or of the output of a job that writes an image (a video_thumbnail's frame included), or with \`step\` of the image a pipeline's step wrote. Made from at most ${PREVIEW.maxSourceBytes / 1024 ** 2} MiB and \`limits.max_input_pixels\`; cached in Redis for ${PREVIEW.cacheTtlMs / 3_600_000} h (at most ${PREVIEW.cacheMaxEntries} previews), and by the browser with an ETag (\`Cache-Control: private\`). A video or audio has no preview (404). Each API process makes ${PREVIEW.concurrency} previews at once; beyond that it answers 503 with Retry-After.`,
        tags: ["jobs"],
        security: API_KEY_SECURITY,
        params: IdParams,
        querystring: PreviewQuery,
        response: {
          200: Type.Unsafe({
            description: "The preview",
            headers: { ETag: { type: "string" } },
            content: { "image/webp": BINARY },
          }),
          304: Type.Null({ description: "Not modified: the If-None-Match named this preview" }),
          ...errorResponses(400, 404, 409, 502),
          404: errorResponse(
            "No such job (or not this client's), a type that writes no output file, an object that is not there, or a video or audio, which has no preview",
          ),
          409: errorResponse("The output was asked for and the job has not completed"),
          422: errorResponse(
            "The object cannot be previewed: it is not an image that decodes, it has more pixels than limits.max_input_pixels, or it is larger than a preview is made of",
          ),
          503: errorResponse(
            "The API is making as many previews as it makes at once, the queue store is unavailable, or the server is shutting down; Retry-After says when to try again",
          ),
        },
      },
    },
    (request, reply) => {
      const { id } = request.params;
      const { of, step } = request.query;
      return withJobObject(ctx, request, reply, { id, of, step }, async (job, where) => {
        const { media } = where;
        if (media === "video" || media === "audio") {
          const what =
            step !== undefined ? `step ${step} of job ${id} writes` : `the ${of} of a ${job.type} job is`;
          throw new PreviewRefusal(
            404,
            `${what} ${media === "audio" ? "audio" : "a video"}, which has no preview${of === "source" && job.type === "video_thumbnail" ? "; the output (the frame) has one" : ""}`,
          );
        }
        // A step's preview is cached as its own object's: under "<job id>/<step>".
        const cached = step !== undefined ? `${id}/${step}` : id;
        let preview = await ctx.store.cachedPreview(cached, of);
        let cache = "hit";
        if (!preview) {
          cache = "miss";
          preview = await maker.run(`${cached}:${of}`, async () => {
            const object = await getObject(ctx, request, of, where);
            const what = `${of} ${s3Uri(where.bucket, where.key)}`;
            const size = object.ContentLength;
            if (size !== undefined && size > PREVIEW.maxSourceBytes) {
              (object.Body as Readable | undefined)?.destroy();
              throw tooLarge(what, size, PREVIEW.maxSourceBytes);
            }
            const bytes = await readWhole(object.Body as Readable, PREVIEW.maxSourceBytes, what);
            const made = await renderPreview(bytes, ctx.config.limits.maxInputPixels, what);
            await ctx.store.cachePreview(cached, of, made, PREVIEW.cacheTtlMs, PREVIEW.cacheMaxEntries);
            request.log.debug(
              { job_id: id, of, source_bytes: bytes.length, bytes: made.length },
              "preview made",
            );
            return made;
          });
        }
        const etag = previewEtag(preview);
        reply
          .header("Cache-Control", `private, max-age=${PREVIEW.browserMaxAgeSeconds}`)
          .header("Vary", "X-API-Key, Authorization")
          .header("ETag", etag)
          .header("X-Preview-Cache", cache);
        const match = request.headers["if-none-match"];
        if (match && match.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag)) {
          return reply.code(304).send(null);
        }
        return reply.type("image/webp").send(preview);
      });
    },
  );

  app.get(
    "/jobs/:id/download",
    {
      schema: {
        summary: "Download a job's output or source through the API",
        description:
          "The object (with `step`, the file a pipeline's step wrote) streamed through the API, with its Content-Type, Content-Length and a Content-Disposition naming the key's last segment: for a browser or client that reaches the API and not the object store (GET /jobs/{id}/output and /links give presigned store links instead). One byte range (`Range: bytes=…`) answers 206. The output exists once the job has completed (409 before; 404 for a type that writes no file).",
        tags: ["jobs"],
        security: API_KEY_SECURITY,
        params: IdParams,
        querystring: DownloadQuery,
        response: {
          200: Type.Unsafe({
            description: "The object",
            headers: {
              "Content-Disposition": { type: "string" },
              "Content-Length": { type: "integer" },
              ETag: { type: "string" },
            },
            content: { "application/octet-stream": BINARY },
          }),
          206: Type.Unsafe({
            description: "The byte range asked for (Content-Range says which)",
            content: { "application/octet-stream": BINARY },
          }),
          ...errorResponses(400, 404, 409, 416, 502),
        },
      },
    },
    (request, reply) => {
      const { id } = request.params;
      const { of, step } = request.query;
      return withJobObject(ctx, request, reply, { id, of, step }, async (_job, where) => {
        const asked = request.headers.range;
        const range = asked && SINGLE_RANGE.test(asked.trim()) ? asked.trim() : undefined;
        const object = await getObject(ctx, request, of, where, range);
        if (object.ContentRange) reply.code(206).header("Content-Range", object.ContentRange);
        if (object.ContentLength !== undefined) reply.header("Content-Length", object.ContentLength);
        if (object.ETag) reply.header("ETag", object.ETag);
        if (object.LastModified) reply.header("Last-Modified", object.LastModified.toUTCString());
        return reply
          .header("Accept-Ranges", "bytes")
          .header("Cache-Control", "private, no-cache")
          .header("Content-Disposition", disposition(where.key))
          .type(object.ContentType ?? "application/octet-stream")
          .send(object.Body as Readable);
      });
    },
  );

  app.get(
    "/jobs/:id/ladder/*",
    {
      schema: {
        summary: "An object of a job's ladder through the API",
        description:
          "An object a job that writes many (video_adaptive) wrote under its dest_prefix, by its path under the prefix as its playlists name it: the master playlist, a media playlist, a segment, the MPD. Relative URIs in the playlists resolve to this route, so a player given the master playlist's URL here (and the API key on its requests) plays the ladder through the API alone. Once the job has completed (409 before).",
        tags: ["jobs"],
        security: API_KEY_SECURITY,
        params: LadderParams,
        response: {
          200: Type.Unsafe({ description: "The object", content: { "application/octet-stream": BINARY } }),
          ...errorResponses(400, 404, 409, 502),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const path = request.params["*"];
      addLogContext(request, { job_id: id });
      const job = await ctx.store.getJob(id, viewerOf(request));
      if (!job) return reply.code(404).send({ error: `job ${id} not found` });
      try {
        if (!WRITES_UNDER_PREFIX[job.type] || !job.dest_bucket || !job.dest_key) {
          throw new PreviewRefusal(404, `job ${id} is ${job.type}, which writes no ladder`);
        }
        if (job.status !== "completed") {
          throw new PreviewRefusal(
            409,
            `job ${id} is ${job.status}; its ladder exists once it has completed`,
          );
        }
        const where = { bucket: job.dest_bucket, key: `${prefixOfEntry(job.dest_key)}/${path}` };
        const object = await getObject(ctx, request, "output", where);
        if (object.ContentLength !== undefined) reply.header("Content-Length", object.ContentLength);
        if (object.ETag) reply.header("ETag", object.ETag);
        return reply
          .header("Cache-Control", "private, max-age=3600")
          .header("Vary", "X-API-Key, Authorization")
          .type(object.ContentType ?? "application/octet-stream")
          .send(object.Body as Readable);
      } catch (err) {
        return refuse(request, reply, err);
      }
    },
  );
}
