// The pure rules of templates: the configuration's checked as a PUT checks one (the message names
// the template and the field), the destination placeholders, what a submission with a template
// stands for, and the pipeline shorthand.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { loadConfig } from "../../core/config/load.js";
import { DEFAULT_BOUNDS } from "../../core/jobs/bounds.js";
import {
  applyTemplate,
  expandShorthand,
  sourceName,
  validateTemplateBody,
  PIPELINE_TYPE,
  type Template,
} from "../../core/jobs/templates.js";

const load = (templates: unknown) => loadConfig({ env: {}, file: "/dev/null", overrides: { templates } });

describe("the configuration's templates", () => {
  test("are validated when it loads, with defaults and a declared version", () => {
    const config = load({
      small: {
        type: "image_resize",
        version: 4,
        parameters: { width: 10, height: 10 },
        overridable: ["quality"],
      },
      colors: { type: "image_colors" },
    });
    assert.deepEqual(
      config.templates.map((t) => [t.name, t.version, t.source]),
      [
        ["colors", 1, "config"],
        ["small", 4, "config"],
      ],
    );
    assert.deepEqual(config.templates[1]!.parameters, {
      width: 10,
      height: 10,
      quality: 85,
      fit: "cover",
      enlarge: false,
    });
  });

  test("a bad one stops the load, naming the template and the field", () => {
    const cases: Array<[unknown, RegExp]> = [
      [
        { big: { type: "image_resize", parameters: { width: 99999, height: 1 } } },
        /templates\.big: parameters\.width: .*16384 \(got 99999\)/,
      ],
      [
        { odd: { type: "image_resize", parameters: { width: 1, height: 1, colour: 1 } } },
        /templates\.odd: parameters\.colour: unexpected property/,
      ],
      [
        { ov: { type: "image_colors", overridable: ["width"] } },
        /templates\.ov: overridable\[0\]: must be one of color_count/,
      ],
      [
        { ph: { type: "image_optimize", dest_key: "{nmae}.webp" } },
        /templates\.ph: dest_key: \{nmae\} is not a placeholder/,
      ],
      [
        {
          dup: {
            type: "video_adaptive",
            parameters: {
              renditions: [
                { height: 360, video_bitrate: "800k" },
                { height: 360, video_bitrate: "900k" },
              ],
            },
          },
        },
        /templates\.dup: parameters: renditions: heights must be distinct/,
      ],
      [{ none: { parameters: {} } }, /templates\.none: type must be one of/],
      [{ "Bad Name": { type: "image_colors" } }, /templates: "Bad Name" is not a template name/],
    ];
    for (const [templates, expected] of cases) {
      assert.throws(() => load(templates), expected, JSON.stringify(templates));
    }
  });
});

const TEMPLATE: Template = {
  name: "web",
  version: 2,
  source: "api",
  type: "image_optimize",
  parameters: { quality: 70, strip_metadata: true },
  overridable: ["quality"],
  dest_bucket: "out",
  dest_key: "{prefix}/{name}-{job_id}.webp",
};
const ROUTE = { parameterNames: new Set(["quality", "strip_metadata", "format"]), takesPrefix: false };

describe("a submission with a template", () => {
  test("is the template's parameters and destination, with the overrides it allows and the placeholders filled", () => {
    const body = applyTemplate(
      TEMPLATE,
      {
        source_bucket: "in",
        source_key: "a/b/photo.final.jpg",
        dest_prefix: "site/",
        quality: 50,
        template: "web",
      },
      ROUTE,
      "job-1",
    );
    assert.deepEqual(body, {
      source_bucket: "in",
      source_key: "a/b/photo.final.jpg",
      template: "web",
      quality: 50,
      strip_metadata: true,
      dest_bucket: "out",
      dest_key: "site/photo.final-job-1.webp",
    });
  });

  test("refuses overrides the template does not allow, a {prefix} without dest_prefix, a dest_prefix nothing takes", () => {
    const sent = { source_bucket: "in", source_key: "x.jpg", dest_prefix: "p" };
    assert.throws(
      () => applyTemplate(TEMPLATE, { ...sent, strip_metadata: false, format: "png" }, ROUTE, "j"),
      /template web does not let a submission override strip_metadata, format \(it allows quality\)/,
    );
    assert.throws(
      () => applyTemplate(TEMPLATE, { source_bucket: "in", source_key: "x.jpg" }, ROUTE, "j"),
      /template web's dest_key names \{prefix\}: give dest_prefix/,
    );
    assert.throws(
      () => applyTemplate(TEMPLATE, { ...sent, dest_key: "given.webp" }, ROUTE, "j"),
      /dest_prefix: template web has no destination that names \{prefix\}/,
    );
  });

  test("fills the placeholders of dest_keys inside its parameters (a pipeline's steps)", () => {
    const steps: Template = {
      name: "steps",
      version: 1,
      source: "api",
      type: "image_optimize",
      parameters: { steps: { thumb: { dest_key: "{prefix}/{name}/thumb-{job_id}.webp" } } },
    };
    const body = applyTemplate(
      steps,
      { source_bucket: "in", source_key: "cat.jpg", dest_prefix: "out" },
      { parameterNames: new Set(["steps"]), takesPrefix: true },
      "j7",
    );
    assert.deepEqual(body.steps, { thumb: { dest_key: "out/cat/thumb-j7.webp" } });
    assert.equal(body.dest_prefix, "out", "a route that takes dest_prefix keeps it");
  });

  test("{name} is the source key's last segment without its extension", () => {
    assert.equal(sourceName("uploads/2026/cat.photo.jpg"), "cat.photo");
    assert.equal(sourceName("plain"), "plain");
    assert.equal(sourceName("dir/.hidden"), ".hidden");
  });
});

test("a body with steps and no type is a pipeline's", () => {
  const expanded = expandShorthand({
    steps: { a: { type: "image_colors" } },
    keep_partial: true,
    overridable: [],
  });
  assert.deepEqual(expanded, {
    type: PIPELINE_TYPE,
    parameters: { steps: { a: { type: "image_colors" } }, keep_partial: true },
    overridable: [],
  });
  const checked = validateTemplateBody({ steps: { a: { type: "image_colors" } } }, DEFAULT_BOUNDS);
  assert.ok("body" in checked, JSON.stringify(checked));
  assert.deepEqual(checked.body.parameters, { steps: { a: { type: "image_colors" } }, keep_partial: false });
  // Where its steps write is the pipeline's check's too: two steps on one key are refused at PUT.
  const step = { type: "image_resize", parameters: { width: 9, height: 9 }, dest_key: "{prefix}/same.jpg" };
  assert.deepEqual(validateTemplateBody({ steps: { a: step, b: step } }, DEFAULT_BOUNDS), {
    problem:
      "parameters: steps.b: its output would overwrite step a's (s3://dest-bucket/{prefix}/same.jpg): give it another dest_key",
  });
});
