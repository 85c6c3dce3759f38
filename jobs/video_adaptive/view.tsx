import { useEffect, useRef, useState } from "preact/hooks";
import { authHeaders } from "../../ui/src/api.js";
import { formatSeconds } from "../../ui/src/format.js";
import type { ResultViewProps } from "../../ui/src/results.js";

interface AdaptiveResult {
  master_url?: string;
  dash_url?: string;
  duration?: number;
  renditions?: Array<{ width: number; height: number; bandwidth: number; codecs: string }>;
  audio?: { codecs: string; bandwidth: number };
}

/** The ladder through the API (GET /jobs/{id}/ladder/…): the playlists' relative URIs resolve there too. */
export const ladderUrl = (jobId: string, path: string) =>
  `/api/v1/jobs/${encodeURIComponent(jobId)}/ladder/${path}`;

type PlayerState = { state: "loading" } | { state: "playing" } | { state: "error"; message: string };

/**
 * The ladder played with hls.js (loaded only on this view) from the API, each request with the
 * session's key; hls.js runs without its worker (the dashboard's CSP allows no worker), and lists
 * the renditions. A DASH-only ladder is listed, not played.
 */
export default function AdaptiveLadder(props: ResultViewProps) {
  const { job } = props;
  const result = props.result as AdaptiveResult;
  const video = useRef<HTMLVideoElement>(null);
  const [player, setPlayer] = useState<PlayerState>({ state: "loading" });
  const [level, setLevel] = useState<string>("");
  const hls = Boolean(result.master_url);

  useEffect(() => {
    if (!hls || !video.current) return;
    let destroyed = false;
    let instance: { destroy(): void } | undefined;
    void import("hls.js").then(({ default: Hls }) => {
      if (destroyed || !video.current) return;
      if (!Hls.isSupported()) {
        setPlayer({ state: "error", message: "this browser has no Media Source Extensions to play HLS" });
        return;
      }
      const h = new Hls({
        enableWorker: false,
        xhrSetup: (xhr) => {
          for (const [name, value] of Object.entries(authHeaders())) xhr.setRequestHeader(name, value);
        },
      });
      instance = h;
      h.on(Hls.Events.LEVEL_SWITCHED, (_e, data) => {
        const l = h.levels[data.level];
        if (l) setLevel(`${l.width} × ${l.height}`);
      });
      h.on(Hls.Events.MANIFEST_PARSED, () => setPlayer({ state: "playing" }));
      h.on(Hls.Events.ERROR, (_e, data) => {
        if (data.fatal) setPlayer({ state: "error", message: `${data.type}: ${data.details}` });
      });
      h.loadSource(ladderUrl(job.id, "master.m3u8"));
      h.attachMedia(video.current);
    });
    return () => {
      destroyed = true;
      instance?.destroy();
    };
  }, [job.id, hls]);

  return (
    <div class="adaptive-result">
      {hls ? (
        <>
          <video ref={video} controls muted playsInline data-testid="ladder-video" />
          <p class="muted" data-testid="ladder-state">
            {player.state === "error"
              ? `The ladder cannot be played here: ${player.message}`
              : player.state === "loading"
                ? "Loading the ladder…"
                : `Playing the HLS ladder${level ? ` · now ${level}` : ""}`}
          </p>
        </>
      ) : (
        <div class="media-placeholder">
          A DASH-only ladder: the dashboard plays HLS; open the MPD in a DASH player.
        </div>
      )}
      <table class="renditions" data-testid="ladder-renditions">
        <caption>
          Renditions · {formatSeconds(result.duration)}
          {result.dash_url ? " · HLS and DASH" : hls ? " · HLS" : " · DASH"}
        </caption>
        <thead>
          <tr>
            <th scope="col">Size</th>
            <th scope="col">Bandwidth</th>
            <th scope="col">Codecs</th>
          </tr>
        </thead>
        <tbody>
          {(result.renditions ?? []).map((r) => (
            <tr>
              <td>
                {r.width} × {r.height}
              </td>
              <td>{Math.round(r.bandwidth / 1000)} kbit/s</td>
              <td class="mono">{r.codecs}</td>
            </tr>
          ))}
          {result.audio ? (
            <tr>
              <td>audio</td>
              <td>{Math.round(result.audio.bandwidth / 1000)} kbit/s</td>
              <td class="mono">{result.audio.codecs}</td>
            </tr>
          ) : null}
        </tbody>
      </table>
    </div>
  );
}
