// video_adaptive: an adaptive-streaming ladder of the source, HLS and/or DASH over one set of CMAF
// (fragmented MP4) segments, written under the job's dest_prefix.
//
// Pipeline: probe (the source must hold a video stream within the pixel limit) → the renditions
// (ladder.ts) → ONE ffmpeg: one decode, a split filter into one scaled encode per rendition, the
// dash muxer writing the segments, an MPD and (`-hls_playlist 1`) an HLS media playlist per
// representation beside them. The dash muxer is the one of ffmpeg's muxers that writes both
// manifests over the same segments (the hls muxer writes no MPD); an HLS-only ladder simply leaves
// the MPD out of what it uploads. The master playlist is written here from ffmpeg's (the variants
// tallest first, the audio-only variant when asked for).
//
// Upload order, so that a client never finds a ladder that is not whole: every segment (each media
// segment as soon as ffmpeg has completed it, while it writes the next: ship.ts; the init segments
// and what is left once ffmpeg ends), then the media playlists, then the MPD, then the master
// playlist, last. A job that fails or is stopped (cancelled, timed out) on the way removes every
// object it uploaded: none of the ladder is left.
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { withDefaults } from "../../core/jobs/parameters.js";
import { outputUrl } from "../../core/storage/s3.js";
import { describeError, PermanentError } from "../../runner/errors.js";
import type { ObjectWriter, ProcessContext, Processor } from "../../runner/processor.js";
import { probeFile, probeSource } from "../../runner/av/probe.js";
import { availableCpus } from "../../runner/cpus.js";
import { checkEncodedVideo, checkNotStill } from "../../runner/av/moving.js";
import { runFfmpeg, type RunResult } from "../../runner/av/run.js";
import { DASH_MANIFEST, MASTER_PLAYLIST, prefixOfEntry } from "./definition.js";
import { shipAsWritten } from "./ship.js";
import {
  AUDIO_KBPS,
  chooseRenditions,
  hevcCodecs,
  ladderCommand,
  readMaster,
  writeMaster,
  type Variant,
} from "./ladder.js";

/** Progress shares: probing, encoding, uploading. */
const ENCODE_FROM = 5;
const ENCODE_TO = 85;
/** A base rate above this is a timebase (WebM's 1000/1), not frames: the GOP is not sized by it. */
const MAX_GOP_RATE = 120;
/** Segments uploaded at once. */
const UPLOAD_CONCURRENCY = 4;
/** A media segment's name (the dash muxer's -media_seg_name; ladder.ts): shipped once complete. */
const MEDIA_SEGMENT = /^chunk-.*\.m4s$/;
/** How often the ladder's directory is read for segments ffmpeg has completed. */
const SHIP_INTERVAL_MS = 250;

const CONTENT_TYPES: Array<[RegExp, string]> = [
  [/^init-.*\.m4s$/, "video/mp4"],
  [/\.m4s$/, "video/iso.segment"],
  [/\.m3u8$/, "application/vnd.apple.mpegurl"],
  [/\.mpd$/, "application/dash+xml"],
];
const contentTypeOf = (name: string) =>
  CONTENT_TYPES.find(([re]) => re.test(name))?.[1] ?? "application/octet-stream";

export const videoAdaptive: Processor = async (ctx) => {
  const parameters = withDefaults("video_adaptive", ctx.job.parameters);
  const { dest_bucket: bucket, dest_key: entryKey } = ctx.job;
  if (!bucket || !entryKey) throw new PermanentError("video_adaptive needs dest_bucket and dest_prefix");
  if (!ctx.objects) throw new Error("video_adaptive writes its ladder itself: the runner gives it no store");
  const prefix = prefixOfEntry(entryKey);
  const formats = parameters.formats;

  ctx.progress(0, "reading the video");
  const info = await probeSource(ctx.sourcePath, "video", {
    signal: ctx.signal,
    maxInputPixels: ctx.limits.maxInputPixels,
  });
  const video = info.video!;
  checkNotStill(info, "a ladder");
  const duration = video.duration ?? info.duration;
  const renditions = chooseRenditions(parameters, video, ctx.limits.maxOutputDimension);
  if (typeof renditions === "string") throw new PermanentError(renditions);
  if (parameters.audio_only_rendition && !info.audio) {
    throw new PermanentError("audio_only_rendition: the source has no audio stream");
  }

  const dir = join(ctx.scratchDir, "ladder");
  const command = ladderCommand(renditions, parameters, availableCpus(), {
    videoIndex: video.index,
    displayWidth: video.displayWidth,
    displayHeight: video.displayHeight,
    ...(info.audio ? { audioIndex: info.audio.index } : {}),
    // A variable rate's fastest (the stream's base rate, within MAX_GOP_RATE): no keyframe by count
    // between the forced ones.
    ...(video.frameRate
      ? { frameRate: Math.max(video.frameRate, Math.min(video.baseFrameRate ?? 0, MAX_GOP_RATE)) }
      : {}),
  });
  const what = `${renditions.map((r) => `${r.height}p`).join(", ")} in ${parameters.video_codec}`;
  ctx.progress(ENCODE_FROM, `encoding ${what}`);
  await mkdir(dir, { recursive: true });

  // Every key of the ladder whose upload was started, for its removal if the job does not complete.
  const uploaded: string[] = [];
  const upload = async (name: string) => {
    const key = `${prefix}/${name}`;
    uploaded.push(key);
    await ctx.objects!.upload(bucket, key, join(dir, name), contentTypeOf(name), ctx.signal);
  };
  let written: { run: RunResult; ffmpegMaster: ReturnType<typeof readMaster>; audio?: AudioVariant };
  try {
    const run = await encodeShipping(ctx, dir, command.outputOptions, upload, {
      what,
      ...(duration !== undefined ? { duration } : {}),
    });
    checkEncodedVideo(video.codec, "a ladder", run.frames, video.duration, run.outTime);

    // ffmpeg's master playlist says each variant's codecs and bandwidth; ours is written from it.
    const ffmpegMaster = readMaster(await readFile(join(dir, MASTER_PLAYLIST), "utf8"));
    if (ffmpegMaster.variants.length !== renditions.length) {
      throw new Error(
        `ffmpeg wrote ${ffmpegMaster.variants.length} variant(s) for ${renditions.length} rendition(s)`,
      );
    }
    if (parameters.video_codec === "h265") await nameHevc(dir, ffmpegMaster.variants, ctx.signal);
    const audio =
      command.audio && ffmpegMaster.audioUri
        ? { uri: ffmpegMaster.audioUri, codecs: "mp4a.40.2", bandwidth: AUDIO_KBPS * 1000 }
        : undefined;
    const master = writeMaster(ffmpegMaster.variants, audio, parameters.audio_only_rendition);
    await writeFile(join(dir, MASTER_PLAYLIST), master);

    // What is left: the init segments and the segments not shipped while ffmpeg wrote them.
    const files = await readdir(dir);
    const segments = files.filter((f) => f.endsWith(".m4s"));
    const playlists = files.filter((f) => f.endsWith(".m3u8") && f !== MASTER_PLAYLIST);
    const manifests = [
      ...(formats.includes("dash") ? [DASH_MANIFEST] : []),
      ...(formats.includes("hls") ? [MASTER_PLAYLIST] : []),
    ];
    const steps = [segments, formats.includes("hls") ? playlists : [], ...manifests.map((m) => [m])];
    const total = steps.reduce((n, s) => n + s.length, 0);
    ctx.logger.info(
      {
        renditions: renditions.length,
        objects: uploaded.length + total,
        shipped_while_encoding: uploaded.length,
        errors: run.errors.length,
      },
      "ladder encoded",
    );
    let done = 0;
    for (const step of steps) {
      await uploadAll(step, UPLOAD_CONCURRENCY, async (name) => {
        await upload(name);
        ctx.progress(ENCODE_TO + (++done / total) * (100 - ENCODE_TO), "uploading the ladder");
      });
    }
    // Stopped after the last upload: the job will not complete, so its ladder goes too.
    ctx.signal.throwIfAborted();
    written = { run, ffmpegMaster, ...(audio ? { audio } : {}) };
  } catch (err) {
    await removeLadder(ctx.objects, bucket, uploaded, ctx.logger, err);
    throw err;
  }
  const { run, ffmpegMaster, audio } = written;
  const url = (name: string) => outputUrl(ctx.config.storage, bucket, `${prefix}/${name}`);
  return {
    result: {
      ...(formats.includes("hls") ? { master_url: url(MASTER_PLAYLIST) } : {}),
      ...(formats.includes("dash") ? { dash_url: url(DASH_MANIFEST) } : {}),
      renditions: [...ffmpegMaster.variants]
        .sort((a, b) => b.height - a.height)
        .map((v) => ({
          width: v.width,
          height: v.height,
          bandwidth: v.bandwidth,
          codecs: v.codecs,
          playlist_url: url(v.uri),
        })),
      ...(audio
        ? { audio: { codecs: audio.codecs, bandwidth: audio.bandwidth, playlist_url: url(audio.uri) } }
        : {}),
      duration: Math.round((run.outTime ?? duration ?? 0) * 1000) / 1000,
    },
  };
};

/** The audio-only variant of the master playlist. */
interface AudioVariant {
  uri: string;
  codecs: string;
  bandwidth: number;
}

/**
 * Runs the ladder's ffmpeg while its media segments are shipped (`upload`) as ffmpeg completes
 * them. A segment that cannot be uploaded stops ffmpeg, and the job fails with the upload's error;
 * once ffmpeg has ended, the uploads under way are waited for.
 */
async function encodeShipping(
  ctx: ProcessContext,
  dir: string,
  outputOptions: string[],
  upload: (name: string) => Promise<void>,
  encode: { what: string; duration?: number },
): Promise<RunResult> {
  const shipping = new AbortController();
  const shipper = shipAsWritten({
    dir,
    pattern: MEDIA_SEGMENT,
    ship: upload,
    concurrency: UPLOAD_CONCURRENCY,
    intervalMs: SHIP_INTERVAL_MS,
    onError: (err) => shipping.abort(err),
  });
  let run: RunResult;
  try {
    run = await runFfmpeg(
      { input: ctx.sourcePath, output: join(dir, DASH_MANIFEST), outputOptions, reads: "video" },
      {
        signal: AbortSignal.any([ctx.signal, shipping.signal]),
        maxPixels: ctx.limits.maxInputPixels,
        logger: ctx.logger,
        ...(encode.duration !== undefined ? { duration: encode.duration } : {}),
        onProgress: (f) =>
          ctx.progress(ENCODE_FROM + f * (ENCODE_TO - ENCODE_FROM), `encoding ${encode.what}`),
      },
    );
  } catch (err) {
    await shipper.stop();
    // ffmpeg stopped because a segment could not be uploaded: that is the job's error.
    throw shipping.signal.aborted && !ctx.signal.aborted ? shipping.signal.reason : err;
  }
  await shipper.stop();
  if (shipping.signal.aborted) throw shipping.signal.reason;
  return run;
}

/**
 * Each HEVC variant's full codecs name, read from its init segment, in its variant and in the MPD
 * (representation n is media_n.m3u8's): ffmpeg wrote a bare `hvc1` in both.
 */
async function nameHevc(dir: string, variants: Variant[], signal: AbortSignal): Promise<void> {
  const mpdPath = join(dir, DASH_MANIFEST);
  let mpd = await readFile(mpdPath, "utf8");
  for (const variant of variants) {
    const n = /^media_(\d+)\.m3u8$/.exec(variant.uri)?.[1];
    if (n === undefined) continue;
    const info = await probeFile(join(dir, `init-${n}.m4s`), { signal });
    const stream = info.raw.streams.find((s) => s.codec_type === "video");
    const name = hevcCodecs(stream?.profile as string | undefined, Number(stream?.level));
    if (!name) continue;
    variant.codecs = variant.codecs.replace(/^hvc1(?=,|$)/, name);
    mpd = mpd.replace(new RegExp(`(<Representation id="${n}"[^>]*codecs=")hvc1"`), `$1${name}"`);
  }
  await writeFile(mpdPath, mpd);
}

/** Runs `each` over the names, `concurrency` at a time; the first failure stops the rest. */
async function uploadAll(names: string[], concurrency: number, each: (name: string) => Promise<void>) {
  let next = 0;
  const worker = async () => {
    while (next < names.length) await each(names[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, names.length) }, worker));
}

/** Removes what the job uploaded of its ladder; a removal that fails is logged for an operator. */
async function removeLadder(
  objects: ObjectWriter,
  bucket: string,
  keys: string[],
  logger: { info: (o: object, m: string) => void; error: (o: object, m: string) => void },
  cause: unknown,
): Promise<void> {
  if (keys.length === 0) return;
  try {
    await objects.remove(bucket, keys);
    logger.info(
      { removed: keys.length, error: describeError(cause) },
      "ladder not finished; its objects removed",
    );
  } catch (err) {
    logger.error(
      { bucket, keys: keys.length, first: keys[0], error: describeError(err) },
      "ladder not finished and its objects could not all be removed: delete them under the prefix",
    );
  }
}

export default videoAdaptive;
