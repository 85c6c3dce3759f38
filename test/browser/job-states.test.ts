// Cancelled apart from failed, and a retry's lineage, in the dashboard in a real browser (Debian's
// headless Chromium through playwright-core) against the API serving the built dashboard, Redis and
// the embedded S3 store, with no executor: jobs stay pending until a test cancels or fails them.
// Every wait is bounded; nothing asserts how long anything took. Screenshots go to
// .artifacts/screenshots/.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser } from "playwright-core";
import type { Job } from "../../core/jobs/records.js";
import { startTestStack, type TestStack } from "../support/api.js";
import {
  assertClean,
  launchBrowser,
  SCREENSHOTS,
  screenshot,
  signedInAt,
  waitForText,
  type WatchedPage,
} from "../support/browser.js";
import { submit } from "../support/jobs.js";

const KEY = "job-states-key-0123456789";

let stack: TestStack;
let browser: Browser;

const at = (path: string) => `${stack.baseUrl}/ui${path}`;

before(async () => {
  stack = await startTestStack({ apiKeys: [KEY] });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await stack?.close();
  console.log(`job-states screenshots: ${SCREENSHOTS}`);
});

/** A page signed in with the key, at `path`. */
const signedIn = (path: string): Promise<WatchedPage> => signedInAt(browser, at(path), KEY);

const colors = () =>
  submit(stack, "image/colors", { source_bucket: stack.bucket, source_key: "in/none.jpg" });
const thumbnail = (n: number) =>
  submit(stack, "video/thumbnail", {
    source_bucket: stack.bucket,
    source_key: "in/none.mp4",
    dest_bucket: stack.bucket,
    dest_key: `out/thumb-${n}.jpg`,
  });

async function cancelJob(id: string): Promise<void> {
  const res = await stack.request(`/api/v1/jobs/${id}/cancel`, { method: "POST" });
  assert.equal(res.status, 200);
}

async function failJob(id: string): Promise<void> {
  assert.equal(
    await stack.services.store.fail(id, `source s3://${stack.bucket}/in/none.jpg not found`),
    true,
  );
}

async function record(id: string): Promise<Job> {
  return (await (await stack.request(`/api/v1/jobs/${id}`)).json()) as Job;
}

describe("cancelled, apart from failed", () => {
  test("jobs list: the badge says cancelled; the Status choice cancelled lists only those, failed only the others", async () => {
    const [cancelled, failed, pending] = [await colors(), await colors(), await colors()];
    await cancelJob(cancelled);
    await failJob(failed);
    const watched = await signedIn("/jobs?type=image_colors");
    const { page } = watched;
    const table = page.locator('[data-testid="jobs-table"]');
    const badge = (id: string) => table.locator(`tr[data-job-id="${id}"] .badge`);
    await badge(cancelled).waitFor();
    assert.equal(await badge(cancelled).getAttribute("data-state"), "cancelled");
    assert.equal((await badge(cancelled).innerText()).trim().endsWith("cancelled"), true);
    assert.equal(await badge(failed).getAttribute("data-state"), "failed");
    assert.equal(await badge(pending).getAttribute("data-state"), "pending");
    await screenshot(page, "job-states-list");

    const status = page.getByLabel("Status");
    assert.ok((await status.locator("option").allInnerTexts()).includes("cancelled"), "a cancelled choice");
    await status.selectOption("cancelled");
    await page.getByRole("button", { name: "Apply" }).click();
    await page.waitForURL(/state=cancelled/);
    await waitForText(page.getByRole("status"), /^1 job match\.$/);
    await table.locator(`tr[data-job-id="${cancelled}"]`).waitFor();
    assert.equal(await table.locator("tr[data-job-id]").count(), 1, "the cancelled job alone");

    await status.selectOption("failed");
    await page.getByRole("button", { name: "Apply" }).click();
    await page.waitForURL(/state=failed/);
    await table.locator(`tr[data-job-id="${failed}"]`).waitFor();
    await waitForText(page.getByRole("status"), /^1 job match\.$/);
    assert.equal(
      await table.locator(`tr[data-job-id="${cancelled}"]`).count(),
      0,
      "no cancelled job among the failed",
    );
    assertClean(watched);
    await page.context().close();
  });

  test("overview: a queue's failed and cancelled jobs are counted apart, each linked to its list", async () => {
    const ids = [await thumbnail(1), await thumbnail(2), await thumbnail(3)];
    await cancelJob(ids[0]!);
    await cancelJob(ids[1]!);
    await failJob(ids[2]!);
    const watched = await signedIn("/");
    const { page } = watched;
    const row = page.locator('[data-testid="queue-table"] tr[data-type="video_thumbnail"]');
    await row.waitFor();
    await waitForText(row.locator('[data-col="cancelled"]'), /^2$/);
    assert.equal((await row.locator('[data-col="failed"]').innerText()).trim(), "1");
    assert.equal(
      await row.locator('[data-col="cancelled"] a').getAttribute("href"),
      "/ui/jobs?type=video_thumbnail&state=cancelled",
    );
    assert.equal(
      await row.locator('[data-col="failed"] a').getAttribute("href"),
      "/ui/jobs?type=video_thumbnail&state=failed",
    );
    await screenshot(page, "job-states-overview");
    await row.locator('[data-col="cancelled"] a').click();
    await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
    await waitForText(page.getByRole("status"), /^2 jobs match\.$/);
    assertClean(watched);
    await page.context().close();
  });
});

describe("retry lineage", () => {
  test("a retried job links to its retry and offers Open retry and Retry again; the retry links back", async () => {
    const id = await colors();
    await cancelJob(id);
    const watched = await signedIn(`/jobs/${id}`);
    const { page } = watched;
    const status = page.locator('[data-testid="job-status"] .badge');
    await status.waitFor();
    assert.equal(await status.getAttribute("data-state"), "cancelled");
    assert.equal(await page.getByRole("link", { name: "Open retry" }).count(), 0, "not retried yet");

    await page.getByRole("button", { name: "Retry as a new job" }).click();
    await page.waitForURL((url) => !url.pathname.endsWith(id));
    const first = (await record(id)).retried_as;
    assert.ok(first, "the failed job records its retry");
    await page.waitForURL(new RegExp(`/jobs/${first}$`));
    const lineage = page.locator('[data-testid="job-lineage"]');
    await waitForText(lineage, /Retry of/);
    assert.equal(await lineage.locator('[data-lineage="retry-of"] a').getAttribute("href"), `/ui/jobs/${id}`);
    await screenshot(page, "job-states-retry-of");

    await lineage.locator('[data-lineage="retry-of"] a').click();
    await page.waitForURL(new RegExp(`/jobs/${id}$`));
    await waitForText(lineage, /Retried as/);
    assert.equal(
      await lineage.locator('[data-lineage="retried-as"] a').getAttribute("href"),
      `/ui/jobs/${first}`,
    );
    assert.equal(await page.getByRole("button", { name: "Retry as a new job" }).count(), 0);
    await page.getByRole("button", { name: "Retry again" }).waitFor();
    await screenshot(page, "job-states-retried-as");
    await page.getByRole("link", { name: "Open retry" }).click();
    await page.waitForURL(new RegExp(`/jobs/${first}$`));
    await page.goBack();
    await page.waitForURL(new RegExp(`/jobs/${id}$`));

    await page.getByRole("button", { name: "Retry again" }).click();
    await page.waitForURL((url) => !url.pathname.endsWith(id) && !url.pathname.endsWith(first));
    const second = (await record(id)).retried_as;
    assert.ok(second && second !== first, "a second retry, which retried_as now names");
    await page.waitForURL(new RegExp(`/jobs/${second}$`));
    assert.equal((await record(second)).retry_of, id);
    assertClean(watched);
    await page.context().close();
  });
});
