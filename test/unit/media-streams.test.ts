// ffprobe's answer normalised (runner/av/streams.ts): tables of streams as ffprobe gives them, in
// its JSON (`-of json`) and as fluent-ffmpeg reads its default output (side data flattened, numbers
// already numbers), taken from real files.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { FfprobeData, FfprobeStream } from "fluent-ffmpeg";
import {
  bitDepthOf,
  frameRateOf,
  pixelFormatDepth,
  rotationOf,
  summarizeProbe,
  summarizeStream,
} from "../../runner/av/streams.js";

const stream = (fields: Record<string, unknown>) => ({ index: 0, ...fields }) as unknown as FfprobeStream;

// An H.264 stream of an MP4 turned by its display matrix, in ffprobe's JSON (ffmpeg 5.1).
const H264_JSON = {
  index: 0,
  codec_name: "h264",
  profile: "Constrained Baseline",
  codec_type: "video",
  width: 160,
  height: 90,
  sample_aspect_ratio: "1:1",
  display_aspect_ratio: "16:9",
  pix_fmt: "yuv420p",
  color_transfer: "bt709",
  r_frame_rate: "30000/1001",
  avg_frame_rate: "30000/1001",
  duration: "1.001000",
  bit_rate: "351768",
  bits_per_raw_sample: "8",
  disposition: { default: 1, attached_pic: 0 },
  tags: { language: "und", handler_name: "VideoHandler" },
  side_data_list: [{ side_data_type: "Display Matrix", displaymatrix: "\n00000000: ...", rotation: -90 }],
};

// Its AAC stream, as fluent-ffmpeg reads ffprobe's default output.
const AAC_FLUENT = {
  index: 1,
  codec_name: "aac",
  profile: "LC",
  codec_type: "audio",
  sample_fmt: "fltp",
  sample_rate: 44100,
  channels: 1,
  channel_layout: "mono",
  bits_per_sample: 0,
  r_frame_rate: "0/0",
  avg_frame_rate: "0/0",
  duration: 1,
  bit_rate: 70280,
  bits_per_raw_sample: "N/A",
  tags: { language: "fra", handler_name: "SoundHandler" },
};

describe("summarizeStream", () => {
  test("a video stream: every fact the file gives, normalised", () => {
    assert.deepEqual(summarizeStream(stream(H264_JSON)), {
      index: 0,
      kind: "video",
      codec: "h264",
      profile: "Constrained Baseline",
      width: 160,
      height: 90,
      display_aspect_ratio: "16:9",
      rotation: 90,
      frame_rate: 29.97,
      pixel_format: "yuv420p",
      bit_depth: 8,
      color_transfer: "bt709",
      bit_rate: 351768,
    });
  });

  test("an audio stream: its placeholders (N/A, 0/0, bits_per_sample 0) left out", () => {
    assert.deepEqual(summarizeStream(stream(AAC_FLUENT)), {
      index: 1,
      kind: "audio",
      codec: "aac",
      profile: "LC",
      language: "fra",
      bit_rate: 70280,
      channels: 1,
      channel_layout: "mono",
      sample_rate: 44100,
    });
  });

  test("10-bit HEVC in Matroska: bit depth from the pixel format when the stream gives none", () => {
    const hevc = stream({
      codec_name: "hevc",
      profile: "Main 10",
      codec_type: "video",
      width: 160,
      height: 90,
      display_aspect_ratio: "16:9",
      pix_fmt: "yuv420p10le",
      color_transfer: "smpte2084",
      r_frame_rate: "25/1",
      avg_frame_rate: "25/1",
      tags: { ENCODER: "Lavc59.37.100 libx265", DURATION: "00:00:01.000000000" },
    });
    const summary = summarizeStream(hevc);
    assert.equal(summary.bit_depth, 10);
    assert.equal(summary.frame_rate, 25);
    assert.equal(summary.rotation, 0);
    assert.equal(summary.color_transfer, "smpte2084");
    assert.equal(summary.language, undefined);
    assert.equal("language" in summary, false, "absent facts are left out, not null");
  });

  test("subtitle, data and attachment streams: kind, codec and language", () => {
    assert.deepEqual(
      summarizeStream(
        stream({ index: 2, codec_type: "subtitle", codec_name: "mov_text", tags: { language: "eng" } }),
      ),
      { index: 2, kind: "subtitle", codec: "mov_text", language: "eng" },
    );
    assert.deepEqual(summarizeStream(stream({ index: 3, codec_type: "data", codec_name: "bin_data" })), {
      index: 3,
      kind: "data",
      codec: "bin_data",
    });
    assert.deepEqual(summarizeStream(stream({ index: 4, codec_type: "attachment", codec_name: "ttf" })), {
      index: 4,
      kind: "data",
      codec: "ttf",
    });
  });

  test("a FLAC stream's bit depth is its bits_per_raw_sample", () => {
    const flac = stream({
      codec_type: "audio",
      codec_name: "flac",
      sample_fmt: "s32",
      bits_per_raw_sample: "24",
    });
    assert.equal(summarizeStream(flac).bit_depth, 24);
    const pcm = stream({ codec_type: "audio", codec_name: "pcm_s16le", bits_per_sample: 16 });
    assert.equal(summarizeStream(pcm).bit_depth, 16);
  });
});

describe("rotationOf: degrees clockwise a player turns the picture", () => {
  const cases: Array<[string, Record<string, unknown>, number]> = [
    ["no rotation at all", {}, 0],
    ["JSON side data, -90 (a phone's portrait video)", { side_data_list: [{ rotation: -90 }] }, 90],
    ["JSON side data, 90", { side_data_list: [{ rotation: 90 }] }, 270],
    ["JSON side data, 180", { side_data_list: [{ rotation: 180 }] }, 180],
    ["JSON side data, -180", { side_data_list: [{ rotation: -180 }] }, 180],
    ["side data of another kind only", { side_data_list: [{ side_data_type: "Stereo 3D" }] }, 0],
    ["fluent-ffmpeg's flattened side data, -90", { rotation: -90 }, 90],
    ["fluent-ffmpeg's flattened side data as text", { rotation: "-270.00" }, 270],
    ["the legacy rotate tag, 90", { tags: { rotate: "90" } }, 90],
    ["the legacy rotate tag, 270", { tags: { rotate: "270" } }, 270],
    [
      "the display matrix wins over the tag",
      { side_data_list: [{ rotation: -90 }], tags: { rotate: "180" } },
      90,
    ],
    ["a near-quarter turn rounds to it", { side_data_list: [{ rotation: -89.9 }] }, 90],
    ["a rotate tag that is no number", { tags: { rotate: "sideways" } }, 0],
  ];
  for (const [name, fields, expected] of cases) {
    test(name, () => assert.equal(rotationOf(stream(fields)), expected));
  }
});

describe("frameRateOf", () => {
  const cases: Array<[Record<string, unknown>, number | undefined]> = [
    [{ avg_frame_rate: "30000/1001", r_frame_rate: "30000/1001" }, 30000 / 1001],
    [{ avg_frame_rate: "24000/1001" }, 24000 / 1001],
    [{ avg_frame_rate: "25/1", r_frame_rate: "50/1" }, 25],
    [{ avg_frame_rate: "0/0", r_frame_rate: "60/1" }, 60],
    [{ avg_frame_rate: "0/0", r_frame_rate: "0/0" }, undefined],
    [{ avg_frame_rate: "N/A" }, undefined],
    [{}, undefined],
  ];
  for (const [fields, expected] of cases) {
    test(JSON.stringify(fields), () => assert.equal(frameRateOf(stream(fields)), expected));
  }
});

describe("bit depth", () => {
  test("bits_per_raw_sample first, as text or number", () => {
    assert.equal(
      bitDepthOf(stream({ codec_type: "video", bits_per_raw_sample: "10", pix_fmt: "yuv420p" })),
      10,
    );
    assert.equal(bitDepthOf(stream({ codec_type: "video", bits_per_raw_sample: 12 })), 12);
    assert.equal(
      bitDepthOf(stream({ codec_type: "video", bits_per_raw_sample: "N/A", pix_fmt: "yuv422p10le" })),
      10,
    );
    assert.equal(bitDepthOf(stream({ codec_type: "video" })), undefined);
  });

  const formats: Array<[string, number | undefined]> = [
    ["yuv420p", 8],
    ["yuvj420p", 8],
    ["yuv444p", 8],
    ["yuva420p", 8],
    ["nv12", 8],
    ["rgb24", 8],
    ["rgba", 8],
    ["bgr0", 8],
    ["gray", 8],
    ["gbrp", 8],
    ["pal8", 8],
    ["yuv420p10le", 10],
    ["yuv422p10be", 10],
    ["yuv444p12le", 12],
    ["yuv420p16le", 16],
    ["yuva444p10le", 10],
    ["gbrp10le", 10],
    ["gray10le", 10],
    ["gray16be", 16],
    ["p010le", 10],
    ["p016le", 16],
    ["p210le", 10],
    ["rgb48le", 16],
    ["rgba64be", 16],
    ["vaapi", undefined],
    ["unknown", undefined],
  ];
  for (const [format, depth] of formats) {
    test(`pixel format ${format}`, () => assert.equal(pixelFormatDepth(format), depth));
  }
});

describe("summarizeProbe", () => {
  test("the file: container, duration, size and bit rate; then its streams in order", () => {
    const data = {
      streams: [H264_JSON, AAC_FLUENT],
      format: {
        format_name: "mov,mp4,m4a,3gp,3g2,mj2",
        duration: "1.001000",
        size: "55283",
        bit_rate: "441822",
      },
      chapters: [],
    } as unknown as FfprobeData;
    const summary = summarizeProbe(data, 99);
    assert.equal(summary.container, "mov,mp4,m4a,3gp,3g2,mj2");
    assert.equal(summary.duration, 1.001);
    assert.equal(summary.size, 55283, "ffprobe's size first");
    assert.equal(summary.bit_rate, 441822);
    assert.deepEqual(
      summary.streams.map((s) => [s.index, s.kind]),
      [
        [0, "video"],
        [1, "audio"],
      ],
    );
  });

  test("without the container's duration and size: the longest stream's, and the file's size", () => {
    const data = {
      streams: [
        { index: 0, codec_type: "video", tags: { DURATION: "00:00:04.000000000" } },
        { index: 1, codec_type: "audio", duration: "4.5" },
      ],
      format: { format_name: "matroska,webm", duration: "N/A", bit_rate: "N/A" },
      chapters: [],
    } as unknown as FfprobeData;
    assert.deepEqual(summarizeProbe(data, 1234), {
      container: "matroska,webm",
      duration: 4.5,
      size: 1234,
      streams: [
        { index: 0, kind: "video", rotation: 0 },
        { index: 1, kind: "audio" },
      ],
    });
  });

  test("nothing known: only the container's placeholder and no streams", () => {
    assert.deepEqual(summarizeProbe({ streams: [], format: {}, chapters: [] }), {
      container: "unknown",
      streams: [],
    });
  });
});
