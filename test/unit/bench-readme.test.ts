import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import {
  BEGIN,
  END,
  findBlock,
  HEADER,
  markdownTable,
  POOL_RECORDED,
  readmeBlock,
  replaceBlock,
  ROW_NAMES,
  type ReadmeFigures,
} from "../../bench/readme-table.js";
import { summarize } from "../../bench/stats.js";

const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");

const figures: ReadmeFigures = {
  pool: POOL_RECORDED,
  resize: {
    stack: summarize([33.1, 33.7, 34.0]),
    bare: summarize([36.5, 37.0, 38.1]),
    imgproxy: summarize([38.2, 39.1, 39.5]),
    stackOverBare: summarize([0.87, 0.91, 0.93]),
    stackOverImgproxy: summarize([0.85, 0.86, 0.88]),
  },
  avif: {
    stack: summarize([8.4, 8.5, 8.6]),
    imgproxy: summarize([10.2, 10.37, 10.5]),
    stackOverImgproxy: summarize([0.81, 0.82, 0.83]),
    sizeAtEqualSsim: 1.14,
  },
  rss: {
    runner: summarize([106.2, 106.3, 106.9]),
    imgproxy: summarize([118.0, 118.6, 119.2]),
    runnerOverImgproxy: summarize([0.9, 0.9, 0.9]),
    floor: summarize([64.0]),
  },
};
const machine = { cores: 2, cpu: "Intel(R) Xeon(R) Processor", memoryGiB: 7.75 };

describe("the README's Measured table (npm run bench -- readme)", () => {
  test("the README carries the command's block: marker, table laid out as the command lays it, date and machine", () => {
    const block = findBlock(readme);
    assert.ok(block, `README.md has no block opened by ${BEGIN("YYYY-MM-DD")} and closed by ${END}`);
    assert.match(block.date, /^\d{4}-\d{2}-\d{2}$/);
    assert.deepEqual(block.header, [...HEADER]);
    assert.equal(block.rows.length, ROW_NAMES.length);
    block.rows.forEach((row, i) => {
      assert.equal(row.length, HEADER.length, `row ${i + 1} has ${row.length} cells`);
      assert.ok(row[0]!.startsWith(ROW_NAMES[i]!), `row ${i + 1} is "${row[0]}", not "${ROW_NAMES[i]}"`);
    });
    // The Kubernetes row says it was not measured by this command, and when it was.
    assert.match(block.rows[0]![0]!, /\(`bench k8s`, \d{4}-\d{2}-\d{2}\)$/);
    assert.equal(block.table, markdownTable(block.header, block.rows));
    assert.match(block.after, new RegExp(`^Measured ${block.date} \\(UTC\\) on \\d+ cores \\(.+\\), `));
    // Only "Measured" holds the block.
    const section = readme.slice(
      readme.indexOf("## Measured"),
      readme.indexOf("\n## ", readme.indexOf("## Measured") + 1),
    );
    assert.ok(section.includes(block.text), "the block is not in the Measured section");
  });

  test("the command's block reads back as it was written, spreads and all", () => {
    const text = readmeBlock(figures, "2026-11-28", machine, "medians of 7 rounds");
    const block = findBlock(`# title\n\n${text}\n\n## next\n`);
    assert.ok(block);
    assert.equal(block.date, "2026-11-28");
    assert.equal(block.text, text);
    assert.deepEqual(block.rows[1], [
      ROW_NAMES[1],
      "33.7 images/s",
      "bare S3 → sharp → S3 loop 37.0 (0.91× [0.87–0.93]); imgproxy 39.1 (0.86× [0.85–0.88])",
    ]);
    assert.deepEqual(block.rows[2], [
      ROW_NAMES[2],
      "8.50 images/s",
      "imgproxy 10.37 (0.82× [0.81–0.83]); at equal SSIM 1.14× its size",
    ]);
    assert.deepEqual(block.rows[3], [
      ROW_NAMES[3],
      "106.3 MiB",
      "imgproxy 118.6 (0.90× [0.90–0.90]); Node + sharp idle 64.0",
    ]);
    assert.match(block.rows[0]![2]!, /^one Job per task 1\.09 \(47×\); local 59\.8 \(0\.85×\)$/);
    assert.equal(
      block.after,
      "Measured 2026-11-28 (UTC) on 2 cores (Intel(R) Xeon(R) Processor), 7.8 GiB memory, by " +
        "`npm run bench -- readme`: medians of 7 rounds. The Kubernetes row is the last " +
        `\`npm run bench -- k8s\` (${POOL_RECORDED.date}); it needs a real node and is not rerun.`,
    );
  });

  test("a ratio of one round has no spread", () => {
    const one = { ...figures, rss: { ...figures.rss, runnerOverImgproxy: summarize([0.9]) } };
    const block = findBlock(readmeBlock(one, "2026-11-28", machine, "one round"));
    assert.equal(block?.rows[3]?.[2], "imgproxy 118.6 (0.90×); Node + sharp idle 64.0");
  });

  test("a Markdown table as Prettier lays it out", () => {
    assert.equal(
      markdownTable(
        ["a", "bb"],
        [
          ["1", "×→"],
          ["long cell", ""],
        ],
      ),
      ["| a         | bb  |", "| --------- | --- |", "| 1         | ×→  |", "| long cell |     |"].join("\n"),
    );
  });

  test("--write replaces the block and nothing else", () => {
    const text = readmeBlock(figures, "2026-11-28", machine, "medians of 7 rounds");
    const replaced = replaceBlock(readme, text);
    assert.equal(findBlock(replaced)?.text, text);
    const before = readme.slice(0, readme.indexOf("<!-- bench readme "));
    assert.ok(replaced.startsWith(before));
    assert.ok(replaced.endsWith(readme.slice(readme.indexOf(END) + END.length)));
    assert.throws(() => replaceBlock("# no block\n", text), /no block/);
  });
});
