// Previews of a job's images, made in the API process: small WebP images for the dashboard's Before
// and After (a 50 MB photo is shown from ~40 KB), cached in Redis so that a page reload, or another
// replica, does not decode the source again. sharp is imported when the first preview is made, not
// while the API starts (test/component/lazy-imports.test.ts).
import { createHash } from "node:crypto";
import type { Readable } from "node:stream";
import type { Sharp, SharpOptions } from "sharp";

/** How previews are made and kept. */
export const PREVIEW = {
  /** The longest side of a preview, in pixels (smaller images keep their size). */
  maxSide: 640,
  /** WebP quality: a preview is for the eye, not for judging the encoder. */
  quality: 70,
  /**
   * The largest object previewed: the whole object is read into the API's memory to be decoded
   * (sharp decodes from a buffer), so this and `concurrency` bound what previews take.
   */
  maxSourceBytes: 64 * 1024 ** 2,
  /** Previews made at once by one API process; a request beyond them is refused with a 503. */
  concurrency: 2,
  /** What Retry-After says to a refused request, in seconds. */
  retryAfterSeconds: 1,
  /** How long a preview is kept in Redis. */
  cacheTtlMs: 24 * 3_600_000,
  /** How many previews Redis keeps at most (at ~20-60 KB each, a few tens of MB). */
  cacheMaxEntries: 1000,
  /** How long a browser may use a preview without asking again (then it revalidates with the ETag). */
  browserMaxAgeSeconds: 300,
} as const;

export type PreviewOf = "source" | "output";

/** A request the route refuses with `status` and `message`. */
export class PreviewRefusal extends Error {
  constructor(
    readonly status: 400 | 404 | 409 | 422 | 502 | 503,
    message: string,
  ) {
    super(message);
  }
}

type SharpFactory = (input?: Buffer, options?: SharpOptions) => Sharp;
let loading: Promise<SharpFactory> | undefined;

/** sharp, loaded once when first needed; its operation cache off (the previews have their own). */
function loadSharp(): Promise<SharpFactory> {
  return (loading ??= import("sharp").then(({ default: sharp }) => {
    sharp.cache(false);
    return sharp;
  }));
}

/**
 * The preview of an image: at most `PREVIEW.maxSide` on its longer side, oriented as its EXIF says,
 * as WebP. JPEG and WebP sources are shrunk while they are decoded (sharp's shrink-on-load), so a
 * 24 MP JPEG is never decoded whole. An image of more than `maxPixels` pixels, or bytes that are no
 * image, are refused with a 422 naming `what`.
 */
export async function renderPreview(bytes: Buffer, maxPixels: number, what: string): Promise<Buffer> {
  const sharp = await loadSharp();
  try {
    return await sharp(bytes, { limitInputPixels: maxPixels, failOn: "error" })
      .rotate()
      .resize(PREVIEW.maxSide, PREVIEW.maxSide, { fit: "inside", withoutEnlargement: true })
      .webp({ quality: PREVIEW.quality, effort: 2 })
      .toBuffer();
  } catch (err) {
    const message = (err as Error).message;
    if (/pixel limit/i.test(message)) {
      throw new PreviewRefusal(
        422,
        `${what} has more pixels than limits.max_input_pixels (${maxPixels}); download it instead`,
      );
    }
    throw new PreviewRefusal(422, `${what} could not be decoded as an image: ${message.split("\n")[0]}`);
  }
}

/** Reads an object's body whole, refusing one larger than `maxBytes`. */
export async function readWhole(body: Readable, maxBytes: number, what: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      body.destroy();
      throw tooLarge(what, size, maxBytes);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

export function tooLarge(what: string, size: number, maxBytes: number): PreviewRefusal {
  return new PreviewRefusal(
    422,
    `${what} is ${size > maxBytes + 1 ? `${size} bytes` : "larger than that"}, more than a preview is made of (${maxBytes} bytes); download it instead`,
  );
}

/** A strong ETag of a preview's bytes. */
export function previewEtag(bytes: Buffer): string {
  return `"${createHash("sha256").update(bytes).digest("base64url").slice(0, 27)}"`;
}

/**
 * Bounds the previews one process makes at once: `PREVIEW.concurrency`, beyond which a request is
 * refused (503 with Retry-After) rather than queued, so that a burst cannot hold many sources in
 * memory; requests for a preview being made wait for that one instead of making it again.
 */
export class PreviewMaker {
  private active = 0;
  private readonly inFlight = new Map<string, Promise<Buffer>>();

  constructor(private readonly limit: number = PREVIEW.concurrency) {}

  /** `make()` under the limit, shared by the requests for the same `key` while it runs. */
  run(key: string, make: () => Promise<Buffer>): Promise<Buffer> {
    const running = this.inFlight.get(key);
    if (running) return running;
    if (this.active >= this.limit) {
      return Promise.reject(
        new PreviewRefusal(
          503,
          `the API is making ${this.limit} previews already, as many as it makes at once; try again in ${PREVIEW.retryAfterSeconds} s`,
        ),
      );
    }
    this.active++;
    const made = make().finally(() => {
      this.active--;
      this.inFlight.delete(key);
    });
    this.inFlight.set(key, made);
    return made;
  }
}
