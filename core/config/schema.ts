import {
  Type,
  type Static,
  type TNumber,
  type TObject,
  type TSchema,
  type TString,
  type TUnion,
} from "../typebox.js";
import { EXECUTION_CLASSES, JOB_TYPES, PRIORITY, type JobType } from "../jobs/types.js";
import { definitionOf } from "../../jobs/registry.js";
import type { ResourceClass } from "../../jobs/define.js";
import { RUNNER_ENV } from "./runner-env.js";

// The configuration: every setting once, with its default, its allowed values, its environment
// variable and its description. load.ts derives the resolved configuration (and its type) from
// these schemas, scripts/gen-docs.ts derives docs/configuration.md, and test/component/config-drift.test.ts
// holds config.example.yaml and the Helm chart to them. Adding a setting means adding it here.

/** A client's name: it is recorded on each of its jobs and appears in logs and metrics. */
export const CLIENT_NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$";

// Keywords this schema adds to JSON Schema's (extensions, which validators ignore).
/** The environment variable that overrides the setting. */
export const ENV = "x-env";
/**
 * A duration: Go-style ("30s", "1m30s", "250ms", "7d") or seconds as a number. The resolved
 * configuration holds it in milliseconds, named with "Ms" (`lease` → `leaseMs`).
 */
export const DURATION = "x-duration";
/** An object whose keys are data (the job types), not names: the resolved configuration keeps them. */
export const KEYED_BY = "x-keyed-by";

export type TDuration = TUnion<[TString, TNumber]> & { [DURATION]: true };
export type TKeyed<P extends Record<string, TSchema>> = TObject<P> & { [KEYED_BY]: string };

const Duration = (def: string, description: string, env?: string): TDuration =>
  Type.Union([Type.String({ minLength: 1 }), Type.Number({ minimum: 0 })], {
    default: def,
    description,
    [DURATION]: true,
    ...(env ? { [ENV]: env } : {}),
  }) as TDuration;

/** One setting per job type, `of(type)` each; documented as one row (`….<type>`). */
function PerJobType<T extends TSchema>(
  of: (type: JobType) => T,
  description: string,
): TKeyed<Record<JobType, T>> {
  const properties = Object.fromEntries(JOB_TYPES.map((type) => [type, of(type)])) as Record<JobType, T>;
  return Type.Object(properties, {
    additionalProperties: false,
    default: {},
    description,
    [KEYED_BY]: "job type",
  }) as TKeyed<Record<JobType, T>>;
}

/** A section of the file: an object whose settings each have their own default. */
const Section = <P extends Record<string, TSchema>>(properties: P, description: string) =>
  Type.Object(properties, { additionalProperties: false, default: {}, description });

const ApiClientConfig = Type.Object(
  {
    name: Type.String({
      pattern: CLIENT_NAME_PATTERN,
      title: "client name",
      description: "The client's name, recorded on each of its jobs and shown in logs and metrics.",
    }),
    keys: Type.Array(Type.String(), {
      description:
        "Its keys (several during a rotation). Empty entries (an unset `${VAR:-}`) are ignored; at least one must remain.",
    }),
    admin: Type.Boolean({
      default: false,
      description: "An admin sees every client's jobs and batches.",
    }),
    rate_limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        description: "Its requests per `server.rate_limit.window`; unset: `server.rate_limit.per_client`.",
      }),
    ),
    // Its share and limits (docs/api.md, Clients' limits and fair share).
    weight: Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 1,
      description:
        "Its share of the runners: within a priority level, clients with waiting jobs take turns of `weight` jobs each.",
    }),
    max_running: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          "Most of its jobs claimed or processing at once; beyond it its jobs wait and other clients' run. Unset: no limit.",
      }),
    ),
    max_pending: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          "Most of its jobs waiting in the queues; a submission that would pass it is refused whole (429). Unset: no limit.",
      }),
    ),
    job_types: Type.Optional(
      Type.Array(Type.Union(JOB_TYPES.map((t) => Type.Literal(t))), {
        description: "The job types it may submit; another is refused (403). Unset: every type.",
      }),
    ),
    max_priority: Type.Optional(
      Type.Integer({
        description:
          "The highest `priority` its jobs may ask for; a higher one is refused (403). Unset: any.",
      }),
    ),
    max_source_bytes: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          "The largest source its jobs may read, in bytes, below `limits.max_source_bytes`; a job with a larger one fails, naming it. Unset: `limits.max_source_bytes`.",
      }),
    ),
  },
  { additionalProperties: false },
);
export { ApiClientConfig };

export const ServerConfig = Section(
  {
    host: Type.Optional(
      Type.String({
        minLength: 1,
        [ENV]: "HOST",
        description:
          "Listen address. Unset: `127.0.0.1` for `start` (the local stack), `0.0.0.0` for `api` and `controller`.",
      }),
    ),
    port: Type.Integer({
      minimum: 0,
      maximum: 65535,
      default: 8080,
      [ENV]: "PORT",
      description: "Listen port.",
    }),
    mode: Type.Union([Type.Literal("debug"), Type.Literal("release"), Type.Literal("test")], {
      default: "release",
      description: "Sets the default log level: debug, info and warn respectively.",
    }),
    read_timeout: Duration("30s", "Time allowed to receive a whole request."),
    write_timeout: Duration("30s", "Idle time allowed on a connection (SSE heartbeats keep streams alive)."),
    api_keys: Type.Array(Type.String(), {
      default: [],
      [ENV]: "API_KEYS",
      description:
        "Keys of one client that sees every job (rotation: list the new key beside the old one). Empty, with no `clients`: authentication is off, which is allowed on loopback only (see `allow_unauthenticated`). Beside `clients` they are the client named `default`.",
    }),
    clients: Type.Array(ApiClientConfig, {
      default: [],
      description:
        "Named clients, each seeing only its own jobs and batches (an admin sees all); see docs/api.md, Authentication.",
    }),
    docs_path: Type.String({
      pattern: "^/[A-Za-z0-9/_-]*$",
      default: "/docs",
      description: "Path of the interactive API reference.",
    }),
    sse_heartbeat: Duration(
      "15s",
      "A comment line is sent on idle SSE streams this often; must be shorter than `write_timeout`.",
    ),
    shutdown_timeout: Duration("25s", "Longest graceful shutdown before the process exits."),
    trust_proxy: Type.Boolean({
      default: false,
      description: "Take the client's address from `X-Forwarded-For` (behind a proxy).",
    }),
    rate_limit: Section(
      {
        enabled: Type.Boolean({ default: true, description: "Limit requests to `/api/v1`." }),
        window: Duration(
          "1m",
          "The window the budgets count (fixed windows, aligned to the clock); at least 1s.",
        ),
        per_client: Type.Integer({
          minimum: 1,
          default: 6000,
          description:
            "Each client's budget per window (every caller's own, by address, when authentication is off).",
        }),
        per_address: Type.Integer({
          minimum: 1,
          default: 300,
          description: "The budget of an address whose requests carry no valid key.",
        }),
        sync_interval: Duration(
          "100ms",
          "How often a replica adds its counts to the shared ones (and learns the others'); at least 10ms, shorter than the window.",
        ),
      },
      "Requests to `/api/v1` per window, counted in Redis so that every replica shares them; health, metrics and docs are never limited (docs/rate-limiting.md).",
    ),
    allow_unauthenticated: Type.Boolean({
      default: false,
      [ENV]: "ALLOW_UNAUTHENTICATED",
      description:
        "Serve the API off loopback without `api_keys` or `clients` (`start` and `api` refuse otherwise).",
    }),
  },
  "The HTTP API.",
);

export const RedisConfig = Section(
  {
    url: Type.Optional(
      Type.String({
        minLength: 1,
        [ENV]: RUNNER_ENV.redisUrl,
        description:
          "`redis://[:password@]host:port[/db]`, `rediss://…`, or a Sentinel group `redis-sentinel://[:password@]host:26379[,host:port…]/<master>[/<db>]` (`rediss-sentinel://` for TLS). Unset: `start` runs a redis-server of its own; the other commands need it.",
      }),
    ),
    key_prefix: Type.String({
      pattern: "^[A-Za-z0-9_.-]+$",
      default: "media",
      [ENV]: RUNNER_ENV.redisKeyPrefix,
      description:
        "Keys are `{media}:…` (one hash tag: Redis Cluster safe); lets installations share a Redis.",
    }),
    connect_timeout: Duration("5s", "Time allowed to connect to Redis."),
    socket_timeout: Duration(
      "10s",
      "A connection that gets nothing back from Redis this long after sending a command is dropped and made again, and its commands fail (the API answers 503): a Redis whose node is lost sends nothing, not even a refusal, and would hold every request until TCP gives up (minutes). Longer than any command takes.",
    ),
  },
  "Redis, the system of record: jobs, batches, queues, events.",
);

export const StorageConfig = Section(
  {
    endpoint: Type.Optional(
      Type.String({
        minLength: 1,
        [ENV]: RUNNER_ENV.s3Endpoint,
        description: "S3-protocol endpoint. Unset: AWS S3 (`start`: the embedded store).",
      }),
    ),
    region: Type.String({ default: "us-east-1", [ENV]: RUNNER_ENV.s3Region, description: "Region." }),
    access_key_id: Type.Optional(
      Type.String({
        [ENV]: RUNNER_ENV.s3AccessKeyId,
        description: "Unset: the AWS SDK's default credential chain.",
      }),
    ),
    secret_access_key: Type.Optional(
      Type.String({ [ENV]: RUNNER_ENV.s3SecretAccessKey, description: "The secret of `access_key_id`." }),
    ),
    force_path_style: Type.Boolean({
      default: true,
      [ENV]: RUNNER_ENV.s3ForcePathStyle,
      description: "Path-style addressing (the embedded store, most S3-compatible servers).",
    }),
    public_base_url: Type.Optional(
      Type.String({
        minLength: 1,
        [ENV]: RUNNER_ENV.s3PublicBaseUrl,
        description:
          "Base of `output_url` in results (a CDN). Unset: the endpoint's path-style URL, else `s3://bucket/key`.",
      }),
    ),
    health_bucket: Type.Optional(
      Type.String({
        minLength: 1,
        description: "Readiness probes this bucket with HeadBucket. Unset: ListBuckets.",
      }),
    ),
    embedded_port: Type.Integer({
      minimum: 0,
      maximum: 65535,
      default: 9000,
      [ENV]: "EMBEDDED_S3_PORT",
      description: "Port of the embedded store (`start` only).",
    }),
    embedded_host: Type.String({
      minLength: 1,
      default: "127.0.0.1",
      [ENV]: "EMBEDDED_S3_HOST",
      description:
        "Address of the embedded store (`start` only), e.g. 0.0.0.0 in a container whose port 9000 is published; off loopback it needs `access_key_id` and `secret_access_key` of your own.",
    }),
    output_link_expiry: Duration(
      "15m",
      "How long the presigned link `GET /api/v1/jobs/{id}/output` redirects to stays valid; at most 7d (S3's limit).",
    ),
  },
  "Object storage (S3 protocol): sources and outputs of jobs.",
);

// Kubernetes quantities (500m, 2, 512Mi, 1G) and names (DNS-1123 labels and subdomains).
const CPU_QUANTITY = "^\\d+(?:\\.\\d+)?m?$";
const MEMORY_QUANTITY = "^\\d+(?:\\.\\d+)?(?:[KMGTPE]i?|k|e\\d+)?$";
const DNS_LABEL = "^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$";
const DNS_SUBDOMAIN = "^[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?$";
const LABEL_VALUE = "^(?:[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?$";
const SECRET_KEY = "^[-._a-zA-Z0-9]+$";

// Their titles name them in docs/configuration.md.
const secretName = (description: string) =>
  Type.String({ pattern: DNS_SUBDOMAIN, title: "Secret name", description });
const secretKey = (def: string, description: string) =>
  Type.String({ pattern: SECRET_KEY, title: "Secret key", default: def, description });

const Cpu = (def: string, description: string) =>
  Type.String({ pattern: CPU_QUANTITY, title: "CPU quantity", default: def, description });
const Memory = (def: string, description: string) =>
  Type.String({ pattern: MEMORY_QUANTITY, title: "memory quantity", default: def, description });

export const ExecutorConfig = Section(
  {
    kind: Type.Union([Type.Literal("local"), Type.Literal("kubernetes")], {
      default: "local",
      [ENV]: "EXECUTOR",
      description: "Where jobs run: runner processes on this machine, or Kubernetes Jobs.",
    }),
    local_concurrency: Type.Integer({
      minimum: 0,
      default: 0,
      [ENV]: "LOCAL_CONCURRENCY",
      description: "Jobs the local executor runs at once; 0: one per CPU.",
    }),
    local_runner_max_jobs: Type.Integer({
      minimum: 1,
      default: 500,
      description: "Jobs one local runner process serves before it is replaced (1: a fresh process per job).",
    }),
    timeouts: PerJobType(
      (type) => Duration(definitionOf(type).runner.timeout, `Processing time of \`${type}\` jobs.`),
      "Processing time allowed per job type, unless the job sets `timeout_seconds`.",
    ),
    max_attempts: Type.Integer({
      minimum: 1,
      default: 3,
      description: "Attempts of a job that fails transiently (runner crash, storage error) before it fails.",
    }),
    lease: Duration(
      "30s",
      "Lease of a claimed job, renewed every third of it while the job runs, so a dead executor's jobs come back.",
    ),
    pool: Type.Object(
      {
        enabled: Type.Boolean({
          default: false,
          [ENV]: "POOL_ENABLED",
          description:
            "Hand the jobs whose class is `pool` (or `auto`, when they fit) to the warm runner pool (`media-service pool` workers) instead of running them in the executor.",
        }),
        classes: PerJobType(
          () =>
            Type.Union(
              EXECUTION_CLASSES.map((c) => Type.Literal(c)),
              { default: "job" },
            ),
          "Execution class per job type: `job` (the executor's own run: a Kubernetes Job, or a local runner), `pool` (a warm pool worker), `auto` (the pool when the job fits it: no `resources` beyond `job_resources`, a source of at most `auto_max_source_bytes`). A job's `execution_class` may ask for another class of a type that is not `job`.",
        ),
        auto_max_source_bytes: Type.Integer({
          minimum: 0,
          default: 16 * 1024 ** 2,
          description: "`auto` sends a job to the pool when its source (a HEAD on it) is at most this large.",
        }),
        job_resources: Type.Object(
          {
            cpu: Cpu("1", "CPU a pooled job may ask for (`resources.cpu`)."),
            memory: Memory("1Gi", "Memory a pooled job may ask for (`resources.memory`)."),
          },
          {
            additionalProperties: false,
            default: {},
            description:
              "What one pooled job gets at most: a job asking for more runs as `job`, whatever its class.",
          },
        ),
        queue_limit: Type.Integer({
          minimum: 1,
          default: 100,
          description:
            "Jobs waiting in the pool's queue at most; the rest wait in their type's queue, in priority order.",
        }),
        concurrency: Type.Integer({
          minimum: 1,
          default: 2,
          [ENV]: "POOL_CONCURRENCY",
          description: "Jobs one pool worker runs at once, each in its own runner process.",
        }),
        runner_max_jobs: Type.Integer({
          minimum: 1,
          default: 500,
          [ENV]: "POOL_RUNNER_MAX_JOBS",
          description:
            "Jobs one pool runner process serves before it is replaced (1: a fresh process per job, the strictest isolation, at the cost of a process start per job).",
        }),
      },
      {
        additionalProperties: false,
        default: {},
        description:
          "The warm runner pool: workers that keep runner processes started and take small jobs from one queue, beside one run per job.",
      },
    ),
    scratch_dir: Type.Optional(
      Type.String({
        minLength: 1,
        [ENV]: RUNNER_ENV.scratchDir,
        description:
          "Where runners keep sources and outputs while they work. Unset: `$TMPDIR/media-service`.",
      }),
    ),
  },
  "How jobs are run.",
);

const Storage = (def: string, description: string) =>
  Type.String({ pattern: MEMORY_QUANTITY, title: "storage quantity", default: def, description });

const ResourceList = ([cpu, memory, storage]: [string, string, string], what: string) =>
  Type.Object(
    {
      cpu: Cpu(cpu, `CPU ${what}.`),
      memory: Memory(memory, `Memory ${what}.`),
      ephemeral_storage: Storage(
        storage,
        `Local disk (the pod's \`ephemeral-storage\`: its scratch emptyDir, its logs) ${what}.`,
      ),
    },
    { additionalProperties: false, default: {} },
  );
/**
 * The default requests and limits of each resource class a job type names (its definition's
 * runner.resources): CPU, memory and local disk. The disk limit is the runner's scratch space too
 * (its emptyDir's sizeLimit): what a job downloads, writes and uploads, so a video encode (a source
 * up to limits.max_source_bytes, 5 GiB, and its outputs) gets far more than an image.
 */
const JOB_RESOURCES: Record<ResourceClass, [[string, string, string], [string, string, string]]> = {
  image: [
    ["250m", "256Mi", "256Mi"],
    ["1", "1Gi", "2Gi"],
  ],
  media: [
    ["500m", "512Mi", "1Gi"],
    ["2", "2Gi", "8Gi"],
  ],
  // Encoding whole videos: ffmpeg's threads follow the CPU limit (runner/cpus.ts); a source, its
  // encodes (every rendition of an adaptive ladder) and their segments on disk at once.
  video: [
    ["2", "2Gi", "2Gi"],
    ["4", "4Gi", "16Gi"],
  ],
  ai: [
    ["100m", "128Mi", "256Mi"],
    ["500m", "512Mi", "2Gi"],
  ],
};

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

// Labels, annotations and the Kueue queue of runner Jobs, for all of them and per job type or client
// (docs/kubernetes.md, Kueue). Keys and values are checked as Kubernetes does at load (checks.ts).
const JobMetadata = (whose: string) => ({
  labels: Type.Optional(
    Type.Record(Type.String(), Type.String(), {
      description: `Labels of ${whose} runner Jobs and their pods.`,
    }),
  ),
  annotations: Type.Optional(
    Type.Record(Type.String(), Type.String(), {
      description: `Annotations of ${whose} runner Jobs and their pods.`,
    }),
  ),
  queue_name: Type.Optional(
    Type.String({
      pattern: DNS_LABEL,
      title: "LocalQueue name",
      description: `Kueue LocalQueue of ${whose} runner Jobs (the \`kueue.x-k8s.io/queue-name\` label); they are created suspended, for Kueue to admit.`,
    }),
  ),
});
const JobMetadataOf = (whose: string, description: string) =>
  Type.Object(JobMetadata(whose), { additionalProperties: false, description });

const PriorityBand = Type.Object(
  {
    min_priority: Type.Integer({
      minimum: PRIORITY.min,
      maximum: PRIORITY.max,
      description: "The band holds the jobs of at least this priority (up to the next band's).",
    }),
    priority_class_name: Type.Optional(
      Type.String({
        pattern: DNS_SUBDOMAIN,
        title: "PriorityClass name",
        description: "PriorityClass of the band's runner pods (instead of `priority_class_name`).",
      }),
    ),
    workload_priority_class: Type.Optional(
      Type.String({
        pattern: DNS_SUBDOMAIN,
        title: "WorkloadPriorityClass name",
        description:
          "Kueue WorkloadPriorityClass of the band's runner Jobs (the `kueue.x-k8s.io/priority-class` label).",
      }),
    ),
  },
  { additionalProperties: false },
);

export const KubernetesConfig = Section(
  {
    namespace: Type.Optional(
      Type.String({
        pattern: DNS_LABEL,
        title: "namespace name",
        description:
          "Where runner Jobs are created. Unset: the controller pod's own namespace, else `default`.",
      }),
    ),
    instance: Type.String({
      pattern: LABEL_VALUE,
      title: "label value",
      minLength: 1,
      default: "media-service",
      description: "The `app.kubernetes.io/instance` label of every runner Job (the Helm release name).",
    }),
    image: Type.String({
      minLength: 1,
      default: "media-service:latest",
      description: "Image of the runner Jobs.",
    }),
    image_pull_policy: Type.Union(
      [Type.Literal("Always"), Type.Literal("IfNotPresent"), Type.Literal("Never")],
      { default: "IfNotPresent", description: "Pull policy of the runner containers." },
    ),
    image_pull_secrets: Type.Array(Type.String({ pattern: DNS_SUBDOMAIN, title: "Secret name" }), {
      default: [],
      description: "Names of the Secrets runner pods pull the image with.",
    }),
    service_account: Type.Optional(
      Type.String({
        pattern: DNS_SUBDOMAIN,
        title: "ServiceAccount name",
        description:
          "ServiceAccount of runner pods (its token is never mounted). Unset: the namespace's default one.",
      }),
    ),
    node_selector: Type.Optional(
      Type.Record(Type.String(), Type.String(), { description: "Node selector of runner pods." }),
    ),
    tolerations: Type.Optional(
      Type.Array(Toleration, {
        description:
          "Tolerations of runner pods: core/v1 Tolerations (`key`, `operator`, `value`, `effect`, `tolerationSeconds`).",
      }),
    ),
    affinity: Type.Optional(
      Type.Object(
        {},
        {
          additionalProperties: true,
          description: "A core/v1 Affinity of runner pods, passed through unchanged.",
        },
      ),
    ),
    priority_class_name: Type.Optional(
      Type.String({
        pattern: DNS_SUBDOMAIN,
        title: "PriorityClass name",
        description: "PriorityClass of runner pods.",
      }),
    ),
    job_labels: JobMetadata("all").labels,
    job_annotations: JobMetadata("all").annotations,
    kueue: Type.Object(
      { queue_name: JobMetadata("all").queue_name },
      {
        additionalProperties: false,
        default: {},
        description:
          "Kueue: the LocalQueue runner Jobs are submitted to (per job type or client: `per_type`, `per_client`).",
      },
    ),
    per_type: PerJobType(
      (type) => Type.Optional(JobMetadataOf(`\`${type}\``, "")),
      "Labels, annotations and Kueue queue of one job type's runner Jobs, over the global ones (`job_labels`, `job_annotations`, `kueue.queue_name`); a client's (`per_client`) go over these.",
    ),
    per_client: Type.Optional(
      Type.Record(
        Type.String({ pattern: CLIENT_NAME_PATTERN }),
        JobMetadataOf("one client's", "One client's labels, annotations and Kueue queue."),
        {
          description:
            "Labels, annotations and Kueue queue of the runner Jobs of one API client's jobs (by its name in `server.clients`), over those of its job type: global < type < client.",
        },
      ),
    ),
    priority_bands: Type.Array(PriorityBand, {
      default: [],
      description:
        "PriorityClass or Kueue WorkloadPriorityClass by the job's priority: a job is in the band with the highest `min_priority` at most its priority; a job in no band gets `priority_class_name`.",
    }),
    max_waiting_admission: Duration(
      "30m",
      "How long a runner Job may wait suspended for Kueue to admit it before its job fails, naming this setting and the queue. While it waits, `unschedulable_timeout` does not count.",
    ),
    ttl_seconds_after_finished: Type.Integer({
      minimum: 0,
      default: 3600,
      description: "Finished Jobs are deleted this many seconds after they end.",
    }),
    scratch_size: Type.Optional(
      Type.String({
        pattern: MEMORY_QUANTITY,
        title: "storage quantity",
        description:
          "sizeLimit of the emptyDir every runner works in (sources and outputs). Unset: each type's `resources.<type>.limits.ephemeral_storage`, the disk its pod may use.",
      }),
    ),
    resources: PerJobType((type) => {
      const [requests, limits] = JOB_RESOURCES[definitionOf(type).runner.resources];
      return Type.Object(
        {
          requests: ResourceList(requests, `requested by \`${type}\` runners`),
          limits: ResourceList(limits, `limit of \`${type}\` runners`),
        },
        { additionalProperties: false, default: {} },
      );
    }, "Requests and limits of the runner container per job type (CPU and memory unless the job sets `resources`); the `ephemeral_storage` limit is also the sizeLimit of its scratch emptyDir, and a runner evicted for using more fails its job naming the setting. Checked at start as Kubernetes parses them (`512K` is refused: `k` is kilo, `Ki` kibi); a request above its limit stops the process."),
    max_resources: Type.Object(
      {
        cpu: Cpu("4", "Largest CPU a job may ask for."),
        memory: Memory("8Gi", "Largest memory a job may ask for."),
      },
      {
        additionalProperties: false,
        default: {},
        description: "Largest per-job `resources` accepted at submit (400 beyond).",
      },
    ),
    max_running_jobs: Type.Integer({
      minimum: 1,
      default: 20,
      description: "Runner Jobs unfinished at once, in total.",
    }),
    max_running_jobs_per_type: PerJobType(
      () => Type.Optional(Type.Integer({ minimum: 1 })),
      "Runner Jobs unfinished at once per job type, e.g. `{audio_convert: 4}` (a type not listed: only the total).",
    ),
    unschedulable_timeout: Duration(
      "5m",
      "How long a job's runner pod may wait to start (Pending for a node with room, or being started on one) before its job fails, naming this setting and the scheduler's reason. A wait is not the job's time: it is added to the runner Job's `activeDeadlineSeconds`.",
    ),
    start_failure_timeout: Duration(
      "1m",
      "A runner pod whose image cannot be pulled, or whose Secrets are missing, for this long fails its job.",
    ),
    reconcile_interval: Duration(
      "10s",
      "Full level-triggered pass over the cluster and the store (on top of the watch events).",
    ),
    leader_election: Type.Object(
      {
        enabled: Type.Boolean({
          default: true,
          description: "Keep on with more than one controller replica.",
        }),
        lease_name: Type.Optional(
          Type.String({
            pattern: DNS_SUBDOMAIN,
            title: "Lease name",
            description: "The Lease's name. Unset: `<instance>-controller`.",
          }),
        ),
        lease_duration: Duration("15s", "How long a leader's Lease holds without renewal."),
        renew_deadline: Duration("10s", "The leader steps down when it could not renew for this long."),
        retry_period: Duration("2s", "How often candidates try to acquire the Lease."),
      },
      {
        additionalProperties: false,
        default: {},
        description:
          "Leader election among controller replicas: one coordination.k8s.io Lease; needs lease_duration > renew_deadline > retry_period.",
      },
    ),
    redis_secret: Type.Optional(
      Type.Object(
        {
          name: secretName("The Secret's name."),
          key: secretKey("redis-url", "The key of the Redis URL in it."),
        },
        {
          additionalProperties: false,
          description: "The Secret runner pods read `REDIS_URL` from (only its name and key are in the Job).",
        },
      ),
    ),
    s3_secret: Type.Optional(
      Type.Object(
        {
          name: secretName("The Secret's name."),
          access_key_key: secretKey("access-key-id", "The key of the access key id in it."),
          secret_key_key: secretKey("secret-access-key", "The key of the secret access key in it."),
        },
        {
          additionalProperties: false,
          description: "The Secret runner pods read `S3_ACCESS_KEY_ID` and `S3_SECRET_ACCESS_KEY` from.",
        },
      ),
    ),
    ai_secret: Type.Optional(
      Type.Object(
        {
          name: secretName("The Secret's name."),
          key: secretKey("api-key", "The key of the API key in it."),
        },
        {
          additionalProperties: false,
          description:
            "The Secret runner pods read the key of the provider `AI_BASE_URL` defines from (`ai.providers.<name>.api_key_secret` for the others).",
        },
      ),
    ),
  },
  "The Kubernetes executor (`executor.kind: kubernetes`, `media-service controller` in a cluster).",
);

export const WebhooksConfig = Section(
  {
    signing_secret: Type.Optional(
      Type.String({
        [ENV]: "WEBHOOK_SIGNING_SECRET",
        description:
          "Standard Webhooks secret: `whsec_` followed by base64 of 24-64 random bytes (`echo whsec_$(openssl rand -base64 32)`). Unset: webhooks are not signed.",
      }),
    ),
    allow_private: Type.Optional(
      Type.Boolean({
        description:
          "Allow targets in loopback, private, link-local and similar ranges. Unset: allowed by `start` (the local stack), refused everywhere else.",
      }),
    ),
    allowed_hosts: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description:
        "Hostnames, `*.domain` wildcards, IP addresses or CIDR ranges allowed whatever they resolve to.",
    }),
    timeout: Duration("10s", "Time allowed to one delivery attempt (connect, headers and body)."),
    max_attempts: Type.Integer({
      minimum: 1,
      maximum: 50,
      default: 8,
      description: "Attempts per webhook before it is given up (the first one included).",
    }),
    retry_initial_delay: Duration(
      "30s",
      "Delay before the first retry; it doubles per attempt (with jitter) up to `retry_max_delay`.",
    ),
    retry_max_delay: Duration("1h", "Longest delay between attempts."),
    concurrency: Type.Integer({
      minimum: 1,
      default: 64,
      description: "Delivery attempts in flight at once per controller.",
    }),
    per_host_concurrency: Type.Integer({
      minimum: 1,
      default: 8,
      description: "Delivery attempts in flight at once per receiving host.",
    }),
    reclaim_after: Duration(
      "30s",
      "A delivery held by a controller that stopped (no heartbeat for this long) is taken over; at least 1s.",
    ),
  },
  "Webhooks: job and batch notifications, delivered by the controller.",
);

/** Names a provider in config, in `analyze`'s `provider` and in results. */
export const AI_PROVIDER_NAME = "^[a-z0-9](?:[a-z0-9_-]{0,61}[a-z0-9])?$";

const STRUCTURED_OUTPUT = ["prompt", "json_object", "json_schema"] as const;

/**
 * The settings of one OpenAI-compatible provider beside its URL and model: shared by `ai` itself
 * (the provider the environment defines, with its variables) and the entries of `ai.providers`.
 */
const providerSettings = (env: {
  apiKey?: string;
  transcriptionModel?: string;
  structuredOutput?: string;
}) => ({
  api_key: Type.Optional(
    Type.String({
      ...(env.apiKey ? { [ENV]: env.apiKey } : {}),
      description: "Its API key; unset: none is sent.",
    }),
  ),
  transcription_model: Type.String({
    minLength: 1,
    default: "whisper-1",
    ...(env.transcriptionModel ? { [ENV]: env.transcriptionModel } : {}),
    description:
      "Its `/audio/transcriptions` model (analyze of audio); OpenAI's by default, local servers name their own.",
  }),
  structured_output: Type.Union(
    STRUCTURED_OUTPUT.map((m) => Type.Literal(m)),
    {
      default: "prompt",
      ...(env.structuredOutput ? { [ENV]: env.structuredOutput } : {}),
      description:
        "How JSON answers are asked for: in the prompt only (works with every server), or also with `response_format` `json_object` / `json_schema` where the server supports it.",
    },
  ),
});

const BASE_URL_EXAMPLES =
  "e.g. https://api.openai.com/v1, http://localhost:11434/v1 (Ollama), http://localhost:8000/v1 (vLLM)";

export const AiProviderConfig = Type.Object(
  {
    base_url: Type.String({ minLength: 1, description: `Its OpenAI-compatible API, ${BASE_URL_EXAMPLES}.` }),
    model: Type.String({
      minLength: 1,
      description: "A chat model that accepts images (image_ai_keywords, analyze).",
    }),
    ...providerSettings({}),
    api_key_secret: Type.Optional(
      Type.Object(
        {
          name: secretName("The Secret's name."),
          key: secretKey("api-key", "The key of the API key in it."),
        },
        {
          additionalProperties: false,
          description:
            "Kubernetes executor: runner pods of this provider's jobs read its key from this Secret.",
        },
      ),
    ),
  },
  // The default only lets Value.Default reach the entries of the record (a provider needs base_url).
  { additionalProperties: false, default: {} },
);

export const AiConfig = Section(
  {
    base_url: Type.Optional(
      Type.String({
        minLength: 1,
        [ENV]: RUNNER_ENV.aiBaseUrl,
        description: `The OpenAI-compatible API of the provider named \`ai.name\`, ${BASE_URL_EXAMPLES}. Unset, with no \`providers\`: AI jobs fail saying how to configure one.`,
      }),
    ),
    model: Type.Optional(
      Type.String({
        minLength: 1,
        [ENV]: RUNNER_ENV.aiModel,
        description: "Its chat model, which must accept images (e.g. gpt-4o-mini, llava).",
      }),
    ),
    ...providerSettings({
      apiKey: RUNNER_ENV.aiApiKey,
      transcriptionModel: RUNNER_ENV.aiTranscriptionModel,
      structuredOutput: RUNNER_ENV.aiStructuredOutput,
    }),
    name: Type.String({
      pattern: AI_PROVIDER_NAME,
      title: "provider name",
      default: "default",
      [ENV]: RUNNER_ENV.aiProvider,
      description: "The name of the provider `base_url` defines.",
    }),
    providers: Type.Record(Type.String({ pattern: AI_PROVIDER_NAME }), AiProviderConfig, {
      default: {},
      description:
        "More providers by name (lower-case letters, digits, `-` and `_`); a job picks one with `provider` (analyze).",
    }),
    default_provider: Type.Optional(
      Type.String({
        pattern: AI_PROVIDER_NAME,
        title: "provider name",
        description:
          "The provider of jobs that name none. Unset: the one `base_url` defines, else the only one configured (required with several).",
      }),
    ),
    timeout: Duration(
      "2m",
      "Time allowed to one request (a slow model is given this long to answer).",
      RUNNER_ENV.aiTimeout,
    ),
    max_attempts: Type.Integer({
      minimum: 1,
      maximum: 10,
      default: 4,
      [ENV]: RUNNER_ENV.aiMaxAttempts,
      description:
        "Attempts of one request answered 429 or 5xx, or not answered (timeouts, refused connections).",
    }),
    retry_initial_delay: Duration(
      "1s",
      "Backoff before the first retry of a request; it doubles (with jitter; `Retry-After` / `retry-after-ms` honoured up to `retry_max_delay`).",
      RUNNER_ENV.aiRetryInitialDelay,
    ),
    retry_max_delay: Duration("30s", "Longest backoff between attempts.", RUNNER_ENV.aiRetryMaxDelay),
    max_image_side: Type.Integer({
      minimum: 64,
      maximum: 4096,
      default: 1024,
      [ENV]: RUNNER_ENV.aiMaxImageSide,
      description: "Images (and video frames) are downscaled to this longest side before they are sent.",
    }),
    transcription_segment: Duration(
      "10m",
      "Audio is transcribed in segments of this length (hosted APIs take about 25 MB per request); at least 10s.",
      RUNNER_ENV.aiTranscriptionSegment,
    ),
  },
  "AI providers (OpenAI-compatible HTTP APIs) of image_ai_keywords and analyze jobs: the one `AI_BASE_URL` defines and any number of named ones.",
);

export const LimitsConfig = Section(
  {
    max_body_bytes: Type.Integer({
      minimum: 1024,
      default: 1_048_576,
      description:
        "Largest accepted request body (413 beyond); a full batch of 100 jobs is well under 256 KiB.",
    }),
    retention: Duration("7d", "Finished jobs and batches are deleted this long after they end."),
    idempotency_ttl: Duration(
      "24h",
      "How long a submit's `Idempotency-Key` replays its first answer; 1s to 7d (docs/api.md).",
    ),
    prune_interval: Duration("60s", "How often the controller deletes what is past its retention."),
    events_max_len: Type.Integer({
      minimum: 1000,
      default: 100_000,
      description: "Entries kept in the events stream (approximate trim).",
    }),
    max_timeout_seconds: Type.Integer({
      minimum: 1,
      default: 3600,
      description: "Largest per-job `timeout_seconds` accepted.",
    }),
    health_check_timeout: Duration(
      "2s",
      "Time allowed to each dependency probe of /health and /health/ready.",
    ),
    max_input_pixels: Type.Integer({
      minimum: 1,
      default: 100_000_000,
      [ENV]: RUNNER_ENV.maxInputPixels,
      description: "Larger images and video frames are refused before decoding (decompression bombs).",
    }),
    max_source_bytes: Type.Integer({
      minimum: 1,
      default: 5 * 1024 ** 3,
      [ENV]: RUNNER_ENV.maxSourceBytes,
      description: "Larger sources are refused.",
    }),
    in_memory_source_bytes: Type.Integer({
      minimum: 0,
      default: 8 * 1024 ** 2,
      [ENV]: RUNNER_ENV.inMemorySourceBytes,
      description:
        "Image sources up to this size are downloaded into memory and processed without a scratch file (outputs too); larger ones, and video and audio, go through the scratch directory. 0: always a file.",
    }),
    max_output_dimension: Type.Integer({
      minimum: 1,
      default: 16_384,
      [ENV]: RUNNER_ENV.maxOutputDimension,
      description: "Largest output image side (resize, thumbnail width).",
    }),
    templates_per_client: Type.Integer({
      minimum: 1,
      default: 1000,
      description:
        "Templates a client may store (PUT /api/v1/templates); a new name beyond them is refused (409) until one is deleted.",
    }),
    template_versions: Type.Integer({
      minimum: 1,
      default: 100,
      description:
        "Versions kept of each stored template: storing one more drops the oldest (jobs keep the parameters they ran with).",
    }),
  },
  "Limits and retention.",
);

/** A template's name (core/jobs/templates.ts): lower-case letters, digits, `.`, `_`, `-`; up to 64. */
export const TEMPLATE_NAME_PATTERN = "^[a-z0-9][a-z0-9._-]{0,63}$";

/**
 * A template of the configuration: what PUT /api/v1/templates/{name} takes, plus its version. Its
 * parameters are checked when the configuration loads, as a PUT checks them (core/config/templates.ts).
 */
const TemplateConfig = Type.Object(
  {
    type: Type.Optional(
      Type.Union(
        JOB_TYPES.map((t) => Type.Literal(t)),
        { description: "The job type (a template with `steps` and no type is a pipeline's)." },
      ),
    ),
    version: Type.Integer({
      minimum: 1,
      default: 1,
      description:
        "The version jobs record (`template.version`): raise it when the template changes, so that a version always means the same.",
    }),
    parameters: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description:
          "The type's parameters, as a submit of the type takes them (the defaults fill in the rest).",
      }),
    ),
    overridable: Type.Optional(
      Type.Array(Type.String(), {
        description: "The parameters a submission with the template may override (none by default).",
      }),
    ),
    dest_bucket: Type.Optional(
      Type.String({ description: "The output's bucket, unless a submission gives one." }),
    ),
    dest_key: Type.Optional(
      Type.String({
        description:
          "The output's key, unless a submission gives one: `{prefix}` (the submission's dest_prefix), `{name}` (the source key's last segment without extension) and `{job_id}` are replaced.",
      }),
    ),
    dest_prefix: Type.Optional(
      Type.String({ description: "Types that write under a prefix: the prefix, a pattern as `dest_key`." }),
    ),
    description: Type.Optional(Type.String({ description: "What the template is for." })),
    steps: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: "A pipeline's steps (shorthand for `type: pipeline` with `parameters.steps`).",
      }),
    ),
    keep_partial: Type.Optional(
      Type.Boolean({ description: "A pipeline's keep_partial (with `steps`, as they are)." }),
    ),
  },
  // The default only lets Value.Default reach the entries of the record (their version's default).
  { additionalProperties: false, default: {} },
);

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

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
    templates: Type.Record(Type.String({ pattern: TEMPLATE_NAME_PATTERN }), TemplateConfig, {
      default: {},
      description:
        "Templates every client sees and uses by name (read-only: the API refuses to overwrite or delete them), by name (lower-case letters, digits, `.`, `_`, `-`; up to 64); see docs/api.md, Templates.",
    }),
    data_dir: Type.String({
      minLength: 1,
      default: ".data",
      [ENV]: "DATA_DIR",
      description: "Data of the local stack (`start`): Redis AOF, embedded store objects.",
    }),
    log_level: Type.Optional(
      Type.Union(
        LOG_LEVELS.map((l) => Type.Literal(l)),
        { [ENV]: RUNNER_ENV.logLevel, description: "The log level. Unset: from `server.mode`." },
      ),
    ),
    log_format: Type.Union([Type.Literal("auto"), Type.Literal("json"), Type.Literal("pretty")], {
      default: "auto",
      [ENV]: "LOG_FORMAT",
      description:
        "`json`: one JSON object a line; `pretty`: readable lines; `auto`: pretty on a terminal, else json.",
    }),
  },
  { additionalProperties: false },
);
export type ConfigFile = Static<typeof ConfigFile>;
