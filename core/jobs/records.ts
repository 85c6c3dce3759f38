import { CloneType, Type, type Static, type TSchema } from "../typebox.js";
import { JOB_DEFINITIONS } from "../../jobs/registry.js";
import { BATCH_STATUSES, EXECUTION_CLASSES, JOB_STATES, JOB_STATUSES, JOB_TYPES } from "./types.js";
import { Enum } from "./enum.js";
import { DEFAULT_BOUNDS, ERROR_MESSAGE, perBounds, quantityPattern, type SchemaBounds } from "./bounds.js";
import { BUCKET_PATTERN, NO_CONTROL_PATTERN } from "./patterns.js";

export { BUCKET_PATTERN, NO_CONTROL_PATTERN };

export const JobTypeSchema = Enum(JOB_TYPES, { description: "Job type; also the name of its queue" });
export const JobStatusSchema = Enum(JOB_STATUSES);
export const BatchStatusSchema = Enum(BATCH_STATUSES);
export const JobStateSchema = Enum(JOB_STATES, {
  description:
    "What a person reads of the job: its status, except that a failed job that was cancelled (by request, or by its fail_fast batch) is cancelled",
});
const Timestamp = (description: string) => Type.String({ format: "date-time", description });

export const Bucket = (description: string) => Type.String({ pattern: BUCKET_PATTERN, description });
export const Key = (description: string) =>
  Type.String({ minLength: 1, maxLength: 1024, pattern: NO_CONTROL_PATTERN, description });

export const SourceFields = {
  source_bucket: Bucket("Bucket holding the source file"),
  source_key: Key("Key of the source file"),
};
export const DestinationFields = {
  dest_bucket: Bucket("Bucket for the output file"),
  dest_key: Key("Key for the output file"),
};
/**
 * Where a type that writes many objects writes them (video_adaptive): a prefix, with at least one
 * character other than `/`. Its job is recorded with dest_key: the object a client starts from.
 */
export const DestinationPrefixFields = {
  dest_bucket: Bucket("Bucket for the objects the job writes"),
  dest_prefix: Type.String({
    minLength: 1,
    maxLength: 1000,
    pattern: "^(?=[^/]|.*[^/])[^\\u0000-\\u001f\\u007f-\\u009f]*$",
    description:
      "Key prefix the job writes its objects under (a trailing `/` or none: the same); the job's dest_key is the key of its entry object under it",
  }),
};

// A webhook target: an absolute http or https URL whose host is a DNS name (its last label starting
// with a letter), a dotted IPv4 address or a bracketed IPv6 address, with an optional port (up to
// 65535), user information, path, query and fragment, and no white space. Every string it matches
// is a URL the WHATWG parser accepts with that host (test/unit/schema-patterns.test.ts checks it):
// the schema, the document and the server refuse the same strings. Labels starting with xn-- are
// left out: the parser refuses those that are not valid Punycode.
const H16 = "[0-9A-Fa-f]{1,4}";
const DEC_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
const IPV4 = `${DEC_OCTET}(?:\\.${DEC_OCTET}){3}`;
const LS32 = `(?:${H16}:${H16}|${IPV4})`;
const IPV6 = [
  `(?:${H16}:){6}${LS32}`,
  `::(?:${H16}:){5}${LS32}`,
  `(?:${H16})?::(?:${H16}:){4}${LS32}`,
  `(?:(?:${H16}:){0,1}${H16})?::(?:${H16}:){3}${LS32}`,
  `(?:(?:${H16}:){0,2}${H16})?::(?:${H16}:){2}${LS32}`,
  `(?:(?:${H16}:){0,3}${H16})?::${H16}:${LS32}`,
  `(?:(?:${H16}:){0,4}${H16})?::${LS32}`,
  `(?:(?:${H16}:){0,5}${H16})?::${H16}`,
  `(?:(?:${H16}:){0,6}${H16})?::`,
].join("|");
const LABEL = "(?![Xx][Nn]--)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?";
const LAST_LABEL = "(?![Xx][Nn]--)[A-Za-z](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?";
const HOST = `(?:(?:${LABEL}\\.)*${LAST_LABEL}\\.?|${IPV4}|\\[(?:${IPV6})\\])`;
const PORT = "(?::(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4}))?";
const USERINFO = "(?:[A-Za-z0-9._~!$&'()*+,;=:%-]*@)?";
export const WEBHOOK_URL_PATTERN = `^[Hh][Tt][Tt][Pp][Ss]?://${USERINFO}${HOST}${PORT}(?:[/?#][^\\u0000-\\u0020\\u007f]*)?$`;
export const WEBHOOK_URL_MAX_LENGTH = 2048;
export const WebhookUrl = (description: string) =>
  Type.String({ maxLength: WEBHOOK_URL_MAX_LENGTH, pattern: WEBHOOK_URL_PATTERN, description });

/** A job's place in its queue: higher runs first; equal priorities keep submission order. */
export const PRIORITY = { min: -50, max: 50, default: 0 } as const;
export const Priority = (description: string) =>
  Type.Integer({ minimum: PRIORITY.min, maximum: PRIORITY.max, description });

/** Optional fields accepted on every job submission, single or batch entry, with the configured bounds. */
export const submissionOptionFields = perBounds((bounds: SchemaBounds) => {
  const quantity = (resource: "cpu" | "memory", example: string) => {
    const max = bounds.maxResources[resource];
    const where = `kubernetes.max_resources.${resource}`;
    return Type.Optional(
      Type.String({
        // The pattern itself holds the maximum (quantityPattern): the document says it exactly.
        pattern: quantityPattern(resource, max),
        description: `${resource === "cpu" ? "CPU" : "Memory"} for this job, e.g. ${example}: more than zero, at most ${max} (${where}); ${resource === "cpu" ? "millicores, or cores with up to three decimals" : "bytes, or a decimal (k, M, G, …) or binary (Ki, Mi, Gi, …) suffix with up to three decimals"}`,
        [ERROR_MESSAGE]: `must be a quantity such as ${example}, more than zero and at most ${max} (${where}); got {value}`,
      }),
    );
  };
  return {
    webhook_url: Type.Optional(
      WebhookUrl("Receives a job-completion notification: an absolute http or https URL"),
    ),
    webhook_style: Type.Optional(
      Enum(["default", "chat", "slack"], {
        description: "Payload style: default, or chat (a Slack-compatible message; `slack` is an alias)",
      }),
    ),
    request_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        pattern: NO_CONTROL_PATTERN,
        description: "Caller-chosen identifier for tracing",
      }),
    ),
    resources: Type.Optional(
      Type.Object(
        { cpu: quantity("cpu", "500m or 2"), memory: quantity("memory", "512Mi or 2Gi") },
        { additionalProperties: false, description: "Per-job resources, bounded by the configured maximums" },
      ),
    ),
    execution_class: Type.Optional(
      Enum(EXECUTION_CLASSES, {
        description:
          "Where this job runs, when the warm runner pool is enabled and its type may use it (executor.pool.classes not `job`): job (its own run), pool (a warm pool worker) or auto (the pool when the job fits it); default: its type's class",
      }),
    ),
    priority: Type.Optional(
      Priority(
        `Order in the job type's queue, ${PRIORITY.min} to ${PRIORITY.max}: higher runs first, equal priorities in submission order; default ${PRIORITY.default}`,
      ),
    ),
    timeout_seconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: bounds.maxTimeoutSeconds,
        description: `Processing time limit in seconds, at most ${bounds.maxTimeoutSeconds} (limits.max_timeout_seconds)`,
        [ERROR_MESSAGE]: {
          maximum: `must be at most ${bounds.maxTimeoutSeconds} (limits.max_timeout_seconds)`,
        },
      }),
    ),
  };
});
/** The submission options of the default configuration. */
export const SubmissionOptionFields = submissionOptionFields(DEFAULT_BOUNDS);

export const SubmitResponse = Type.Object(
  {
    job_id: Type.String({ description: "New job identifier" }),
    status: Type.Literal("pending"),
    message: Type.String(),
    queue_position: Type.Optional(
      Type.Integer({ minimum: 1, description: "Place in the job type's queue when it was accepted" }),
    ),
  },
  { $id: "SubmitResponse" },
);

export const RetriedAlreadyResponse = Type.Object(
  {
    job_id: Type.String({ description: "The job that retries it already (its `retried_as`)" }),
    status: JobStatusSchema,
    message: Type.String({ description: "job <id> was retried already as <job_id>" }),
  },
  {
    $id: "RetriedAlreadyResponse",
    description:
      'A retry of a job retried before: its existing retry, and nothing new was made; send {"force": true} to make another',
  },
);
export type RetriedAlreadyResponse = Static<typeof RetriedAlreadyResponse>;

/**
 * The result shapes of the job types, named in the OpenAPI document so readers see every one: each
 * type's (jobs/<type>/definition.ts), described by the types that have it, in the registry's order.
 */
export const RESULT_SCHEMAS: Record<string, TSchema> = (() => {
  const shapes = new Map<string, { schema: TSchema; types: string[] }>();
  for (const { name, result } of JOB_DEFINITIONS) {
    const shape = shapes.get(result.name) ?? { schema: result.schema, types: [] };
    shape.types.push(name);
    shapes.set(result.name, shape);
  }
  return Object.fromEntries(
    [...shapes].map(([name, { schema, types }]) => [
      name,
      CloneType(schema, { description: types.join(", ") }),
    ]),
  );
})();

export const WebhookDelivery = Type.Object(
  {
    id: Type.String({ description: "The webhook-id header: the same on every attempt, for deduplication" }),
    status: Enum(["pending", "delivered", "failed"] as const, {
      description: "pending: another attempt is scheduled; delivered; failed: given up",
    }),
    attempts: Type.Integer({ description: "Delivery attempts made so far" }),
    last_attempt_at: Timestamp("When the last attempt was made"),
    last_result: Type.String({ description: 'What the last attempt got, e.g. "HTTP 200" or "HTTP 503"' }),
    last_status_code: Type.Optional(Type.Integer({ description: "HTTP status of the last attempt" })),
    next_attempt_at: Type.Optional(Timestamp("When the next attempt is due (status pending)")),
    delivered_at: Type.Optional(Timestamp("When the receiver accepted it")),
  },
  { $id: "WebhookDelivery", description: "The delivery of this record's webhook" },
);
export type WebhookDelivery = Static<typeof WebhookDelivery>;

export const Job = Type.Object(
  {
    id: Type.String({ description: "Job identifier (UUID)" }),
    type: JobTypeSchema,
    status: JobStatusSchema,
    // Optional to the type only: every record the API answers has it (codec.ts decodeJob).
    state: Type.Optional(JobStateSchema),
    source_bucket: Type.String(),
    source_key: Type.String(),
    dest_bucket: Type.Optional(Type.String()),
    dest_key: Type.Optional(Type.String()),
    parameters: Type.Object(
      {},
      { additionalProperties: true, description: "As submitted, defaults applied" },
    ),
    result: Type.Optional(
      Type.Object(
        {},
        {
          additionalProperties: true,
          description: `Present when completed, and on a failed pipeline with keep_partial (its completed steps' results, the failed step's error); its shape depends on the job type (${Object.keys(RESULT_SCHEMAS).join(", ")})`,
        },
      ),
    ),
    error: Type.Optional(Type.String({ description: "Present when failed" })),
    progress: Type.Optional(
      Type.Number({ minimum: 0, maximum: 100, description: "Percent, while processing" }),
    ),
    eta_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          "While processing: the runner's estimate of the seconds left, from the job's own rate of progress; absent until it can tell",
      }),
    ),
    steps_progress: Type.Optional(
      Type.Record(Type.String(), Type.Number({ minimum: 0, maximum: 100 }), {
        description:
          "A pipeline, while processing: each step's percent by name, beside the overall `progress` (docs/job-types.md, pipeline)",
      }),
    ),
    batch_id: Type.Optional(Type.String()),
    request_id: Type.Optional(Type.String()),
    webhook_url: Type.Optional(Type.String()),
    webhook_style: Type.Optional(Type.String()),
    resources: Type.Optional(
      Type.Object({ cpu: Type.Optional(Type.String()), memory: Type.Optional(Type.String()) }),
    ),
    timeout_seconds: Type.Optional(Type.Integer()),
    max_source_bytes: Type.Optional(
      Type.Integer({
        description:
          "The largest source the job may read, in bytes, when its client has a `max_source_bytes` of its own (server.clients)",
      }),
    ),
    execution_class: Type.Optional(Enum(EXECUTION_CLASSES, { description: "The class the job asked for" })),
    priority: Type.Optional(
      Type.Integer({
        description: `Its priority in its queue, when it was given one other than ${PRIORITY.default}`,
      }),
    ),
    attempts: Type.Optional(Type.Integer({ description: "Times the job was started" })),
    created_at: Timestamp("When the job was accepted"),
    updated_at: Timestamp("Last change"),
    started_at: Type.Optional(Timestamp("When processing started")),
    completed_at: Type.Optional(Timestamp("When the job finished")),
    cancelled_at: Type.Optional(
      Timestamp("When the job was cancelled (by request, or by its fail_fast batch); error says which"),
    ),
    duration_seconds: Type.Optional(Type.Number({ description: "Processing time in seconds" })),
    retry_of: Type.Optional(Type.String({ description: "The failed job this one retries" })),
    retried_as: Type.Optional(
      Type.String({
        description:
          "The job that retries this failed one (POST /jobs/{id}/retry); after a forced retry, the newest",
      }),
    ),
    webhook_delivery: Type.Optional(Type.Ref(WebhookDelivery)),
    template: Type.Optional(
      Type.Object(
        {
          name: Type.String({ description: "The template's name" }),
          version: Type.Integer({ minimum: 1, description: "The version the job used" }),
        },
        {
          description:
            "The template the job was submitted with (its parameters are the template's, resolved at submit, with the overrides it allowed: a later version changes nothing of this job)",
        },
      ),
    ),
  },
  { $id: "Job" },
);
export type Job = Static<typeof Job>;

export const JobSummary = Type.Object(
  {
    id: Type.String(),
    type: JobTypeSchema,
    status: JobStatusSchema,
    state: JobStateSchema,
    created_at: Type.String(),
    source: Type.Optional(Type.String({ description: "The source file: source_bucket/source_key" })),
    output: Type.Optional(
      Type.String({ description: "The output file, for a job that names one: dest_bucket/dest_key" }),
    ),
    duration_seconds: Type.Optional(
      Type.Number({ description: "Processing time in seconds, once the job has ended after starting" }),
    ),
    error: Type.Optional(
      Type.String({
        description: "Present when failed: the job's error, cut to 200 characters (its record has all of it)",
      }),
    ),
  },
  { $id: "JobSummary" },
);
export type JobSummary = Static<typeof JobSummary>;

const CancelledCount = (what: string) =>
  Type.Integer({
    description: `Of the failed ${what}, those that were cancelled (by request, or by their fail_fast batch); failed jobs kept from before this count existed are not in it`,
  });
export const Batch = Type.Object(
  {
    id: Type.String(),
    status: BatchStatusSchema,
    total_jobs: Type.Integer(),
    pending: Type.Integer({ description: "Jobs waiting to start" }),
    processing: Type.Integer({ description: "Jobs running now" }),
    completed: Type.Integer(),
    failed: Type.Integer({ description: "Failed jobs, the cancelled ones included" }),
    cancelled: CancelledCount("jobs of the batch"),
    fail_fast: Type.Boolean(),
    webhook_url: Type.Optional(Type.String()),
    stopped_by: Type.Optional(
      Type.String({ description: "With fail_fast: the job whose failure stopped the batch" }),
    ),
    created_at: Type.String({ format: "date-time" }),
    updated_at: Type.String({ format: "date-time" }),
    completed_at: Type.Optional(Type.String({ format: "date-time" })),
    cancelled_at: Type.Optional(
      Type.String({ format: "date-time", description: "When the batch was cancelled by request" }),
    ),
    webhook_delivery: Type.Optional(Type.Ref(WebhookDelivery)),
  },
  { $id: "Batch" },
);
export type Batch = Static<typeof Batch>;

export const QueueEntry = Type.Object({
  name: Type.String(),
  pending: Type.Integer(),
  processing: Type.Integer(),
  completed: Type.Integer(),
  failed: Type.Integer({ description: "Failed jobs, the cancelled ones included" }),
  cancelled: CancelledCount("jobs of the queue"),
});
/** A client's jobs now and its limits (server.clients), as GET /queue/stats shows them. */
export const ClientFigures = Type.Object({
  name: Type.String({ description: 'The client\'s name; "-" for jobs submitted without authentication' }),
  pending: Type.Integer({ description: "Its jobs waiting in the queues" }),
  running: Type.Integer({
    description: "Its jobs claimed by an executor or processing (what `max_running` counts)",
  }),
  refused: Type.Record(Type.String(), Type.Integer(), {
    description:
      "Submissions its limits refused since the store began, by limit (`max_pending`, `job_types`, `max_priority`)",
  }),
  weight: Type.Integer({ description: "Its fair share: turns of `weight` jobs within a priority level" }),
  max_running: Type.Optional(Type.Integer()),
  max_pending: Type.Optional(Type.Integer()),
  job_types: Type.Optional(Type.Array(Enum(JOB_TYPES))),
  max_priority: Type.Optional(Type.Integer()),
});
export type ClientFigures = Static<typeof ClientFigures>;

export const QueueStats = Type.Object(
  {
    total_jobs: Type.Integer(),
    total_pending: Type.Integer(),
    total_processing: Type.Integer(),
    total_completed: Type.Integer(),
    total_failed: Type.Integer(),
    total_cancelled: CancelledCount("jobs"),
    queues: Type.Record(Type.String(), QueueEntry),
    clients: Type.Optional(
      Type.Array(ClientFigures, {
        description:
          "Per client, its jobs waiting and running and its limits (docs/api.md, Clients' limits and fair share): every named client for an admin, its own for a client that is not one; absent without named clients",
      }),
    ),
  },
  { $id: "QueueStats" },
);
export type QueueStats = Static<typeof QueueStats>;

const Quantile = (what: string) =>
  Type.Union([Type.Number(), Type.Null()], {
    description: `${what} of the jobs that completed in the point's minutes, in seconds, estimated from the duration histogram; null when none did`,
  });
const HistoryFigureFields = {
  completed: Type.Integer({ description: "Jobs that completed in the point's minutes" }),
  failed: Type.Integer({ description: "Jobs that failed in the point's minutes (cancelled ones included)" }),
  cancelled: Type.Integer({
    description: "Of the jobs that failed in the point's minutes, those that were cancelled",
  }),
  p50_seconds: Quantile("Median duration"),
  p95_seconds: Quantile("95th percentile duration"),
  pending: Type.Integer({ description: "Jobs waiting in the queue as the point's last minute ended" }),
};
export const HistoryFigures = Type.Object(HistoryFigureFields);
export type HistoryFigures = Static<typeof HistoryFigures>;

export const History = Type.Object(
  {
    interval_seconds: Type.Integer({
      description: "The length of each point: a minute, or `step` minutes",
    }),
    points: Type.Array(
      Type.Object({
        at: Timestamp("The start of the point's first minute"),
        ...HistoryFigureFields,
        by_type: Type.Record(Type.String(), HistoryFigures, { description: "The same figures per job type" }),
      }),
      {
        description:
          "One point per minute (per `step` minutes), oldest first; the last holds the current minute",
      },
    ),
    webhooks: Type.Record(Type.String(), Type.Integer(), {
      description:
        "Webhook delivery attempts since the store began, by result: delivered, retry, failed, refused",
    }),
  },
  { $id: "History" },
);
export type History = Static<typeof History>;

/** What can happen to a job, as its timeline tells it (GET /jobs/{id}/events). */
export const TIMELINE_EVENTS = [
  "submitted",
  "claimed",
  "pooled",
  "started",
  "progress",
  "requeued",
  "completed",
  "failed",
  "cancelled",
  "retried",
  "webhook",
] as const;
export const TimelineEntry = Type.Object(
  {
    at: Timestamp("When it happened"),
    event: Enum(TIMELINE_EVENTS),
    message: Type.Optional(
      Type.String({
        description:
          "claimed: by whom; pooled: why the job went to the warm runner pool; progress: the runner's words; requeued: why; failed, cancelled: the error; retried: the id of the job that retries it; webhook: what the receiver answered",
      }),
    ),
    percent: Type.Optional(Type.Number({ description: "progress: how far, 0-100" })),
    attempt: Type.Optional(
      Type.Integer({ description: "started: the run's number; webhook: the attempt's" }),
    ),
    priority: Type.Optional(Type.Integer({ description: "submitted: its priority, when not 0" })),
    result: Type.Optional(
      Enum(["delivered", "retry", "failed", "refused"], { description: "webhook: the outcome" }),
    ),
    status_code: Type.Optional(Type.Integer({ description: "webhook: the receiver's HTTP status" })),
  },
  { $id: "TimelineEntry" },
);
export type TimelineEntry = Static<typeof TimelineEntry>;

const Link = (description: string) =>
  Type.Object(
    {
      url: Type.String({ description: "A presigned GET URL of the object" }),
      expires_at: Timestamp("When the URL stops working"),
    },
    { description },
  );
export const JobLinks = Type.Object({
  source: Link("The job's source"),
  output: Type.Optional(Link("Its output, once the job has completed, when its type writes a file")),
});
export type JobLinks = Static<typeof JobLinks>;

export const ErrorBody = Type.Object(
  { error: Type.String({ description: "Human-readable message" }) },
  { $id: "Error", additionalProperties: false },
);
