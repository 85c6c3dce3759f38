// The overview's Clients table in a real browser against the local stack: an admin sees every
// client's jobs running and pending against its limits, its weight, job types, highest priority and
// refusals; a client sees its own row only.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Locator } from "playwright-core";
import { startTestStack, type TestStack } from "../support/api.js";
import {
  accessibilityViolations,
  assertClean,
  launchBrowser,
  openPage,
  screenshot,
} from "../support/browser.js";
import { makeSpec } from "../support/store.js";

// What the callbacks run in the page use of its elements (the browser's own types are not loaded here).
interface PageElement {
  textContent: string | null;
  getAttribute(name: string): string | null;
}

const ADMIN = "clients-admin-key-0123456789";
const ACME = "clients-acme-key-0123456789";

let stack: TestStack;
let browser: Browser;

before(async () => {
  stack = await startTestStack({
    config: {
      server: {
        clients: [
          { name: "ops", keys: [ADMIN], admin: true },
          {
            name: "acme",
            keys: [ACME],
            weight: 3,
            max_running: 4,
            max_pending: 5,
            job_types: ["image_resize"],
            max_priority: 10,
          },
          { name: "beta", keys: ["clients-beta-key-0123456789"] },
        ],
      },
    },
  });
  const store = stack.services.store;
  const acme = { name: "acme", admin: false };
  await store.submit(
    [makeSpec("image_resize"), makeSpec("image_resize"), makeSpec("image_resize")],
    undefined,
    acme,
  );
  await store.claim("image_resize", 60_000, "test");
  // 2 waiting and 4 more: over acme's max_pending of 5, refused whole.
  await assert.rejects(
    store.submit(
      Array.from({ length: 4 }, () => makeSpec("image_resize")),
      undefined,
      acme,
    ),
  );
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await stack?.close();
});

async function overview(key: string) {
  const watched = await openPage(browser);
  const { page } = watched;
  await page.goto(`${stack.baseUrl}/ui/`);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Clients" }).waitFor();
  return watched;
}

const cells = (row: Locator) =>
  row
    .locator("th, td")
    .evaluateAll((els) => (els as unknown as PageElement[]).map((e) => (e.textContent ?? "").trim()));

describe("the overview's Clients table", () => {
  test("an admin sees every client against its limits", async () => {
    const watched = await overview(ADMIN);
    const { page } = watched;
    const table = page.getByTestId("client-table");
    assert.deepEqual(
      await table
        .locator("tbody tr")
        .evaluateAll((rows) => (rows as unknown as PageElement[]).map((r) => r.getAttribute("data-client"))),
      ["ops", "acme", "beta"],
    );
    assert.deepEqual(await cells(table.locator('tr[data-client="acme"]')), [
      "acme",
      "1 of 4",
      "2 of 5",
      "3",
      "image resize",
      "10",
      "1 (max_pending)",
    ]);
    assert.deepEqual(await cells(table.locator('tr[data-client="beta"]')), [
      "beta",
      "0",
      "0",
      "1",
      "all",
      "any",
      "0",
    ]);
    assert.deepEqual(await accessibilityViolations(page), []);
    await screenshot(page, "overview-clients");
    assertClean(watched);
  });

  test("a client sees its own row only", async () => {
    const watched = await overview(ACME);
    const rows = watched.page.getByTestId("client-table").locator("tbody tr");
    assert.deepEqual(
      await rows.evaluateAll((r) =>
        (r as unknown as PageElement[]).map((e) => e.getAttribute("data-client")),
      ),
      ["acme"],
    );
    assertClean(watched);
  });
});
