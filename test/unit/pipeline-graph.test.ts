// planPipeline (jobs/pipeline/graph.ts): the rules a pipeline's steps keep, each refusal naming the
// step and its field, and the waves its runner follows. Imported first, before the registry, so the
// modules' order of loading is the one a test (or a tool) that starts from the graph meets.
import { planPipeline } from "../../jobs/pipeline/graph.js";
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DEFAULT_BOUNDS, type SchemaBounds } from "../../core/jobs/bounds.js";

const plan = (parameters: Record<string, unknown>, bounds: SchemaBounds = DEFAULT_BOUNDS) =>
  planPipeline({ dest_bucket: "out", dest_prefix: "p/", ...parameters }, bounds);

const resize = (more: Record<string, unknown> = {}) => ({
  type: "image_resize",
  parameters: { width: 10, height: 10 },
  ...more,
});

describe("planPipeline: the waves", () => {
  test("steps reading the source are one wave; a chain is a wave a step", () => {
    assert.deepEqual(
      plan({
        steps: {
          small: resize(),
          marked: { type: "image_watermark", input: "small", parameters: { watermark_text: "x" } },
          optimized: { type: "image_optimize", input: "marked" },
          colours: { type: "image_colors" },
          big: resize({ parameters: { width: 100, height: 100, format: "webp" } }),
        },
      }),
      { waves: [["small", "colours", "big"], ["marked"], ["optimized"]] },
    );
  });

  test("a video's probe, thumbnail and ladder read the one source together", () => {
    assert.deepEqual(
      plan({
        steps: {
          probe: { type: "media_probe" },
          thumb: { type: "video_thumbnail" },
          hls: {
            type: "video_adaptive",
            parameters: {
              renditions: [
                { height: 144, video_bitrate: "300k" },
                { height: 240, video_bitrate: "400k" },
              ],
            },
          },
        },
      }),
      { waves: [["probe", "thumb", "hls"]] },
    );
  });

  test("a thumbnail's image is read by image steps", () => {
    assert.deepEqual(
      plan({ steps: { thumb: { type: "video_thumbnail" }, small: resize({ input: "thumb" }) } }),
      { waves: [["thumb"], ["small"]] },
    );
  });
});

describe("planPipeline: each rule refused, naming the step", () => {
  const cases: Array<[string, Record<string, unknown>, string | RegExp]> = [
    ["no steps", { steps: {} }, "steps: must name 1 to 20 steps, not 0"],
    [
      "21 steps",
      {
        steps: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`s${i}`, { type: "image_colors" }])),
      },
      "steps: must name 1 to 20 steps, not 21",
    ],
    ["a step name in capitals", { steps: { Thumb: resize() } }, /^steps: step name "Thumb" must be/],
    [
      "a type that does not exist",
      { steps: { a: { type: "image_blur" } } },
      'steps.a.type: "image_blur" is not a job type',
    ],
    [
      "a pipeline as a step",
      { steps: { a: { type: "pipeline" } } },
      "steps.a.type: a pipeline cannot be a step of a pipeline",
    ],
    [
      "a width over the configured bound",
      {
        steps: {
          thumb: resize({ parameters: { width: DEFAULT_BOUNDS.maxOutputDimension + 1, height: 10 } }),
        },
      },
      `steps.thumb.parameters.width: must be at most ${DEFAULT_BOUNDS.maxOutputDimension} pixels (limits.max_output_dimension)`,
    ],
    [
      "a quality over its schema's maximum",
      { steps: { thumb: resize({ parameters: { width: 10, height: 10, quality: 101 } }) } },
      "steps.thumb.parameters.quality: must be <= 100",
    ],
    [
      "a required parameter missing",
      { steps: { thumb: resize({ parameters: { width: 10 } }) } },
      "steps.thumb.parameters.height: is required",
    ],
    [
      "an unknown parameter",
      { steps: { thumb: resize({ parameters: { width: 10, height: 10, widht: 3 } }) } },
      "steps.thumb.parameters: unknown field widht",
    ],
    [
      "a schema's own sentence (watermark: one of text or image)",
      { steps: { mark: { type: "image_watermark" } } },
      "steps.mark.parameters: one of watermark_text or watermark_image is required",
    ],
    [
      "a type's check (a ladder's heights twice)",
      {
        steps: {
          hls: {
            type: "video_adaptive",
            parameters: {
              renditions: [
                { height: 144, video_bitrate: "300k" },
                { height: 144, video_bitrate: "400k" },
              ],
            },
          },
        },
      },
      "steps.hls.parameters.renditions: heights must be distinct; 144 is given twice",
    ],
    [
      "an input that is no step",
      { steps: { a: resize({ input: "b" }) } },
      'steps.a.input: no step is named "b"',
    ],
    [
      "a step reading itself",
      { steps: { a: resize({ input: "a" }) } },
      "steps.a.input: a step cannot read its own output",
    ],
    [
      "a circle of inputs",
      { steps: { a: resize({ input: "c" }), b: resize({ input: "a" }), c: resize({ input: "b" }) } },
      "steps.a.input: the steps a → c → b → a read each other in a circle",
    ],
    [
      "reading a step that writes no file (colours)",
      { steps: { c: { type: "image_colors" }, a: resize({ input: "c" }) } },
      "steps.a.input: step c (image_colors) writes no file, so no step can read its output",
    ],
    [
      "reading a step that writes under a prefix (a ladder)",
      { steps: { hls: { type: "video_adaptive" }, t: { type: "video_thumbnail", input: "hls" } } },
      "steps.t.input: step hls (video_adaptive) writes many objects under a prefix, so no step can read its output",
    ],
    [
      "an image step reading a video step's video",
      { steps: { v: { type: "video_transcode" }, a: resize({ input: "v" }) } },
      "steps.a.input: step v (video_transcode) writes a video, and image_resize reads an image",
    ],
    [
      "image and video steps on the one source",
      { steps: { a: resize(), t: { type: "video_thumbnail" } } },
      /^steps\.t: video_thumbnail reads a video source, but step a \(image_resize\) reads an image/,
    ],
    [
      "a writing step with no bucket",
      { dest_bucket: undefined, steps: { a: resize() } },
      "steps.a: image_resize writes a file: give the pipeline's dest_bucket or the step's dest_bucket",
    ],
    [
      "a writing step with no key",
      { dest_prefix: undefined, steps: { a: resize() } },
      "steps.a: image_resize writes a file: give the pipeline's dest_prefix or the step's dest_key",
    ],
    [
      "a step that writes nothing given a key",
      { steps: { c: { type: "image_colors", dest_key: "x" } } },
      "steps.c: image_colors writes no file, so it takes no dest_bucket or dest_key",
    ],
    [
      "two steps on one key",
      { steps: { a: resize({ dest_key: "k.jpg" }), b: resize({ dest_key: "k.jpg" }) } },
      /^steps\.b: its output would overwrite step a's \(s3:\/\/out\/k\.jpg\)/,
    ],
    [
      "a key given on another step's default key",
      { steps: { a: resize(), b: resize({ dest_key: "p/a.jpg" }) } },
      /^steps\.b: its output would overwrite step a's/,
    ],
  ];
  for (const [what, parameters, expected] of cases) {
    test(what, () => {
      const answer = plan(parameters);
      assert.equal(typeof answer, "string", `refused: ${JSON.stringify(answer)}`);
      if (typeof expected === "string") assert.equal(answer, expected);
      else assert.match(answer as string, expected);
    });
  }

  test("the same key in two buckets is no collision; a step's own bucket is enough without the job's", () => {
    assert.equal(
      typeof plan({
        dest_bucket: undefined,
        steps: {
          a: resize({ dest_bucket: "one", dest_key: "k" }),
          b: resize({ dest_bucket: "two", dest_key: "k" }),
        },
      }),
      "object",
    );
  });

  test("bounds are the configuration's: a wider limit takes a width the default refuses", () => {
    const wide: SchemaBounds = { ...DEFAULT_BOUNDS, maxOutputDimension: 20000 };
    const steps = { steps: { a: resize({ parameters: { width: 18000, height: 10 } }) } };
    assert.ok(DEFAULT_BOUNDS.maxOutputDimension < 18000);
    assert.equal(typeof plan(steps), "string");
    assert.deepEqual(plan(steps, wide), { waves: [["a"]] });
  });
});
