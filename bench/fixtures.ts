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

/**
 * A 1920×1080 H.264 video of ffmpeg's testsrc2 at 30 frames/s with a 440 Hz stereo sine in AAC,
 * `seconds` long, keyframe every 2 s: the source of the video benchmark (bench/video.ts). Ten
 * seconds are about 7 MB and take ~15 s to make on 2 cores.
 */
export function hdVideo(seconds = 10): Promise<string> {
  return cached(`testsrc2-1920x1080-30fps-sine-${seconds}s.mp4`, async (tmp) => {
    await run("ffmpeg", [
      ...["-v", "error", "-y", "-f", "lavfi", "-i", `testsrc2=size=1920x1080:rate=30:duration=${seconds}`],
      ...["-f", "lavfi", "-i", `sine=frequency=440:sample_rate=48000:duration=${seconds}`],
      ...["-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-g", "60", "-pix_fmt", "yuv420p"],
      ...["-c:a", "aac", "-b:a", "128k", "-ac", "2", "-movflags", "+faststart", "-f", "mp4", tmp],
    ]);
  });
}

/**
 * A 1920×1080 30 fps clip as a phone or camera records one, what ladders are made from: testsrc2's
 * moving detail under sensor grain (temporal noise), H.264 High at 17 Mbit/s (a phone's 1080p30) with
 * a keyframe every second, a 440 Hz stereo sine in AAC. It costs about twice testsrc2's clip to decode
 * (hdVideo: 5.5 Mbit/s of flat synthetic colour). Ten seconds are about 22 MB and take ~40 s to make
 * on 2 cores.
 */
export function cameraVideo(seconds = 10): Promise<string> {
  return cached(`grain-1920x1080-30fps-17M-sine-${seconds}s.mp4`, async (tmp) => {
    await run("ffmpeg", [
      ...["-v", "error", "-y", "-f", "lavfi", "-i", `testsrc2=size=1920x1080:rate=30:duration=${seconds}`],
      ...["-f", "lavfi", "-i", `sine=frequency=440:sample_rate=48000:duration=${seconds}`],
      ...["-vf", "noise=alls=14:allf=t+u", "-c:v", "libx264", "-preset", "veryfast", "-profile:v", "high"],
      ...["-b:v", "17M", "-maxrate", "20M", "-bufsize", "20M", "-g", "30", "-pix_fmt", "yuv420p"],
      ...["-c:a", "aac", "-b:a", "128k", "-ac", "2", "-movflags", "+faststart", "-f", "mp4", tmp],
    ]);
  });
}

/**
 * A JPEG with what photos have besides texture: a sky-like gradient, hard-edged shapes in saturated
 * colours (where chroma subsampling and ringing show), thin lines and text, over the blotches and
 * grain of photo(). Written at quality 92, as a camera would. 3000×2000 is about 2.5 MB.
 */
export function scene(width: number, height: number): Promise<string> {
  return cached(`scene-${width}x${height}-lumagrain-q92.jpg`, async (tmp) => {
    const { default: sharp } = await import("sharp");
    const u = (f: number) => Math.round(f * Math.min(width, height));
    const shapes: string[] = [];
    // A fixed pseudo-random sequence, so the file is the same on every machine.
    let seed = 12345;
    const rand = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const colours = ["#d62828", "#f77f00", "#fcbf49", "#2a9d8f", "#264653", "#e76f51", "#7b2cbf", "#1d3557"];
    for (let i = 0; i < 24; i++) {
      const x = Math.round(rand() * width);
      const y = Math.round(height * 0.35 + rand() * height * 0.65);
      const fill = colours[i % colours.length]!;
      if (i % 3 === 0)
        shapes.push(`<circle cx="${x}" cy="${y}" r="${u(0.02 + rand() * 0.08)}" fill="${fill}"/>`);
      else if (i % 3 === 1)
        shapes.push(
          `<rect x="${x}" y="${y}" width="${u(0.05 + rand() * 0.15)}" height="${u(0.03 + rand() * 0.1)}" fill="${fill}" transform="rotate(${Math.round(rand() * 40 - 20)} ${x} ${y})"/>`,
        );
      else
        shapes.push(
          `<polygon points="${x},${y} ${x + u(0.1)},${y + u(0.02)} ${x + u(0.04)},${y + u(0.12)}" fill="${fill}"/>`,
        );
    }
    for (let i = 0; i < 40; i++) {
      const x = Math.round(rand() * width);
      shapes.push(
        `<line x1="${x}" y1="${Math.round(height * 0.3)}" x2="${x + u(0.1)}" y2="${height}" stroke="#101010" stroke-width="${1 + (i % 3)}"/>`,
      );
    }
    const text = Array.from(
      { length: 4 },
      (_, i) =>
        `<text x="${Math.round(width * 0.2)}" y="${u(0.08 + i * 0.06)}" font-family="sans-serif" font-size="${u(0.035 - i * 0.006)}" fill="#ffffff">Harbour street 42 - evening light, ISO ${100 * (i + 1)}</text>`,
    ).join("");
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
      <defs>
        <linearGradient id="sky" x1="0" y1="0" x2="0" y2="1">
          <stop offset="0" stop-color="#1e3c72"/><stop offset="0.45" stop-color="#8fb3de"/>
          <stop offset="0.5" stop-color="#d9a066"/><stop offset="1" stop-color="#4a3b2a"/>
        </linearGradient>
        <radialGradient id="sun" cx="0.7" cy="0.3" r="0.25">
          <stop offset="0" stop-color="#fff4c0" stop-opacity="0.9"/><stop offset="1" stop-color="#fff4c0" stop-opacity="0"/>
        </radialGradient>
      </defs>
      <rect width="100%" height="100%" fill="url(#sky)"/>
      <rect width="100%" height="100%" fill="url(#sun)"/>
      ${shapes.join("")}${text}
    </svg>`;
    const base = await sharp(Buffer.from(svg)).removeAlpha().raw().toBuffer();
    const texture = await sharp(await photo(width, height))
      .raw()
      .toBuffer();
    // The photo's blotches and grain as light only (the mean of its channels), at a quarter of
    // their contrast, over the drawing: a camera's noise is mostly in luma, its colour smooth.
    for (let i = 0; i < base.length; i += 3) {
      const light = (texture[i]! + texture[i + 1]! + texture[i + 2]! - 384) / 12;
      for (let c = 0; c < 3; c++) {
        const v = base[i + c]! + light;
        base[i + c] = v < 0 ? 0 : v > 255 ? 255 : v;
      }
    }
    const jpeg = await sharp(base, { raw: { width, height, channels: 3 } })
      .jpeg({ quality: 92 })
      .toBuffer();
    await writeFile(tmp, jpeg);
  });
}
