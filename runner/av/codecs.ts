// The audio formats of audio_convert: container, encoder, file extension, Content-Type, default
// bitrate and the sample rates and channel counts the encoder takes. Every encoder here is in
// Debian's `ffmpeg` package (libmp3lame, aac, libopus, libvorbis, flac, pcm_s16le).
import { AUDIO_SAMPLE_RATES, type AUDIO_FORMATS } from "../../core/jobs/parameters.js";
import type { AudioStreamInfo } from "./probe.js";

export type AudioFormat = (typeof AUDIO_FORMATS)[number];

export interface AudioCodec {
  /** ffmpeg muxer (`-f`). */
  muxer: string;
  /** ffmpeg encoder (`-c:a`). */
  encoder: string;
  /** codec_name ffprobe reports for the output. */
  codecName: string;
  extension: string;
  contentType: string;
  /** Bitrate used when the job gives none; undefined for lossless and PCM. */
  defaultBitrate?: string;
  /**
   * Without a requested bitrate, encode at this VBR quality (-q:a) instead of defaultBitrate: an
   * encoder whose bitrate bounds depend on the source (Vorbis at a low sample rate) then always
   * has a setting it can do.
   */
  defaultQuality?: string;
  /** Sample rates the encoder takes; others are resampled to `preferredSampleRate`. */
  sampleRates?: readonly number[];
  preferredSampleRate?: number;
  maxChannels?: number;
  /** Muxer options (after the codec options). */
  muxerOptions?: readonly string[];
  /** The container has no exact duration (ADTS): ffprobe estimates it from the bitrate. */
  estimatedDuration?: boolean;
}

const MP3_RATES = AUDIO_SAMPLE_RATES.mp3;
const AAC_RATES = AUDIO_SAMPLE_RATES.aac;

export const AUDIO_CODECS: Readonly<Record<AudioFormat, AudioCodec>> = {
  mp3: {
    muxer: "mp3",
    encoder: "libmp3lame",
    codecName: "mp3",
    extension: "mp3",
    contentType: "audio/mpeg",
    defaultBitrate: "192k",
    sampleRates: MP3_RATES,
    preferredSampleRate: 44100,
    maxChannels: 2,
  },
  aac: {
    // Raw AAC in ADTS framing, the `.aac` file browsers and players take.
    muxer: "adts",
    encoder: "aac",
    codecName: "aac",
    extension: "aac",
    contentType: "audio/aac",
    defaultBitrate: "192k",
    sampleRates: AAC_RATES,
    preferredSampleRate: 48000,
    maxChannels: 8,
    estimatedDuration: true,
  },
  m4a: {
    // The MP4 family's audio-only flavour (brand M4A); the index goes first so it plays while downloading.
    muxer: "ipod",
    encoder: "aac",
    codecName: "aac",
    extension: "m4a",
    contentType: "audio/mp4",
    defaultBitrate: "192k",
    sampleRates: AAC_RATES,
    preferredSampleRate: 48000,
    maxChannels: 8,
    muxerOptions: ["-movflags", "+faststart"],
  },
  opus: {
    // Opus in Ogg, as `.opus` files are; Opus itself runs at 48 kHz (and 24/16/12/8 kHz).
    muxer: "opus",
    encoder: "libopus",
    codecName: "opus",
    extension: "opus",
    contentType: "audio/ogg",
    defaultBitrate: "96k",
    sampleRates: AUDIO_SAMPLE_RATES.opus,
    preferredSampleRate: 48000,
    maxChannels: 8,
  },
  ogg: {
    muxer: "ogg",
    encoder: "libvorbis",
    codecName: "vorbis",
    extension: "ogg",
    contentType: "audio/ogg",
    defaultBitrate: "160k",
    defaultQuality: "5",
    maxChannels: 8,
  },
  flac: {
    muxer: "flac",
    encoder: "flac",
    codecName: "flac",
    extension: "flac",
    contentType: "audio/flac",
    maxChannels: 8,
  },
  wav: {
    muxer: "wav",
    encoder: "pcm_s16le",
    codecName: "pcm_s16le",
    extension: "wav",
    contentType: "audio/wav",
  },
};

export function audioCodec(format: string): AudioCodec {
  const codec = (AUDIO_CODECS as Record<string, AudioCodec | undefined>)[format];
  if (!codec) throw new Error(`unknown audio format ${format}`);
  return codec;
}

/**
 * ffmpeg output options for a format: encoder, bitrate (given or default; none for flac/wav),
 * sample rate and channel count when the source's do not fit the encoder, muxer.
 */
export function audioEncodeOptions(
  format: AudioFormat,
  source: Pick<AudioStreamInfo, "sampleRate" | "channels">,
  bitrate?: string,
): string[] {
  const codec = audioCodec(format);
  const options = ["-c:a", codec.encoder];
  if (bitrate === undefined && codec.defaultQuality) options.push("-q:a", codec.defaultQuality);
  else if (codec.defaultBitrate) options.push("-b:a", bitrate ?? codec.defaultBitrate);
  if (codec.sampleRates && source.sampleRate && !codec.sampleRates.includes(source.sampleRate)) {
    options.push("-ar", String(codec.preferredSampleRate ?? codec.sampleRates[0]));
  }
  if (codec.maxChannels && source.channels && source.channels > codec.maxChannels) {
    options.push("-ac", String(codec.maxChannels));
  }
  options.push(...(codec.muxerOptions ?? []), "-f", codec.muxer);
  return options;
}
