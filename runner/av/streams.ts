// What ffprobe says of a file, normalised: numbers as numbers, ffprobe's placeholders for "not known"
// ("N/A", "unknown", "und", "0/0") left out rather than passed on, rotation as the quarter turns a
// player applies, frame rates from their fractions, bit depth from the stream or its pixel format.
// Pure: it reads ffprobe's answer, in either shape it comes in: its JSON (`-of json`: tags and
// disposition as objects, side data in `side_data_list`) or fluent-ffmpeg's reading of its default
// output (numbers already numbers, side data's fields flattened into the stream).
//
// media_probe returns summarizeProbe()'s answer as its result; the other processors read the same
// facts through probe.ts's MediaInfo, which uses these functions.
import type { FfprobeData, FfprobeStream } from "fluent-ffmpeg";
import type { ProbeResult, ProbeStream } from "../../core/jobs/types.js";

/** A file, its absent facts left out: media_probe's result. */
export type MediaSummary = ProbeResult;
/** One stream, its absent facts left out. */
export type StreamSummary = ProbeStream;
export type StreamKind = StreamSummary["kind"];

/**
 * The file and each of its streams, as media_probe's result has them. `fileSize` (bytes) stands in
 * when ffprobe gives no size.
 */
export function summarizeProbe(data: FfprobeData, fileSize?: number): MediaSummary {
  const format = (data.format ?? {}) as Record<string, unknown>;
  const streams = (data.streams ?? []).map(summarizeStream);
  const duration =
    positive(format.duration) ??
    maxOf((data.streams ?? []).map((s) => positive(s.duration) ?? matroskaDuration(s)).filter(isNumber));
  const size = positive(format.size) ?? (fileSize !== undefined && fileSize > 0 ? fileSize : undefined);
  return {
    container: known(format.format_name) ?? "unknown",
    ...defined({
      duration: duration !== undefined ? round(duration, 3) : undefined,
      size: size !== undefined ? Math.round(size) : undefined,
      bit_rate: integer(format.bit_rate),
    }),
    streams,
  };
}

/** One stream of ffprobe's answer. */
export function summarizeStream(s: FfprobeStream): StreamSummary {
  const kind = streamKind(s.codec_type);
  const tags = tagsOf(s);
  const common = {
    codec: known(s.codec_name),
    profile: known(s.profile),
    language: language(tags.language),
    bit_rate: integer(s.bit_rate),
  };
  if (kind === "video") {
    const frameRate = frameRateOf(s);
    return {
      index: s.index,
      kind,
      ...defined({
        ...common,
        width: integer(s.width),
        height: integer(s.height),
        display_aspect_ratio:
          ratio(s.display_aspect_ratio) !== undefined ? String(s.display_aspect_ratio) : undefined,
        rotation: rotationOf(s),
        frame_rate: frameRate !== undefined ? round(frameRate, 3) : undefined,
        pixel_format: known(s.pix_fmt),
        bit_depth: bitDepthOf(s),
        color_transfer: known(s.color_transfer),
      }),
    };
  }
  if (kind === "audio") {
    return {
      index: s.index,
      kind,
      ...defined({
        ...common,
        channels: integer(s.channels),
        channel_layout: known(s.channel_layout),
        sample_rate: integer(s.sample_rate),
        bit_depth: bitDepthOf(s),
      }),
    };
  }
  return { index: s.index, kind, ...defined(common) };
}

/** ffprobe's codec_type as a kind; attachments (fonts) and anything else are data. */
export function streamKind(codecType: unknown): StreamKind {
  return codecType === "video" || codecType === "audio" || codecType === "subtitle" ? codecType : "data";
}

/**
 * Degrees clockwise a player turns the picture to show it: 0, 90, 180 or 270. From the display
 * matrix (ffprobe's side data `rotation`, counterclockwise: an upright phone's portrait video says
 * -90) or, in files and ffprobe versions without it, the older `rotate` tag (clockwise).
 */
export function rotationOf(s: FfprobeStream): number {
  const record = s as unknown as Record<string, unknown>;
  const sideData = Array.isArray(record.side_data_list) ? (record.side_data_list as unknown[]) : [];
  const matrix = sideData.map((d) => finite((d as Record<string, unknown> | null)?.rotation)).find(isNumber);
  const counterclockwise = finite(record.rotation) ?? matrix;
  const clockwise = counterclockwise !== undefined ? -counterclockwise : (finite(tagsOf(s).rotate) ?? 0);
  return (((Math.round(clockwise / 90) * 90) % 360) + 360) % 360;
}

/** Frames per second: the average rate, else the stream's base rate (`30000/1001` → 29.97…). */
export function frameRateOf(s: FfprobeStream): number | undefined {
  return ratio(s.avg_frame_rate) ?? ratio(s.r_frame_rate);
}

/**
 * Bits per sample: the stream's own `bits_per_raw_sample`, else what its pixel format says
 * (yuv420p10le → 10), else for audio `bits_per_sample` (PCM).
 */
export function bitDepthOf(s: FfprobeStream): number | undefined {
  const raw = integer(s.bits_per_raw_sample);
  if (raw !== undefined) return raw;
  if (s.codec_type === "video") return pixelFormatDepth(s.pix_fmt);
  return integer(s.bits_per_sample);
}

// Pixel formats whose components are 8 bits, by name; deeper ones say their depth in their name.
const EIGHT_BIT_FORMATS =
  /^(yuvj?a?(4[0-4][0-4]|41[01])p|nv(12|16|21|24|42)|gray|ya8|rgb24|bgr24|rgba|bgra|argb|abgr|[0rgb]{4}|gbra?p|yuyv422|uyvy422|yvyu422|pal8)$/;

/** The bits per component a pixel format names: yuv420p → 8, yuv420p10le → 10, p010le → 10, rgb48le → 16. */
export function pixelFormatDepth(format: unknown): number | undefined {
  if (typeof format !== "string") return undefined;
  if (EIGHT_BIT_FORMATS.test(format)) return 8;
  const planar = /^(?:yuva?|gbra?|gray|ya)\w*?p?(\d{1,2})(?:le|be)$/.exec(format);
  if (planar) return Number(planar[1]);
  const packed = /^p0(\d\d)(?:le|be)$/.exec(format) ?? /^p(\d{3})(?:le|be)$/.exec(format);
  if (packed) return Number(packed[1]!.slice(-2));
  if (/^(rgb|bgr)48(le|be)$|^(rgb|bgr)a64(le|be)$|^ya16(le|be)$/.test(format)) return 16;
  return undefined;
}

/** Matroska keeps stream durations in a `DURATION` tag: `00:00:04.000000000`. */
export function matroskaDuration(s: FfprobeStream): number | undefined {
  const tags = tagsOf(s);
  const tag = tags.DURATION ?? tags.duration;
  if (typeof tag !== "string") return undefined;
  const m = /^(\d+):(\d\d):(\d\d(?:\.\d+)?)$/.exec(tag.trim());
  if (!m) return undefined;
  const seconds = Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]);
  return seconds > 0 ? seconds : undefined;
}

/** A stream's tags. FfprobeStream's typings leave them out (they read as any); ffprobe's JSON has them. */
export function tagsOf(s: FfprobeStream): Record<string, unknown> {
  return (s.tags as Record<string, unknown> | undefined) ?? {};
}

export function finite(value: unknown): number | undefined {
  const n =
    typeof value === "number" ? value : typeof value === "string" && value.trim() ? Number(value) : NaN;
  return Number.isFinite(n) ? n : undefined;
}

export function positive(value: unknown): number | undefined {
  const n = finite(value);
  return n !== undefined && n > 0 ? n : undefined;
}

/** "16:9" or "25/1" → a number; "0:1", "0/0" or "N/A" → undefined. */
export function ratio(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const m = /^(\d+)[:/](\d+)$/.exec(value);
  if (!m) return undefined;
  const num = Number(m[1]);
  const den = Number(m[2]);
  return num > 0 && den > 0 ? num / den : undefined;
}

/** A positive number, rounded to an integer. */
function integer(value: unknown): number | undefined {
  const n = positive(value);
  return n !== undefined ? Math.round(n) : undefined;
}

/** A name ffprobe gives, unless it is one of its words for "not known". */
function known(value: unknown): string | undefined {
  if (typeof value === "number") return String(value);
  if (typeof value !== "string") return undefined;
  const text = value.trim();
  return text && !/^(unknown|N\/A|none)$/i.test(text) ? text : undefined;
}

/** A language tag, unless it says it is undetermined. */
function language(value: unknown): string | undefined {
  const text = known(value);
  return text && !/^(und|unk|zxx|mis)$/i.test(text) ? text : undefined;
}

function isNumber(n: number | undefined): n is number {
  return n !== undefined;
}

function maxOf(values: number[]): number | undefined {
  return values.length > 0 ? Math.max(...values) : undefined;
}

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;

/** The object without its undefined fields. */
function defined<T extends Record<string, unknown>>(
  fields: T,
): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}
