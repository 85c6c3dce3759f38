// Headless Chromium for the dashboard's browser tests, driven by playwright-core. The browser is the
// system's (Debian's chromium package, which `bash scripts/provision.sh browser` installs): nothing
// is downloaded. Pages are watched for what must never happen (a script error, a Content-Security-
// Policy violation), and the tests write screenshots to .artifacts/screenshots/.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from "playwright-core";

export const SCREENSHOTS = join(import.meta.dirname, "..", "..", ".artifacts", "screenshots");

/** The Chromium to drive: CHROMIUM_PATH, else the one on PATH, else Debian's. */
export function chromiumPath(): string {
  const given = process.env.CHROMIUM_PATH;
  if (given) return given;
  const found = spawnSync("bash", ["-c", "command -v chromium || command -v chromium-browser"], {
    encoding: "utf8",
  }).stdout.trim();
  const path = found || "/usr/bin/chromium";
  assert.ok(
    existsSync(path),
    "no Chromium found: run `bash scripts/provision.sh browser` (Debian's chromium package) or set CHROMIUM_PATH",
  );
  return path;
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    // Chromium's sandbox cannot start as root (CI runs as root); the pages are the tests' own.
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
}

/** What a page must never show: uncaught errors, CSP violations. Checked by `assertClean`. */
export interface WatchedPage {
  page: Page;
  problems: string[];
}

export async function openPage(
  browser: Browser,
  options: {
    width?: number;
    height?: number;
    context?: BrowserContext;
    bypassCsp?: boolean;
    colorScheme?: "light" | "dark";
  } = {},
): Promise<WatchedPage> {
  const context =
    options.context ??
    (await browser.newContext({
      viewport: { width: options.width ?? 1280, height: options.height ?? 900 },
      colorScheme: options.colorScheme ?? "light",
      reducedMotion: "reduce",
      ...(options.bypassCsp ? { bypassCSP: true } : {}),
    }));
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  const problems: string[] = [];
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("console", (message) => {
    const text = message.text();
    if (/Content Security Policy|Refused to|Trusted ?Type|Uncaught/i.test(text)) {
      problems.push(`console ${message.type()}: ${text}`);
    }
  });
  return { page, problems };
}

/**
 * A watched page at `url`, signed in with `key` typed on the login view (as a person would); the
 * options are openPage's.
 */
export async function signedInAt(
  browser: Browser,
  url: string,
  key: string,
  options: Parameters<typeof openPage>[1] = {},
): Promise<WatchedPage> {
  const watched = await openPage(browser, options);
  const { page } = watched;
  await page.goto(url);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Main" }).waitFor();
  return watched;
}

export function assertClean(watched: WatchedPage): void {
  assert.deepEqual(watched.problems, [], "the page logged errors");
}

export async function screenshot(page: Page, name: string, fullPage = true): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage });
  return path;
}

/** Waits (bounded) until the locator's text matches. */
export async function waitForText(locator: Locator, text: RegExp, timeout = 30_000): Promise<void> {
  await locator.filter({ hasText: text }).first().waitFor({ state: "visible", timeout });
}

/** Waits (bounded) until an <img> has loaded pixels (naturalWidth > 0); returns that width. */
export async function loadedImageWidth(img: Locator, timeout = 30_000): Promise<number> {
  await img.waitFor({ state: "attached", timeout });
  const handle = await img.elementHandle({ timeout });
  assert.ok(handle, "the image is on the page");
  await img
    .page()
    .waitForFunction(
      (el) => (el as unknown as { complete: boolean; naturalWidth: number }).naturalWidth > 0,
      handle,
      { timeout },
    );
  return img.evaluate((el) => (el as unknown as { naturalWidth: number }).naturalWidth);
}

// axe-core's checks, run in the page. The page's own CSP would refuse the injected script (it allows
// no inline script, rightly): the page checked must be opened with `bypassCsp`.
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
interface AxeResults {
  violations: Array<{ id: string; help: string; nodes: Array<{ target: unknown[] }> }>;
}
declare const window: { axe?: { run(context: unknown, options: unknown): Promise<AxeResults> } };
declare const document: unknown;

/** WCAG 2.1 A and AA violations axe-core finds on the page as it is, in words. */
export async function accessibilityViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    const results = await window.axe!.run(document, {
      runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] },
      resultTypes: ["violations"],
    });
    return results.violations.map(
      (v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`,
    );
  });
}
