import { formatBytes, formatSeconds } from "../../ui/src/format.js";
import { useObjectUrl } from "../../ui/src/preview.js";
import type { ResultViewProps } from "../../ui/src/results.js";

/**
 * A video up to this size is read into the page (through the API, with the key) to be played; a
 * larger one is only downloaded.
 */
const IN_PAGE_BYTES = 64 * 1024 ** 2;

interface TranscodeResult {
  file_size?: number;
  duration?: number;
  width?: number;
  height?: number;
  video_codec?: string;
  audio_codec?: string;
  bitrate?: number;
  frame_rate?: number;
}

/** A player and the written video's facts, as read back from the file. */
export default function TranscodeResultView(props: ResultViewProps) {
  const { job } = props;
  const result = props.result as TranscodeResult;
  const playable = (result.file_size ?? 0) <= IN_PAGE_BYTES;
  const video = useObjectUrl(job.id, "output", playable);
  return (
    <div class="video-result">
      {video?.state === "ready" ? (
        <video
          controls
          preload="metadata"
          src={video.url}
          width={result.width}
          height={result.height}
          data-testid="output-video"
        />
      ) : (
        <div class="media-placeholder">
          {!playable
            ? `The video is ${formatBytes(result.file_size)}: download it to play it.`
            : video?.state === "error"
              ? `Video not available: ${video.message}`
              : "Loading the video…"}
        </div>
      )}
      <dl class="facts">
        <div>
          <dt>Size</dt>
          <dd>
            {result.width ?? "—"} × {result.height ?? "—"}
          </dd>
        </div>
        <div>
          <dt>Length</dt>
          <dd>{formatSeconds(result.duration)}</dd>
        </div>
        <div>
          <dt>Video</dt>
          <dd>
            {result.video_codec ?? "—"}
            {result.frame_rate ? `, ${result.frame_rate} fps` : ""}
          </dd>
        </div>
        <div>
          <dt>Audio</dt>
          <dd>{result.audio_codec ?? "none"}</dd>
        </div>
        <div>
          <dt>Bitrate</dt>
          <dd>{result.bitrate ? `${Math.round(result.bitrate / 1000)} kbit/s` : "—"}</dd>
        </div>
        <div>
          <dt>File</dt>
          <dd>{formatBytes(result.file_size)}</dd>
        </div>
      </dl>
    </div>
  );
}
