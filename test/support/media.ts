// Image fixtures made at test time with sharp (no binary fixtures in git): solid colours, colour
// blocks and stripes, photo-like content for lossy encoders, transparency, EXIF orientation and
// metadata, and the broken inputs (truncated files, random bytes, decompression bombs) every image
// job must refuse cleanly. Video and audio fixtures live in av.ts.
import { crc32 } from "node:zlib";
import { writeFile } from "node:fs/promises";
import sharp, { type Sharp } from "sharp";

export type FixtureFormat = "jpeg" | "png" | "webp" | "avif" | "gif" | "tiff";

/** A filled rectangle. `alpha` 0–1 (default 1). */
export interface Block {
  left: number;
  top: number;
  width: number;
  height: number;
  color: string;
  alpha?: number;
}

export interface ImageSpec {
  width: number;
  height: number;
  /** Default png. */
  format?: FixtureFormat;
  /** CSS colour of the canvas; default #808080. */
  background?: string;
  /**
   * Give the image an alpha channel: `true` = opaque canvas with alpha, a number = the canvas's
   * alpha (0 = fully transparent, blocks then make the only opaque pixels).
   */
  alpha?: boolean | number;
  /** Rectangles drawn over the canvas, in order. */
  blocks?: Block[];
  /** Vertical stripes left to right, each `share` (0–1) of the width; the last one takes the rest. */
  stripes?: { color: string; share: number }[];
  /** Photo-like content (smooth gradients, edges and fine detail, deterministic) instead of flat colour. */
  photo?: boolean;
  /** EXIF Orientation tag (1–8) stored with the pixels as they are. */
  exifOrientation?: number;
  /** Store EXIF (Make, Model, Copyright), an ICC profile (Display P3) and XMP. */
  withMetadata?: boolean;
  /** Encoder quality for lossy formats; default 90. */
  quality?: number;
  /** PNG as a palette image. */
  palette?: boolean;
}

const XMP = `<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:creator><rdf:Seq><rdf:li>media-service tests</rdf:li></rdf:Seq></dc:creator></rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end="w"?>`;

/** Encodes an image described by `spec`. */
export async function makeImage(spec: ImageSpec): Promise<Buffer> {
  const channels = spec.alpha === undefined || spec.alpha === false ? 3 : 4;
  const canvasAlpha = typeof spec.alpha === "number" ? spec.alpha : 1;
  let image: Sharp;
  if (spec.photo) {
    image = sharp(photoPixels(spec.width, spec.height, channels), {
      raw: { width: spec.width, height: spec.height, channels },
    });
  } else {
    const background = { ...rgbOf(spec.background ?? "#808080"), alpha: canvasAlpha };
    image = sharp({ create: { width: spec.width, height: spec.height, channels, background } });
  }

  const blocks = [...stripeBlocks(spec), ...(spec.blocks ?? [])];
  if (blocks.length > 0) {
    // Composite needs an encoded or raw base: flatten the canvas to raw first.
    const raw = await image.raw().toBuffer({ resolveWithObject: true });
    image = sharp(raw.data, { raw: { width: raw.info.width, height: raw.info.height, channels } }).composite(
      blocks.map((b) => ({
        input: {
          create: {
            width: b.width,
            height: b.height,
            channels: 4 as const,
            background: { ...rgbOf(b.color), alpha: b.alpha ?? 1 },
          },
        },
        left: b.left,
        top: b.top,
      })),
    );
    if (channels === 3) image = image.removeAlpha();
  }

  if (spec.withMetadata) {
    image = image
      .withExif({ IFD0: { Make: "TestCam", Model: "Fixture 1", Copyright: "media-service tests" } })
      .withIccProfile("p3")
      .withXmp(XMP);
  }
  if (spec.exifOrientation !== undefined) image = image.withMetadata({ orientation: spec.exifOrientation });

  const quality = spec.quality ?? 90;
  switch (spec.format ?? "png") {
    case "jpeg":
      return image.jpeg({ quality }).toBuffer();
    case "png":
      return image.png({ palette: spec.palette === true }).toBuffer();
    case "webp":
      return image.webp({ quality }).toBuffer();
    case "avif":
      return image.avif({ quality, effort: 2 }).toBuffer();
    case "gif":
      return image.gif().toBuffer();
    case "tiff":
      return image.tiff({ compression: "lzw" }).toBuffer();
  }
}

/** makeImage to a file; returns the path. */
export async function writeImage(path: string, spec: ImageSpec): Promise<string> {
  await writeFile(path, await makeImage(spec));
  return path;
}

export interface Pixels {
  data: Buffer;
  width: number;
  height: number;
  channels: number;
}

/** Decoded pixels of an image file or buffer, as 8-bit sRGB (RGBA when `rgba`). */
export async function readPixels(input: string | Buffer, options: { rgba?: boolean } = {}): Promise<Pixels> {
  let image = sharp(input).toColourspace("srgb");
  if (options.rgba) image = image.ensureAlpha();
  const { data, info } = await image.raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: info.channels };
}

/** The colour of pixel (x, y). */
export function pixelAt(pixels: Pixels, x: number, y: number): number[] {
  const at = (y * pixels.width + x) * pixels.channels;
  return [...pixels.data.subarray(at, at + pixels.channels)];
}

/** The first `fraction` of a file: a truncated image. */
export function truncated(data: Buffer, fraction = 0.5): Buffer {
  return data.subarray(0, Math.max(1, Math.floor(data.length * fraction)));
}

/** Deterministic bytes that are no image (xorshift32). */
export function noiseBytes(length: number, seed = 12345): Buffer {
  const out = Buffer.alloc(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

/**
 * A decompression bomb by its header: a well-formed PNG that declares width × height pixels in a
 * few dozen bytes (the pixel data is a stub; a decoder that trusted the header would allocate
 * width × height × 3 bytes before finding out).
 */
export function pngBomb(width: number, height: number): Buffer {
  const chunk = (type: string, body: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(body.length);
    const typed = Buffer.concat([Buffer.from(type, "ascii"), body]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(typed));
    return Buffer.concat([length, typed, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", Buffer.from([0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01])),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

function stripeBlocks(spec: ImageSpec): Block[] {
  const blocks: Block[] = [];
  let left = 0;
  (spec.stripes ?? []).forEach((stripe, i, all) => {
    const width = i === all.length - 1 ? spec.width - left : Math.round(spec.width * stripe.share);
    if (width > 0) blocks.push({ left, top: 0, width, height: spec.height, color: stripe.color });
    left += width;
  });
  return blocks;
}

/** Smooth gradients, a few hard edges and hash-based fine grain: costs a lossy encoder real bits. */
function photoPixels(width: number, height: number, channels: number): Buffer {
  const data = Buffer.alloc(width * height * channels);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const at = (y * width + x) * channels;
      let h = Math.imul((x * 73856093) ^ (y * 19349663), 0x9e3779b1) >>> 0;
      h ^= h >>> 15;
      const grain = (h & 31) - 16;
      const edge = (x / width + y / height) % 0.5 < 0.25 ? 40 : -40;
      data[at] = clamp(255 * (x / width) + grain + edge);
      data[at + 1] = clamp(255 * (y / height) + grain);
      data[at + 2] = clamp(128 + 100 * Math.sin((x + y) / 17) + grain - edge);
      if (channels === 4) data[at + 3] = 255;
    }
  }
  return data;
}

function clamp(v: number): number {
  return Math.min(255, Math.max(0, Math.round(v)));
}

function rgbOf(color: string): { r: number; g: number; b: number } {
  const hex = color.replace(/^#/, "");
  const full = hex.length === 3 ? [...hex].map((c) => c + c).join("") : hex;
  const n = Number.parseInt(full, 16);
  return { r: (n >> 16) & 255, g: (n >> 8) & 255, b: n & 255 };
}

/** Mean absolute difference of two same-sized images' RGB over a region (x, y, w, h), 0–255. */
export async function meanDifference(
  a: Buffer,
  b: Buffer,
  region: [number, number, number, number],
): Promise<number> {
  const [pa, pb] = await Promise.all([readPixels(a), readPixels(b)]);
  if (pa.width !== pb.width || pa.height !== pb.height) {
    throw new Error(`images of different sizes: ${pa.width}×${pa.height} and ${pb.width}×${pb.height}`);
  }
  const [x0, y0, w, h] = region;
  let sum = 0;
  for (let y = y0; y < y0 + h; y++) {
    for (let x = x0; x < x0 + w; x++) {
      for (let c = 0; c < 3; c++) {
        const at = (y * pa.width + x) * pa.channels + c;
        sum += Math.abs(pa.data[at]! - pb.data[at]!);
      }
    }
  }
  return sum / (w * h * 3);
}
