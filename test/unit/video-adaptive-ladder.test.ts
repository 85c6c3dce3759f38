// video_adaptive's pure decisions: the default ladder for a source, refusals of renditions, the
// one ffmpeg command (one decode split into every rendition, keyframes by time), and the master
// playlist written from ffmpeg's.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Parser } from "m3u8-parser";
import {
  chooseRenditions,
  ladderCommand,
  readMaster,
  writeMaster,
} from "../../jobs/video_adaptive/ladder.js";
import { entryKeyOf, prefixOfEntry } from "../../jobs/video_adaptive/definition.js";

const source = (w: number, h: number) => ({ displayWidth: w, displayHeight: h });
const defaults = { video_codec: "h264" as const };

describe("video_adaptive's ladder", () => {
  test("the default ladder never goes above the source's height", () => {
    const sizes = (w: number, h: number) =>
      (chooseRenditions(defaults, source(w, h), 16384) as Array<{ width: number; height: number }>).map(
        (r) => `${r.width}x${r.height}`,
      );
    assert.deepEqual(sizes(1920, 1080), ["1920x1080", "1280x720", "854x480", "640x360"]);
    assert.deepEqual(sizes(1280, 720), ["1280x720", "854x480", "640x360"]);
    assert.deepEqual(sizes(640, 480), ["640x480", "480x360"]);
    // Below 360 lines: the source's own height, one rendition.
    assert.deepEqual(sizes(320, 180), ["320x180"]);
    assert.deepEqual(sizes(176, 144), ["176x144"]);
  });

  test("H.265 and AV1 get lower default bitrates than H.264", () => {
    const kbps = (video_codec: "h264" | "h265" | "av1") =>
      (chooseRenditions({ video_codec }, source(1920, 1080), 16384) as Array<{ kbps: number }>)[0]!.kbps;
    assert.equal(kbps("h264"), 5000);
    assert.ok(kbps("h265") < kbps("h264"));
    assert.ok(kbps("av1") < kbps("h265"));
  });

  test("renditions given are sorted tallest first; one taller than the source is refused", () => {
    const given = chooseRenditions(
      {
        ...defaults,
        renditions: [
          { height: 360, video_bitrate: "800k" },
          { height: 720, video_bitrate: "2800k" },
        ],
      },
      source(1280, 720),
      16384,
    );
    assert.deepEqual(given, [
      { width: 1280, height: 720, kbps: 2800 },
      { width: 640, height: 360, kbps: 800 },
    ]);
    assert.equal(
      chooseRenditions(
        { ...defaults, renditions: [{ height: 1080, video_bitrate: "5000k" }] },
        source(1280, 720),
        16384,
      ),
      "renditions: height 1080 is taller than the source (1280x720); a ladder does not upscale",
    );
  });

  test("one ffmpeg: a split into every rendition, keyframes at each segment, the dash muxer with HLS", () => {
    const renditions = [
      { width: 1280, height: 720, kbps: 2800 },
      { width: 640, height: 360, kbps: 800 },
    ];
    const { outputOptions, audio } = ladderCommand(
      renditions,
      { video_codec: "h264", segment_seconds: 4, preset: "veryfast" },
      2,
      { videoIndex: 0, audioIndex: 1, frameRate: 30, displayWidth: 1280, displayHeight: 720 },
    );
    assert.equal(audio, true);
    const option = (name: string) => outputOptions[outputOptions.indexOf(name) + 1];
    assert.equal(
      option("-filter_complex"),
      "[0:0]split=2[s0][s1];[s0]scale=1280:720,setdar=1280/720[v0];[s1]scale=640:360,setdar=1280/720[v1]",
    );
    assert.equal(option("-force_key_frames"), "expr:gte(t,n_forced*4)");
    assert.equal(option("-g"), "120");
    assert.equal(option("-sc_threshold"), "0");
    assert.equal(option("-f"), "dash");
    assert.equal(option("-hls_playlist"), "1");
    assert.equal(option("-seg_duration"), "4");
    assert.equal(option("-b:v:1"), "800k");
    assert.equal(outputOptions.filter((o) => o === "-i").length, 0, "one input, decoded once");
  });

  test("the master playlist: tallest first, the audio group, the audio-only variant when asked", () => {
    const ffmpegMaster = [
      "#EXTM3U",
      "#EXT-X-VERSION:7",
      '#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="group_A1",NAME="audio_2",DEFAULT=YES,URI="media_2.m3u8"',
      '#EXT-X-STREAM-INF:BANDWIDTH=428000,RESOLUTION=426x240,CODECS="avc1.42c015,mp4a.40.2",AUDIO="group_A1"',
      "media_1.m3u8",
      "",
      '#EXT-X-STREAM-INF:BANDWIDTH=928000,RESOLUTION=640x360,CODECS="avc1.42c01e,mp4a.40.2",AUDIO="group_A1"',
      "media_0.m3u8",
    ].join("\n");
    const read = readMaster(ffmpegMaster);
    assert.equal(read.audioUri, "media_2.m3u8");
    const text = writeMaster(
      read.variants,
      { uri: "media_2.m3u8", codecs: "mp4a.40.2", bandwidth: 128000 },
      true,
    );
    const parser = new Parser();
    parser.push(text);
    parser.end();
    const manifest = parser.manifest as {
      playlists: Array<{ uri: string; attributes: { BANDWIDTH: number; CODECS: string; AUDIO?: string } }>;
    };
    assert.deepEqual(
      manifest.playlists.map((p) => [p.uri, p.attributes.BANDWIDTH, p.attributes.CODECS, p.attributes.AUDIO]),
      [
        ["media_0.m3u8", 928000, "avc1.42c01e,mp4a.40.2", "audio"],
        ["media_1.m3u8", 428000, "avc1.42c015,mp4a.40.2", "audio"],
        ["media_2.m3u8", 128000, "mp4a.40.2", undefined],
      ],
    );
  });

  test("the job's dest_key: the master playlist under the prefix, or the MPD without HLS", () => {
    assert.equal(entryKeyOf("ladders/a/", ["hls", "dash"]), "ladders/a/master.m3u8");
    assert.equal(entryKeyOf("ladders/a", ["dash"]), "ladders/a/manifest.mpd");
    assert.equal(entryKeyOf("ladders/a", undefined), "ladders/a/master.m3u8");
    assert.equal(prefixOfEntry("ladders/a/master.m3u8"), "ladders/a");
  });
});
