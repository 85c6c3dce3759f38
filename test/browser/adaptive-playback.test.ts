// A video_adaptive ladder played to its end in headless Chromium: made by a real runner of the local
// stack from a short source (6 s, three small renditions, HLS and DASH), then played by hls.js (the
// master playlist, switching renditions on the way) and by dash.js (the MPD) from a test page that
// reads the ladder from the store, and by the dashboard's job page through the API. Debian's Chromium
// decodes H.264 (checked first: it is what the ladder is in).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import type { Browser } from "playwright-core";
import { startTestStack, type TestStack } from "../support/api.js";
import { makeVideo, removeMediaDirs } from "../support/av.js";
import { assertClean, launchBrowser, openPage, screenshot, waitForText } from "../support/browser.js";
import { finished, submit } from "../support/jobs.js";

// The callback given to waitForFunction runs in the page, where this is the browser's own.
declare const document: { querySelector(selector: string): { readyState: number } | null };

const KEY = "adaptive-browser-key-0123456789";
const PREFIX = "ladders/playback";
const ROOT = join(import.meta.dirname, "..", "..");

let stack: TestStack;
let browser: Browser;
let pageServer: Server;
let pageUrl: string;
let jobId: string;

/** The test page: a video element, hls.js and dash.js, and the two ways of playing the ladder. */
const PAGE = `<!doctype html><html><body>
<video id="v" muted playsinline></video>
<script src="/hls.min.js"></script>
<script src="/dash.all.min.js"></script>
<script>
const video = document.getElementById("v");
function ended(errors, extra) {
  return new Promise((resolve) => {
    video.addEventListener("ended", () => resolve({ ended: true, errors, ...extra() }), { once: true });
    setTimeout(() => resolve({ ended: false, errors, ...extra() }), 90000);
  });
}
window.playHls = () => {
  const hls = new Hls({ enableWorker: false });
  const errors = [];
  const levels = new Set();
  let switched = false;
  hls.on(Hls.Events.ERROR, (_e, d) => errors.push(d.type + ":" + d.details + (d.fatal ? ":fatal" : "")));
  hls.on(Hls.Events.FRAG_LOADED, (_e, d) => {
    if (d.frag.type !== "main") return;
    levels.add(d.frag.level);
    if (!switched) {
      switched = true;
      // Another rendition from here on: the test switches levels as a viewer's player would.
      hls.currentLevel = (d.frag.level + 1) % hls.levels.length;
    }
  });
  hls.on(Hls.Events.MANIFEST_PARSED, () => video.play());
  hls.loadSource("/ladder/master.m3u8");
  hls.attachMedia(video);
  return ended(errors, () => ({ levels: [...levels], count: hls.levels.length }));
};
window.playDash = () => {
  const player = dashjs.MediaPlayer().create();
  const errors = [];
  player.on(dashjs.MediaPlayer.events.ERROR, (e) => errors.push(JSON.stringify(e.error ?? e)));
  player.initialize(video, "/ladder/manifest.mpd", true);
  return ended(errors, () => ({}));
};
</script></body></html>`;

const SCRIPTS: Record<string, string> = {
  "/hls.min.js": "node_modules/hls.js/dist/hls.min.js",
  "/dash.all.min.js": "node_modules/dashjs/dist/modern/umd/dash.all.min.js",
};

/** Serves the test page, the players, and the ladder read from the store under its prefix. */
async function startPageServer(): Promise<void> {
  pageServer = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? "/").split("?")[0]!;
      if (path === "/") return res.writeHead(200, { "content-type": "text/html" }).end(PAGE);
      if (SCRIPTS[path]) {
        const body = await readFile(join(ROOT, SCRIPTS[path]));
        return res.writeHead(200, { "content-type": "text/javascript" }).end(body);
      }
      if (path.startsWith("/ladder/")) {
        const key = `${PREFIX}/${path.slice("/ladder/".length)}`;
        try {
          const got = await stack.services.s3.send(new GetObjectCommand({ Bucket: stack.bucket, Key: key }));
          const body = Buffer.from(await got.Body!.transformToByteArray());
          return res
            .writeHead(200, { "content-type": got.ContentType ?? "application/octet-stream" })
            .end(body);
        } catch {
          return res.writeHead(404).end();
        }
      }
      res.writeHead(404).end();
    })();
  });
  await new Promise<void>((resolve) => pageServer.listen(0, "127.0.0.1", resolve));
  pageUrl = `http://127.0.0.1:${(pageServer.address() as AddressInfo).port}/`;
}

before(async () => {
  stack = await startTestStack({ apiKeys: [KEY], executor: true });
  browser = await launchBrowser();
  await startPageServer();
  const source = await makeVideo({ durationSeconds: 6, width: 640, height: 360, audio: true });
  await stack.services.s3.send(
    new PutObjectCommand({ Bucket: stack.bucket, Key: "in/ladder.mp4", Body: await readFile(source) }),
  );
  jobId = await submit(stack, "video/adaptive", {
    source_bucket: stack.bucket,
    source_key: "in/ladder.mp4",
    dest_bucket: stack.bucket,
    dest_prefix: PREFIX,
    renditions: [
      { height: 360, video_bitrate: "600k" },
      { height: 240, video_bitrate: "350k" },
      { height: 144, video_bitrate: "150k" },
    ],
    segment_seconds: 2,
    formats: ["hls", "dash"],
    preset: "ultrafast",
  });
  const job = await finished(stack, jobId, 180_000);
  assert.equal(job.status, "completed", job.error);
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => pageServer?.close(resolve));
  await stack?.close();
  removeMediaDirs();
});

describe("an adaptive ladder in Chromium", { timeout: 240_000 }, () => {
  test("this Chromium plays H.264 and AAC from Media Source Extensions", async () => {
    const { page } = await openPage(browser);
    await page.goto(pageUrl);
    const supported = await page.evaluate(`[
      MediaSource.isTypeSupported('video/mp4; codecs="avc1.64001f"'),
      MediaSource.isTypeSupported('audio/mp4; codecs="mp4a.40.2"'),
    ]`);
    assert.deepEqual(supported, [true, true]);
    await page.context().close();
  });

  test("hls.js plays the master playlist to the end, two renditions fetched", async () => {
    const watched = await openPage(browser);
    const { page } = watched;
    const segments = new Set<string>();
    page.on("request", (r) => {
      const m = /\/ladder\/chunk-(\d+)-\d+\.m4s$/.exec(r.url());
      if (m) segments.add(m[1]!);
    });
    await page.goto(pageUrl);
    const played = await page.evaluate<{
      ended: boolean;
      errors: string[];
      levels: number[];
      count: number;
    }>("playHls()");
    assert.deepEqual(played.errors, []);
    assert.equal(played.ended, true, "the video element's ended event fired");
    assert.equal(played.count, 3);
    assert.ok(played.levels.length >= 2, `fragments of levels ${played.levels.join(", ")}`);
    // Representations 0–2 are the video renditions, 3 the audio.
    const videoReps = [...segments].filter((id) => Number(id) < 3);
    assert.ok(videoReps.length >= 2, `segments of representations ${[...segments].join(", ")}`);
    assertClean(watched);
    await page.context().close();
  });

  test("dash.js plays the MPD to the end", async () => {
    const watched = await openPage(browser);
    const { page } = watched;
    await page.goto(pageUrl);
    const played = await page.evaluate<{ ended: boolean; errors: string[] }>("playDash()");
    assert.deepEqual(played.errors, []);
    assert.equal(played.ended, true, "the video element's ended event fired");
    assertClean(watched);
    await page.context().close();
  });

  test("the dashboard's job page plays the ladder through the API and lists its renditions", async () => {
    const watched = await openPage(browser);
    const { page } = watched;
    await page.goto(`${stack.baseUrl}/ui/`);
    await page.getByLabel("API key").fill(KEY);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("navigation", { name: "Main" }).waitFor();
    await page.goto(`${stack.baseUrl}/ui/jobs/${jobId}`);
    const rows = page.getByTestId("ladder-renditions").locator("tbody tr");
    await waitForText(rows.first(), /640 × 360/);
    assert.equal(await rows.count(), 4, "three renditions and the audio");
    await waitForText(page.getByTestId("ladder-state"), /Playing the HLS ladder/);
    // A function, not a string: the dashboard's CSP refuses a string evaluated as script.
    await page.waitForFunction(
      () => (document.querySelector("[data-testid=ladder-video]")?.readyState ?? 0) >= 2,
      undefined,
      { timeout: 30_000 },
    );
    await screenshot(page, "adaptive-job");
    assertClean(watched);
    await page.context().close();
  });
});
