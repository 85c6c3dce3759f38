import {
  Type,
  type Static,
  type TObject,
  type TProperties,
  type TSchema,
  type TUnsafe,
} from "../core/typebox.js";
import { ERROR_MESSAGE, type SchemaBounds } from "../core/jobs/bounds.js";
import type { SubmissionFields } from "../core/jobs/spec.js";
import { parameterSchemas } from "../core/jobs/parameters.js";
import { JOB_DEFINITIONS, STEP_NAME_PATTERN } from "../core/jobs/types.js";
import {
  Batch,
  BatchStatusSchema,
  DestinationFields,
  DestinationPrefixFields,
  ErrorBody,
  Job,
  JobStatusSchema,
  JobSummary,
  NO_CONTROL_PATTERN,
  QueueStats,
  History,
  TimelineEntry,
  RESULT_SCHEMAS,
  SourceFields,
  SubmissionOptionFields,
  submissionOptionFields,
  PRIORITY,
  Priority,
  SubmitResponse,
  RetriedAlreadyResponse,
  WebhookDelivery,
  WebhookUrl,
} from "../core/jobs/records.js";
import { Enum } from "../core/jobs/enum.js";
import {
  DESTINATIONS_IN_PARAMETERS,
  JOB_STATES,
  JOB_TYPES,
  WRITES_OUTPUT,
  WRITES_UNDER_PREFIX,
  type JobState,
  type JobStatus,
  type JobType,
} from "../core/jobs/types.js";
import { TemplateSchema, TemplateUseFields, withTemplateVersionRule } from "../core/jobs/templates.js";
import { REPLAYED_HEADER } from "./idempotency.js";
import { CURSOR_PATTERN } from "./listing.js";
import { CLIENT_NAME_PATTERN } from "../core/config/schema.js";

/** Limits of the interface that are not per job type. */
export const API_LIMITS = {
  jobListDefault: 100,
  jobListMax: 1000,
  batchListDefault: 50,
  batchListMax: 100,
  batchMinJobs: 1,
  batchMaxJobs: 100,
} as const;

/** Shared schemas, registered once (and named in the OpenAPI document). */
export const SHARED_SCHEMAS = [
  ErrorBody,
  SubmitResponse,
  RetriedAlreadyResponse,
  WebhookDelivery,
  Job,
  JobSummary,
  Batch,
  QueueStats,
  History,
  TimelineEntry,
  TemplateSchema,
];
export const ErrorRef = Type.Ref(ErrorBody);

/** Every /api/v1 operation needs an API key, in X-API-Key or as a bearer token (api/auth.ts). */
export const API_KEY_SECURITY: Array<Record<string, string[]>> = [{ ApiKey: [] }, { Bearer: [] }];

/** The error answers of the interface, each an `{error}` body in JSON. */
const ERROR_ANSWERS = {
  400: "Invalid request: the message names the field and the rule",
  401: "Missing or invalid API key",
  403: "Forbidden: the API key may not do this, or its client's limits do not allow the job type or priority (the message says why)",
  404: "Not found",
  409: "Conflict: the id is taken, the job or batch has ended in a way that does not allow it, or a request with the same Idempotency-Key is still in flight",
  413: "Request body larger than limits.max_body_bytes",
  415: "Content-Type is not application/json, its charset is not UTF-8, or the body has a Content-Encoding",
  416: "The Range asked for lies outside the object",
  422: "The Idempotency-Key was used for a different request (method, route or body)",
  429: "Too many requests: rate limited, or a submission over its client's max_pending; Retry-After says when to try again",
  500: "The server failed",
  502: "The object store failed or could not be reached",
  503: "The queue store is unavailable (or the server is shutting down); Retry-After says when to try again",
} as const;
export type ErrorStatus = keyof typeof ERROR_ANSWERS;

/** What every /api/v1 operation can answer, whatever its route: no key, rate limited, store down. */
const ALWAYS = [401, 429, 503] as const;
/** What every operation with a JSON body can answer besides: invalid, too large, not JSON. */
export const BODY_ERRORS: ErrorStatus[] = [400, 413, 415];

/**
 * The error responses of an /api/v1 operation, the one place they are declared: those every
 * operation has (401, 429, 503) and the given ones. Always JSON, whatever the route's success
 * answer is (the event stream's 404 is JSON too).
 */
export function errorResponses<S extends ErrorStatus>(
  ...statuses: S[]
): Record<S | (typeof ALWAYS)[number], TUnsafe<{ error: string }>> {
  const all = [...new Set<ErrorStatus>([...ALWAYS, ...statuses])].sort((a, b) => a - b);
  return Object.fromEntries(all.map((status) => [status, errorResponse(ERROR_ANSWERS[status])])) as Record<
    S | (typeof ALWAYS)[number],
    TUnsafe<{ error: string }>
  >;
}

/** One error answer (an `{error}` body in JSON) described as a route means it. */
export function errorResponse(description: string): TUnsafe<{ error: string }> {
  return Type.Unsafe<{ error: string }>({
    description,
    content: { "application/json": { schema: ErrorRef } },
  });
}

/** The statuses a route that takes an Idempotency-Key can answer besides: in flight, another request. */
export const IDEMPOTENCY_ERRORS: ErrorStatus[] = [409, 422];

/**
 * The request headers of a submitting route: the optional Idempotency-Key (api/idempotency.ts).
 * Named in lower case, as Node gives headers: with a validator of its own (validation.ts) Fastify
 * matches the schema's names to the headers as they are.
 */
export const IdempotencyHeaders = Type.Object({
  "idempotency-key": Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: "^[\\x20-\\x7E]+$",
      description:
        "Makes the request safe to repeat: the same key with the same request (method, route, body) within `limits.idempotency_ttl` replays the first answer, marked `Idempotent-Replayed: true`, and creates nothing; 1 to 255 printable ASCII characters, e.g. a UUID (docs/api.md, Idempotent submits).",
      [ERROR_MESSAGE]: {
        minLength: "must not be empty",
        maxLength: "must be at most 255 characters",
        pattern: "must be printable ASCII characters only",
      },
    }),
  ),
});

/**
 * The success answer of a submitting route: its body's schema, and the header a replay carries.
 * (The schema in `content` serialises the answer as a plain response schema does.)
 */
export function submitResponse(description: string, schema: TSchema) {
  return Type.Unsafe({
    description,
    headers: {
      [REPLAYED_HEADER]: {
        type: "string",
        enum: ["true"],
        description:
          "Present on a replay: the answer of an earlier request with the same Idempotency-Key; nothing was submitted",
      },
    },
    content: { "application/json": { schema } },
  });
}

/** Submit endpoints: path under /api/v1 → job type, as each type declares its route. */
export const SUBMIT_ROUTES: Array<{ path: string; type: JobType; summary: string }> = JOB_DEFINITIONS.map(
  (d) => ({ path: d.route.path, type: d.name, summary: d.route.summary }),
);

/**
 * The body of a single-job submission, with the configuration's bounds: location fields, the
 * type's parameters (and the rules that span them), the options.
 */
export function submitBodySchema(type: JobType, bounds: SchemaBounds): TObject {
  const parameters = parameterSchemas(bounds)[type];
  const properties: TProperties = {
    ...SourceFields,
    ...destinationFields(type),
    ...parameters.properties,
    ...submissionOptionFields(bounds),
    ...TemplateUseFields,
  };
  const required = [
    "source_bucket",
    "source_key",
    ...(DESTINATIONS_IN_PARAMETERS[type] ? [] : Object.keys(destinationFields(type))),
    ...(parameters.required ?? []),
  ];
  return optionalDefaults(
    withTemplateVersionRule({
      ...objectRules(parameters),
      ...Type.Object(properties, { additionalProperties: false }),
      required,
    }),
  );
}

/**
 * Where a type's output goes: a key, a prefix (a type that writes many objects), or nowhere; a
 * type whose parts name their own (the pipeline) takes a bucket and a prefix, both optional.
 */
function destinationFields(type: JobType): TProperties {
  if (DESTINATIONS_IN_PARAMETERS[type])
    return {
      dest_bucket: Type.Optional(DestinationPrefixFields.dest_bucket),
      dest_prefix: Type.Optional(DestinationPrefixFields.dest_prefix),
    };
  if (WRITES_UNDER_PREFIX[type]) return DestinationPrefixFields;
  return WRITES_OUTPUT[type] ? DestinationFields : {};
}

/** The keywords of an object schema other than its fields: rules that span fields (anyOf, allOf, …). */
function objectRules(schema: TObject): Record<string, unknown> {
  const rules: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (!["type", "properties", "required", "additionalProperties"].includes(key)) rules[key] = value;
  }
  return rules;
}

/**
 * TypeBox lists a property with a default as required; to a client it is optional (the default
 * fills it in), and the OpenAPI document must say so.
 */
export function optionalDefaults<T extends TObject>(schema: T): T {
  const required = (schema.required ?? []).filter(
    (name) => (schema.properties[name] as { default?: unknown }).default === undefined,
  );
  const copy = { ...schema, required } as T;
  if (required.length === 0) delete (copy as { required?: string[] }).required;
  return copy;
}

/** Fields of a single-job body that are not parameters of the job. */
export const NON_PARAMETER_FIELDS = new Set([
  ...Object.keys(SourceFields),
  ...Object.keys(DestinationFields),
  ...Object.keys(DestinationPrefixFields),
  ...Object.keys(SubmissionOptionFields),
  ...Object.keys(TemplateUseFields),
]);

export const BATCH_ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$";

/**
 * One batch entry of a job type: the type, the locations (dest_bucket and dest_key required where
 * the type writes an output), the type's parameters as on its endpoint, the options.
 */
function batchEntrySchema(type: JobType, bounds: SchemaBounds): TObject {
  const parameters = optionalDefaults(parameterSchemas(bounds)[type]);
  // Required where an empty object would not do: a required field, or a rule such as "one of these".
  const needsParameters =
    (parameters.required ?? []).length > 0 || "anyOf" in parameters || "oneOf" in parameters;
  const withDefaults = { ...parameters, default: {} } as TSchema;
  const dest =
    WRITES_OUTPUT[type] || DESTINATIONS_IN_PARAMETERS[type]
      ? destinationFields(type)
      : {
          dest_bucket: Type.Optional(DestinationFields.dest_bucket),
          dest_key: Type.Optional(DestinationFields.dest_key),
        };
  return withTemplateVersionRule(
    Type.Object(
      {
        type: Type.Literal(type),
        ...SourceFields,
        ...dest,
        parameters: needsParameters ? parameters : withDefaults,
        ...submissionOptionFields(bounds),
        ...TemplateUseFields,
      },
      { additionalProperties: false, title: type },
    ),
  );
}

/** A batch entry of any type: the entry's `type` chooses its schema. */
export function batchEntrySchemas(bounds: SchemaBounds): TSchema {
  return Type.Unsafe<BatchEntry>({
    type: "object",
    required: ["type"],
    discriminator: { propertyName: "type" },
    oneOf: JOB_TYPES.map((type) => optionalDefaults(batchEntrySchema(type, bounds))),
    description: "A job: `type` says which; its parameters as on the type's endpoint",
  });
}

/** A batch entry as the handler reads it (the route schema has validated it and applied the defaults). */
export type BatchEntry = SubmissionFields & { type: JobType; parameters: Record<string, unknown> };

/** The body of POST /jobs/batch, with the configuration's bounds. */
export function batchCreateBody(bounds: SchemaBounds) {
  return Type.Object(
    {
      batch_id: Type.Optional(
        Type.String({
          pattern: BATCH_ID_PATTERN,
          description: "Custom id (letters, digits, . _ : -; up to 128); generated when absent",
        }),
      ),
      jobs: Type.Array(Type.Unsafe<BatchEntry>(batchEntrySchemas(bounds)), {
        minItems: API_LIMITS.batchMinJobs,
        maxItems: API_LIMITS.batchMaxJobs,
      }),
      options: Type.Optional(
        optionalDefaults(
          Type.Object(
            {
              webhook_url: Type.Optional(
                WebhookUrl("Receives the batch-completion notification: an absolute http or https URL"),
              ),
              fail_fast: Type.Boolean({ default: false, description: "Stop the batch at the first failure" }),
              priority: Type.Optional(
                Priority(
                  `The priority of the batch's jobs that give none of their own (${PRIORITY.min} to ${PRIORITY.max}; default ${PRIORITY.default})`,
                ),
              ),
            },
            { additionalProperties: false },
          ),
        ),
      ),
    },
    { additionalProperties: false },
  );
}

export const BatchCreateResponse = Type.Object({
  batch_id: Type.String(),
  total_jobs: Type.Integer(),
  job_ids: Type.Array(Type.String()),
  status: Type.Literal("queued"),
});

/** The optional body of POST /jobs/{id}/retry. */
export const RetryBody = Type.Object(
  {
    force: Type.Optional(
      Type.Boolean({
        description:
          "Retry a job that was retried before once more: without it such a retry answers 200 with its existing retry and makes nothing",
      }),
    ),
  },
  { additionalProperties: false },
);

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

/** An object under a ladder's prefix: relative, plain names (no `..`, no empty segment). */
export const LADDER_PATH_PATTERN = "^(?!.*(?:^|/)\\.\\.?(?:/|$))[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*$";
export const LadderParams = Type.Object({
  id: IdParams.properties.id,
  "*": Type.String({
    maxLength: 512,
    pattern: LADDER_PATH_PATTERN,
    description: "The object's path under the job's prefix, as its playlists name it (e.g. media_0.m3u8)",
  }),
});

/** Which of a job's objects a preview or a download is of. */
const ObjectOf = (defaultOf: "source" | "output", description: string) =>
  Enum(["source", "output"] as const, { default: defaultOf, description });

/** A pipeline's step whose output a preview or a download is of. */
const StepOf = Type.Optional(
  Type.String({
    pattern: STEP_NAME_PATTERN,
    description:
      "A pipeline's step: the output that step wrote (with `of=output`, once the step has completed, also on a pipeline that failed with keep_partial)",
    [ERROR_MESSAGE]:
      "must name a step of the pipeline (a lowercase letter, then lowercase letters, digits, _ or -)",
  }),
);

export const PreviewQuery = optionalDefaults(
  Type.Object(
    {
      of: ObjectOf(
        "output",
        "The job's source image, or its output (an image, or a video_thumbnail's frame)",
      ),
      step: StepOf,
    },
    { additionalProperties: false },
  ),
);

export const DownloadQuery = optionalDefaults(
  Type.Object(
    {
      of: ObjectOf("output", "The job's output object (once it has completed), or its source"),
      step: StepOf,
    },
    { additionalProperties: false },
  ),
);

const DATE_TIME_TEXT = "must be an RFC 3339 date-time such as 2026-05-01T12:00:00Z, not {value}";

/** The paging and time-window parameters every list takes (api/listing.ts reads them). */
const ListParams = {
  cursor: Type.Optional(
    Type.String({
      pattern: CURSOR_PATTERN,
      [ERROR_MESSAGE]: "is not a cursor of this API: pass the next_cursor of a previous answer as it is",
      description:
        "Where the page starts: the `next_cursor` of the previous answer, passed as it is (opaque). Pages are keyed on the last record's creation time and id, so records added or removed while paging never shift them; pass the same filters on every page",
    }),
  ),
  created_after: Type.Optional(
    Type.String({
      format: "date-time",
      description: "Only records created at or after this time (RFC 3339, inclusive)",
      [ERROR_MESSAGE]: DATE_TIME_TEXT,
    }),
  ),
  created_before: Type.Optional(
    Type.String({
      format: "date-time",
      description:
        "Only records created before this time (RFC 3339, exclusive); with a created_after that is not earlier, nothing is listed",
      [ERROR_MESSAGE]: DATE_TIME_TEXT,
    }),
  ),
};

const Total = (what: string) =>
  Type.Integer({
    description: `How many ${what} match the filter (not only the page): the same on every page while none are added or removed`,
  });
const NextCursor = Type.Optional(
  Type.String({
    description:
      "Present only when more records follow this page: pass it as `cursor` (with the same filters) for the next page",
  }),
);

/** A search term: printable text (no control characters), as long as a bucket/key can be. */
const SearchText = (description: string) =>
  Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 1100,
      pattern: NO_CONTROL_PATTERN,
      description,
      [ERROR_MESSAGE]: "must be 1 to 1100 printable characters, not {value}",
    }),
  );

/**
 * The filters of the job list that bulk actions take too (api/search.ts reads them): status, type,
 * batch, client, and the search terms, read through the search indexes.
 */
export const JobFilterParams = {
  status: Type.Optional(JobStatusSchema),
  state: Type.Optional(
    Enum(JOB_STATES, {
      description:
        "Only jobs of this state (the record's `state`): failed is the failed jobs that were not cancelled, cancelled the cancelled ones (status=failed lists both); the others are the statuses. Jobs that failed before the state index existed are not found by failed or cancelled",
    }),
  ),
  type: Type.Optional(
    Enum(JOB_TYPES, {
      description:
        "Only jobs of this type (jobs submitted before the type filter existed are not found by it)",
    }),
  ),
  batch_id: Type.Optional(
    Type.String({
      pattern: BATCH_ID_PATTERN,
      description: "Only the jobs of this batch",
      [ERROR_MESSAGE]: "must be a batch id (letters, digits, . _ : -; up to 128), not {value}",
    }),
  ),
  client: Type.Optional(
    Type.String({
      pattern: CLIENT_NAME_PATTERN,
      description:
        "Admin keys only (403 for others): only the jobs this client submitted (as a client that is not an admin; an admin's own jobs are in the shared indexes only)",
      [ERROR_MESSAGE]: "must be a client name (letters, digits, . _ -; up to 64), not {value}",
    }),
  ),
  q: SearchText(
    "One search box: text with a `/` is a source or output prefix (`bucket/key…`; a leading `s3://` is dropped) or a request id; other text is a job id prefix or a request id. A job matching any of these is found. See docs/api.md#search",
  ),
  id_prefix: SearchText("Only jobs whose id starts with this (a whole id finds that job)"),
  request_id: SearchText("Only jobs submitted with this request_id (matched whole)"),
  source_prefix: SearchText("Only jobs whose source, `source_bucket/source_key`, starts with this"),
  dest_prefix: SearchText(
    "Only jobs whose output, `dest_bucket/dest_key` (a pipeline: `dest_bucket/dest_prefix/`), starts with this",
  ),
};

export const JobListQuery = optionalDefaults(
  Type.Object(
    {
      ...JobFilterParams,
      ...ListParams,
      limit: Type.Integer({ minimum: 1, maximum: API_LIMITS.jobListMax, default: API_LIMITS.jobListDefault }),
    },
    { additionalProperties: false },
  ),
);
export const JobListResponse = Type.Object({
  jobs: Type.Array(Type.Ref(JobSummary), {
    description:
      "Newest first: by creation time, then (jobs created in the same millisecond) by id, descending",
  }),
  total: Total("jobs"),
  next_cursor: NextCursor,
});

/** The most jobs one bulk call acts on (and the most ids it takes). */
export const BULK_MAX = 500;

export const BULK_ACTIONS = ["cancel", "retry"] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];

/** The statuses an action can change: the first is what its filter's status defaults to. */
export const BULK_ACTS_ON = {
  cancel: ["pending", "processing"],
  retry: ["failed"],
} as const satisfies Record<BulkAction, readonly JobStatus[]>;

/** The states an action's filter may name: its statuses, and (retry) cancelled, a kind of failed. */
const BULK_STATES = {
  cancel: BULK_ACTS_ON.cancel,
  retry: [...BULK_ACTS_ON.retry, "cancelled"],
} as const satisfies Record<BulkAction, readonly JobState[]>;

/**
 * The body of POST /jobs/bulk/{action}. What the route refuses the schema says, so the OpenAPI
 * document does not offer what would be a 400: `filter` or `ids` (exactly one), `cursor` only with
 * `filter`, and only the statuses and states the action changes.
 */
export function bulkBody(action: BulkAction) {
  return optionalDefaults(
    Type.Object(
      {
        filter: Type.Optional(
          Type.Object(
            {
              ...JobFilterParams,
              status: Type.Optional(
                Enum(BULK_ACTS_ON[action], {
                  description: `Only jobs of this status (default ${BULK_ACTS_ON[action][0]}): ${action} changes ${BULK_ACTS_ON[action].join(" or ")} jobs only`,
                }),
              ),
              state: Type.Optional(
                Enum(BULK_STATES[action], {
                  description: "Only jobs of this state (the record's `state`), as GET /jobs filters it",
                }),
              ),
              created_after: ListParams.created_after,
              created_before: ListParams.created_before,
            },
            {
              additionalProperties: false,
              description: "The jobs to act on, as GET /jobs filters them. Give `filter` or `ids`",
            },
          ),
        ),
        ids: Type.Optional(
          Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
            minItems: 1,
            maxItems: BULK_MAX,
            uniqueItems: true,
            description: `The jobs to act on, by id (rows chosen in a list; at most ${BULK_MAX}). Give \`filter\` or \`ids\``,
          }),
        ),
        dry_run: Type.Boolean({
          default: false,
          description: "Change nothing: `matched` says how many jobs the call would go through",
        }),
        limit: Type.Integer({
          minimum: 1,
          maximum: BULK_MAX,
          default: 100,
          description:
            "With `filter`: the most jobs this call goes through; the rest follow with `cursor` (next_cursor)",
        }),
        cursor: ListParams.cursor,
      },
      {
        additionalProperties: false,
        oneOf: [{ required: ["filter"] }, { required: ["ids"] }],
        not: { required: ["ids", "cursor"] },
        [ERROR_MESSAGE]:
          "give `filter` (the jobs to act on) or `ids`, one of them; `cursor` goes with `filter`",
      },
    ),
  );
}
export type BulkBody = Static<ReturnType<typeof bulkBody>>;

const BulkOutcome = Type.Object({
  id: Type.String(),
  outcome: Enum(["cancelled", "retried", "skipped"], {
    description: "What this call did to the job: cancelled it, retried it, or nothing (reason says why)",
  }),
  reason: Type.Optional(
    Type.String({
      description:
        "Why a job was skipped: already cancelled, already completed, already failed, already retried, not failed, not found",
    }),
  ),
  retry_id: Type.Optional(
    Type.String({ description: "retry: the job that retries it (new, or the existing one)" }),
  ),
});

export const BulkResponse = Type.Object({
  action: Enum(BULK_ACTIONS),
  dry_run: Type.Boolean(),
  matched: Type.Integer({
    description:
      "How many jobs the filter (or the ids the caller may see) matches now, whatever the cursor and limit: with dry_run, how many a run would go through",
  }),
  changed: Type.Integer({ description: "Jobs this call cancelled or retried (0 with dry_run)" }),
  skipped: Type.Record(Type.String(), Type.Integer(), {
    description: "Jobs this call went through and left as they were, by reason",
  }),
  jobs: Type.Array(BulkOutcome, { description: "Each job this call went through, in list order" }),
  next_cursor: Type.Optional(
    Type.String({
      description:
        "Present when more jobs match after those of this call: send the same request with it as `cursor` to go on",
    }),
  ),
});

export const BatchGetQuery = optionalDefaults(
  Type.Object({ include_jobs: Type.Boolean({ default: false }) }, { additionalProperties: false }),
);
export const BatchGetResponse = Type.Object({
  batch: Type.Ref(Batch),
  jobs: Type.Optional(Type.Array(Type.Ref(JobSummary))),
});

export const BatchListQuery = optionalDefaults(
  Type.Object(
    {
      status: Type.Optional(BatchStatusSchema),
      ...ListParams,
      limit: Type.Integer({
        minimum: 1,
        maximum: API_LIMITS.batchListMax,
        default: API_LIMITS.batchListDefault,
      }),
    },
    { additionalProperties: false },
  ),
);
export const BatchListResponse = Type.Object({
  batches: Type.Array(Type.Ref(Batch), {
    description:
      "Newest first: by creation time, then (batches created in the same millisecond) by id, descending",
  }),
  total: Total("batches"),
  next_cursor: NextCursor,
});

const Dependency = Type.Object({
  status: Type.Union(
    ["healthy", "unhealthy", "not_configured"].map((s) => Type.Literal(s)),
    {
      description: "not_configured: an optional dependency (the AI provider) that is not set up",
    },
  ),
  latency_ms: Type.Number(),
  last_check: Type.String({ format: "date-time" }),
  error: Type.Optional(Type.String()),
});
export const HealthResponse = Type.Object({
  status: Type.Union([Type.Literal("healthy"), Type.Literal("degraded"), Type.Literal("unhealthy")]),
  timestamp: Type.String({ format: "date-time" }),
  system: Type.Object({
    memory_free_mb: Type.Number(),
    disk_free_gb: Type.Number(),
    disk_used_gb: Type.Number(),
    disk_total_gb: Type.Number(),
  }),
  dependencies: Type.Record(Type.String(), Dependency),
});
export const LiveResponse = Type.Object({
  status: Type.String(),
  timestamp: Type.String({ format: "date-time" }),
});
export const ReadyResponse = Type.Object({
  status: Type.Union([Type.Literal("ready"), Type.Literal("not_ready")]),
  timestamp: Type.String({ format: "date-time" }),
  dependencies: Type.Record(Type.String(), Dependency),
});

export { RESULT_SCHEMAS, QueueStats, Job, SubmitResponse, RetriedAlreadyResponse };
