// A pipeline's page in the dashboard shows its steps as a graph, in a real browser (Debian's
// headless Chromium through playwright-core) against the API serving the built dashboard, Redis, the
// embedded S3 store and real runners: a chain and a fan-out that complete (every node's state,
// output link, image preview and download through the API, in both themes, no accessibility
// violation), a keep_partial failure (the failed
// step's error, the step that did not run and why), and the graph following a run live from the
// job's stream. Every wait is bounded; nothing asserts how long anything took. Screenshots go to
// .artifacts/screenshots/ (docs/images/pipeline-graph.png is a copy of one).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { readFile } from "node:fs/promises";
import type { Browser, Locator } from "playwright-core";
import { startTestStack, type TestStack } from "../support/api.js";
import {
  accessibilityViolations,
  assertClean,
  launchBrowser,
  loadedImageWidth,
  SCREENSHOTS,
  screenshot,
  signedInAt,
  waitForText,
} from "../support/browser.js";
import { finished, objectBytes, putObject, submit } from "../support/jobs.js";
import { makeImage } from "../support/media.js";

declare const document: { querySelectorAll(selector: string): { length: number } };

const KEY = "pipeline-graph-key-0123456789";

let stack: TestStack;
let browser: Browser;

const at = (path: string) => `${stack.baseUrl}/ui${path}`;

/** A chain (small → tiny), a fan-out (small → tiny and optimized; the source → small and colours). */
const STEPS = {
  small: { type: "image_resize", parameters: { width: 160, height: 120 } },
  tiny: { type: "image_resize", input: "small", parameters: { width: 40, height: 30 } },
  optimized: { type: "image_optimize", input: "small", parameters: { format: "webp" } },
  colours: { type: "image_colors" },
};

const pipeline = (prefix: string, extra: Record<string, unknown> = {}) => ({
  source_bucket: stack.bucket,
  source_key: "in/photo.jpg",
  dest_bucket: stack.bucket,
  dest_prefix: prefix,
  steps: STEPS,
  ...extra,
});

before(async () => {
  stack = await startTestStack({ executor: true, apiKeys: [KEY] });
  const photo = await makeImage({ width: 320, height: 240, format: "jpeg", photo: true });
  await putObject(stack, "in/photo.jpg", photo, "image/jpeg");
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await stack?.close();
  console.log(`pipeline-graph screenshots: ${SCREENSHOTS}`);
});

/** A page signed in with the key, at `path`. */
const signedIn = (path: string, options: { colorScheme?: "light" | "dark"; bypassCsp?: boolean } = {}) =>
  signedInAt(browser, at(path), KEY, options);

const nodeOf = (graph: Locator, step: string) =>
  graph.locator(`[data-testid="pipeline-node"][data-step="${step}"]`);

/** Waits until the step's node says `state` (its data-state and its words). */
async function stateIs(graph: Locator, step: string, state: string, words: RegExp): Promise<Locator> {
  const node = graph.locator(`[data-testid="pipeline-node"][data-step="${step}"][data-state="${state}"]`);
  await node.waitFor({ timeout: 30_000 });
  assert.match((await node.getByTestId("pipeline-node-state").innerText()).trim(), words);
  return node;
}

/** The names of the steps in each column after the source's, as the page lays them out. */
async function columns(graph: Locator): Promise<string[][]> {
  const waves = graph.locator(".pipeline-wave").filter({ has: graph.page().getByTestId("pipeline-node") });
  const out: string[][] = [];
  for (const wave of await waves.all()) {
    out.push(
      await wave
        .getByTestId("pipeline-node")
        .evaluateAll((nodes) =>
          nodes.map((n) => (n as unknown as { dataset: { step: string } }).dataset.step),
        ),
    );
  }
  return out;
}

describe("a pipeline's page: its steps as a graph", () => {
  test("a chain and a fan-out that complete: each step's node in its wave, completed, with its output's link; edges from each input; both themes", async () => {
    const id = await submit(stack, "pipeline", pipeline("out/graph"));
    const job = await finished(stack, id, 120_000);
    assert.equal(job.status, "completed", job.error);

    for (const colorScheme of ["light", "dark"] as const) {
      const watched = await signedIn(`/jobs/${id}`, { colorScheme, bypassCsp: colorScheme === "dark" });
      const { page } = watched;
      const graph = page.getByTestId("pipeline-graph");
      await graph.waitFor();
      for (const step of Object.keys(STEPS)) await stateIs(graph, step, "completed", /completed/);
      assert.deepEqual(await columns(graph), [
        ["small", "colours"],
        ["tiny", "optimized"],
      ]);
      await waitForText(page.getByTestId("pipeline-summary"), /^4 of 4 steps completed, in 2 waves/);
      assert.match(await graph.getByTestId("pipeline-source").innerText(), /in\/photo\.jpg/);

      for (const [step, file] of [
        ["small", "out/graph/small.jpg"],
        ["tiny", "out/graph/tiny.jpg"],
        ["optimized", "out/graph/optimized.webp"],
      ] as const) {
        const link = nodeOf(graph, step).getByTestId("pipeline-node-output");
        assert.ok((await link.getAttribute("href"))!.endsWith(file), `${step}'s output link`);
      }
      assert.match(await nodeOf(graph, "tiny").innerText(), /40 × 30/);
      assert.equal(await nodeOf(graph, "colours").getByTestId("pipeline-node-output").count(), 0, "no file");
      assert.match(await nodeOf(graph, "tiny").innerText(), /reads\s+small/);
      assert.match(await nodeOf(graph, "colours").innerText(), /reads the source/);

      // Each image step's preview, and its file saved, through the API.
      for (const [step, width] of [
        ["small", 160],
        ["tiny", 40],
        ["optimized", 160],
      ] as const) {
        const preview = nodeOf(graph, step).getByTestId("pipeline-node-preview");
        assert.equal(await loadedImageWidth(preview), width, `${step}'s preview`);
      }
      assert.equal(await nodeOf(graph, "colours").getByTestId("pipeline-node-preview").count(), 0);
      if (colorScheme === "light") {
        const download = page.waitForEvent("download");
        await nodeOf(graph, "tiny").getByRole("button", { name: "Download the output of step tiny" }).click();
        const saved = await download;
        assert.equal(saved.suggestedFilename(), "tiny.jpg");
        assert.deepEqual(await readFile(await saved.path()), await objectBytes(stack, "out/graph/tiny.jpg"));
      }

      // An edge into each step, from the step it reads (or the source).
      const edges = graph.locator(".pipeline-edge");
      await page.waitForFunction(() => document.querySelectorAll(".pipeline-edge").length === 4);
      const drawn = await edges.evaluateAll((paths) =>
        paths
          .map((p) => p as unknown as { getAttribute(name: string): string | null })
          .map((p) => `${p.getAttribute("data-from")}→${p.getAttribute("data-to")}`)
          .sort(),
      );
      assert.deepEqual(drawn, [":source→colours", ":source→small", "small→optimized", "small→tiny"]);

      if (colorScheme === "dark") assert.deepEqual(await accessibilityViolations(page), []);
      await screenshot(page, `pipeline-graph-${colorScheme}`);
      assertClean(watched);
      await page.context().close();
    }
  });

  test("keep_partial: the failed step's error, the step that did not run and why, the completed steps' outputs", async () => {
    const id = await submit(stack, "pipeline", {
      ...pipeline("out/partial"),
      keep_partial: true,
      steps: {
        small: STEPS.small,
        marked: {
          type: "image_watermark",
          input: "small",
          parameters: { watermark_image: "in/no-such-mark.png" },
        },
        after: { type: "image_optimize", input: "marked" },
        colours: STEPS.colours,
      },
    });
    const job = await finished(stack, id, 120_000);
    assert.equal(job.status, "failed");

    const watched = await signedIn(`/jobs/${id}`);
    const { page } = watched;
    const graph = page.getByTestId("pipeline-graph");
    const marked = await stateIs(graph, "marked", "failed", /failed/);
    assert.match(
      await marked.getByTestId("pipeline-node-error").innerText(),
      /in\/no-such-mark\.png not found/,
    );
    const notRun = await stateIs(graph, "after", "not-run", /not run/);
    assert.equal(
      (await notRun.getByTestId("pipeline-node-reason").innerText()).trim(),
      "its input step marked failed",
    );
    const small = await stateIs(graph, "small", "completed", /completed/);
    assert.ok(
      (await small.getByTestId("pipeline-node-output").getAttribute("href"))!.endsWith(
        "out/partial/small.jpg",
      ),
    );
    await stateIs(graph, "colours", "completed", /completed/);
    await waitForText(page.getByTestId("pipeline-summary"), /^2 of 4 steps completed, in 3 waves/);
    await screenshot(page, "pipeline-graph-partial");
    assertClean(watched);
    await page.context().close();
  });

  test("live: the nodes follow the job's stream (waiting, running with its percent, completed, failed)", async () => {
    // The executor stops: the test takes the runner's part through the store, so that each state
    // is seen on the open page before the next.
    await stack.executor!.stop(0);
    const id = await submit(stack, "pipeline", pipeline("out/live"));
    const watched = await signedIn(`/jobs/${id}`);
    const { page } = watched;
    const graph = page.getByTestId("pipeline-graph");
    for (const step of Object.keys(STEPS)) await stateIs(graph, step, "waiting", /waiting/);
    await page.locator('[data-live="live"]').waitFor();

    const { store } = stack.services;
    const report = async (percent: number, steps: Record<string, number>) =>
      assert.equal(await store.progress(id, percent, "", undefined, steps), true);
    assert.equal(await store.claim("pipeline", 60_000, "pipeline-graph-test"), id);
    assert.equal(await store.start(id, 60_000), true);
    await report(10, { small: 40, tiny: 0, optimized: 0, colours: 100 });
    const small = await stateIs(graph, "small", "running", /running/);
    await waitForText(small, /40 %/);
    await stateIs(graph, "colours", "completed", /completed/);
    await stateIs(graph, "tiny", "waiting", /waiting/);

    await report(60, { small: 100, tiny: 50, optimized: 0, colours: 100 });
    await stateIs(graph, "small", "completed", /completed/);
    await waitForText(await stateIs(graph, "tiny", "running", /running/), /50 %/);
    await stateIs(graph, "optimized", "running", /running/);

    assert.equal(await store.fail(id, "step tiny (image_resize): output exceeds the limit"), true);
    const tiny = await stateIs(graph, "tiny", "failed", /failed/);
    assert.equal(
      (await tiny.getByTestId("pipeline-node-error").innerText()).trim(),
      "output exceeds the limit",
    );
    await stateIs(graph, "optimized", "not-run", /not run/);
    await screenshot(page, "pipeline-graph-live-failed");
    assertClean(watched);
    await page.context().close();
  });
});
