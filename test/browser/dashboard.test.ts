// The dashboard in a real browser (Debian's headless Chromium through playwright-core) against the
// whole local stack: the API serving the built dashboard (npm run build:ui), Redis, the embedded S3
// store, real runners (one at a time, so a job can be held pending behind another), the webhook
// notifier and a local OpenAI-compatible provider for the AI jobs. Every wait is bounded; nothing
// asserts how long anything took. Each test leaves screenshots in .artifacts/screenshots/.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import type { Browser } from "playwright-core";
import { startTestStack, type TestStack } from "../support/api.js";
import { TestAiProvider } from "../support/ai-provider.js";
import { makeAudio, makeVideo, removeMediaDirs } from "../support/av.js";
import {
  accessibilityViolations,
  assertClean,
  launchBrowser,
  loadedImageWidth,
  openPage,
  SCREENSHOTS,
  screenshot,
  waitForText,
  type WatchedPage,
} from "../support/browser.js";
import { finished, putObject, submit } from "../support/jobs.js";
import { makeImage } from "../support/media.js";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.js";

// The callbacks given to page.evaluate and waitForFunction run in the page, where these are the
// browser's own; declared here, for this file only, with what the callbacks use.
interface PageElement {
  id: string;
  textContent: string | null;
  getAttribute(name: string): string | null;
  labels?: ArrayLike<unknown>;
  readyState?: number;
  duration?: number;
}
declare const window: { innerWidth: number; __sameDocument?: boolean };
declare const document: {
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): ArrayLike<PageElement>;
  activeElement: PageElement | null;
  documentElement: { scrollWidth: number };
};
declare const sessionStorage: {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
};
declare function getComputedStyle(element: unknown): { outlineStyle: string };

const KEY = "dashboard-key-0123456789";
const AI_KEY = "sk-dashboard-test-0123456789";

let stack: TestStack;
let browser: Browser;
let provider: TestAiProvider;
let receiver: WebhookReceiver;

const put = (key: string, body: Buffer, contentType?: string) => putObject(stack, key, body, contentType);

const at = (path: string) => `${stack.baseUrl}/ui${path}`;

/** A page signed in with the key (typed on the login view, as a person would). */
async function signedIn(options: { width?: number; height?: number } = {}): Promise<WatchedPage> {
  const watched = await openPage(browser, options);
  const { page } = watched;
  await page.goto(at("/"));
  await page.getByLabel("API key").fill(KEY);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Main" }).waitFor();
  return watched;
}

/**
 * A conversion long enough to be caught running: 2400 s of 8 kHz mono audio to AAC (about 15 s of
 * work), or 960 s of it (`medium`), which holds the one runner for a few seconds and ends.
 */
async function longConversion(name: string, source = "in/long.wav"): Promise<string> {
  return submit(stack, "audio/convert", {
    source_bucket: stack.bucket,
    source_key: source,
    dest_bucket: stack.bucket,
    dest_key: `out/${name}.aac`,
    format: "aac",
  });
}

/** Waits (bounded) until the store has the job in `status`. */
async function storeStatus(id: string, status: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const job = await stack.services.store.getJob(id);
    if (job?.status === status) return;
    assert.ok(Date.now() < deadline, `job ${id} never became ${status}: ${JSON.stringify(job)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

before(async () => {
  provider = await TestAiProvider.start({ apiKey: AI_KEY, model: "vision-test" });
  receiver = await startWebhookReceiver({ answer: (n) => ({ status: n % 3 === 0 ? 503 : 200 }) });
  stack = await startTestStack({
    executor: true,
    notifier: true,
    apiKeys: [KEY],
    config: {
      executor: { local_concurrency: 1 },
      webhooks: { allow_private: true, retry_initial_delay: "100ms", retry_max_delay: "400ms" },
      ai: {
        base_url: provider.baseUrl,
        api_key: AI_KEY,
        model: "vision-test",
        transcription_model: "whisper-test",
        max_image_side: 512,
      },
    },
  });
  const [photo, mark, clip, tone, medium, long] = await Promise.all([
    makeImage({ width: 1200, height: 800, photo: true, format: "jpeg" }),
    makeImage({ width: 160, height: 60, background: "#ffffff", alpha: 0.6, format: "png" }),
    makeVideo({ durationSeconds: 3, width: 640, height: 360 }),
    makeAudio({ durationSeconds: 6, frequency: 330 }),
    makeAudio({ durationSeconds: 960, sampleRate: 8000, channels: 1 }),
    makeAudio({ durationSeconds: 2400, sampleRate: 8000, channels: 1 }),
  ]);
  await Promise.all([
    put("in/photo.jpg", photo, "image/jpeg"),
    put("in/mark.png", mark, "image/png"),
    put("in/clip.mp4", await readFile(clip), "video/mp4"),
    put("in/tone.wav", await readFile(tone), "audio/wav"),
    put("in/medium.wav", await readFile(medium), "audio/wav"),
    put("in/long.wav", await readFile(long), "audio/wav"),
  ]);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await stack?.close();
  await provider?.close();
  await receiver?.close();
  removeMediaDirs();
  console.log(`dashboard screenshots: ${SCREENSHOTS}`);
});

describe("the dashboard in a browser", () => {
  test("login: a wrong key is refused, the right one signs in and is kept for the tab; a refused key sends back to login", async () => {
    const watched = await openPage(browser);
    const { page } = watched;
    await page.goto(at("/jobs"));
    const key = page.getByLabel("API key");
    await key.waitFor();
    await screenshot(page, "login");
    await key.fill("not-the-key");
    await page.getByRole("button", { name: "Sign in" }).click();
    await waitForText(page.getByRole("alert"), /did not accept this key/);

    await key.fill(KEY);
    await page.getByRole("button", { name: "Sign in" }).click();
    // The page asked for is shown once signed in.
    await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem("media-service.api-key")), KEY);
    // A reload keeps the session: no login.
    await page.reload();
    await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();

    // A key the API no longer accepts: the next call's 401 brings the login view back.
    await page.evaluate(() => sessionStorage.setItem("media-service.api-key", "rotated-away"));
    await page.reload();
    await page.getByLabel("API key").waitFor();
    await waitForText(page.getByRole("status"), /no longer accepted/);
    assertClean(watched);
    await page.context().close();
  });

  test("jobs: a submitted job's row goes from pending to completed without a reload, over SSE, and its preview loads", async () => {
    const blocker = await longConversion("blocker", "in/medium.wav");
    await storeStatus(blocker, "processing");
    const watched = await signedIn();
    const { page } = watched;
    await page.getByRole("link", { name: "Jobs" }).click();
    await page.locator('[data-live="live"]').waitFor();
    // Marks this document: a reload or navigation would lose it.
    await page.evaluate(() => {
      window.__sameDocument = true;
    });
    const listReads: string[] = [];
    page.on("request", (r) => {
      if (/\/api\/v1\/jobs\?/.test(r.url())) listReads.push(r.url());
    });

    // Held pending behind the conversion (one runner), then run when it ends.
    const id = await submit(stack, "image/resize", {
      source_bucket: stack.bucket,
      source_key: "in/photo.jpg",
      dest_bucket: stack.bucket,
      dest_key: "out/photo-small.webp",
      width: 480,
      height: 320,
      format: "webp",
      webhook_url: `${receiver.url}/hooks/resize`,
    });
    const row = page.locator(`tr[data-job-id="${id}"]`);
    await waitForText(row.locator(".badge-text"), /^pending$/);
    await screenshot(page, "jobs-pending");

    // The row follows the job to the end, and the conversion's row too.
    await waitForText(row.locator(".badge-text"), /^completed$/, 60_000);
    assert.equal(await page.evaluate(() => window.__sameDocument), true);
    assert.deepEqual(listReads, [], "the list was not read again: the change came over the event stream");
    await waitForText(page.locator(`tr[data-job-id="${blocker}"] .badge-text`), /^completed$/);

    const width = await loadedImageWidth(row.locator("img.thumb"));
    assert.equal(width, 480);
    await screenshot(page, "jobs");
    assertClean(watched);
    await page.context().close();
  });

  test("job: a running conversion shows its progress and is cancelled with the button", async () => {
    const id = await longConversion("cancel-me");
    const watched = await signedIn();
    const { page } = watched;
    await page.goto(at(`/jobs/${id}`));
    const status = page.getByTestId("job-status");
    await waitForText(status, /processing/);
    const bar = page.getByRole("progressbar", { name: "Job progress" });
    await page.waitForFunction(
      () => Number(document.querySelector('[aria-label="Job progress"]')?.getAttribute("aria-valuenow")) > 0,
      undefined,
      { timeout: 30_000 },
    );
    assert.ok(Number(await bar.getAttribute("aria-valuenow")) > 0);
    // The runner's estimate of the time left, once it can tell.
    await waitForText(page.getByTestId("job-eta"), /about \d+ (s|min|h)( \d+ min)? left|almost done/);
    await screenshot(page, "job-running");

    await page.getByRole("button", { name: "Cancel job" }).click();
    await waitForText(status, /cancelled/);
    await waitForText(page.getByTestId("job-error"), /cancelled by request/);
    await waitForText(page.getByTestId("timeline"), /Cancelled/);
    assert.equal((await stack.services.store.getJob(id))?.error, "cancelled by request");
    await page.getByRole("button", { name: "Retry as a new job" }).waitFor();
    assertClean(watched);
    await page.context().close();
  });

  test("job: a failed job is retried with the button, which opens the new job", async () => {
    const id = await submit(stack, "image/resize", {
      source_bucket: stack.bucket,
      source_key: "in/missing.jpg",
      dest_bucket: stack.bucket,
      dest_key: "out/missing.jpg",
      width: 100,
      height: 100,
    });
    const failedJob = await finished(stack, id);
    assert.equal(failedJob.status, "failed");
    const watched = await signedIn();
    const { page } = watched;
    await page.goto(at(`/jobs/${id}`));
    await waitForText(page.getByTestId("job-status"), /failed/);
    await page.getByTestId("job-error").waitFor();
    await screenshot(page, "job-failed");

    await page.getByRole("button", { name: "Retry as a new job" }).click();
    await page.waitForURL((url) => /\/ui\/jobs\/[^/]+$/.test(url.pathname) && !url.pathname.endsWith(id));
    const retried = decodeURIComponent(new URL(page.url()).pathname.split("/").pop()!);
    assert.notEqual(retried, id);
    assert.equal((await stack.services.store.getJob(retried))?.retry_of, id);
    await waitForText(page.getByTestId("job-parameters"), new RegExp(`Retry of\\s*${id}`));
    assertClean(watched);
    await page.context().close();
  });

  test("templates: the list shows each template's name, type, version and source; a job's page names its template", async () => {
    const stored = await stack.request("/api/v1/templates/ui-thumb", {
      method: "PUT",
      json: { type: "image_resize", parameters: { width: 120, height: 90 }, overridable: ["quality"] },
    });
    assert.equal(stored.status, 201);
    const id = await submit(stack, "image/resize", {
      source_bucket: stack.bucket,
      source_key: "in/photo.jpg",
      dest_bucket: stack.bucket,
      dest_key: "out/ui-thumb.jpg",
      template: "ui-thumb",
    });
    const watched = await signedIn();
    const { page } = watched;
    await page.getByRole("link", { name: "Templates" }).click();
    const row = page.getByTestId("templates-table").locator("tr", { hasText: "ui-thumb" });
    await waitForText(row, /ui-thumb\s*image resize\s*1\s*API\s*quality/i);
    await screenshot(page, "templates");
    await page.goto(at(`/jobs/${id}`));
    await waitForText(page.getByTestId("job-parameters"), /Template\s*ui-thumb, version 1/);
    assertClean(watched);
    await page.context().close();
  });

  test("batches: a batch's progress bar follows its jobs to the end", async () => {
    const watched = await signedIn();
    const { page } = watched;
    await page.getByRole("link", { name: "Batches" }).click();
    await page.locator('[data-live="live"]').waitFor();
    const entry = (n: number) => ({
      type: "image_resize",
      source_bucket: stack.bucket,
      source_key: "in/photo.jpg",
      dest_bucket: stack.bucket,
      dest_key: `out/batch-${n}.jpg`,
      parameters: { width: 200 + n * 40, height: 150 },
    });
    const res = await stack.request("/api/v1/jobs/batch", {
      method: "POST",
      json: {
        batch_id: "catalogue-ui",
        jobs: [
          ...[1, 2, 3, 4].map(entry),
          { type: "image_colors", source_bucket: stack.bucket, source_key: "in/photo.jpg" },
        ],
        options: { fail_fast: false },
      },
    });
    assert.equal(res.status, 201);
    const bar = page.getByRole("progressbar", { name: "Batch catalogue-ui" });
    await bar.waitFor();
    await page.waitForFunction(
      () =>
        document.querySelector('[aria-label="Batch catalogue-ui"]')?.getAttribute("aria-valuenow") === "5",
      undefined,
      { timeout: 60_000 },
    );
    await waitForText(page.locator('[data-batch-id="catalogue-ui"]'), /5 of 5 done/);
    await waitForText(page.locator('[data-batch-id="catalogue-ui"] .badge-text'), /^completed$/);
    await screenshot(page, "batches");

    await page.getByRole("link", { name: "catalogue-ui" }).click();
    await page.getByRole("heading", { level: 1, name: /catalogue-ui/ }).waitFor();
    // The heading comes with the batch; its jobs' rows follow from their own read.
    const rows = page.locator('[data-testid="jobs-table"] tbody tr');
    await rows.nth(4).waitFor();
    assert.equal(await rows.count(), 5);
    await waitForText(page.locator(".segments-text"), /5 of 5/);
    await screenshot(page, "batch");
    assertClean(watched);
    await page.context().close();
  });

  test("job pages show each result for what it is", async () => {
    const jobs = {
      resize: await submit(stack, "image/resize", {
        source_bucket: stack.bucket,
        source_key: "in/photo.jpg",
        dest_bucket: stack.bucket,
        dest_key: "out/resized.jpg",
        width: 600,
        height: 400,
      }),
      optimize: await submit(stack, "image/optimize", {
        source_bucket: stack.bucket,
        source_key: "in/photo.jpg",
        dest_bucket: stack.bucket,
        dest_key: "out/optimized.avif",
        format: "avif",
        quality: 50,
      }),
      watermark: await submit(stack, "image/watermark", {
        source_bucket: stack.bucket,
        source_key: "in/photo.jpg",
        dest_bucket: stack.bucket,
        dest_key: "out/watermarked.jpg",
        watermark_text: "© media-service",
        position: "bottom-right",
      }),
      colors: await submit(stack, "image/colors", {
        source_bucket: stack.bucket,
        source_key: "in/photo.jpg",
        color_count: 6,
      }),
      metadata: await submit(stack, "image/metadata", {
        source_bucket: stack.bucket,
        source_key: "in/photo.jpg",
      }),
      keywords: await submit(stack, "image/ai/keywords", {
        source_bucket: stack.bucket,
        source_key: "in/photo.jpg",
        keyword_count: 10,
      }),
      thumbnail: await submit(stack, "video/thumbnail", {
        source_bucket: stack.bucket,
        source_key: "in/clip.mp4",
        dest_bucket: stack.bucket,
        dest_key: "out/clip.jpg",
        timestamp: "00:00:01",
        width: 480,
      }),
      audio: await submit(stack, "audio/convert", {
        source_bucket: stack.bucket,
        source_key: "in/tone.wav",
        dest_bucket: stack.bucket,
        dest_key: "out/tone.mp3",
        format: "mp3",
        bitrate: "128k",
      }),
      probe: await submit(stack, "media/probe", {
        source_bucket: stack.bucket,
        source_key: "in/clip.mp4",
      }),
      analyze: await submit(stack, "analyze", {
        source_bucket: stack.bucket,
        source_key: "in/photo.jpg",
        prompt: "Describe this picture for a caption.",
      }),
    };
    for (const [name, id] of Object.entries(jobs)) {
      const job = await finished(stack, id, 120_000);
      assert.equal(job.status, "completed", `${name}: ${job.error}`);
    }

    const watched = await signedIn();
    const { page } = watched;
    const open = async (id: string) => {
      await page.goto(at(`/jobs/${id}`));
      await page.getByTestId("job-result").waitFor();
      await page.getByTestId("timeline").waitFor();
    };

    for (const name of ["resize", "optimize", "watermark"] as const) {
      await open(jobs[name]);
      // The source's preview (GET /jobs/{id}/preview): 640 px of the 1200 px photo.
      assert.ok((await loadedImageWidth(page.getByTestId("source-image"))) === 640, `${name}: the source`);
      assert.ok((await loadedImageWidth(page.getByTestId("output-image"))) > 0, `${name}: the output`);
      await screenshot(page, `job-${name}`);
    }

    await open(jobs.colors);
    assert.equal(await page.getByTestId("swatch").count(), 6);
    await waitForText(page.getByTestId("swatch").first(), /#[0-9a-f]{6}\s*\d+(\.\d)? %/i);
    await screenshot(page, "job-colors");

    await open(jobs.metadata);
    await waitForText(page.getByTestId("image-metadata"), /Format\s*JPEG/);
    assert.match(await page.getByTestId("image-metadata").innerText(), /1200 × \d+ px/);
    await screenshot(page, "job-metadata");

    await open(jobs.probe);
    await waitForText(page.getByTestId("media-probe"), /Container\s*mov,mp4/);
    const streams = page.getByTestId("media-streams").getByRole("row");
    assert.equal(await streams.count(), 2, "a header and the clip's one stream");
    assert.match(
      await streams.nth(1).innerText(),
      /video\s+h264.*640 × 360 · 16:9 · 25 fps · yuv420p · 8-bit/s,
    );
    await screenshot(page, "job-probe");

    await open(jobs.keywords);
    assert.equal(await page.getByRole("list", { name: "Keywords" }).getByRole("listitem").count(), 10);
    await screenshot(page, "job-keywords");

    await open(jobs.thumbnail);
    assert.equal(await loadedImageWidth(page.getByTestId("output-image")), 480);
    await screenshot(page, "job-thumbnail");

    await open(jobs.audio);
    const audio = page.getByTestId("output-audio");
    await page.waitForFunction(
      () => {
        const el = document.querySelector("audio");
        return el !== null && (el.readyState ?? 0) >= 1 && (el.duration ?? 0) > 5;
      },
      undefined,
      { timeout: 30_000 },
    );
    // Read through the API with the key (GET /jobs/{id}/download), played from a blob: URL.
    assert.match((await audio.getAttribute("src")) ?? "", /^blob:/);
    await screenshot(page, "job-audio");

    await open(jobs.analyze);
    await waitForText(page.locator(".ai-text"), /\w+/);
    await screenshot(page, "job-analyze");
    assertClean(watched);
    await page.context().close();
  });

  test("jobs: the filters narrow the table and the pages follow the cursors, back and forth", async () => {
    const answer = await stack.request("/api/v1/jobs?type=image_resize&status=completed&limit=1000");
    const expected = ((await answer.json()) as { jobs: Array<{ id: string }> }).jobs.map((j) => j.id);
    assert.ok(expected.length >= 5, `${expected.length} completed resizes`);
    const watched = await signedIn();
    const { page } = watched;
    await page.goto(at("/jobs?type=image_resize&status=completed&limit=2"));
    const rows = page.locator('[data-testid="jobs-table"] tbody tr');
    const shown = async () => {
      const n = await rows.count();
      return Promise.all(Array.from({ length: n }, (_, i) => rows.nth(i).getAttribute("data-job-id")));
    };
    await page.locator(`tr[data-job-id="${expected[0]}"]`).waitFor();
    assert.deepEqual(await shown(), expected.slice(0, 2));
    await waitForText(
      page.getByRole("status").filter({ hasText: /match/ }),
      new RegExp(`^${expected.length} jobs match`),
    );

    await page.getByRole("button", { name: "Older →" }).click();
    await page.locator(`tr[data-job-id="${expected[2]}"]`).waitFor();
    assert.deepEqual(await shown(), expected.slice(2, 4));
    await waitForText(page.locator(".pager"), /Page 2/);
    await page.getByRole("button", { name: "Older →" }).click();
    await page.locator(`tr[data-job-id="${expected[4]}"]`).waitFor();
    await page.getByRole("button", { name: "← Newer" }).click();
    await page.getByRole("button", { name: "← Newer" }).click();
    await page.locator(`tr[data-job-id="${expected[0]}"]`).waitFor();
    assert.deepEqual(await shown(), expected.slice(0, 2));

    // The form: failed jobs of any type (not the cancelled ones); the filter is in the address.
    await page.getByLabel("Type").selectOption("");
    await page.getByLabel("Status").selectOption("failed");
    await page.getByRole("button", { name: "Apply" }).click();
    await page.waitForURL(
      (url) => url.searchParams.get("state") === "failed" && !url.searchParams.has("type"),
    );
    await waitForText(page.getByRole("status").filter({ hasText: /match/ }), /[1-9]\d* jobs? match/);
    const statuses = await page.locator('[data-testid="jobs-table"] .badge-text').allTextContents();
    assert.ok(statuses.length > 0 && statuses.every((s) => s === "failed"), statuses.join(", "));
    await screenshot(page, "jobs-filtered");
    assertClean(watched);
    await page.context().close();
  });

  test("overview: the queues, the last hour's charts and webhook delivery", async () => {
    const watched = await signedIn();
    const { page } = watched;
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    const resize = page.locator('[data-testid="queue-table"] tr[data-type="image_resize"]');
    await waitForText(resize.locator('[data-col="completed"]'), /^[1-9]\d*$/);
    await page.getByRole("img", { name: /Jobs finished per minute/ }).waitFor();
    await page.getByRole("img", { name: /Processing time/ }).waitFor();
    await page.getByRole("img", { name: /Queue depth/ }).waitFor();
    // The charts are drawn once the figures have come: completed jobs are among them.
    await page.locator(".chart .bar.series-completed").first().waitFor();
    await page.getByRole("heading", { name: "Webhook delivery" }).waitFor();
    await waitForText(page.locator(".figures"), /Delivered\s*[1-9]/);
    await screenshot(page, "overview");

    // Per type: the same charts for one job type.
    await page.getByLabel("Job type").selectOption("image_resize");
    await page.getByRole("img", { name: /Jobs finished per minute \(image resize\)/ }).waitFor();
    assertClean(watched);
    await page.context().close();
  });

  test("keyboard: a skip link, the navigation and the controls are reached with Tab, with a visible focus", async () => {
    const watched = await signedIn();
    const { page } = watched;
    // A fresh visit (signed in): Tab starts at the top of the page.
    await page.reload();
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    await page.keyboard.press("Tab");
    const skip = page.getByRole("link", { name: "Skip to content" });
    assert.equal(await skip.evaluate((el) => el === document.activeElement), true);
    const outline = await skip.evaluate((el) => getComputedStyle(el).outlineStyle);
    assert.notEqual(outline, "none", "the focused link shows a focus ring");
    // Tab on to the Jobs link and follow it with Enter.
    for (let i = 0; i < 10; i++) {
      const name = await page.evaluate(() => document.activeElement?.textContent ?? "");
      if (name === "Jobs") break;
      await page.keyboard.press("Tab");
    }
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Jobs");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.id), "main", "focus moves to the page");
    // Every form control has a label.
    const unlabelled = await page.evaluate(
      () =>
        Array.from(document.querySelectorAll("input, select")).filter(
          (el) => (el.labels?.length ?? 0) === 0 && !el.getAttribute("aria-label"),
        ).length,
    );
    assert.equal(unlabelled, 0);
    assertClean(watched);
    await page.context().close();
  });

  test("accessibility: axe-core finds no WCAG 2.1 A or AA violation (contrast included) on any page, light or dark", async () => {
    const list = (await (
      await stack.request("/api/v1/jobs?status=completed&type=image_resize&limit=1")
    ).json()) as {
      jobs: Array<{ id: string }>;
    };
    const failedList = (await (await stack.request("/api/v1/jobs?status=failed&limit=1")).json()) as {
      jobs: Array<{ id: string }>;
    };
    const pages: Array<[string, string]> = [
      ["overview", "/"],
      ["jobs", "/jobs"],
      ["completed job", `/jobs/${list.jobs[0]!.id}`],
      ["failed job", `/jobs/${failedList.jobs[0]!.id}`],
      ["batches", "/batches"],
      ["batch", "/batches/catalogue-ui"],
      ["templates", "/templates"],
    ];
    const views = [
      { width: 1280, colorScheme: "light" as const },
      { width: 1280, colorScheme: "dark" as const },
      { width: 375, colorScheme: "light" as const },
    ];
    for (const { width, colorScheme } of views) {
      const view = `${width} px, ${colorScheme}`;
      const login = await openPage(browser, { width, colorScheme, bypassCsp: true });
      await login.page.goto(at("/"));
      await login.page.getByLabel("API key").waitFor();
      assert.deepEqual(await accessibilityViolations(login.page), [], `login at ${view}`);
      await login.page.context().close();

      const watched = await openPage(browser, { width, colorScheme, bypassCsp: true });
      const { page } = watched;
      await page.goto(at("/"));
      await page.getByLabel("API key").fill(KEY);
      await page.getByRole("button", { name: "Sign in" }).click();
      for (const [name, path] of pages) {
        await page.goto(at(path));
        await page.locator("main h1").waitFor();
        await page.waitForFunction(() => document.querySelector(".loading") === null);
        assert.deepEqual(await accessibilityViolations(page), [], `${name} at ${view}`);
        if (colorScheme === "dark" && name === "completed job") await screenshot(page, "dark-job");
      }
      await page.context().close();
    }
  });

  test("phone width (375 px): every page fits the screen", async () => {
    const watched = await signedIn({ width: 375, height: 812 });
    const { page } = watched;
    const list = (await (await stack.request("/api/v1/jobs?status=completed&limit=1")).json()) as {
      jobs: Array<{ id: string }>;
    };
    const pages: Array<[string, string]> = [
      ["overview", "/"],
      ["jobs", "/jobs"],
      ["job", `/jobs/${list.jobs[0]!.id}`],
      ["batches", "/batches"],
      ["batch", "/batches/catalogue-ui"],
      ["templates", "/templates"],
    ];
    for (const [name, path] of pages) {
      await page.goto(at(path));
      await page.locator("main h1").waitFor();
      await page.waitForFunction(() => document.querySelector(".loading") === null);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `${name} is ${overflow} px wider than the screen`);
      await screenshot(page, `phone-${name}`);
    }
    assertClean(watched);
    await page.context().close();
  });
});

describe("the dashboard of an API without keys", () => {
  let open: TestStack;
  before(async () => {
    open = await startTestStack({});
  });
  after(async () => {
    await open?.close();
  });

  test("there is no login: the overview opens at once, with no Sign out", async () => {
    const watched = await openPage(browser);
    const { page } = watched;
    await page.goto(`${open.baseUrl}/ui/`);
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    await page.locator('[data-testid="queue-table"]').waitFor();
    assert.equal(await page.getByLabel("API key").count(), 0);
    assert.equal(await page.getByRole("button", { name: "Sign out" }).count(), 0);
    assert.equal(await page.evaluate(() => sessionStorage.getItem("media-service.api-key")), null);
    assertClean(watched);
    await page.context().close();
  });
});
