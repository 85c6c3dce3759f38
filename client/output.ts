import Table from "cli-table3";
import pc from "picocolors";

export type Colors = ReturnType<typeof pc.createColors>;

/** How a command writes: for people (colours on a terminal) or, with --json, for scripts. */
export interface Output {
  json: boolean;
  /** Colours for what goes to stdout. */
  out: Colors;
  /** Colours for what goes to stderr (messages, progress bars). */
  err: Colors;
  /** stderr is a terminal: progress bars are drawn there. */
  interactive: boolean;
  /** One line (or lines) to stdout. */
  print(text: string): void;
  /** One line to stderr. */
  note(text: string): void;
  /** One JSON document on one line to stdout. */
  printJson(value: unknown): void;
}

export interface OutputOptions {
  json?: boolean;
  /** false with --no-color. */
  color?: boolean;
}

/**
 * Colour only on a terminal, when NO_COLOR is unset (or empty, as no-color.org says) and --no-color
 * was not given; each stream decides for itself, so `media-service jobs | less` gets plain text.
 */
export function colorEnabled(
  stream: { isTTY?: boolean },
  flag: boolean | undefined,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  return flag !== false && !env.NO_COLOR && stream.isTTY === true;
}

export function createOutput(options: OutputOptions): Output {
  const out = pc.createColors(colorEnabled(process.stdout, options.color));
  const err = pc.createColors(colorEnabled(process.stderr, options.color));
  return {
    json: options.json === true,
    out,
    err,
    interactive: process.stderr.isTTY === true,
    print: (text) => void process.stdout.write(`${text}\n`),
    note: (text) => void process.stderr.write(`${text}\n`),
    printJson: (value) => void process.stdout.write(`${JSON.stringify(value)}\n`),
  };
}

/** A table with a header row and no borders, as `ps` or `kubectl get` print. */
export function table(colors: Colors, head: string[], rows: Array<Array<string | number>>): string {
  const t = new Table({
    head: head.map((h) => colors.bold(h)),
    chars: {
      top: "",
      "top-mid": "",
      "top-left": "",
      "top-right": "",
      bottom: "",
      "bottom-mid": "",
      "bottom-left": "",
      "bottom-right": "",
      left: "",
      "left-mid": "",
      mid: "",
      "mid-mid": "",
      right: "",
      "right-mid": "",
      middle: "  ",
    },
    style: { head: [], border: [], "padding-left": 0, "padding-right": 0 },
  });
  t.push(...rows.map((r) => r.map(String)));
  return t
    .toString()
    .split("\n")
    .map((l) => l.trimEnd())
    .join("\n");
}

/** Field and value, one pair a line, the fields aligned: a record for people. */
export function fields(colors: Colors, pairs: Array<[string, string | undefined]>): string {
  const present = pairs.filter((p): p is [string, string] => p[1] !== undefined && p[1] !== "");
  const width = Math.max(0, ...present.map(([k]) => k.length));
  return present.map(([k, v]) => `${colors.dim(`${k}:`.padEnd(width + 1))} ${v}`).join("\n");
}

/** A job's or a batch's status, coloured by how it stands. */
export function status(colors: Colors, value: string): string {
  switch (value) {
    case "completed":
      return colors.green(value);
    case "failed":
      return colors.red(value);
    case "cancelled":
      return colors.yellow(value);
    case "partial":
      return colors.yellow(value);
    case "processing":
      return colors.cyan(value);
    default:
      return value;
  }
}

/** 48213 → "47.1 KiB"; `exact` adds the count: "47.1 KiB (48,213 bytes)". */
export function bytes(n: number, exact = false): string {
  if (n < 1024) return `${n} bytes`;
  let value = n;
  let unit = "bytes";
  for (const u of ["KiB", "MiB", "GiB", "TiB"]) {
    if (value < 1024) break;
    value /= 1024;
    unit = u;
  }
  return `${value.toFixed(1)} ${unit}${exact ? ` (${n.toLocaleString("en-US")} bytes)` : ""}`;
}

/** Seconds for people: "0.42 s", "12.3 s", "2 min 5 s". */
export function seconds(s: number): string {
  if (s < 1) return `${s.toFixed(2)} s`;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s - m * 60)} s`;
}
