import { formatBytes, formatSeconds } from "../../ui/src/format.js";
import { FactList, type ResultViewProps } from "../../ui/src/results.js";

interface Stream {
  index: number;
  kind: string;
  codec?: string;
  profile?: string;
  width?: number;
  height?: number;
  display_aspect_ratio?: string;
  rotation?: number;
  frame_rate?: number;
  pixel_format?: string;
  bit_depth?: number;
  color_transfer?: string;
  channels?: number;
  channel_layout?: string;
  sample_rate?: number;
  language?: string;
  bit_rate?: number;
}

interface ProbeResult {
  container?: string;
  duration?: number;
  size?: number;
  bit_rate?: number;
  streams?: Stream[];
}

/** "1.2 Mbit/s", "128 kbit/s". */
function formatBitRate(bits: number | undefined): string | undefined {
  if (bits === undefined) return undefined;
  return bits >= 1e6 ? `${(bits / 1e6).toFixed(1)} Mbit/s` : `${Math.round(bits / 1000)} kbit/s`;
}

/** A stream's facts in a few words, by its kind. */
function details(s: Stream): string {
  const parts =
    s.kind === "video"
      ? [
          s.width && s.height ? `${s.width} × ${s.height}` : undefined,
          s.display_aspect_ratio,
          s.rotation ? `turned ${s.rotation}°` : undefined,
          s.frame_rate !== undefined ? `${s.frame_rate} fps` : undefined,
          s.pixel_format,
          s.bit_depth !== undefined ? `${s.bit_depth}-bit` : undefined,
          s.color_transfer,
        ]
      : s.kind === "audio"
        ? [
            s.sample_rate !== undefined ? `${s.sample_rate} Hz` : undefined,
            s.channel_layout ?? (s.channels !== undefined ? `${s.channels} ch` : undefined),
            s.bit_depth !== undefined ? `${s.bit_depth}-bit` : undefined,
          ]
        : [];
  return parts.filter(Boolean).join(" · ");
}

/** The file's facts, then its streams as a table. */
export default function MediaProbe(props: ResultViewProps) {
  const r = props.result as ProbeResult;
  const streams = r.streams ?? [];
  const rows: Array<[string, string]> = [
    ["Container", r.container ?? "—"],
    ["Duration", r.duration !== undefined ? formatSeconds(r.duration) : "—"],
    ["File size", formatBytes(r.size)],
    ["Bit rate", formatBitRate(r.bit_rate) ?? "—"],
  ];
  return (
    <div class="media-probe">
      <FactList rows={rows} class="facts" testId="media-probe" />
      <div class="table-scroll">
        <table data-testid="media-streams">
          <thead>
            <tr>
              <th>#</th>
              <th>Kind</th>
              <th>Codec</th>
              <th>Details</th>
              <th>Language</th>
              <th>Bit rate</th>
            </tr>
          </thead>
          <tbody>
            {streams.map((s) => (
              <tr>
                <td>{s.index}</td>
                <td>{s.kind}</td>
                <td>{[s.codec, s.profile].filter(Boolean).join(" · ") || "—"}</td>
                <td>{details(s) || "—"}</td>
                <td>{s.language ?? "—"}</td>
                <td>{formatBitRate(s.bit_rate) ?? "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
