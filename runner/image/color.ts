// Colour arithmetic for the colours job: sRGB ⇄ OKLab, and the output notations.
//
// OKLab (Björn Ottosson, 2020) is a perceptual space: equal distances look about equally different
// anywhere in it, which is what clustering colours needs, and it is cheaper than CIELAB (no white
// point, one matrix pair and a cube root). A distance of ~0.02 is about the smallest difference
// people notice.
import type { COLOR_FORMATS } from "../../core/jobs/parameters.js";

export type ColorFormat = (typeof COLOR_FORMATS)[number];
/** 8-bit sRGB channels. */
export type Rgb = readonly [r: number, g: number, b: number];
export type Oklab = readonly [l: number, a: number, b: number];

/** sRGB's 8-bit values, decoded to linear light. */
const LINEAR = Float64Array.from({ length: 256 }, (_, v) => {
  const c = v / 255;
  return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
});

function encodeChannel(linear: number): number {
  const c = linear <= 0.0031308 ? 12.92 * linear : 1.055 * linear ** (1 / 2.4) - 0.055;
  return Math.min(255, Math.max(0, Math.round(c * 255)));
}

export function rgbToOklab(rgb: Rgb): Oklab {
  const r = LINEAR[rgb[0]]!;
  const g = LINEAR[rgb[1]]!;
  const b = LINEAR[rgb[2]]!;
  const l = Math.cbrt(0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b);
  const m = Math.cbrt(0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b);
  const s = Math.cbrt(0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b);
  return [
    0.2104542553 * l + 0.793617785 * m - 0.0040720468 * s,
    1.9779984951 * l - 2.428592205 * m + 0.4505937099 * s,
    0.0259040371 * l + 0.7827717662 * m - 0.808675766 * s,
  ];
}

/** Back to 8-bit sRGB, rounded and clipped to the gamut. */
export function oklabToRgb(lab: Oklab): Rgb {
  const [L, a, b] = lab;
  const l = (L + 0.3963377774 * a + 0.2158037573 * b) ** 3;
  const m = (L - 0.1055613458 * a - 0.0638541728 * b) ** 3;
  const s = (L - 0.0894841775 * a - 1.291485548 * b) ** 3;
  return [
    encodeChannel(Math.max(0, 4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s)),
    encodeChannel(Math.max(0, -1.2684380046 * l + 2.6097574011 * m - 0.3413193965 * s)),
    encodeChannel(Math.max(0, -0.0041960863 * l - 0.7034186147 * m + 1.707614701 * s)),
  ];
}

/** Euclidean distance in OKLab. */
export function oklabDistance(x: Oklab, y: Oklab): number {
  return Math.hypot(x[0] - y[0], x[1] - y[1], x[2] - y[2]);
}

/** Hue in degrees, saturation and lightness in percent, all rounded to integers. */
export function rgbToHsl(rgb: Rgb): [h: number, s: number, l: number] {
  const [r, g, b] = rgb.map((v) => v / 255) as [number, number, number];
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  const d = max - min;
  const l = (max + min) / 2;
  const s = d === 0 ? 0 : d / (1 - Math.abs(2 * l - 1));
  let h = 0;
  if (d !== 0) {
    if (max === r) h = 60 * (((g - b) / d + 6) % 6);
    else if (max === g) h = 60 * ((b - r) / d + 2);
    else h = 60 * ((r - g) / d + 4);
  }
  return [Math.round(h) % 360, Math.round(s * 100), Math.round(l * 100)];
}

/** `#rrggbb` (lower case), `rgb(r, g, b)` or `hsl(h, s%, l%)`. */
export function formatColor(rgb: Rgb, format: ColorFormat): string {
  switch (format) {
    case "hex":
      return `#${rgb.map((v) => v.toString(16).padStart(2, "0")).join("")}`;
    case "rgb":
      return `rgb(${rgb[0]}, ${rgb[1]}, ${rgb[2]})`;
    case "hsl": {
      const [h, s, l] = rgbToHsl(rgb);
      return `hsl(${h}, ${s}%, ${l}%)`;
    }
  }
}
