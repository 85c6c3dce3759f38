// Media as a model takes it: images as base64 data URLs (JPEG, downscaled to ai.max_image_side, EXIF
// orientation applied, transparency flattened onto white), a video as frames sampled evenly, audio
// as small mono MP3 segments a transcription API accepts.
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { PermanentError } from "../errors.js";
import type { SourceImage } from "../image/open.js";
import { checkDecodedAudio } from "../av/declared.js";
import { INPUT_PROTOCOLS, type MediaInfo } from "../av/probe.js";
import { runFfmpeg, TruncatedError } from "../av/run.js";

const JPEG_QUALITY = 85;

export async function imageDataUrl(source: SourceImage, maxSide: number): Promise<string> {
  const data = await source.run(() =>
    source
      .pipeline()
      .rotate()
      .resize({ width: maxSide, height: maxSide, fit: "inside", withoutEnlargement: true })
      .flatten({ background: "#ffffff" })
      .toColourspace("srgb")
      .jpeg({ quality: JPEG_QUALITY })
      .toBuffer(),
  );
  return `data:image/jpeg;base64,${data.toString("base64")}`;
}

export interface Frame {
  /** Seconds into the video. */
  time: number;
  url: string;
}

/**
 * `count` frames at the middles of equal slices of the video (so neither the black first frame nor
 * the last one), each a downscaled JPEG; a few ffmpeg runs at once, each seeking on input. A frame
 * that does not decode is left out; none at all fails the job, with the input's fault when ffmpeg
 * found one (e.g. frames larger than `maxPixels`).
 */
export async function sampleFrames(
  path: string,
  info: MediaInfo,
  options: {
    count: number;
    maxSide: number;
    /** limits.max_input_pixels, enforced by the decoder. */
    maxPixels: number;
    dir: string;
    signal: AbortSignal;
    onFrame?: (done: number) => void;
  },
): Promise<Frame[]> {
  const video = info.video!;
  const duration = info.duration ?? video.duration;
  const times =
    duration && duration > 0
      ? Array.from({ length: options.count }, (_, i) => ((i + 0.5) * duration) / options.count)
      : [0];
  const side = options.maxSide;
  const frames = new Array<Frame | undefined>(times.length);
  let next = 0;
  let done = 0;
  let fault: PermanentError | undefined;
  let cut: TruncatedError | undefined;
  const worker = async () => {
    while (next < times.length) {
      const i = next++;
      const output = join(options.dir, `frame-${String(i).padStart(3, "0")}.jpg`);
      await runFfmpeg(
        {
          input: path,
          inputOptions: [...INPUT_PROTOCOLS, "-ss", times[i]!.toFixed(3)],
          output,
          outputOptions: [
            "-map",
            `0:${video.index}`,
            "-frames:v",
            "1",
            "-vf",
            `scale=w='min(iw,${side})':h='min(ih,${side})':force_original_aspect_ratio=decrease,format=yuvj420p`,
            "-c:v",
            "mjpeg",
            "-q:v",
            "3",
            "-f",
            "image2",
            "-y",
          ],
          reads: "video",
        },
        { signal: options.signal, maxPixels: options.maxPixels },
      ).catch((err: unknown) => {
        if (options.signal.aborted) throw err;
        // A source cut short fails the job (its frames past the cut would be missing or from before
        // it): no more frames are taken.
        if (err instanceof TruncatedError) {
          cut ??= err;
          next = times.length;
        } else if (err instanceof PermanentError) fault ??= err;
      });
      const bytes = await readFile(output).catch(() => undefined);
      if (bytes && bytes.length > 0) {
        frames[i] = { time: times[i]!, url: `data:image/jpeg;base64,${bytes.toString("base64")}` };
      }
      options.onFrame?.(++done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(3, times.length) }, worker));
  if (cut) throw cut;
  const decoded = frames.filter((f): f is Frame => f !== undefined);
  if (decoded.length === 0) throw fault ?? new PermanentError("source video has no frame that decodes");
  return decoded;
}

/**
 * The first audio stream as mono 16 kHz MP3 segments of `segmentSeconds`, in order. A source that
 * holds less than it claims fails (checkDecodedAudio) rather than giving a partial transcript.
 */
export async function audioSegments(
  path: string,
  info: MediaInfo,
  options: {
    segmentSeconds: number;
    dir: string;
    signal: AbortSignal;
    onProgress?: (fraction: number) => void;
  },
): Promise<string[]> {
  const audio = info.audio!;
  // Progress is a share of the stream's own length (a video's audio may be shorter than the file).
  const duration = audio.duration ?? info.duration;
  const run = await runFfmpeg(
    {
      input: path,
      inputOptions: INPUT_PROTOCOLS,
      output: join(options.dir, "segment-%04d.mp3"),
      outputOptions: [
        "-map",
        `0:${audio.index}`,
        "-vn",
        "-ac",
        "1",
        "-ar",
        "16000",
        "-c:a",
        "libmp3lame",
        "-b:a",
        "48k",
        "-f",
        "segment",
        "-segment_time",
        String(options.segmentSeconds),
        "-reset_timestamps",
        "1",
      ],
      reads: "audio",
    },
    {
      signal: options.signal,
      ...(duration ? { duration } : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    },
  );
  checkDecodedAudio(audio, duration, run.outTime, run.errors);
  const names = (await readdir(options.dir)).filter((n) => /^segment-\d{4}\.mp3$/.test(n)).sort();
  const segments: string[] = [];
  for (const name of names) {
    const file = join(options.dir, name);
    if ((await stat(file)).size > 0) segments.push(file);
  }
  if (segments.length === 0) throw new PermanentError("source audio has no sound that decodes");
  return segments;
}
