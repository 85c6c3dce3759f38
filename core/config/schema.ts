import { Type, type Static } from "@sinclair/typebox";
import { JOB_TYPES } from "../jobs/types.js";

/** A client's name: it is recorded on each of its jobs and appears in logs and metrics. */
export const CLIENT_NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$";

// The configuration, with every default in one place. Durations are Go-style strings ("30s") or
// seconds as numbers; they are converted to milliseconds by load.ts.
const Duration = (def: string) =>
  Type.Union([Type.String({ minLength: 1 }), Type.Number({ minimum: 0 })], { default: def });

export const ServerConfig = Type.Object(
  {
    // Unset: 127.0.0.1 for `start` (the local stack), 0.0.0.0 for `api` and `controller` (deployments).
    host: Type.Optional(Type.String({ minLength: 1 })),
    port: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
    mode: Type.Union([Type.Literal("debug"), Type.Literal("release"), Type.Literal("test")], {
      default: "release",
    }),
    read_timeout: Duration("30s"),
    write_timeout: Duration("30s"),
    // Keys of one client that sees every job (rotation: list the new key beside the old one).
    api_keys: Type.Array(Type.String(), { default: [] }),
    // Named clients, each seeing only its own jobs and batches (an admin sees all). The api_keys,
    // when set beside them, are the client named "default".
    clients: Type.Array(
      Type.Object(
        {
          name: Type.String({ pattern: CLIENT_NAME_PATTERN }),
          // Empty entries (an unset ${VAR:-}) are ignored; at least one key must remain.
          keys: Type.Array(Type.String()),
          admin: Type.Boolean({ default: false }),
          // Requests per rate_limit.window for this client; unset: rate_limit.per_client.
          rate_limit: Type.Optional(Type.Integer({ minimum: 1 })),
        },
        { additionalProperties: false },
      ),
      { default: [] },
    ),
    docs_path: Type.String({ pattern: "^/[A-Za-z0-9/_-]*$", default: "/docs" }),
    sse_heartbeat: Duration("15s"),
    shutdown_timeout: Duration("25s"),
    trust_proxy: Type.Boolean({ default: false }),
    // Requests to /api/v1 per window, counted in Redis so that every replica shares them. Health,
    // metrics and docs are never limited.
    rate_limit: Type.Object(
      {
        enabled: Type.Boolean({ default: true }),
        window: Duration("1m"),
        // Each client's budget (every caller's own, by address, when authentication is off).
        per_client: Type.Integer({ minimum: 1, default: 6000 }),
        // The budget of an address whose requests carry no valid key.
        per_address: Type.Integer({ minimum: 1, default: 300 }),
        // How often a replica adds its counts to the shared ones (and learns the others').
        sync_interval: Duration("100ms"),
      },
      { additionalProperties: false, default: {} },
    ),
    // Serve the API on a non-loopback address with no api_keys. Refused unless this is true.
    allow_unauthenticated: Type.Boolean({ default: false }),
  },
  { additionalProperties: false, default: {} },
);

export const RedisConfig = Type.Object(
  {
    // Unset: `media-service start` runs a redis-server of its own; the other commands need it.
    url: Type.Optional(Type.String({ minLength: 1 })),
    key_prefix: Type.String({ pattern: "^[A-Za-z0-9_.-]+$", default: "media" }),
    connect_timeout: Duration("5s"),
  },
  { additionalProperties: false, default: {} },
);

export const StorageConfig = Type.Object(
  {
    // Unset: `media-service start` runs the embedded S3-protocol store.
    endpoint: Type.Optional(Type.String({ minLength: 1 })),
    region: Type.String({ default: "us-east-1" }),
    access_key_id: Type.Optional(Type.String()),
    secret_access_key: Type.Optional(Type.String()),
    force_path_style: Type.Boolean({ default: true }),
    public_base_url: Type.Optional(Type.String({ minLength: 1 })),
    // Bucket probed by the readiness check; unset: ListBuckets.
    health_bucket: Type.Optional(Type.String({ minLength: 1 })),
    embedded_port: Type.Integer({ minimum: 0, maximum: 65535, default: 9000 }),
    // The embedded store's address (e.g. 0.0.0.0 in a container whose port 9000 is published). Off
    // loopback it needs access_key_id and secret_access_key of the operator's choosing.
    embedded_host: Type.String({ minLength: 1, default: "127.0.0.1" }),
  },
  { additionalProperties: false, default: {} },
);

const JobTimeouts = Type.Object(
  {
    image_resize: Duration("2m"),
    image_optimize: Duration("2m"),
    image_watermark: Duration("2m"),
    image_colors: Duration("2m"),
    image_ai_keywords: Duration("5m"),
    video_thumbnail: Duration("5m"),
    audio_convert: Duration("30m"),
    analyze: Duration("10m"),
  },
  { additionalProperties: false, default: {} },
);

export const ExecutorConfig = Type.Object(
  {
    kind: Type.Union([Type.Literal("local"), Type.Literal("kubernetes")], { default: "local" }),
    // 0 = one per CPU.
    local_concurrency: Type.Integer({ minimum: 0, default: 0 }),
    // Jobs one local runner process serves before it is replaced (1 = a fresh process per job).
    local_runner_max_jobs: Type.Integer({ minimum: 1, default: 500 }),
    // Processing time allowed per job type, unless the job sets timeout_seconds.
    timeouts: JobTimeouts,
    // Attempts of a job that fails transiently (runner crash, storage error) before it fails.
    max_attempts: Type.Integer({ minimum: 1, default: 3 }),
    // Lease of a claimed job; renewed while it runs, so a dead executor's jobs come back.
    lease: Duration("30s"),
    // Where runners keep sources and outputs while they work.
    scratch_dir: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false, default: {} },
);

// Kubernetes quantities (500m, 2, 512Mi, 1G) and names (DNS-1123 labels and subdomains).
const CPU_QUANTITY = "^\\d+(?:\\.\\d+)?m?$";
const MEMORY_QUANTITY = "^\\d+(?:\\.\\d+)?(?:[KMGTPE]i?|k|e\\d+)?$";
const DNS_LABEL = "^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$";
const DNS_SUBDOMAIN = "^[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?$";
const LABEL_VALUE = "^(?:[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?$";
const SECRET_KEY = "^[-._a-zA-Z0-9]+$";
const SECRET_REF = () =>
  Type.Object(
    {
      name: Type.String({ pattern: DNS_SUBDOMAIN }),
      key: Type.String({ pattern: SECRET_KEY, default: "api-key" }),
    },
    { additionalProperties: false },
  );

const Cpu = (def: string) => Type.String({ pattern: CPU_QUANTITY, default: def });
const Memory = (def: string) => Type.String({ pattern: MEMORY_QUANTITY, default: def });
const ResourceList = (cpu: string, memory: string) =>
  Type.Object({ cpu: Cpu(cpu), memory: Memory(memory) }, { additionalProperties: false, default: {} });
const Resources = (requests: [string, string], limits: [string, string]) =>
  Type.Object(
    { requests: ResourceList(...requests), limits: ResourceList(...limits) },
    { additionalProperties: false, default: {} },
  );
const IMAGE_RESOURCES = () => Resources(["250m", "256Mi"], ["1", "1Gi"]);
const MEDIA_RESOURCES = () => Resources(["500m", "512Mi"], ["2", "2Gi"]);
const AI_RESOURCES = () => Resources(["100m", "128Mi"], ["500m", "512Mi"]);

// Per job type: requests and limits of the runner container, unless the job sets `resources`.
const JobResources = Type.Object(
  {
    image_resize: IMAGE_RESOURCES(),
    image_optimize: IMAGE_RESOURCES(),
    image_watermark: IMAGE_RESOURCES(),
    image_colors: IMAGE_RESOURCES(),
    image_ai_keywords: AI_RESOURCES(),
    video_thumbnail: MEDIA_RESOURCES(),
    audio_convert: MEDIA_RESOURCES(),
    analyze: AI_RESOURCES(),
  },
  { additionalProperties: false, default: {} },
);

// Kubernetes objects passed through as Kubernetes spells them (camelCase), like Helm values do.
const Toleration = Type.Object(
  {
    key: Type.Optional(Type.String()),
    operator: Type.Optional(Type.Union([Type.Literal("Exists"), Type.Literal("Equal")])),
    value: Type.Optional(Type.String()),
    effect: Type.Optional(
      Type.Union([Type.Literal("NoSchedule"), Type.Literal("PreferNoSchedule"), Type.Literal("NoExecute")]),
    ),
    tolerationSeconds: Type.Optional(Type.Integer()),
  },
  { additionalProperties: false },
);

export const KubernetesConfig = Type.Object(
  {
    // Where runner Jobs are created; unset: the controller pod's own namespace, else "default".
    namespace: Type.Optional(Type.String({ pattern: DNS_LABEL })),
    // The app.kubernetes.io/instance label of every Job (the Helm release name).
    instance: Type.String({ pattern: LABEL_VALUE, minLength: 1, default: "media-service" }),
    image: Type.String({ minLength: 1, default: "media-service:latest" }),
    image_pull_policy: Type.Union(
      [Type.Literal("Always"), Type.Literal("IfNotPresent"), Type.Literal("Never")],
      { default: "IfNotPresent" },
    ),
    image_pull_secrets: Type.Array(Type.String({ pattern: DNS_SUBDOMAIN }), { default: [] }),
    // Unset: the namespace's default ServiceAccount (its token is never mounted either way).
    service_account: Type.Optional(Type.String({ pattern: DNS_SUBDOMAIN })),
    node_selector: Type.Optional(Type.Record(Type.String(), Type.String())),
    tolerations: Type.Optional(Type.Array(Toleration)),
    // A core/v1 Affinity, passed through unchanged.
    affinity: Type.Optional(Type.Object({}, { additionalProperties: true })),
    priority_class_name: Type.Optional(Type.String({ pattern: DNS_SUBDOMAIN })),
    // Pod retries of a Job after a transient failure (a permanent one, exit code 2, is never retried).
    backoff_limit: Type.Integer({ minimum: 0, default: 2 }),
    ttl_seconds_after_finished: Type.Integer({ minimum: 0, default: 3600 }),
    // sizeLimit of the emptyDir the runner works in (sources and outputs).
    scratch_size: Memory("2Gi"),
    resources: JobResources,
    // Largest per-job `resources` accepted at submit (400 beyond).
    max_resources: Type.Object(
      { cpu: Cpu("4"), memory: Memory("8Gi") },
      { additionalProperties: false, default: {} },
    ),
    // Runner Jobs running at once, in total and per job type (a type not listed: only the total).
    max_running_jobs: Type.Integer({ minimum: 1, default: 20 }),
    max_running_jobs_per_type: Type.Partial(
      Type.Object(Object.fromEntries(JOB_TYPES.map((t) => [t, Type.Integer({ minimum: 1 })]))),
      { additionalProperties: false, default: {} },
    ),
    // A runner pod no node accepts for this long fails its job (with the scheduler's reason).
    unschedulable_timeout: Duration("5m"),
    // A runner pod whose image cannot be pulled, or whose Secrets are missing, for this long fails its job.
    start_failure_timeout: Duration("1m"),
    // Full level-triggered pass over the cluster and the store (on top of the watch events).
    reconcile_interval: Duration("10s"),
    // Leader election among controller replicas: one coordination.k8s.io Lease.
    leader_election: Type.Object(
      {
        enabled: Type.Boolean({ default: true }),
        // Unset: "<instance>-controller".
        lease_name: Type.Optional(Type.String({ pattern: DNS_SUBDOMAIN })),
        lease_duration: Duration("15s"),
        renew_deadline: Duration("10s"),
        retry_period: Duration("2s"),
      },
      { additionalProperties: false, default: {} },
    ),
    // Secrets the runner pods read credentials from; only their names and keys are in the Job.
    redis_secret: Type.Optional(
      Type.Object(
        {
          name: Type.String({ pattern: DNS_SUBDOMAIN }),
          key: Type.String({ pattern: SECRET_KEY, default: "redis-url" }),
        },
        { additionalProperties: false },
      ),
    ),
    s3_secret: Type.Optional(
      Type.Object(
        {
          name: Type.String({ pattern: DNS_SUBDOMAIN }),
          access_key_key: Type.String({ pattern: SECRET_KEY, default: "access-key-id" }),
          secret_key_key: Type.String({ pattern: SECRET_KEY, default: "secret-access-key" }),
        },
        { additionalProperties: false },
      ),
    ),
    // The key of the provider AI_BASE_URL defines (ai.providers.<name>.api_key_secret for the others).
    ai_secret: Type.Optional(SECRET_REF()),
  },
  { additionalProperties: false, default: {} },
);

export const WebhooksConfig = Type.Object(
  {
    // Standard Webhooks secret: whsec_ followed by base64 of 24-64 random bytes. Unset: not signed.
    signing_secret: Type.Optional(Type.String()),
    // Targets in loopback, private, link-local and similar ranges. Unset: allowed by `start` (the
    // local stack), refused everywhere else.
    allow_private: Type.Optional(Type.Boolean()),
    // Hostnames, *.wildcards, IP addresses or CIDR ranges allowed whatever they resolve to.
    allowed_hosts: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
    // Time allowed for one delivery attempt (connect, headers and body).
    timeout: Duration("10s"),
    // Attempts per webhook before it is given up (the first one included).
    max_attempts: Type.Integer({ minimum: 1, maximum: 50, default: 8 }),
    // Delay before the first retry; it doubles per attempt (with jitter) up to retry_max_delay.
    retry_initial_delay: Duration("30s"),
    retry_max_delay: Duration("1h"),
    // Delivery attempts in flight at once per notifier, and per receiving host.
    concurrency: Type.Integer({ minimum: 1, default: 64 }),
    per_host_concurrency: Type.Integer({ minimum: 1, default: 8 }),
    // A delivery held by a notifier that stopped (no heartbeat for this long) is taken over.
    reclaim_after: Duration("30s"),
  },
  { additionalProperties: false, default: {} },
);

/** Names a provider in config, in `analyze`'s `provider` and in results. */
export const AI_PROVIDER_NAME = "^[a-z0-9](?:[a-z0-9_-]{0,61}[a-z0-9])?$";

const STRUCTURED_OUTPUT = ["prompt", "json_object", "json_schema"] as const;

/** What one OpenAI-compatible provider needs; shared by `ai` itself (the env-defined one) and `ai.providers`. */
const aiProviderFields = (required: boolean) => {
  const text = (options: object = {}) =>
    required ? Type.String({ minLength: 1, ...options }) : Type.Optional(Type.String(options));
  return {
    // e.g. https://api.openai.com/v1, http://localhost:11434/v1 (Ollama), http://localhost:8000/v1 (vLLM).
    base_url: text(),
    api_key: Type.Optional(Type.String()),
    // A chat model that accepts images (image_ai_keywords, analyze).
    model: text(),
    // The model of /audio/transcriptions (analyze of audio).
    transcription_model: Type.Optional(Type.String({ minLength: 1 })),
    // How JSON answers are asked for: in the prompt only (works with every server), or also with
    // response_format json_object / json_schema where the server supports it.
    structured_output: Type.Optional(Type.Union(STRUCTURED_OUTPUT.map((m) => Type.Literal(m)))),
    // Kubernetes executor: runner pods of this provider's jobs read the key from this Secret (key
    // defaults to api-key; defaults inside ai.providers entries are applied when resolved).
    api_key_secret: Type.Optional(
      Type.Object(
        {
          name: Type.String({ pattern: DNS_SUBDOMAIN }),
          key: Type.Optional(Type.String({ pattern: SECRET_KEY })),
        },
        { additionalProperties: false },
      ),
    ),
  };
};

export const AiProviderConfig = Type.Object(aiProviderFields(true), { additionalProperties: false });

export const AiConfig = Type.Object(
  {
    // The provider AI_BASE_URL, AI_API_KEY and AI_MODEL define, named `name` (AI_PROVIDER).
    ...aiProviderFields(false),
    name: Type.String({ pattern: AI_PROVIDER_NAME, default: "default" }),
    // More providers by name; a job picks one with `provider` (analyze).
    providers: Type.Record(Type.String({ pattern: AI_PROVIDER_NAME }), AiProviderConfig, { default: {} }),
    // The provider of jobs that name none. Unset: the env-defined one, else the only one configured.
    default_provider: Type.Optional(Type.String({ pattern: AI_PROVIDER_NAME })),
    // One request's time limit (a slow model is given this long to answer).
    timeout: Duration("2m"),
    // Attempts of one request answered 429 or 5xx, or not answered (timeouts, refused connections).
    max_attempts: Type.Integer({ minimum: 1, maximum: 10, default: 4 }),
    retry_initial_delay: Duration("1s"),
    retry_max_delay: Duration("30s"),
    // Images (and video frames) are downscaled to this longest side before they are sent.
    max_image_side: Type.Integer({ minimum: 64, maximum: 4096, default: 1024 }),
    // Audio is transcribed in segments of this length (hosted APIs take about 25 MB per request).
    transcription_segment: Duration("10m"),
  },
  { additionalProperties: false, default: {} },
);

export const LimitsConfig = Type.Object(
  {
    // Largest accepted request body. A full batch of 100 jobs is well under 256 KiB.
    max_body_bytes: Type.Integer({ minimum: 1024, default: 1_048_576 }),
    // How long finished jobs and batches are kept before they are pruned.
    retention: Duration("7d"),
    // How often finished jobs past their retention are pruned.
    prune_interval: Duration("60s"),
    // Entries kept in the events stream (approximate trim).
    events_max_len: Type.Integer({ minimum: 1000, default: 100_000 }),
    // Per-job override maximums (resources, timeout_seconds).
    max_timeout_seconds: Type.Integer({ minimum: 1, default: 3600 }),
    // Time allowed for one dependency probe of /health and /health/ready.
    health_check_timeout: Duration("2s"),
    // Decompression bombs: images with more pixels than this are refused before decoding.
    max_input_pixels: Type.Integer({ minimum: 1, default: 100_000_000 }),
    // Largest source object a job downloads.
    max_source_bytes: Type.Integer({ minimum: 1, default: 5 * 1024 ** 3 }),
    // Largest output image side (resize, thumbnail width).
    max_output_dimension: Type.Integer({ minimum: 1, default: 16_384 }),
  },
  { additionalProperties: false, default: {} },
);

export const ConfigFile = Type.Object(
  {
    server: ServerConfig,
    redis: RedisConfig,
    storage: StorageConfig,
    executor: ExecutorConfig,
    kubernetes: KubernetesConfig,
    webhooks: WebhooksConfig,
    ai: AiConfig,
    limits: LimitsConfig,
    data_dir: Type.String({ minLength: 1, default: ".data" }),
    log_level: Type.Optional(
      Type.Union(["fatal", "error", "warn", "info", "debug", "trace", "silent"].map((l) => Type.Literal(l))),
    ),
    // json: one JSON object a line; pretty: readable lines; auto: pretty on a terminal, else json.
    log_format: Type.Union([Type.Literal("auto"), Type.Literal("json"), Type.Literal("pretty")], {
      default: "auto",
    }),
  },
  { additionalProperties: false },
);
export type ConfigFile = Static<typeof ConfigFile>;
