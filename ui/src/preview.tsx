// A job's files through the API, with the key of the session: previews (GET /api/v1/jobs/{id}/preview,
// a small WebP, however large the image) and downloads (GET /api/v1/jobs/{id}/download), read with
// fetch and shown from blob: URLs, since an <img> or <a> cannot send the key. The browser needs to
// reach the API only, not the object store. The presigned store links (GET /api/v1/jobs/{id}/links)
// are read as well, for those who want a direct link to the object.
import { useEffect, useState } from "preact/hooks";
import { api, ApiError, apiBlob } from "./api.js";
import type { JobLinks } from "./types.js";
import { JOB_MEDIA } from "virtual:job-types";

/** Types whose output is an image a browser shows. */
export const IMAGE_OUTPUT: ReadonlySet<string> = new Set(
  Object.entries(JOB_MEDIA)
    .filter(([, media]) => media.output === "image")
    .map(([type]) => type),
);

/** Types whose source is an image the API makes a preview of. */
export const IMAGE_SOURCE: ReadonlySet<string> = new Set(
  Object.entries(JOB_MEDIA)
    .filter(([, media]) => media.source === "image")
    .map(([type]) => type),
);

export type ObjectOf = "source" | "output";

// --- previews -------------------------------------------------------------------------------------

/** What a preview is: being read, shown from a blob: URL, or why it is not. */
export type Preview =
  { state: "loading" } | { state: "ready"; url: string } | { state: "error"; message: string };

/** Previews read in this page, by job and object; kept while the page lives (a few tens of KB each). */
const previews = new Map<string, Promise<Preview>>();
const MAX_KEPT = 300;
/** At most this many previews are read at once: a jobs page of thumbnails does not flood the API. */
const PARALLEL = 2;
let reading = 0;
const waiting: Array<() => void> = [];

async function slot<T>(use: () => Promise<T>): Promise<T> {
  while (reading >= PARALLEL) await new Promise<void>((resolve) => waiting.push(resolve));
  reading++;
  try {
    return await use();
  } finally {
    reading--;
    waiting.shift()?.();
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The query naming an object of a job: its source or output, or (`step`) a pipeline's step's output. */
const objectQuery = (of: ObjectOf, step?: string) =>
  `of=${of}${step !== undefined ? `&step=${encodeURIComponent(step)}` : ""}`;

async function readPreview(id: string, of: ObjectOf, step?: string): Promise<Preview> {
  const path = `/jobs/${encodeURIComponent(id)}/preview?${objectQuery(of, step)}`;
  for (let attempt = 0; ; attempt++) {
    try {
      const blob = await slot(() => apiBlob(path));
      return { state: "ready", url: URL.createObjectURL(blob) };
    } catch (err) {
      // The API is making as many previews as it makes at once: it says when to ask again.
      if (err instanceof ApiError && err.status === 503 && attempt < 20) {
        await sleep((err.retryAfter ?? 1) * 1000);
        continue;
      }
      return { state: "error", message: (err as Error).message };
    }
  }
}

function preview(id: string, of: ObjectOf, step?: string): Promise<Preview> {
  const key = `${id}:${of}:${step ?? ""}`;
  let entry = previews.get(key);
  if (!entry) {
    entry = readPreview(id, of, step);
    previews.set(key, entry);
    // A failed read is not kept: the next use reads again.
    void entry.then((p) => p.state === "error" && previews.get(key) === entry && previews.delete(key));
    if (previews.size > MAX_KEPT) {
      const [oldest, kept] = previews.entries().next().value!;
      previews.delete(oldest);
      void kept.then((p) => p.state === "ready" && URL.revokeObjectURL(p.url));
    }
  }
  return entry;
}

/** The preview of a job's source or output (`step`: of a pipeline's step's output) while `wanted`. */
export function usePreview(id: string, of: ObjectOf, wanted: boolean, step?: string): Preview | null {
  const [shown, setShown] = useState<Preview | null>(null);
  useEffect(() => {
    if (!wanted) {
      setShown(null);
      return;
    }
    let current = true;
    setShown({ state: "loading" });
    void preview(id, of, step).then((p) => current && setShown(p));
    return () => {
      current = false;
    };
  }, [id, of, wanted, step]);
  return shown;
}

// --- downloads ------------------------------------------------------------------------------------

/** The name a download is saved under: the key's last segment. */
export function fileName(key: string | undefined, fallback: string): string {
  return key?.split("/").filter(Boolean).at(-1) ?? fallback;
}

/**
 * Downloads a job's object through the API: read with the key into a Blob, then saved from a blob:
 * URL under the key's name. The whole file passes through the page's memory.
 */
export async function downloadObject(id: string, of: ObjectOf, name: string, step?: string): Promise<void> {
  const blob = await apiBlob(`/jobs/${encodeURIComponent(id)}/download?${objectQuery(of, step)}`);
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** A whole object (an audio output to play) from the API as a blob: URL while `wanted`. */
export function useObjectUrl(id: string, of: ObjectOf, wanted: boolean): Preview | null {
  const [shown, setShown] = useState<Preview | null>(null);
  useEffect(() => {
    if (!wanted) {
      setShown(null);
      return;
    }
    let url: string | undefined;
    let current = true;
    setShown({ state: "loading" });
    apiBlob(`/jobs/${encodeURIComponent(id)}/download?of=${of}`).then(
      (blob) => {
        if (!current) return;
        url = URL.createObjectURL(blob);
        setShown({ state: "ready", url });
      },
      (err: Error) => current && setShown({ state: "error", message: err.message }),
    );
    return () => {
      current = false;
      if (url) URL.revokeObjectURL(url);
    };
  }, [id, of, wanted]);
  return shown;
}

// --- presigned store links ------------------------------------------------------------------------

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

/** The presigned links of a job while `wanted`; read again when `status` changes. */
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
  const shown = usePreview(props.id, "output", wanted);
  if (!wanted) return null;
  if (shown?.state !== "ready") return <span class="thumb thumb-empty" aria-hidden="true" />;
  return (
    <img
      class="thumb"
      src={shown.url}
      alt={`Output of job ${props.id}`}
      loading="lazy"
      decoding="async"
      width={48}
      height={48}
    />
  );
}
