import { formatBytes, formatSeconds } from "../../ui/src/format.js";
import { useObjectUrl } from "../../ui/src/preview.js";
import type { ImageResult, ResultViewProps } from "../../ui/src/results.js";

/** Audio up to this size is read into the page to be played; a longer file is only downloaded. */
const PLAYABLE_BYTES = 32 * 1024 ** 2;

/** A player (when the file is small enough to read into the page) and the audio's facts. */
export default function AudioResult(props: ResultViewProps) {
  const { job } = props;
  const result = props.result as ImageResult;
  const m = result.metadata ?? {};
  const playable = (result.file_size ?? 0) <= PLAYABLE_BYTES;
  const audio = useObjectUrl(job.id, "output", playable);
  return (
    <div class="audio-result">
      {audio?.state === "ready" ? (
        <audio controls preload="metadata" src={audio.url} data-testid="output-audio" />
      ) : (
        <div class="media-placeholder">
          {!playable
            ? `The audio is ${formatBytes(result.file_size)}: download it to play it.`
            : audio?.state === "error"
              ? `Audio not available: ${audio.message}`
              : "Loading the audio…"}
        </div>
      )}
      <dl class="facts">
        <div>
          <dt>Length</dt>
          <dd>{formatSeconds(result.duration)}</dd>
        </div>
        <div>
          <dt>Format</dt>
          <dd>
            {m.format ?? "—"} ({m.codec ?? "—"})
          </dd>
        </div>
        <div>
          <dt>Bitrate</dt>
          <dd>{m.bitrate ? `${Math.round(m.bitrate / 1000)} kbit/s` : "—"}</dd>
        </div>
        <div>
          <dt>Sample rate, channels</dt>
          <dd>
            {m.sample_rate ? `${m.sample_rate} Hz` : "—"}, {m.channels ?? "—"}
          </dd>
        </div>
        <div>
          <dt>Size</dt>
          <dd>{formatBytes(result.file_size)}</dd>
        </div>
      </dl>
    </div>
  );
}
