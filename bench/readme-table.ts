// The README's "Measured" table as `npm run bench -- readme` prints it (bench/readme.ts): its rows
// from the figures, the Markdown as Prettier lays it out, the date and the machine under it, between
// two markers, so that the README's block is the command's output and test/unit/bench-readme.test.ts
// can check its shape. Pure: no benchmark is loaded from here.
import { readFileSync } from "node:fs";
import { totalmem } from "node:os";
import { markdownTable } from "./stats.js";

export { markdownTable };

/** A figure as the table shows it: the median, with its spread when measured over rounds. */
export interface Figure {
  median: number;
  min?: number;
  max?: number;
  /** Rounds; one round has no spread. */
  n?: number;
}

export interface ReadmeFigures {
  /** The warm pool on a real Kubernetes node: `npm run bench -- k8s` (part pool), recorded. */
  pool: { date: string; pool: number; perTask: number; local: number };
  /** jobs/s of the resize benchmark; the ratios round by round. */
  resize: { stack: Figure; bare: Figure; imgproxy: Figure; stackOverBare: Figure; stackOverImgproxy: Figure };
  /** images/s of the AVIF benchmark; the ratio round by round; size at imgproxy's SSIM / its size. */
  avif: { stack: Figure; imgproxy: Figure; stackOverImgproxy: Figure; sizeAtEqualSsim: number };
  /** Peak RSS in MiB, the runner through the stack; the ratio run by run. */
  rss: { runner: Figure; imgproxy: Figure; runnerOverImgproxy: Figure; floor: Figure };
}

/**
 * The last figures of `npm run bench -- k8s` (part pool; it needs a real node, so the readme
 * command does not run it): docs/performance.md, "The warm runner pool".
 */
export const POOL_RECORDED: ReadmeFigures["pool"] = {
  date: "2026-11-26",
  pool: 50.7,
  perTask: 1.09,
  local: 59.8,
};

export const HEADER = ["what", "media-service", "beside it"] as const;

/** The first cell of each row, in order. */
export const ROW_NAMES = [
  "small resizes on a real Kubernetes node, through the warm pool",
  "3000×2000 JPEG → 800×600, whole local stack",
  "the same to AVIF",
  "peak RSS, 50-megapixel JPEG → 800 px, a runner through the stack",
] as const;

/** Opens the generated block: `<!-- bench readme 2026-11-28 -->`. */
export const BEGIN = (date: string) => `<!-- bench readme ${date} -->`;
export const END = "<!-- bench readme end -->";
const BEGIN_PATTERN = /^<!-- bench readme (\d{4}-\d{2}-\d{2}) -->$/m;

const n = (x: number, digits: number) => x.toFixed(digits);
/** "0.91× [0.88–0.93]", or "0.91×" without a spread (not recorded, or one round). */
const times = (f: Figure) =>
  f.min !== undefined && f.max !== undefined && f.n !== 1
    ? `${n(f.median, 2)}× [${n(f.min, 2)}–${n(f.max, 2)}]`
    : `${n(f.median, 2)}×`;

export function readmeRows(f: ReadmeFigures): string[][] {
  const { pool, resize, avif, rss } = f;
  return [
    [
      `${ROW_NAMES[0]} (\`bench k8s\`, ${pool.date})`,
      `${n(pool.pool, 1)} jobs/s`,
      `one Job per task ${n(pool.perTask, 2)} (${Math.round(pool.pool / pool.perTask)}×); ` +
        `local ${n(pool.local, 1)} (${n(pool.pool / pool.local, 2)}×)`,
    ],
    [
      ROW_NAMES[1],
      `${n(resize.stack.median, 1)} images/s`,
      `bare S3 → sharp → S3 loop ${n(resize.bare.median, 1)} (${times(resize.stackOverBare)}); ` +
        `imgproxy ${n(resize.imgproxy.median, 1)} (${times(resize.stackOverImgproxy)})`,
    ],
    [
      ROW_NAMES[2],
      `${n(avif.stack.median, 2)} images/s`,
      `imgproxy ${n(avif.imgproxy.median, 2)} (${times(avif.stackOverImgproxy)}); ` +
        `at equal SSIM ${n(avif.sizeAtEqualSsim, 2)}× its size`,
    ],
    [
      ROW_NAMES[3],
      `${n(rss.runner.median, 1)} MiB`,
      `imgproxy ${n(rss.imgproxy.median, 1)} (${times(rss.runnerOverImgproxy)}); ` +
        `Node + sharp idle ${n(rss.floor.median, 1)}`,
    ],
  ];
}

export interface Machine {
  cores: number;
  cpu: string;
  /** GiB, or undefined when not recorded. */
  memoryGiB?: number;
}

/** This machine: logical cores and the CPU's model from /proc/cpuinfo, total memory. */
export function thisMachine(): Machine {
  let cpuinfo = "";
  try {
    cpuinfo = readFileSync("/proc/cpuinfo", "utf8");
  } catch {
    // not Linux: the model stays unknown
  }
  const models = [...cpuinfo.matchAll(/^model name\s*:\s*(.+)$/gm)].map((m) => m[1]!.trim());
  const cores = [...cpuinfo.matchAll(/^processor\s*:/gm)].length;
  return {
    cores: cores || models.length,
    cpu: [...new Set(models)].join(", ") || "CPU model unknown",
    memoryGiB: totalmem() / 1024 ** 3,
  };
}

/** The line under the table: when, on what, and how to read it. */
export function measuredLine(date: string, machine: Machine, rounds: string): string {
  const memory =
    machine.memoryGiB === undefined ? "memory not recorded" : `${n(machine.memoryGiB, 1)} GiB memory`;
  return (
    `Measured ${date} (UTC) on ${machine.cores} cores (${machine.cpu}), ${memory}, by ` +
    `\`npm run bench -- readme\`: ${rounds}. The Kubernetes row is the last ` +
    `\`npm run bench -- k8s\` (${POOL_RECORDED.date}); it needs a real node and is not rerun.`
  );
}

/** The whole block the command prints and `--write` puts into README.md. */
export function readmeBlock(f: ReadmeFigures, date: string, machine: Machine, rounds: string): string {
  return [
    BEGIN(date),
    "",
    markdownTable(HEADER, readmeRows(f)),
    "",
    measuredLine(date, machine, rounds),
    "",
    END,
  ].join("\n");
}

/** The generated block of a README's text, its date, table rows and the line under it. */
export function findBlock(
  readme: string,
):
  | { date: string; text: string; header: string[]; rows: string[][]; table: string; after: string }
  | undefined {
  const begin = BEGIN_PATTERN.exec(readme);
  if (!begin) return undefined;
  const end = readme.indexOf(END, begin.index);
  if (end < 0) return undefined;
  const text = readme.slice(begin.index, end + END.length);
  const lines = text.split("\n");
  const tableLines = lines.filter((l) => l.startsWith("|"));
  const cells = (l: string) =>
    l
      .slice(1, -1)
      .split(" | ")
      .map((c) => c.trim());
  const after = lines.filter((l) => l.trim() !== "" && !l.startsWith("|") && !l.startsWith("<!--"));
  return {
    date: begin[1]!,
    text,
    header: cells(tableLines[0] ?? "|  |"),
    rows: tableLines.slice(2).map(cells),
    table: tableLines.join("\n"),
    after: after.join("\n"),
  };
}

/** readme with its generated block replaced by block (it must have one). */
export function replaceBlock(readme: string, block: string): string {
  const found = findBlock(readme);
  if (!found) throw new Error(`README.md has no block between "${BEGIN("YYYY-MM-DD")}" and "${END}"`);
  return readme.replace(found.text, block);
}
