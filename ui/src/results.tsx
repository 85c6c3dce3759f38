// What the result views of the job types share (jobs/<type>/view.tsx): their props, and the
// pieces several of them show (an image's preview, its description, the before/after pair, a list
// of facts).
import type { ComponentChildren } from "preact";
import { formatBytes } from "./format.js";
import { usePreview, type Preview } from "./preview.js";
import type { Job } from "./types.js";

/** What a job type's result view (the default export of jobs/<type>/view.tsx) is given. */
export interface ResultViewProps {
  job: Job;
  /** The job's result (an empty object while there is none). */
  result: Record<string, unknown>;
}

/** The result of the types that write a file: its size and what it is. */
export interface ImageResult {
  output_url?: string;
  file_size?: number;
  duration?: number;
  timestamp?: string;
  metadata?: {
    width?: number;
    height?: number;
    format?: string;
    codec?: string;
    bitrate?: number;
    sample_rate?: number;
    channels?: number;
  };
}

/** An image result in a few words: 800 × 600 · WEBP · 41 KiB. */
export function describeImage(result: ImageResult): string {
  const m = result.metadata ?? {};
  const parts = [
    m.width && m.height ? `${m.width} × ${m.height}` : undefined,
    m.format?.toUpperCase(),
    result.file_size !== undefined ? formatBytes(result.file_size) : undefined,
  ];
  return parts.filter(Boolean).join(" · ");
}

/** A preview read through the API, or what stands in its place while it is read or when it failed. */
export function PreviewImage(props: { preview: Preview | null; alt: string; testId: string; what: string }) {
  const { preview } = props;
  if (preview?.state === "ready") return <img src={preview.url} alt={props.alt} data-testid={props.testId} />;
  return (
    <div class="media-placeholder" data-testid={`${props.testId}-placeholder`}>
      {preview?.state === "error"
        ? `${props.what}: ${preview.message}`
        : `Loading the ${props.what.toLowerCase()}…`}
    </div>
  );
}

/** The source beside the output, for the types that make an image of an image. */
export function BeforeAfter(props: ResultViewProps) {
  const { job } = props;
  const result = props.result as ImageResult;
  const source = usePreview(job.id, "source", true);
  const output = usePreview(job.id, "output", true);
  return (
    <div class="before-after">
      <figure>
        <PreviewImage
          preview={source}
          alt={`Source image ${job.source_key}`}
          testId="source-image"
          what="Source preview"
        />
        <figcaption>
          <strong>Before</strong> · <span class="mono">{job.source_key}</span>
        </figcaption>
      </figure>
      <figure>
        <PreviewImage
          preview={output}
          alt={`Output image ${job.dest_key ?? ""}`}
          testId="output-image"
          what="Output preview"
        />
        <figcaption>
          <strong>After</strong> · {describeImage(result)}
        </figcaption>
      </figure>
    </div>
  );
}

/** Facts as a definition list: each row a name and its value. */
export function FactList(props: { rows: Array<[string, ComponentChildren]>; class: string; testId: string }) {
  return (
    <dl class={props.class} data-testid={props.testId}>
      {props.rows.map(([name, value]) => (
        <div>
          <dt>{name}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}
