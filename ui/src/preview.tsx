// Presigned links of a job's source and output (GET /api/v1/jobs/{id}/links), read once per job and
// kept until shortly before they expire.
import { useEffect, useState } from "preact/hooks";
import { api } from "./api.js";
import type { JobLinks, JobType } from "./types.js";

/** Types whose output is an image a browser shows. */
export const IMAGE_OUTPUT: ReadonlySet<string> = new Set<JobType>([
  "image_resize",
  "image_optimize",
  "image_watermark",
  "video_thumbnail",
]);

interface Cached {
  links: Promise<JobLinks | null>;
  until: number;
  /** Known once read: whether the links include the output. */
  hasOutput?: boolean;
}
const cache = new Map<string, Cached>();
const MARGIN_MS = 30_000;

/** The job's links; `needOutput`: links read before the job completed (no output) are read again. */
export function jobLinks(id: string, needOutput: boolean): Promise<JobLinks | null> {
  const cached = cache.get(id);
  if (cached && cached.until > Date.now() && !(needOutput && cached.hasOutput === false)) return cached.links;
  const links = api<JobLinks>(`/jobs/${encodeURIComponent(id)}/links`).catch(() => null);
  const entry: Cached = { links, until: Date.now() + 60_000 };
  cache.set(id, entry);
  void links.then((l) => {
    entry.hasOutput = Boolean(l?.output);
    const expiries = [l?.source.expires_at, l?.output?.expires_at].filter((e): e is string => !!e);
    const soonest = Math.min(...expiries.map((e) => new Date(e).getTime()));
    // A failed read is not kept: the next use reads again.
    entry.until = l && Number.isFinite(soonest) ? soonest - MARGIN_MS : 0;
  });
  return links;
}

/** The links of a job while `wanted`; read again when `status` changes. */
export function useJobLinks(id: string, wanted: boolean, status: string): JobLinks | null {
  const [links, setLinks] = useState<JobLinks | null>(null);
  useEffect(() => {
    if (!wanted) {
      setLinks(null);
      return;
    }
    let current = true;
    void jobLinks(id, status === "completed").then((l) => current && setLinks(l));
    return () => {
      current = false;
    };
  }, [id, wanted, status]);
  return links;
}

/** A small preview of a completed job's output image, in the jobs table. */
export function OutputThumb(props: { id: string; type: string; status: string }) {
  const wanted = props.status === "completed" && IMAGE_OUTPUT.has(props.type);
  const links = useJobLinks(props.id, wanted, props.status);
  if (!wanted) return null;
  if (!links?.output) return <span class="thumb thumb-empty" aria-hidden="true" />;
  return (
    <img
      class="thumb"
      src={links.output.url}
      alt={`Output of job ${props.id}`}
      loading="lazy"
      decoding="async"
      width={48}
      height={48}
    />
  );
}
