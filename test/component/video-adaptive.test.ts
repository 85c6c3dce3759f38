// The video_adaptive processor against real ffmpeg and the embedded S3 store: a ladder of three
// renditions from a 20 s 1080p source whose keyframes fall at the same times in every rendition,
// whose playlists a real HLS parser reads and whose MPD an XML parser reads, every object they name
// present, the master playlist written last (the store's own log of requests); and ladders that
// fail (a truncated source, a job stopped while it uploads) leaving nothing under their prefix.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdir, writeFile } from "node:fs/promises";
import { promisify } from "node:util";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { XMLParser } from "fast-xml-parser";
import { Parser } from "m3u8-parser";
import { videoAdaptive } from "../../jobs/video_adaptive/processor.js";
import { isPermanent } from "../../runner/errors.js";
import { makeContext, makeVideo, mediaDir, removeMediaDirs, truncated } from "../support/av.js";
import { keyframeTimesOf, startLadderStore, type LadderStore } from "../support/ladder.js";

let store: LadderStore;
const run = promisify(execFile);

/** The pids of the ffmpeg processes whose command line names `path`. */
async function pgrep(path: string): Promise<number[]> {
  try {
    const { stdout } = await run("pgrep", ["-f", `ffmpeg .*${path}`]);
    return stdout.trim().split("\n").map(Number);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

/** Polls `get` (bounded) until it gives a value. */
async function waitFor<T>(what: string, get: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await get();
    if (value !== undefined) return value;
    assert.ok(Date.now() < deadline, `waited for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

before(async () => {
  store = await startLadderStore();
});
after(async () => {
  await store.close();
  removeMediaDirs();
});

async function ladder(source: string, prefix: string, parameters: Record<string, unknown>) {
  const handle = await makeContext("video_adaptive", source, { preset: "ultrafast", ...parameters });
  handle.ctx.job.dest_bucket = store.bucket;
  handle.ctx.job.dest_key = `${prefix}/master.m3u8`;
  handle.ctx.objects = store.writer;
  return handle;
}

interface HlsManifest {
  playlists?: Array<{ uri: string; attributes: Record<string, unknown> }>;
  mediaGroups?: { AUDIO?: Record<string, Record<string, { uri: string }>> };
  segments?: Array<{ uri: string; duration: number; map?: { uri: string } }>;
  endList?: boolean;
}

function parseHls(text: string): HlsManifest {
  const parser = new Parser();
  parser.push(text);
  parser.end();
  return parser.manifest as HlsManifest;
}

/** The presentation times (s) of a rendition's key video packets: its init and segments joined. */
async function keyframeTimes(prefix: string, playlist: HlsManifest): Promise<number[]> {
  const init = await store.bytes(`${prefix}/${playlist.segments![0]!.map!.uri}`);
  const parts = [init];
  for (const s of playlist.segments!) parts.push(await store.bytes(`${prefix}/${s.uri}`));
  const file = join(mediaDir("keyframes"), `${Math.random().toString(36).slice(2)}.mp4`);
  await writeFile(file, Buffer.concat(parts));
  return keyframeTimesOf(file);
}

describe("video_adaptive", () => {
  test("three renditions from 1080p: aligned keyframes, parseable manifests, master last", async () => {
    const source = await makeVideo({ durationSeconds: 20, width: 1920, height: 1080, audio: true });
    const prefix = "ladders/full";
    const { ctx, progress } = await ladder(source, prefix, {
      renditions: [
        { height: 1080, video_bitrate: "3000k" },
        { height: 720, video_bitrate: "1500k" },
        { height: 360, video_bitrate: "500k" },
      ],
      formats: ["hls", "dash"],
      segment_seconds: 4,
      audio_only_rendition: true,
    });
    const before = store.requests.length;
    const out = await videoAdaptive(ctx);
    const result = out.result as {
      master_url: string;
      dash_url: string;
      duration: number;
      renditions: Array<{
        width: number;
        height: number;
        bandwidth: number;
        codecs: string;
        playlist_url: string;
      }>;
    };
    assert.equal(out.output, undefined, "the ladder is uploaded by the processor, not as one output");
    assert.deepEqual(
      result.renditions.map((r) => [r.width, r.height]),
      [
        [1920, 1080],
        [1280, 720],
        [640, 360],
      ],
    );
    for (const r of result.renditions) {
      assert.match(r.codecs, /^avc1\.[0-9a-f]{6},mp4a\.40\.2$/);
      assert.ok(r.bandwidth > 0);
    }
    assert.ok(Math.abs(result.duration - 20) < 0.5, `duration ${result.duration}`);
    assert.match(result.master_url, /ladders\/full\/master\.m3u8$/);
    assert.match(result.dash_url, /ladders\/full\/manifest\.mpd$/);
    assert.ok(progress.some((p) => /encoding 1080p, 720p, 360p/.test(p.message ?? "")));

    // The master playlist, by a real HLS parser: three video variants and the audio-only one.
    const keys = new Set(await store.list(`${prefix}/`));
    const master = parseHls(await store.text(`${prefix}/master.m3u8`));
    const variants = master.playlists!;
    assert.equal(variants.length, 4);
    assert.deepEqual(
      variants.slice(0, 3).map((v) => (v.attributes.RESOLUTION as { height: number }).height),
      [1080, 720, 360],
    );
    assert.equal(variants[3]!.attributes.CODECS, "mp4a.40.2");
    const audioGroup = Object.values(master.mediaGroups!.AUDIO!)[0]!;
    const audioUri = Object.values(audioGroup)[0]!.uri;

    // Every media playlist: whole (ENDLIST), its segments and init present.
    const playlists = new Map<string, HlsManifest>();
    for (const uri of [...variants.map((v) => v.uri), audioUri]) {
      const playlist = parseHls(await store.text(`${prefix}/${uri}`));
      assert.equal(playlist.endList, true, uri);
      for (const s of playlist.segments!) {
        assert.ok(keys.has(`${prefix}/${s.uri}`), `${s.uri} of ${uri}`);
        assert.ok(keys.has(`${prefix}/${s.map!.uri}`), `${s.map!.uri} of ${uri}`);
      }
      playlists.set(uri, playlist);
    }

    // Segments of the same lengths in every video rendition, and keyframes at the same times: each
    // segment's start, every 4 s.
    const videoPlaylists = variants.slice(0, 3).map((v) => playlists.get(v.uri)!);
    const durations = videoPlaylists.map((p) => p.segments!.map((s) => s.duration));
    assert.deepEqual(durations[1], durations[0]);
    assert.deepEqual(durations[2], durations[0]);
    assert.deepEqual(durations[0], [4, 4, 4, 4, 4]);
    const times = await Promise.all(videoPlaylists.map((p) => keyframeTimes(prefix, p)));
    assert.deepEqual(times[0], [0, 4, 8, 12, 16]);
    assert.deepEqual(times[1], times[0]);
    assert.deepEqual(times[2], times[0]);

    // The MPD, by an XML parser: one video adaptation set of the three, one audio; its segments
    // are the ones the HLS playlists name (one set).
    const mpd = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "" }).parse(
      await store.text(`${prefix}/manifest.mpd`),
    ) as {
      MPD: {
        type: string;
        Period: {
          AdaptationSet: Array<{
            contentType: string;
            Representation:
              Array<{ id: string; height?: string; SegmentTemplate: { media: string } }> | object;
          }>;
        };
      };
    };
    assert.equal(mpd.MPD.type, "static");
    const sets = mpd.MPD.Period.AdaptationSet;
    assert.deepEqual(
      sets.map((s) => s.contentType),
      ["video", "audio"],
    );
    const videoReps = sets[0]!.Representation as Array<{
      id: string;
      height: string;
      SegmentTemplate: { media: string };
    }>;
    assert.deepEqual(
      videoReps.map((r) => Number(r.height)),
      [1080, 720, 360],
    );
    for (const rep of videoReps) {
      const first = rep.SegmentTemplate.media
        .replace("$RepresentationID$", rep.id)
        .replace("$Number%05d$", "00001");
      assert.ok(keys.has(`${prefix}/${first}`), first);
    }
    assert.equal([...keys].filter((k) => k.endsWith(".mpd")).length, 1);

    // Written in order: the master playlist's PUT is the last of the job's, and every other object
    // was written before it (the store logs a request when it has answered it).
    const puts = store.requests
      .slice(before)
      .filter((r) => r.method === "PUT" && r.path.includes(`/${prefix}/`) && r.status === 200);
    assert.equal(puts.length, keys.size);
    assert.match(puts.at(-1)!.path, /\/master\.m3u8$/);
    assert.match(puts.at(-2)!.path, /\/manifest\.mpd$/);
    const lastSegment = Math.max(...puts.map((p, i) => (p.path.endsWith(".m4s") ? i : -1)));
    const firstPlaylist = puts.findIndex((p) => p.path.endsWith(".m3u8"));
    assert.ok(lastSegment < firstPlaylist, "every segment before any playlist");
  });

  test("H.265 and AV1 ladders: keyframes aligned, codecs named in full in both manifests", async () => {
    const source = await makeVideo({ durationSeconds: 4, width: 320, height: 180 });
    for (const [codec, pattern] of [
      ["h265", /^hvc1\.1\.6\.L\d+\.B0$/],
      ["av1", /^av01\.0\.\d\dM\.08$/],
    ] as const) {
      const prefix = `ladders/${codec}`;
      const { ctx } = await ladder(source, prefix, {
        video_codec: codec,
        renditions: [
          { height: 180, video_bitrate: "300k" },
          { height: 144, video_bitrate: "200k" },
        ],
        segment_seconds: 2,
        formats: ["hls", "dash"],
      });
      const result = (await videoAdaptive(ctx)).result as { renditions: Array<{ codecs: string }> };
      for (const r of result.renditions) assert.match(r.codecs, pattern, codec);
      const mpd = await store.text(`${prefix}/manifest.mpd`);
      const named = [...mpd.matchAll(/<Representation [^>]*codecs="([^"]+)"/g)].map((m) => m[1]);
      assert.deepEqual(
        named,
        result.renditions.map((r) => r.codecs),
        codec,
      );
      const master = parseHls(await store.text(`${prefix}/master.m3u8`));
      const playlists = await Promise.all(
        master.playlists!.map(async (p) => parseHls(await store.text(`${prefix}/${p.uri}`))),
      );
      const times = await Promise.all(playlists.map((p) => keyframeTimes(prefix, p)));
      assert.deepEqual(times[0], [0, 2], codec);
      assert.deepEqual(times[1], times[0], codec);
    }
  });

  test("a truncated source fails the job and writes nothing", { timeout: 120_000 }, async () => {
    const whole = await makeVideo({ durationSeconds: 6, width: 320, height: 180 });
    const source = await truncated(whole, 0.5);
    const prefix = "ladders/truncated";
    const { ctx } = await ladder(source, prefix, {});
    await assert.rejects(videoAdaptive(ctx), (err: Error) => {
      assert.ok(isPermanent(err), err.message);
      return true;
    });
    assert.deepEqual(await store.list(`${prefix}/`), []);
  });

  test(
    "segments are uploaded while ffmpeg still writes the ladder, and leave the scratch disk",
    { timeout: 120_000 },
    async () => {
      // ffmpeg is frozen (SIGSTOP) as soon as its first segment is complete, with most of the ladder
      // still to write: the segment must reach the store while it cannot go on.
      const source = await makeVideo({ durationSeconds: 30, width: 320, height: 180 });
      const prefix = "ladders/shipped";
      const handle = await ladder(source, prefix, {
        renditions: [{ height: 180, video_bitrate: "300k" }],
        segment_seconds: 1,
        preset: "medium",
      });
      const dir = join(handle.ctx.scratchDir, "ladder");
      const putSegments = () =>
        store.requests.filter(
          (r) => r.method === "PUT" && r.status === 200 && /\/chunk-[^/]*\.m4s/.test(r.path),
        );
      const running = videoAdaptive(handle.ctx);
      let pid: number | undefined;
      let shippedEarly: string[] = [];
      try {
        pid = await waitFor("the ladder's ffmpeg", async () => (await pgrep(dir))[0]);
        await waitFor(
          "a whole segment",
          async () =>
            (await readdir(dir).catch(() => [] as string[])).some((f) => /^chunk-.*\.m4s$/.test(f)) ||
            putSegments().length > 0 ||
            undefined,
        );
        process.kill(pid, "SIGSTOP");
        await waitFor("a segment in the store", async () => putSegments().length > 0 || undefined);
        assert.deepEqual(await pgrep(dir), [pid], "ffmpeg has not ended: it is frozen mid-ladder");
        shippedEarly = putSegments().map((r) => r.path.slice(r.path.lastIndexOf("/") + 1));
      } finally {
        if (pid !== undefined) process.kill(pid, "SIGCONT");
      }
      const out = await running;
      assert.ok(out.result.master_url);
      const segments = (await store.list(`${prefix}/`)).filter((k) => /\/chunk-/.test(k));
      assert.ok(segments.length >= 30, `every segment in the store: ${segments.length}`);
      // What was shipped during the encode left the scratch disk then; the rest goes with the
      // job's scratch directory.
      const left = await readdir(dir);
      assert.ok(shippedEarly.length > 0);
      assert.deepEqual(
        shippedEarly.filter((name) => left.includes(name)),
        [],
        `the segments shipped while ffmpeg ran are off the scratch disk: ${shippedEarly.join(", ")}`,
      );
    },
  );

  test("a job stopped while it uploads removes what it wrote", { timeout: 120_000 }, async () => {
    // 240 lines of 16:9 are 426 pixels wide, a hair off 16:9: a ladder still (the dash muxer
    // refuses renditions of different aspect ratios in one adaptation set).
    const source = await makeVideo({ durationSeconds: 8, width: 640, height: 360, audio: true });
    const prefix = "ladders/stopped";
    const handle = await ladder(source, prefix, {
      renditions: [
        { height: 240, video_bitrate: "300k" },
        { height: 144, video_bitrate: "200k" },
      ],
      segment_seconds: 2,
      formats: ["hls", "dash"],
    });
    let written = 0;
    store.onRequest = (r) => {
      if (r.method === "PUT" && r.path.includes(`/${prefix}/`) && r.status === 200 && ++written === 3) {
        handle.abort.abort(new Error("job cancelled"));
      }
    };
    try {
      await assert.rejects(videoAdaptive(handle.ctx), /cancelled|abort/i);
    } finally {
      delete store.onRequest;
    }
    assert.ok(written >= 3, `${written} objects were written before the stop`);
    assert.deepEqual(await store.list(`${prefix}/`), []);
  });
});
