// What the video jobs (video_transcode, video_adaptive) ask of a source beyond its having a video
// stream: moving pictures (not a still image, not a single frame), and as many seconds of them as
// its video stream declares, the way audio_convert holds a decode to its header (declared.ts).
import { PermanentError } from "../errors.js";
import { heldLess } from "./declared.js";
import type { MediaInfo } from "./probe.js";

/** Demuxers of single pictures: a still image is not a video. */
const STILL_IMAGE_FORMATS = /^(image2|[a-z0-9]+_pipe)$/;

/** Before the encode: a still image (PNG, JPEG, …) given as the video → PermanentError. */
export function checkNotStill(info: MediaInfo, job: string): void {
  if (STILL_IMAGE_FORMATS.test(info.formatName)) {
    throw new PermanentError(
      `source is a still image (${info.video?.codec ?? info.formatName}), not a video: ${job} needs moving pictures`,
    );
  }
}

/**
 * After an encode of the whole video stream: `frames` written (ffmpeg's count), `held` the seconds
 * that came out, `declared` the seconds the source's video stream declares. One frame is a still
 * picture; much less than declared (by audio_convert's measure) is a file that lies about its
 * length, or was cut short where its demuxer cannot tell: PermanentError either way. More than
 * declared is fine: what is there is delivered.
 */
export function checkEncodedVideo(
  codec: string,
  job: string,
  frames: number | undefined,
  declared: number | undefined,
  held: number | undefined,
): void {
  if (frames === 1) {
    throw new PermanentError(
      `source video holds a single frame (${codec}), a still picture: ${job} needs moving pictures`,
    );
  }
  if (declared !== undefined && held !== undefined && heldLess(declared, held)) {
    throw new PermanentError(
      `source video is truncated: it declares ${declared.toFixed(2)} s but holds ${held.toFixed(2)} s`,
    );
  }
}
