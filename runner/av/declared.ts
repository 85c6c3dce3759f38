// The length an audio file's own header declares, read from its bytes: the number every player
// shows, which a file cut short still claims. ffprobe's `duration` is not always that: for a WAV it
// is the data actually present (ffmpeg trims the data chunk to the file), and when a format has no
// count it is an estimate from the bitrate. Only headers that hold a real count are read here:
//
// - WAV: the `data` chunk's size in bytes over the `fmt ` chunk's bytes per second;
// - MP3: the frame count of a Xing/Info (LAME) or VBRI header, times samples per frame;
// - FLAC: STREAMINFO's total number of samples.
//
// A header that says "unknown" (a streamed WAV's placeholder size, a FLAC's 0 samples) declares
// nothing.
//
// checkDecodedAudio() then holds a decode to it: every job that decodes a whole audio stream calls
// it with what came out.
import { open } from "node:fs/promises";
import { PermanentError } from "../errors.js";
import { isInputProblem, tellingLine } from "./run.js";

/** What the header declares. `seconds` 0 means the file says it holds no samples. */
export interface DeclaredLength {
  seconds: number;
  /** Where it was read, e.g. "WAV data chunk". */
  from: string;
}

/** Bytes read from the start of the file: room for an ID3v2 tag with a small cover. */
const HEAD_BYTES = 256 * 1024;

/** The length the header of `path` declares, or undefined when it declares none we can read. */
export async function declaredLength(path: string, formatName: string): Promise<DeclaredLength | undefined> {
  const names = formatName.split(",");
  const reader = names.includes("wav")
    ? wavLength
    : names.includes("mp3")
      ? mp3Length
      : names.includes("flac")
        ? flacLength
        : undefined;
  if (!reader) return undefined;
  const file = await open(path, "r");
  try {
    const { size } = await file.stat();
    const head = Buffer.alloc(Math.min(size, HEAD_BYTES));
    await file.read(head, 0, head.length, 0);
    return reader(head, size);
  } finally {
    await file.close();
  }
}

/** A WAV data size from here up is a placeholder, not a count. */
const UNKNOWN_WAV_SIZE = 0x7fff0000;

function wavLength(head: Buffer, size: number): DeclaredLength | undefined {
  if (
    head.length < 12 ||
    head.toString("latin1", 0, 4) !== "RIFF" ||
    head.toString("latin1", 8, 12) !== "WAVE"
  ) {
    return undefined;
  }
  let byteRate: number | undefined;
  let at = 12;
  while (at + 8 <= head.length) {
    const id = head.toString("latin1", at, at + 4);
    const length = head.readUInt32LE(at + 4);
    if (id === "fmt " && at + 20 <= head.length) {
      byteRate = head.readUInt32LE(at + 16);
    } else if (id === "data") {
      // Writers that cannot seek back leave a placeholder: 0xFFFFFFFF, about 2 GiB (arecord, SoX),
      // or 0 with the samples after it anyway.
      if (!byteRate || length >= UNKNOWN_WAV_SIZE) return undefined;
      if (length === 0 && size > at + 8) return undefined;
      return { seconds: length / byteRate, from: "WAV data chunk" };
    }
    at += 8 + length + (length & 1);
  }
  return undefined;
}

// MPEG audio: sample rates by version (index: 0 MPEG 2.5, 2 MPEG 2, 3 MPEG 1).
const SAMPLE_RATES: Record<number, number[]> = {
  3: [44100, 48000, 32000],
  2: [22050, 24000, 16000],
  0: [11025, 12000, 8000],
};

function mp3Length(head: Buffer): DeclaredLength | undefined {
  let at = 0;
  // ID3v2: "ID3", version, flags, a syncsafe size; a footer adds 10 bytes.
  if (head.length >= 10 && head.toString("latin1", 0, 3) === "ID3") {
    const tagSize =
      ((head[6]! & 0x7f) << 21) | ((head[7]! & 0x7f) << 14) | ((head[8]! & 0x7f) << 7) | (head[9]! & 0x7f);
    at = 10 + tagSize + (head[5]! & 0x10 ? 10 : 0);
  }
  // The first frame header: 11 sync bits, then version, layer, bitrate and sample rate fields.
  for (; at + 4 <= head.length; at++) {
    if (head[at] !== 0xff || (head[at + 1]! & 0xe0) !== 0xe0) continue;
    const version = (head[at + 1]! >> 3) & 3;
    const layer = (head[at + 1]! >> 1) & 3;
    const rateIndex = (head[at + 2]! >> 2) & 3;
    if (version === 1 || layer === 0 || rateIndex === 3 || head[at + 2]! >> 4 === 15) continue;
    const sampleRate = SAMPLE_RATES[version]![rateIndex]!;
    const mono = head[at + 3]! >> 6 === 3;
    const samplesPerFrame = layer === 3 ? 384 : layer === 2 || version === 3 ? 1152 : 576;
    // Xing/Info sits after the side information; VBRI 32 bytes after the header.
    const sideInfo = version === 3 ? (mono ? 17 : 32) : mono ? 9 : 17;
    const xing = at + 4 + sideInfo;
    if (xing + 12 <= head.length) {
      const tag = head.toString("latin1", xing, xing + 4);
      if ((tag === "Xing" || tag === "Info") && head.readUInt32BE(xing + 4) & 1) {
        const frames = head.readUInt32BE(xing + 8);
        return frames > 0
          ? { seconds: (frames * samplesPerFrame) / sampleRate, from: `MP3 ${tag} header` }
          : undefined;
      }
    }
    const vbri = at + 4 + 32;
    if (vbri + 18 <= head.length && head.toString("latin1", vbri, vbri + 4) === "VBRI") {
      const frames = head.readUInt32BE(vbri + 14);
      return frames > 0
        ? { seconds: (frames * samplesPerFrame) / sampleRate, from: "MP3 VBRI header" }
        : undefined;
    }
    return undefined; // the first frame has no count: nothing is declared
  }
  return undefined;
}

function flacLength(head: Buffer): DeclaredLength | undefined {
  // "fLaC", then the STREAMINFO block: a 4-byte block header and 34 bytes.
  if (head.length < 42 || head.toString("latin1", 0, 4) !== "fLaC" || (head[4]! & 0x7f) !== 0)
    return undefined;
  const info = head.subarray(8, 42);
  const sampleRate = (info[10]! << 12) | (info[11]! << 4) | (info[12]! >> 4);
  const samples = (info[13]! & 0x0f) * 2 ** 32 + info.readUInt32BE(14);
  if (!sampleRate || samples === 0) return undefined;
  return { seconds: samples / sampleRate, from: "FLAC STREAMINFO" };
}

/** Whether `held` seconds are much less than the `declared` ones: 2 % and a fifth of a second short. */
export function heldLess(declared: number, held: number): boolean {
  return held < declared * 0.98 - 0.2;
}

/**
 * After a decode of a whole audio stream: the source must have held what it promised. `decoded` is
 * the seconds that came out, `probed` ffprobe's duration and `errors` ffmpeg's lines. Throws
 * PermanentError when nothing decoded, when much less decoded than the header declares (a file
 * cut short decodes silently to its end), or when much less decoded than ffprobe says and ffmpeg
 * complained about the data.
 */
export function checkDecodedAudio(
  audio: { declared?: DeclaredLength },
  probed: number | undefined,
  decoded: number | undefined,
  errors: string[],
): void {
  if (decoded === undefined) return;
  if (decoded <= 0) {
    const why = tellingLine(errors);
    throw new PermanentError(`source holds no audio samples that decode${why ? ` (${why})` : ""}`);
  }
  const declared = audio.declared?.seconds;
  if (declared !== undefined && heldLess(declared, decoded)) {
    throw new PermanentError(
      `source audio is truncated: it declares ${declared.toFixed(2)} s but holds ${decoded.toFixed(2)} s`,
    );
  }
  if (probed !== undefined && decoded < probed * 0.9 - 0.25 && errors.some(isInputProblem)) {
    throw new PermanentError(
      `source audio is truncated or corrupt: it declares ${probed.toFixed(2)} s but holds ` +
        `${decoded.toFixed(2)} s (${tellingLine(errors)})`,
    );
  }
}
