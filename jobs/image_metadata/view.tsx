import { formatBytes } from "../../ui/src/format.js";
import { FactList, type ResultViewProps } from "../../ui/src/results.js";

interface MetadataResult {
  width?: number;
  height?: number;
  format?: string;
  size?: number;
  orientation?: number;
  color_space?: string;
  has_alpha?: boolean;
  icc_profile?: { description?: string; color_space?: string; version?: string };
  exif?: { make?: string; model?: string; date_taken?: string; gps?: boolean };
}

/** The image's facts, as a list. */
export default function ImageMetadata(props: ResultViewProps) {
  const r = props.result as MetadataResult;
  const rows: Array<[string, string]> = [
    ["Size", `${r.width ?? "—"} × ${r.height ?? "—"} px`],
    ["Format", r.format?.toUpperCase() ?? "—"],
    ["File size", formatBytes(r.size)],
    ["Colour space", r.color_space ?? "—"],
    ["Transparency", r.has_alpha ? "yes (alpha channel)" : "no"],
  ];
  if (r.orientation !== undefined) rows.push(["EXIF orientation", String(r.orientation)]);
  if (r.icc_profile) {
    const { description, color_space: space, version } = r.icc_profile;
    rows.push(["ICC profile", [description, space, version && `ICC ${version}`].filter(Boolean).join(" · ")]);
  }
  if (r.exif) {
    const camera = [r.exif.make, r.exif.model].filter(Boolean).join(" ");
    if (camera) rows.push(["Camera", camera]);
    if (r.exif.date_taken) rows.push(["Taken", r.exif.date_taken]);
    rows.push(["GPS position", r.exif.gps ? "present" : "none"]);
  }
  return <FactList rows={rows} class="facts" testId="image-metadata" />;
}
