// Media the runner benchmarks work on, generated once into a cache directory outside the repository
// (BENCH_CACHE_DIR, default ~/.cache/media-service/bench) and reused by later runs. Each file is
// written under a temporary name and renamed, so an interrupted generation never leaves a partial
// file behind; the names carry the parameters, so changing them makes new files.
import { execFile } from "node:child_process";
import { mkdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export const CACHE_DIR = process.env.BENCH_CACHE_DIR ?? join(homedir(), ".cache", "media-service", "bench");

async function exists(path: string): Promise<boolean> {
  try {
    return (await stat(path)).size > 0;
  } catch {
    return false;
  }
}

async function cached(name: string, make: (tmp: string) => Promise<void>): Promise<string> {
  await mkdir(CACHE_DIR, { recursive: true });
  const path = join(CACHE_DIR, name);
  if (await exists(path)) return path;
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    await make(tmp);
    await rename(tmp, path);
  } finally {
    await rm(tmp, { force: true });
  }
  return path;
}

/**
 * A JPEG that compresses like a photo: smooth blotches (noise at 1/8 of the size, scaled up with a
 * cubic kernel) with fine grain on top. 3000×2000 at quality 85 is about 1.8 MB.
 */
export function photo(width: number, height: number): Promise<string> {
  return cached(`photo-${width}x${height}-q85.jpg`, async (tmp) => {
    // Loaded only to make the file: loading sharp changes this process's environment (VIPSHOME).
    const { default: sharp } = await import("sharp");
    const coarse = await sharp({
      create: {
        width: Math.ceil(width / 8),
        height: Math.ceil(height / 8),
        channels: 3,
        background: "#000",
        noise: { type: "gaussian", mean: 128, sigma: 60 },
      },
    })
      .png()
      .toBuffer();
    const pixels = await sharp(coarse)
      .resize(width, height, { fit: "fill", kernel: "cubic" })
      .raw()
      .toBuffer();
    const grain = await sharp({
      create: {
        width,
        height,
        channels: 3,
        background: "#000",
        noise: { type: "gaussian", mean: 128, sigma: 6 },
      },
    })
      .raw()
      .toBuffer();
    for (let i = 0; i < pixels.length; i++) {
      const v = pixels[i]! + grain[i]! - 128;
      pixels[i] = v < 0 ? 0 : v > 255 ? 255 : v;
    }
    const jpeg = await sharp(pixels, { raw: { width, height, channels: 3 } })
      .jpeg({ quality: 85 })
      .toBuffer();
    await writeFile(tmp, jpeg);
  });
}

/**
 * A 60-minute 320×240 H.264 video of ffmpeg's testsrc2 at 5 frames/s with a keyframe every 5 s
 * (`-g 25`), so a seek lands on a keyframe up to 5 s before the timestamp and decodes from there,
 * as in a real file. About 40 s of generation on 2 cores, ~30 MB.
 */
export function longVideo(minutes = 60): Promise<string> {
  return cached(`testsrc2-320x240-5fps-g25-${minutes}min.mp4`, async (tmp) => {
    await run(
      "ffmpeg",
      [
        ...["-v", "error", "-y", "-f", "lavfi"],
        ...["-i", `testsrc2=size=320x240:rate=5:duration=${minutes * 60}`],
        ...["-c:v", "libx264", "-preset", "veryfast", "-crf", "32", "-g", "25", "-pix_fmt", "yuv420p"],
        ...["-movflags", "+faststart", "-f", "mp4", tmp],
      ],
      { maxBuffer: 16 * 1024 * 1024 },
    );
  });
}
