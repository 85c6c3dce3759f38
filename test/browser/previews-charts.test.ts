// The dashboard with only the API's port reachable (behind an ingress, or a port-forward to the API
// alone): every request the browser makes to the object store's port is aborted, and the job pages'
// previews, downloads and audio still load, through the API with the key. And the overview's charts
// over 1, 6 or 24 hours, with the failure rate. Real parts throughout: the API serving the built
// dashboard, Redis, the embedded store, real runners, Debian's Chromium. Screenshots go to
// .artifacts/screenshots/ (docs/images/ has copies of two of them).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import type { Browser, BrowserContext } from "playwright-core";
import { startTestStack, type TestStack } from "../support/api.js";
import { makeAudio, makeVideo, removeMediaDirs } from "../support/av.js";
import {
  accessibilityViolations,
  assertClean,
  launchBrowser,
  loadedImageWidth,
  openPage,
  SCREENSHOTS,
  screenshot,
  type WatchedPage,
} from "../support/browser.js";
import { finished, objectBytes, putObject, submit } from "../support/jobs.js";
import { makeImage } from "../support/media.js";

declare const document: {
  querySelector(selector: string): { readyState?: number; duration?: number } | null;
};

const KEY = "previews-key-0123456789";

let stack: TestStack;
let browser: Browser;
/** The photo a phone takes: 6000 × 4000 (24 MP). */
let photo: Buffer;
const jobs: Record<"resize" | "thumbnail" | "audio" | "broken", string> = {
  resize: "",
  thumbnail: "",
  audio: "",
  broken: "",
};

const put = (key: string, body: Buffer, contentType: string) => putObject(stack, key, body, contentType);

const object = (key: string) => objectBytes(stack, key);

const at = (path: string) => `${stack.baseUrl}/ui${path}`;

/**
 * A browser context in which every request to the object store's port fails, as it does for a
 * browser that reaches the API alone; `blocked` lists the URLs the page asked the store for.
 */
async function apiOnlyContext(options: { bypassCsp?: boolean } = {}): Promise<{
  context: BrowserContext;
  blocked: string[];
}> {
  const storePort = new URL(stack.s3.url).port;
  const context = await browser.newContext({
    viewport: { width: 1280, height: 1100 },
    colorScheme: "light",
    reducedMotion: "reduce",
    acceptDownloads: true,
    ...(options.bypassCsp ? { bypassCSP: true } : {}),
  });
  const blocked: string[] = [];
  await context.route(
    (url) => url.port === storePort,
    async (route) => {
      blocked.push(route.request().url());
      await route.abort("connectionrefused");
    },
  );
  return { context, blocked };
}

/** A page of such a context, signed in with the key (typed on the login view). */
async function signedIn(options: { bypassCsp?: boolean } = {}): Promise<WatchedPage & { blocked: string[] }> {
  const { context, blocked } = await apiOnlyContext(options);
  const watched = await openPage(browser, { context });
  const { page } = watched;
  await page.goto(at("/"));
  await page.getByLabel("API key").fill(KEY);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Main" }).waitFor();
  return { ...watched, blocked };
}

before(async () => {
  stack = await startTestStack({
    executor: true,
    apiKeys: [KEY],
    config: { executor: { local_concurrency: 2 } },
  });
  const [big, clip, tone] = await Promise.all([
    makeImage({ width: 6000, height: 4000, photo: true, format: "jpeg" }),
    makeVideo({ durationSeconds: 3, width: 640, height: 360 }),
    makeAudio({ durationSeconds: 6, frequency: 440 }),
  ]);
  photo = big;
  await Promise.all([
    put("in/phone photo.jpg", photo, "image/jpeg"),
    put("in/clip.mp4", await readFile(clip), "video/mp4"),
    put("in/tone.wav", await readFile(tone), "audio/wav"),
  ]);
  const where = (source: string, dest: string) => ({
    source_bucket: stack.bucket,
    source_key: source,
    dest_bucket: stack.bucket,
    dest_key: dest,
  });
  jobs.resize = await submit(stack, "image/resize", {
    ...where("in/phone photo.jpg", "out/phone photo 1200.jpg"),
    width: 1200,
    height: 800,
  });
  jobs.thumbnail = await submit(stack, "video/thumbnail", {
    ...where("in/clip.mp4", "out/clip.jpg"),
    timestamp: "00:00:01",
    width: 480,
  });
  jobs.audio = await submit(stack, "audio/convert", {
    ...where("in/tone.wav", "out/tone.mp3"),
    format: "mp3",
  });
  jobs.broken = await submit(stack, "image/resize", {
    ...where("in/missing.jpg", "out/missing.jpg"),
    width: 10,
    height: 10,
  });
  for (const [name, id] of Object.entries(jobs)) {
    const job = await finished(stack, id, 120_000);
    assert.equal(job.status, name === "broken" ? "failed" : "completed", `${name}: ${job.error}`);
  }
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await stack?.close();
  removeMediaDirs();
  console.log(`screenshots: ${SCREENSHOTS}`);
});

describe("the dashboard with the object store out of the browser's reach", () => {
  test("a 24 MP photo's Before and After load as previews under 100 KB, and the output downloads whole", async () => {
    const watched = await signedIn();
    const { page, blocked } = watched;
    const sourcePreview = page.waitForResponse((r) => r.url().includes("/preview?of=source"));
    await page.goto(at(`/jobs/${jobs.resize}`));
    const answer = await sourcePreview;
    assert.equal(answer.status(), 200);
    const size = (await answer.body()).length;
    assert.ok(size < 100_000, `the source's preview is ${size} bytes (the source ${photo.length})`);
    assert.equal(await loadedImageWidth(page.getByTestId("source-image")), 640);
    assert.equal(await loadedImageWidth(page.getByTestId("output-image")), 640);

    // The store's presigned link is offered besides, and not followed by the page.
    const storeLink = page.getByTestId("store-link");
    assert.equal(new URL((await storeLink.getAttribute("href"))!).origin, new URL(stack.s3.url).origin);
    await screenshot(page, "job-preview-api-only", false);

    const download = page.waitForEvent("download");
    await page.getByRole("button", { name: "Download the output" }).click();
    const saved = await download;
    assert.equal(saved.suggestedFilename(), "phone photo 1200.jpg");
    const path = await saved.path();
    assert.deepEqual(await readFile(path), await object("out/phone photo 1200.jpg"));
    assert.deepEqual(blocked, [], "the page asked the object store for nothing");
    assertClean(watched);
    await page.context().close();
  });

  test("a video's frame and a converted audio load through the API; the source downloads too", async () => {
    const watched = await signedIn();
    const { page, blocked } = watched;
    await page.goto(at(`/jobs/${jobs.thumbnail}`));
    assert.equal(await loadedImageWidth(page.getByTestId("output-image")), 480);

    await page.goto(at(`/jobs/${jobs.audio}`));
    await page.waitForFunction(
      () => {
        const el = document.querySelector("audio");
        return el !== null && (el.readyState ?? 0) >= 1 && (el.duration ?? 0) > 5;
      },
      undefined,
      { timeout: 30_000 },
    );
    assert.match((await page.getByTestId("output-audio").getAttribute("src")) ?? "", /^blob:/);
    const download = page.waitForEvent("download");
    await page.getByRole("button", { name: "Download the source" }).click();
    const saved = await download;
    assert.equal(saved.suggestedFilename(), "tone.wav");
    assert.deepEqual(await readFile(await saved.path()), await object("in/tone.wav"));
    assert.deepEqual(blocked, [], "the page asked the object store for nothing");
    assertClean(watched);
    await page.context().close();
  });

  test("a failed job's page offers the source; the jobs table's thumbnails are previews", async () => {
    const watched = await signedIn();
    const { page, blocked } = watched;
    await page.goto(at(`/jobs/${jobs.broken}`));
    await page.getByTestId("job-error").waitFor();
    await page.goto(at("/jobs?type=image_resize&status=completed"));
    const thumb = page.locator(`tr[data-job-id="${jobs.resize}"] img.thumb`);
    assert.equal(await loadedImageWidth(thumb), 640);
    assert.match((await thumb.getAttribute("src")) ?? "", /^blob:/);
    assert.deepEqual(blocked, []);
    assertClean(watched);
    await page.context().close();
  });
});

describe("the overview's charts", () => {
  test("1 h, 6 h and 24 h: the range is in the address, a day is 73 points at most, with the failure rate", async () => {
    const watched = await signedIn();
    const { page } = watched;
    const history: string[] = [];
    page.on("request", (r) => {
      if (r.url().includes("/api/v1/stats/history")) history.push(new URL(r.url()).search);
    });
    await page.getByRole("heading", { name: "Last hour" }).waitFor();
    assert.equal(await page.getByRole("button", { name: "1 h" }).getAttribute("aria-pressed"), "true");
    await page.getByRole("img", { name: /Jobs finished per minute/ }).waitFor();
    await page.getByRole("img", { name: /Failure rate/ }).waitFor();
    // Three jobs completed and one failed: a quarter of them (if none ended in another minute).
    const rate = page.getByRole("img", { name: /Failure rate/ });
    assert.match(
      (await rate.getAttribute("aria-label")) ?? "",
      /25 % of the jobs that ended in the last hour failed \(cancelled ones left out\)/,
    );
    // Drawn: a line through neighbouring minutes, or a dot for a minute alone.
    await page.locator(".dot.series-failure-rate, path.line.series-failure-rate[d*='L']").first().waitFor();

    await page.getByRole("button", { name: "24 h" }).click();
    await page.waitForURL((url) => url.searchParams.get("range") === "24h");
    await page.getByRole("heading", { name: "Last 24 hours" }).waitFor();
    await page.getByRole("img", { name: /Jobs finished per 20 minutes/ }).waitFor();
    assert.equal(await page.getByRole("button", { name: "24 h" }).getAttribute("aria-pressed"), "true");
    assert.ok(history.includes("?minutes=1440&step=20"), history.join(", "));
    const rows = await page
      .locator(".chart")
      .filter({ hasText: "Jobs finished" })
      .locator(".chart-data tbody tr")
      .count();
    assert.ok(rows >= 72 && rows <= 73, `${rows} points`);
    await page.locator(".chart .bar.series-completed").first().waitFor();
    await screenshot(page, "overview-24h", false);

    await page.getByRole("button", { name: "6 h" }).click();
    await page.getByRole("heading", { name: "Last 6 hours" }).waitFor();
    await page.getByRole("img", { name: /Jobs finished per 5 minutes/ }).waitFor();
    assert.ok(history.includes("?minutes=360&step=5"), history.join(", "));

    // The address keeps the range: a reload shows the same.
    await page.reload();
    await page.getByRole("heading", { name: "Last 6 hours" }).waitFor();
    assertClean(watched);
    await page.context().close();
  });

  test("accessibility: axe-core finds no WCAG 2.1 A or AA violation on the charts' and a job's page", async () => {
    const watched = await signedIn({ bypassCsp: true });
    const { page } = watched;
    for (const path of ["/?range=24h", `/jobs/${jobs.resize}`]) {
      await page.goto(at(path));
      await page.locator("main h1").waitFor();
      await page.waitForFunction(() => document.querySelector(".loading") === null);
      if (path.startsWith("/jobs")) await loadedImageWidth(page.getByTestId("output-image"));
      assert.deepEqual(await accessibilityViolations(page), [], path);
    }
    await page.context().close();
  });
});
