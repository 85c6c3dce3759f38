// The jobs page's search and bulk actions in a real browser (Debian's headless Chromium through
// playwright-core) against the API serving the built dashboard, Redis and the embedded S3 store,
// without an executor: jobs stay pending until cancelled or failed. Each test leaves screenshots in
// .artifacts/screenshots/.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { startTestStack, type TestStack } from "../support/api.js";
import {
  accessibilityViolations,
  assertClean,
  launchBrowser,
  openPage,
  screenshot,
  waitForText,
  type WatchedPage,
} from "../support/browser.js";
import { makeSpec } from "../support/store.js";

const KEY = "search-bulk-key-0123456789";

let stack: TestStack;
let browser: Browser;
/** Job i: image_resize, source in/<i % 4>/<i>.jpg, request id req-<i / 5>; the first 20 failed. */
let ids: string[] = [];

before(async () => {
  stack = await startTestStack({
    apiKeys: [],
    config: { server: { clients: [{ name: "viewer", keys: [KEY] }] } },
  });
  const specs = Array.from({ length: 60 }, (_, i) =>
    makeSpec("image_resize", {
      source_key: `in/${i % 4}/${i}.jpg`,
      dest_key: `out/${i}.webp`,
      request_id: `req-${Math.floor(i / 5)}`,
    }),
  );
  ids = (await stack.services.store.submit(specs, undefined, { name: "viewer", admin: false })).jobIds;
  for (const id of ids.slice(0, 20)) {
    await stack.services.store.fail(id, `source s3://test-bucket/in/${id}.jpg not found`);
  }
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await stack?.close();
});

const at = (path: string) => `${stack.baseUrl}/ui${path}`;

async function signedIn(path: string, options: { bypassCsp?: boolean } = {}): Promise<WatchedPage> {
  const watched = await openPage(browser, options);
  const { page } = watched;
  await page.goto(at("/"));
  await page.getByLabel("API key").fill(KEY);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Main" }).waitFor();
  await page.goto(at(path));
  return watched;
}

/** The ids of the table's rows, in order, once the count line says `count`. */
async function rowsWhen(page: Page, count: RegExp): Promise<string[]> {
  await waitForText(page.locator("p.count"), count);
  return page
    .locator("[data-testid=jobs-table] tbody tr")
    .evaluateAll((rows) => rows.map((r) => (r as unknown as { dataset: { jobId: string } }).dataset.jobId));
}

describe("jobs page: search", () => {
  test("the search box finds a job by id prefix, request id and source prefix; rows show source, output and error", async () => {
    const watched = await signedIn("/jobs");
    const { page } = watched;
    const search = page.getByLabel("Search");

    await search.fill(ids[3]!.slice(0, 8));
    await page.getByRole("button", { name: "Apply" }).click();
    assert.deepEqual(await rowsWhen(page, /^1 job match/), [ids[3]]);
    const row = page.locator(`tr[data-job-id="${ids[3]}"]`);
    await waitForText(row.locator("td[data-label=Source]"), /^test-bucket\/in\/3\/3\.jpg$/);
    await waitForText(row.locator("td[data-label=Output]"), /^test-bucket\/out\/3\.webp$/);
    await waitForText(row.locator("td[data-label=Error]"), /not found/);
    assert.match(page.url(), /[?&]q=/, "the search is in the address");

    await search.fill("req-7");
    await page.getByRole("button", { name: "Apply" }).click();
    assert.deepEqual((await rowsWhen(page, /^5 jobs match/)).sort(), ids.slice(35, 40).sort());

    await search.fill("s3://test-bucket/in/2/");
    await page.getByRole("button", { name: "Apply" }).click();
    assert.deepEqual(
      (await rowsWhen(page, /^15 jobs match/)).sort(),
      ids.filter((_, i) => i % 4 === 2).sort(),
    );
    await screenshot(page, "search-bulk-search");

    await page.goto(at("/jobs?client=someone-else"));
    await waitForText(page.getByText(/Could not list the jobs/), /client filter is for admin keys/);
    assertClean(watched);
    await page.context().close();
  });
});

describe("jobs page: bulk actions", () => {
  test("chosen rows are cancelled after the dry run's count is confirmed", async () => {
    const watched = await signedIn("/jobs?status=pending");
    const { page } = watched;
    const listed = await rowsWhen(page, /^40 jobs match/);
    const chosen = listed.slice(0, 3);
    for (const id of chosen) await page.getByLabel(`Choose job ${id.slice(0, 8)}`).check();
    await page.getByRole("button", { name: "Cancel chosen (3)" }).click();
    await waitForText(page.getByTestId("bulk-count"), /^3 jobs of the 3 chosen jobs will be cancelled\.$/);
    await screenshot(page, "search-bulk-confirm");
    await page.getByRole("button", { name: "Cancel 3 jobs" }).click();
    await waitForText(page.getByTestId("bulk-result"), /^3 jobs cancelled\.$/);
    await rowsWhen(page, /^37 jobs match/);
    for (const id of chosen) {
      const job = await stack.services.store.getJob(id);
      assert.equal(job?.status, "failed");
      assert.equal(job?.error, "cancelled by request");
    }
    assertClean(watched);
    await page.context().close();
  });

  test("every matching job: the failed ones of a source prefix retried, each once; keeping them changes nothing", async () => {
    const watched = await signedIn("/jobs?status=failed&q=test-bucket%2Fin%2F1%2F", { bypassCsp: true });
    const { page } = watched;
    // The failed jobs of in/1/: those failed at the start, and any the test before cancelled.
    const failed = await stack.services.store.listJobs({
      limit: 100,
      status: "failed",
      search: { sourcePrefix: "test-bucket/in/1/" },
    });
    const n = failed.total;
    await rowsWhen(page, new RegExp(`^${n} jobs match`));

    const pendingBefore = (await stack.services.store.listJobs({ limit: 1, status: "pending" })).total;
    await page.getByRole("button", { name: "Retry all matching…" }).click();
    await waitForText(
      page.getByTestId("bulk-count"),
      new RegExp(`^${n} jobs of every job matching the filters will be retried\\.$`),
    );
    await page.getByRole("button", { name: "Keep them" }).click();
    const pendingAfter = (await stack.services.store.listJobs({ limit: 1, status: "pending" })).total;
    assert.equal(pendingAfter, pendingBefore, "the dry run and keeping them retried nothing");

    await page.getByRole("button", { name: "Retry all matching…" }).click();
    await page.getByRole("button", { name: `Retry ${n} jobs` }).click();
    await waitForText(page.getByTestId("bulk-result"), new RegExp(`^${n} jobs retried\\.$`));
    const retries = await stack.services.store.listJobs({
      limit: 100,
      status: "pending",
      search: { sourcePrefix: "test-bucket/in/1/" },
    });
    const retryOf = await Promise.all(
      retries.jobs.map(async (j) => (await stack.services.store.getJob(j.id))?.retry_of),
    );
    const lineage = retryOf.filter((of): of is string => of !== undefined);
    assert.deepEqual(lineage.sort(), failed.jobs.map((j) => j.id).sort(), "each failed job retried once");
    // Again: every one of them was retried already, and none is retried twice.
    await page.getByRole("button", { name: "Retry all matching…" }).click();
    await page.getByRole("button", { name: `Retry ${n} jobs` }).click();
    await waitForText(
      page.getByTestId("bulk-result"),
      new RegExp(`^0 jobs retried; skipped: ${n} already retried\\.$`),
    );
    assert.equal(
      (
        await stack.services.store.listJobs({
          limit: 100,
          status: "pending",
          search: { sourcePrefix: "test-bucket/in/1/" },
        })
      ).total,
      retries.total,
    );
    assert.deepEqual(await accessibilityViolations(page), []);
    await screenshot(page, "search-bulk-retried");
    assertClean(watched);
    await page.context().close();
  });
});
