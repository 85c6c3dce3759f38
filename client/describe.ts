// Jobs and their results in words, for people (docs/job-types.md has each type's result).
import type { Job } from "../core/jobs/records.js";
import { bytes, fields, seconds, status, type Colors } from "./output.js";

type Result = Record<string, unknown>;

const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const obj = (v: unknown): Result => (v && typeof v === "object" && !Array.isArray(v) ? (v as Result) : {});

/** A colour as a swatch on a terminal that shows colours: two cells of it before its hex code. */
function swatch(colors: Colors, hex: string): string {
  const m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
  if (!m || !colors.isColorSupported) return hex;
  const [r, g, b] = [m[1]!, m[2]!, m[3]!].map((h) => parseInt(h, 16));
  return `\x1b[48;2;${r};${g};${b}m  \x1b[0m ${hex}`;
}

/** What a completed job produced, as field/value pairs. */
export function resultFields(colors: Colors, job: Job): Array<[string, string | undefined]> {
  const result = obj(job.result);
  const metadata = obj(result.metadata);
  const pairs: Array<[string, string | undefined]> = [];
  const url = str(result.output_url);
  if (url) {
    const s3 = job.dest_bucket && job.dest_key ? `s3://${job.dest_bucket}/${job.dest_key}` : undefined;
    pairs.push(["output", s3 && s3 !== url ? `${url} (${s3})` : url]);
  }
  const size = num(result.file_size);
  if (size !== undefined) pairs.push(["size", bytes(size, true)]);
  const width = num(metadata.width);
  const height = num(metadata.height);
  if (width !== undefined && height !== undefined) {
    const format = str(metadata.format);
    pairs.push([
      "dimensions",
      `${width} × ${height}${format && job.type !== "audio_convert" ? ` ${format}` : ""}`,
    ]);
  }
  if (job.type === "video_thumbnail") pairs.push(["taken at", str(result.timestamp)]);
  if (job.type === "video_transcode") {
    const [w, h, rate, duration, bitrate] = ["width", "height", "frame_rate", "duration", "bitrate"].map(
      (k) => num(result[k]),
    );
    pairs.push(["dimensions", w !== undefined && h !== undefined ? `${w} × ${h}` : undefined]);
    pairs.push(["duration", duration !== undefined ? seconds(duration) : undefined]);
    pairs.push([
      "video",
      [str(result.video_codec), rate !== undefined ? `${rate} fps` : undefined].filter(Boolean).join(", "),
    ]);
    pairs.push(["audio", str(result.audio_codec) ?? "none"]);
    pairs.push(["bitrate", bitrate !== undefined ? `${Math.round(bitrate / 1000)} kb/s` : undefined]);
  }
  if (job.type === "audio_convert") {
    const duration = num(result.duration);
    pairs.push(["duration", duration !== undefined ? seconds(duration) : undefined]);
    const bitrate = num(metadata.bitrate);
    const rate = num(metadata.sample_rate);
    const channels = num(metadata.channels);
    pairs.push([
      "audio",
      [
        str(metadata.format),
        str(metadata.codec),
        bitrate !== undefined ? `${Math.round(bitrate / 1000)} kb/s` : undefined,
        rate !== undefined ? `${rate} Hz` : undefined,
        channels !== undefined ? `${channels} channel${channels === 1 ? "" : "s"}` : undefined,
      ]
        .filter(Boolean)
        .join(", "),
    ]);
  }
  if (Array.isArray(result.colors)) {
    const shares = Array.isArray(result.percentages) ? result.percentages : [];
    pairs.push([
      "colours",
      result.colors
        .map((c, i) => {
          const share = num(shares[i]);
          return `${swatch(colors, String(c))}${share !== undefined ? ` ${share.toFixed(1)}%` : ""}`;
        })
        .join(", "),
    ]);
  }
  if (Array.isArray(result.keywords)) {
    const scores = Array.isArray(result.confidence_scores) ? result.confidence_scores : [];
    pairs.push([
      "keywords",
      result.keywords
        .map((k, i) => {
          const score = num(scores[i]);
          return `${String(k)}${score !== undefined ? ` (${score.toFixed(2)})` : ""}`;
        })
        .join(", "),
    ]);
  }
  if (job.type === "analyze") {
    const provider = str(result.provider);
    const model = str(result.model);
    pairs.push(["model", provider && model ? `${model} (${provider})` : (model ?? provider)]);
    pairs.push(["answer", str(result.text)]);
    if (Array.isArray(result.tags)) pairs.push(["tags", result.tags.map(String).join(", ")]);
    const transcript = str(result.transcript);
    if (transcript) {
      pairs.push(["transcript", transcript.length > 300 ? `${transcript.slice(0, 300)}…` : transcript]);
    }
  }
  // Whatever a result holds beyond the known fields (a newer server), as JSON.
  const known = new Set([
    "output_url",
    "file_size",
    "metadata",
    "duration",
    "timestamp",
    "colors",
    "percentages",
    "keywords",
    "confidence_scores",
    "provider",
    "model",
    "text",
    "tags",
    "transcript",
  ]);
  for (const [k, v] of Object.entries(result)) {
    if (!known.has(k)) pairs.push([k.replaceAll("_", " "), typeof v === "string" ? v : JSON.stringify(v)]);
  }
  return pairs;
}

/**
 * What a person reads of a job: its `state` (cancelled for a cancelled job), or from an API without
 * it, its status (cancelled when it has a cancelled_at).
 */
export function stateOf(job: Pick<Job, "status" | "state" | "cancelled_at">): string {
  if (job.state) return job.state;
  return job.status === "failed" && job.cancelled_at !== undefined ? "cancelled" : job.status;
}

/** How a job ended, for `submit --wait` and `watch`: a headline, then its result or error. */
export function describeEnd(colors: Colors, job: Job): string {
  const took = job.duration_seconds !== undefined ? ` in ${seconds(job.duration_seconds)}` : "";
  const headline = `${job.type} job ${job.id} ${status(colors, stateOf(job))}${job.status === "completed" ? took : ""}`;
  if (job.status !== "completed") return headline;
  const details = fields(colors, resultFields(colors, job));
  return details ? `${headline}\n${details}` : headline;
}

/** A job record for people (`media-service job ID`). */
export function describeJob(colors: Colors, job: Job): string {
  const s3 = (bucket?: string, key?: string) => (bucket && key ? `s3://${bucket}/${key}` : undefined);
  const parameters = Object.entries(obj(job.parameters))
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" ");
  const pairs: Array<[string, string | undefined]> = [
    ["id", job.id],
    ["type", job.type],
    [
      "status",
      status(colors, stateOf(job)) +
        (job.progress !== undefined && job.status === "processing" ? ` ${job.progress}%` : ""),
    ],
    ["error", job.error !== undefined ? colors.red(job.error) : undefined],
    ["source", s3(job.source_bucket, job.source_key)],
    ["destination", s3(job.dest_bucket, job.dest_key)],
    ["parameters", parameters],
    ["template", job.template ? `${job.template.name} version ${job.template.version}` : undefined],
    ["priority", job.priority !== undefined ? String(job.priority) : undefined],
    ["batch", job.batch_id],
    ["retry of", job.retry_of],
    ["retried as", job.retried_as],
    ["request id", job.request_id],
    ["attempts", job.attempts !== undefined ? String(job.attempts) : undefined],
    ["created", job.created_at],
    ["started", job.started_at],
    ["completed", job.completed_at],
    ["cancelled", job.cancelled_at],
    ["took", job.duration_seconds !== undefined ? seconds(job.duration_seconds) : undefined],
    ["webhook", job.webhook_url],
    [
      "webhook delivery",
      job.webhook_delivery
        ? `${job.webhook_delivery.status} after ${job.webhook_delivery.attempts} attempt(s), last ${job.webhook_delivery.last_result}`
        : undefined,
    ],
    ...(job.status === "completed" ? resultFields(colors, job) : []),
  ];
  return fields(colors, pairs);
}
