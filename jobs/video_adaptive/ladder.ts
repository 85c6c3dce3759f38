// The pure decisions of video_adaptive: which renditions, the one ffmpeg command that encodes them
// all from one decode, and the master playlist written from what ffmpeg wrote.
import type { VideoAdaptiveParameters } from "../../core/jobs/parameters.js";

export interface Rendition {
  width: number;
  height: number;
  /** Video bitrate, kbit/s. */
  kbps: number;
}

/** The default ladder for H.264, kbit/s per height; H.265 and AV1 need less for the same picture. */
const DEFAULT_LADDER: ReadonlyArray<readonly [number, number]> = [
  [1080, 5000],
  [720, 2800],
  [480, 1400],
  [360, 800],
];
const CODEC_EFFICIENCY = { h264: 1, h265: 0.65, av1: 0.55 } as const;
export const AUDIO_KBPS = 128;

const even = (n: number) => Math.max(2, 2 * Math.round(n / 2));

/**
 * The renditions, tallest first, at the source's aspect ratio (as shown): those asked for, else the
 * default ladder at most the source's height, else (a source below 360 lines) the source's own height.
 * A rendition taller than the source is refused: upscaling only wastes bits.
 */
export function chooseRenditions(
  parameters: Pick<VideoAdaptiveParameters, "renditions" | "video_codec">,
  source: { displayWidth: number; displayHeight: number },
  maxDimension: number,
): Rendition[] | string {
  const { displayWidth: sw, displayHeight: sh } = source;
  const widthOf = (h: number) => Math.min(even((h * sw) / sh), maxDimension - (maxDimension % 2));
  if (parameters.renditions) {
    const taller = parameters.renditions.find((r) => r.height > sh);
    if (taller) {
      return `renditions: height ${taller.height} is taller than the source (${sw}x${sh}); a ladder does not upscale`;
    }
    return parameters.renditions
      .map((r) => ({ width: widthOf(r.height), height: r.height, kbps: parseInt(r.video_bitrate, 10) }))
      .sort((a, b) => b.height - a.height);
  }
  const factor = CODEC_EFFICIENCY[parameters.video_codec];
  const fitting = DEFAULT_LADDER.filter(([h]) => h <= sh);
  if (fitting.length > 0) {
    return fitting.map(([h, kbps]) => ({ width: widthOf(h), height: h, kbps: Math.round(kbps * factor) }));
  }
  const h = Math.min(even(sh), sh - (sh % 2)) || 2;
  // 800 kbit/s at 360 lines, by the pixels.
  const kbps = Math.max(100, Math.round((800 * factor * (h * widthOf(h))) / (360 * 640)));
  return [{ width: widthOf(h), height: h, kbps }];
}

/** SVT-AV1's preset (0 slowest … 13 fastest) for each x264/x265 preset name. */
const SVT_PRESET: Record<VideoAdaptiveParameters["preset"], number> = {
  ultrafast: 12,
  superfast: 11,
  veryfast: 10,
  faster: 9,
  fast: 8,
  medium: 6,
  slow: 4,
};

export interface LadderCommand {
  outputOptions: string[];
  /** Whether the source's audio is in the ladder (one AAC representation). */
  audio: boolean;
}

/**
 * One ffmpeg, one decode: the first video stream split into one scaled output per rendition, each
 * encoded with a keyframe at every segment boundary (by time, and a fixed GOP with scene-cut
 * detection off, so every rendition's keyframes fall at the same times), and the first audio stream
 * (if any) in AAC; written by the dash muxer as CMAF segments with an HLS playlist per representation
 * and a master playlist beside the MPD (`-hls_playlist 1`): one set of segments for both.
 */
export function ladderCommand(
  renditions: Rendition[],
  parameters: Pick<VideoAdaptiveParameters, "video_codec" | "segment_seconds" | "preset">,
  /** The CPUs the process may use (its cgroup's quota): the encoders' own thread pools. */
  cpus: number,
  source: {
    videoIndex: number;
    audioIndex?: number;
    frameRate?: number;
    displayWidth: number;
    displayHeight: number;
  },
): LadderCommand {
  const n = renditions.length;
  const seg = parameters.segment_seconds;
  const split = `[0:${source.videoIndex}]split=${n}${renditions.map((_, i) => `[s${i}]`).join("")}`;
  // Every rendition shown at the source's aspect ratio (the dash muxer refuses an adaptation set
  // whose aspect ratios differ): an even width rounded off it (426x240 of 16:9) gets pixels a hair
  // off square (setdar) rather than a picture a hair off the source's shape.
  const dar = `${source.displayWidth}/${source.displayHeight}`;
  const scales = renditions.map((r, i) => `[s${i}]scale=${r.width}:${r.height},setdar=${dar}[v${i}]`);
  const gop = Math.max(1, Math.round((source.frameRate ?? 25) * seg));
  const options = ["-filter_complex", [split, ...scales].join(";")];
  renditions.forEach((_, i) => options.push("-map", `[v${i}]`));
  const audio = source.audioIndex !== undefined;
  if (audio) options.push("-map", `0:${source.audioIndex}`);
  options.push(...codecOptions(parameters.video_codec, parameters.preset, gop, cpus));
  options.push("-pix_fmt", "yuv420p", "-force_key_frames", `expr:gte(t,n_forced*${seg})`);
  renditions.forEach((r, i) => {
    options.push(`-b:v:${i}`, `${r.kbps}k`, `-maxrate:v:${i}`, `${Math.round(r.kbps * 1.1)}k`);
    options.push(`-bufsize:v:${i}`, `${r.kbps * 2}k`);
  });
  if (audio) options.push("-c:a", "aac", "-b:a", `${AUDIO_KBPS}k`, "-ac", "2");
  options.push("-sn", "-dn", "-map_metadata", "-1", "-map_chapters", "-1");
  options.push(
    "-f",
    "dash",
    "-seg_duration",
    String(seg),
    "-use_template",
    "1",
    "-use_timeline",
    "1",
    "-hls_playlist",
    "1",
    "-adaptation_sets",
    // Two spaces: fluent-ffmpeg splits an option holding exactly one space into two arguments.
    audio ? "id=0,streams=v  id=1,streams=a" : "id=0,streams=v",
    "-init_seg_name",
    "init-$RepresentationID$.m4s",
    "-media_seg_name",
    "chunk-$RepresentationID$-$Number%05d$.m4s",
  );
  return { outputOptions: options, audio };
}

function codecOptions(
  codec: VideoAdaptiveParameters["video_codec"],
  preset: VideoAdaptiveParameters["preset"],
  gop: number,
  cpus: number,
): string[] {
  const fixedGop = ["-g", String(gop), "-keyint_min", String(gop)];
  if (codec === "h265") {
    return [
      "-c:v",
      "libx265",
      "-preset",
      preset,
      "-tag:v",
      "hvc1",
      "-x265-params",
      // x265 sizes its thread pool by the machine's cores, not by -threads (pools).
      `keyint=${gop}:min-keyint=${gop}:scenecut=0:open-gop=0:pools=${cpus}:log-level=error`,
    ];
  }
  if (codec === "av1") {
    const svt = SVT_PRESET[preset] ?? 10;
    // SVT-AV1 uses every core unless told its logical processors (lp).
    return [
      "-c:v",
      "libsvtav1",
      "-preset",
      String(svt),
      "-g",
      String(gop),
      "-svtav1-params",
      `scd=0:lp=${cpus}`,
    ];
  }
  return ["-c:v", "libx264", "-preset", preset, ...fixedGop, "-sc_threshold", "0"];
}

/** A variant of ffmpeg's master playlist: what its #EXT-X-STREAM-INF says, and its playlist. */
export interface Variant {
  bandwidth: number;
  width: number;
  height: number;
  codecs: string;
  uri: string;
}

/** The attributes of an #EXT-X-… line: `A=1,B="x,y"` → {A: "1", B: "x,y"}. */
export function attributes(line: string): Record<string, string> {
  const out: Record<string, string> = {};
  const body = line.slice(line.indexOf(":") + 1);
  for (const m of body.matchAll(/([A-Z0-9-]+)=("[^"]*"|[^,]*)/g)) out[m[1]!] = m[2]!.replace(/^"|"$/g, "");
  return out;
}

/** The variants and the audio rendition ffmpeg's master playlist lists. */
export function readMaster(text: string): { variants: Variant[]; audioUri?: string } {
  const lines = text.split(/\r?\n/).map((l) => l.trim());
  const variants: Variant[] = [];
  let audioUri: string | undefined;
  lines.forEach((line, i) => {
    if (line.startsWith("#EXT-X-MEDIA:")) {
      const a = attributes(line);
      if (a.TYPE === "AUDIO" && a.URI) audioUri = a.URI;
    } else if (line.startsWith("#EXT-X-STREAM-INF:")) {
      const a = attributes(line);
      const [width, height] = (a.RESOLUTION ?? "0x0").split("x").map(Number);
      const uri = lines.slice(i + 1).find((l) => l && !l.startsWith("#"));
      if (uri) {
        variants.push({
          bandwidth: Number(a.BANDWIDTH),
          width: width!,
          height: height!,
          codecs: a.CODECS ?? "",
          uri,
        });
      }
    }
  });
  return { variants, ...(audioUri ? { audioUri } : {}) };
}

/**
 * The master playlist: the variants tallest first (a player starts with the first), each with the
 * shared audio group when there is audio, and the audio-only variant last when asked for.
 */
export function writeMaster(
  variants: Variant[],
  audio: { uri: string; codecs: string; bandwidth: number } | undefined,
  audioOnly: boolean,
): string {
  const lines = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-INDEPENDENT-SEGMENTS"];
  if (audio) {
    lines.push(
      `#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="audio",NAME="audio",DEFAULT=YES,AUTOSELECT=YES,URI="${audio.uri}"`,
    );
  }
  for (const v of [...variants].sort((a, b) => b.height - a.height)) {
    const group = audio ? `,AUDIO="audio"` : "";
    lines.push(
      `#EXT-X-STREAM-INF:BANDWIDTH=${v.bandwidth},RESOLUTION=${v.width}x${v.height},CODECS="${v.codecs}"${group}`,
      v.uri,
    );
  }
  if (audio && audioOnly) {
    lines.push(`#EXT-X-STREAM-INF:BANDWIDTH=${audio.bandwidth},CODECS="${audio.codecs}"`, audio.uri);
  }
  return lines.join("\n") + "\n";
}

/**
 * The RFC 6381 name of an HEVC rendition (`hvc1.1.6.L93.B0`), from ffprobe's profile and level of
 * its stream: ffmpeg 5.1's dash muxer writes a bare `hvc1`, which players cannot check support of.
 * Main and Main 10 (what x265 writes from 8- and 10-bit input); the constraint byte as x265 sets it.
 */
export function hevcCodecs(profile: string | undefined, level: number | undefined): string | undefined {
  if (!level || level <= 0) return undefined;
  const ids: Record<string, string> = { Main: "1.6", "Main 10": "2.4" };
  const id = profile ? ids[profile] : undefined;
  return id ? `hvc1.${id}.L${level}.B0` : undefined;
}
