// How close an encoded image stays to the pixels it was made from, for the encoder benchmark
// (bench/encoders.ts): SSIM on Y, Cb and Cr (ssim.js), and SSIMULACRA 2 through SSIMULACRA2_BIN.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { ssim } from "ssim.js";
import { sharp } from "../runner/image/settings.js";

export interface Pixels {
  data: Buffer;
  width: number;
  height: number;
}

export type PlaneImages = [ImagePlane, ImagePlane, ImagePlane];
interface ImagePlane {
  data: Uint8ClampedArray;
  width: number;
  height: number;
}

/** Y, Cb, Cr (BT.601 full range, as JPEG defines them) of RGB pixels, each as a grey RGBA image. */
export function planes(pixels: Pixels, channels = 3): PlaneImages {
  const n = pixels.width * pixels.height;
  const make = () => ({ data: new Uint8ClampedArray(n * 4), width: pixels.width, height: pixels.height });
  const out: PlaneImages = [make(), make(), make()];
  const d = pixels.data;
  for (let i = 0; i < n; i++) {
    const r = d[i * channels]!;
    const g = d[i * channels + 1]!;
    const b = d[i * channels + 2]!;
    const values = [
      0.299 * r + 0.587 * g + 0.114 * b,
      128 - 0.168736 * r - 0.331264 * g + 0.5 * b,
      128 + 0.5 * r - 0.418688 * g - 0.081312 * b,
    ];
    for (let p = 0; p < 3; p++) {
      const v = Math.round(values[p]!);
      const o = out[p]!.data;
      o[i * 4] = o[i * 4 + 1] = o[i * 4 + 2] = v;
      o[i * 4 + 3] = 255;
    }
  }
  return out;
}

/** SSIM (weighted and luma) of an encoded image against another image's decoded pixels (both files). */
export async function ssimAgainst(
  reference: Buffer,
  encoded: Buffer,
): Promise<{ ssim: number; ssimY: number }> {
  const { data, info } = await sharp(reference).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return similarity(planes({ data, width: info.width, height: info.height }, info.channels), encoded);
}

export async function similarity(
  reference: PlaneImages,
  encoded: Buffer,
): Promise<{ ssim: number; ssimY: number }> {
  const { data, info } = await decode(encoded);
  const decoded = planes({ data, width: info.width, height: info.height }, info.channels);
  const scores = reference.map((plane, p) => ssim(plane, decoded[p]!, { downsample: false }).mssim);
  const [y, cb, cr] = scores as [number, number, number];
  return { ssim: (6 * y + cb + cr) / 8, ssimY: y };
}

const decode = (encoded: Buffer) => sharp(encoded).removeAlpha().raw().toBuffer({ resolveWithObject: true });

const run = promisify(execFile);

/** SSIMULACRA 2 of a distorted PNG against a reference PNG: SSIMULACRA2_BIN's last number on stdout. */
export async function ssimulacra2(scorer: string, reference: string, distorted: string): Promise<number> {
  let stdout: string;
  try {
    ({ stdout } = await run(scorer, [reference, distorted], { maxBuffer: 1 << 20 }));
  } catch (err) {
    throw new Error(`SSIMULACRA2_BIN=${scorer}: ${(err as Error).message}`);
  }
  const last = stdout.match(/[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?/gi)?.at(-1);
  if (last === undefined)
    throw new Error(`SSIMULACRA2_BIN=${scorer} printed no score: ${stdout.trim() || "nothing"}`);
  return Number(last);
}

/** Writes the decoded pixels of an encoded image (alpha removed) as a PNG. */
export async function writePng(encoded: Buffer, path: string): Promise<void> {
  const { data, info } = await decode(encoded);
  await sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels } })
    .png({ compressionLevel: 1 })
    .toFile(path);
}
