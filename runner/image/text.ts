// Watermark text rendered to RGBA pixels, through sharp's text input (libvips → Pango → FreeType).
//
// The font: a fresh machine has no font fontconfig is sure to find, and without one Pango draws
// empty boxes. So the text is rendered from a font *file* we name (sharp's `fontfile`, added to
// fontconfig for this process), which works even where fontconfig has no configuration at all.
// The first present of FONT_FILES is used: DejaVu Sans Bold from Debian/Ubuntu's fonts-dejavu-core
// (the image and CI install it; it covers Latin, Greek and Cyrillic), then its paths on other
// distributions, then Liberation and Noto Sans. When none is there, fontconfig's "sans-serif" is
// asked for and a warning logged.
//
// Size: Pango sizes in points; at 72 dpi a point is a pixel, so `fontSize` is the em size in
// pixels. The rendered image is cropped to the ink, so it is about 0.75 × fontSize tall for one
// line of capitals. Text wider than `maxWidth` wraps at words (characters for overlong words). Text
// that would not fit in maxWidth × maxHeight at that size is rendered to fit the box instead (sharp
// picks the size), so a long text at a big size can never make a bitmap larger than the image.
import { existsSync } from "node:fs";
import type { Logger } from "../../core/logger.js";
import { sharp } from "./settings.js";

export interface TextOptions {
  text: string;
  /** Em size in pixels. */
  fontSize: number;
  /** `#rgb` or `#rrggbb`. */
  color: string;
  maxWidth: number;
  maxHeight: number;
  /** Alignment of wrapped lines; default left. */
  align?: "left" | "centre" | "right";
  logger?: Logger;
}

export interface RgbaImage {
  /** Non-premultiplied RGBA, row by row. */
  data: Buffer;
  width: number;
  height: number;
}

interface FontChoice {
  family: string;
  file?: string;
}

export const FONT_FILES: readonly { file: string; family: string }[] = [
  { file: "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf", family: "DejaVu Sans Bold" }, // Debian, Ubuntu
  { file: "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans-Bold.ttf", family: "DejaVu Sans Bold" }, // Fedora
  { file: "/usr/share/fonts/TTF/DejaVuSans-Bold.ttf", family: "DejaVu Sans Bold" }, // Arch
  { file: "/usr/share/fonts/dejavu/DejaVuSans-Bold.ttf", family: "DejaVu Sans Bold" }, // Alpine
  { file: "/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf", family: "Liberation Sans Bold" },
  { file: "/usr/share/fonts/truetype/noto/NotoSans-Bold.ttf", family: "Noto Sans Bold" },
  { file: "/System/Library/Fonts/Supplemental/Arial Bold.ttf", family: "Arial Bold" }, // macOS
];

let chosen: FontChoice | undefined;

/** The font the watermark text is drawn with (looked up once per process). */
export function watermarkFont(logger?: Logger): FontChoice {
  if (!chosen) {
    const found = FONT_FILES.find((f) => existsSync(f.file));
    chosen = found ?? { family: "sans-serif Bold" };
    if (!found) {
      logger?.warn(
        { looked_for: FONT_FILES.map((f) => f.file) },
        "no known font file found; watermark text uses fontconfig's sans-serif (install fonts-dejavu-core)",
      );
    }
  }
  return chosen;
}

/** Rough ink area of text at a size, to tell whether it can fit a box before rendering it. */
function estimatedArea(text: string, fontSize: number): number {
  return text.length * (0.65 * fontSize) * (1.25 * fontSize);
}

/** Renders `text` in one colour on transparency. The result may be smaller than maxWidth × maxHeight. */
export async function renderText(options: TextOptions): Promise<RgbaImage> {
  const font = watermarkFont(options.logger);
  const maxWidth = Math.max(1, Math.floor(options.maxWidth));
  const maxHeight = Math.max(1, Math.floor(options.maxHeight));
  const markup = `<span foreground="${options.color}">${escapeMarkup(options.text)}</span>`;
  const fits = estimatedArea(options.text, options.fontSize) <= maxWidth * maxHeight;
  const { data, info } = await sharp({
    text: {
      text: markup,
      font: fits ? `${font.family} ${options.fontSize}` : font.family,
      ...(font.file ? { fontfile: font.file } : {}),
      width: maxWidth,
      ...(fits ? { dpi: 72 } : { height: maxHeight }),
      wrap: "word-char",
      align: options.align ?? "left",
      rgba: true,
    },
  })
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

/** Pango markup is XML: the caller's text must not be able to open a tag. */
export function escapeMarkup(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
