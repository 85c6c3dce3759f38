// audio_convert: the first audio stream of the source, converted to mp3, aac, m4a, opus, ogg
// (Vorbis), flac or wav (see ../av/codecs.ts for containers, encoders and default bitrates).
//
// Pipeline: probe (the source must hold an audio stream) → ffmpeg: that stream only (`-vn`: cover
// art and video are dropped), global tags kept (`-map_metadata 0`), encoder/bitrate/sample rate per
// format, progress as a share of the probed duration → the output probed for the result: duration
// (seconds of audio), codec, bitrate (stream's, else the container's average; omitted if neither is
// known), sample rate, channels.
//
// A source that holds less than it claims fails permanently rather than delivering a shorter file
// (../av/declared.ts): a header that declares no samples, before ffmpeg runs; after it, nothing
// decoded, much less than the header declares (a WAV or MP3 cut short decodes silently to its
// end), or much less than ffprobe's duration with ffmpeg complaining of the data (an M4A whose
// index is at the front and whose data is cut off). A source the demuxer finds cut short fails in
// runFfmpeg (TruncatedError), whatever decoded before the cut.
import { join } from "node:path";
import { LOSSLESS_AUDIO_FORMATS, withDefaults } from "../../core/jobs/parameters.js";
import { PermanentError } from "../../runner/errors.js";
import type { Processor } from "../../runner/processor.js";
import { AUDIO_CODECS, audioCodec, audioEncodeOptions, type AudioFormat } from "../../runner/av/codecs.js";
import { checkDecodedAudio } from "../../runner/av/declared.js";
import { probeFile, probeSource, type MediaInfo } from "../../runner/av/probe.js";
import { EncoderSetupError, runFfmpeg } from "../../runner/av/run.js";

/** Progress shares: probing the source, converting, probing the output. */
const CONVERT_FROM = 5;
const CONVERT_TO = 95;

export const audioConvert: Processor = async (ctx) => {
  const parameters = withDefaults("audio_convert", ctx.job.parameters);
  // Checked when submitted; a job recorded another way may lack it or name another.
  const format: AudioFormat | undefined = parameters.format;
  if (!format || !(format in AUDIO_CODECS)) {
    throw new PermanentError(
      `format is required: one of ${Object.keys(AUDIO_CODECS).join(", ")} (got ${String(format)})`,
    );
  }
  if (parameters.bitrate !== undefined && LOSSLESS_AUDIO_FORMATS.includes(format)) {
    throw new PermanentError(
      `bitrate is not accepted for ${format}: it is a lossless or uncompressed format`,
    );
  }
  const codec = audioCodec(format);

  ctx.progress(0, "reading the audio");
  const info = await probeSource(ctx.sourcePath, "audio", { signal: ctx.signal });
  const audio = info.audio!;
  const duration = audio.duration ?? info.duration;

  const output = join(ctx.scratchDir, `audio.${codec.extension}`);
  ctx.progress(CONVERT_FROM, `converting to ${format}`);
  const bitrate = parameters.bitrate ?? (codec.defaultQuality ? undefined : codec.defaultBitrate);
  const encodeOptions = audioEncodeOptions(format, audio, parameters.bitrate);
  const run = await runFfmpeg(
    {
      input: ctx.sourcePath,
      output,
      outputOptions: [
        "-map",
        `0:${audio.index}`,
        "-vn",
        "-sn",
        "-dn",
        "-map_metadata",
        "0",
        ...encodeOptions,
      ],
      reads: "audio",
    },
    {
      signal: ctx.signal,
      logger: ctx.logger,
      ...(duration !== undefined ? { duration } : {}),
      onProgress: (fraction) =>
        ctx.progress(CONVERT_FROM + fraction * (CONVERT_TO - CONVERT_FROM), `converting to ${format}`),
    },
  ).catch((err: unknown) => {
    if (err instanceof EncoderSetupError) {
      // What the encoder was given: the source's shape unless the options resample or downmix.
      const option = (name: string) => encodeOptions[encodeOptions.indexOf(name) + 1];
      const channels = encodeOptions.includes("-ac") ? option("-ac") : audio.channels;
      const rate = encodeOptions.includes("-ar") ? option("-ar") : audio.sampleRate;
      const shape = `${channels ?? "?"} channel(s) at ${rate ?? "?"} Hz`;
      throw new PermanentError(
        `${codec.encoder} cannot encode ${shape}` +
          (bitrate && codec.defaultBitrate ? ` at ${bitrate}` : "") +
          ` (${err.reason}); try another bitrate or format`,
      );
    }
    throw err;
  });

  // Nothing decoded leaves a file ffprobe may not even read: say so before reading it.
  if (run.outTime !== undefined && run.outTime <= 0) checkDecodedAudio(audio, duration, 0, run.errors);
  ctx.progress(CONVERT_TO, "reading the converted audio");
  const out = await probeOutput(output, codec.estimatedDuration === true, ctx.signal);
  const stream = out.audio;
  if (!stream) throw new Error(`the converted file holds no audio stream (${out.formatName})`);
  const outDuration = stream.duration ?? out.duration ?? run.outTime ?? 0;
  // ffmpeg goes on after a decode error, and stops at a file's end without one: a source that
  // held less than it claims shows up as a shorter output.
  checkDecodedAudio(audio, duration, outDuration, run.errors);

  const outBitrate = stream.bitRate ?? out.bitRate;
  const sampleRate = stream.sampleRate ?? audio.sampleRate;
  const channels = stream.channels ?? audio.channels;
  if (sampleRate === undefined || channels === undefined) {
    throw new Error("the converted file does not report its sample rate and channels");
  }
  ctx.progress(100, "converted");
  return {
    output: { path: output, contentType: codec.contentType },
    result: {
      duration: round(outDuration, 3),
      metadata: {
        format,
        codec: stream.codec,
        ...(outBitrate !== undefined ? { bitrate: outBitrate } : {}),
        sample_rate: sampleRate,
        channels,
      },
    },
  };
};

/**
 * The output as ffprobe sees it. An ADTS (`.aac`) file has no duration of its own and ffprobe
 * estimates one from the bitrate; counting its packets (a demux pass, no decoding) gives the real one.
 */
async function probeOutput(path: string, countPackets: boolean, signal: AbortSignal): Promise<MediaInfo> {
  const info = await probeFile(path, { signal, ...(countPackets ? { args: ["-count_packets"] } : {}) });
  if (countPackets && info.audio?.sampleRate) {
    const raw = info.raw.streams.find((s) => s.index === info.audio!.index);
    const packets = Number(raw?.nb_read_packets);
    if (Number.isFinite(packets) && packets > 0) {
      const seconds = (packets * 1024) / info.audio.sampleRate;
      return { ...info, duration: seconds, audio: { ...info.audio, duration: seconds } };
    }
  }
  return info;
}

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;

export default audioConvert;
