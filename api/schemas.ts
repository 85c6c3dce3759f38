import { Type, type TObject, type TProperties } from "@sinclair/typebox";
import { PARAMETER_SCHEMAS } from "../core/jobs/parameters.js";
import {
  Batch,
  BatchStatusSchema,
  DestinationFields,
  ErrorBody,
  Job,
  JobStatusSchema,
  JobSummary,
  JobTypeSchema,
  QueueStats,
  RESULT_SCHEMAS,
  SourceFields,
  SubmissionOptionFields,
  SubmitResponse,
  WebhookDelivery,
} from "../core/jobs/records.js";
import { WRITES_OUTPUT, type JobType } from "../core/jobs/types.js";

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
  WebhookDelivery,
  Job,
  JobSummary,
  Batch,
  QueueStats,
];
export const ErrorRef = Type.Ref(ErrorBody);

/** Submit endpoints: path under /api/v1 → job type. */
export const SUBMIT_ROUTES: Array<{ path: string; type: JobType; summary: string }> = [
  { path: "/jobs/image/resize", type: "image_resize", summary: "Resize an image" },
  { path: "/jobs/image/optimize", type: "image_optimize", summary: "Optimize (recompress) an image" },
  {
    path: "/jobs/image/watermark",
    type: "image_watermark",
    summary: "Watermark an image with text or an image",
  },
  { path: "/jobs/image/colors", type: "image_colors", summary: "Extract the dominant colours of an image" },
  {
    path: "/jobs/image/ai/keywords",
    type: "image_ai_keywords",
    summary: "Generate keywords for an image with AI",
  },
  { path: "/jobs/video/thumbnail", type: "video_thumbnail", summary: "Extract a thumbnail from a video" },
  { path: "/jobs/audio/convert", type: "audio_convert", summary: "Convert audio to another format" },
  { path: "/jobs/analyze", type: "analyze", summary: "Analyze media with an AI provider" },
];

/** The body of a single-job submission: location fields, the type's parameters, the options. */
export function submitBodySchema(type: JobType): TObject {
  const parameters = PARAMETER_SCHEMAS[type];
  const properties: TProperties = {
    ...SourceFields,
    ...(WRITES_OUTPUT[type] ? DestinationFields : {}),
    ...parameters.properties,
    ...SubmissionOptionFields,
  };
  const required = [
    "source_bucket",
    "source_key",
    ...(WRITES_OUTPUT[type] ? ["dest_bucket", "dest_key"] : []),
    ...(parameters.required ?? []),
  ];
  return optionalDefaults({
    ...Type.Object(properties, { additionalProperties: false }),
    required,
  } as TObject);
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
  ...Object.keys(SubmissionOptionFields),
]);

export const BATCH_ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$";

export const BatchEntry = Type.Object(
  {
    type: JobTypeSchema,
    ...SourceFields,
    dest_bucket: Type.Optional(DestinationFields.dest_bucket),
    dest_key: Type.Optional(DestinationFields.dest_key),
    parameters: Type.Optional(
      Type.Object(
        {},
        { additionalProperties: true, description: "Parameters of the job type, as on its endpoint" },
      ),
    ),
    ...SubmissionOptionFields,
  },
  { additionalProperties: false },
);

export const BatchCreateBody = Type.Object(
  {
    batch_id: Type.Optional(
      Type.String({
        pattern: BATCH_ID_PATTERN,
        description: "Custom id (letters, digits, . _ : -; up to 128); generated when absent",
      }),
    ),
    jobs: Type.Array(BatchEntry, { minItems: API_LIMITS.batchMinJobs, maxItems: API_LIMITS.batchMaxJobs }),
    options: Type.Optional(
      optionalDefaults(
        Type.Object(
          {
            webhook_url: SubmissionOptionFields.webhook_url,
            fail_fast: Type.Boolean({ default: false, description: "Stop the batch at the first failure" }),
          },
          { additionalProperties: false },
        ),
      ),
    ),
  },
  { additionalProperties: false },
);

export const BatchCreateResponse = Type.Object({
  batch_id: Type.String(),
  total_jobs: Type.Integer(),
  job_ids: Type.Array(Type.String()),
  status: Type.Literal("queued"),
});

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

export const JobListQuery = optionalDefaults(
  Type.Object(
    {
      status: Type.Optional(JobStatusSchema),
      limit: Type.Integer({ minimum: 1, maximum: API_LIMITS.jobListMax, default: API_LIMITS.jobListDefault }),
    },
    { additionalProperties: false },
  ),
);
export const JobListResponse = Type.Object({ jobs: Type.Array(Type.Ref(JobSummary)), total: Type.Integer() });

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
      limit: Type.Integer({
        minimum: 1,
        maximum: API_LIMITS.batchListMax,
        default: API_LIMITS.batchListDefault,
      }),
    },
    { additionalProperties: false },
  ),
);
export const BatchListResponse = Type.Object({ batches: Type.Array(Type.Ref(Batch)), total: Type.Integer() });

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

export { RESULT_SCHEMAS, QueueStats, Job, SubmitResponse };
