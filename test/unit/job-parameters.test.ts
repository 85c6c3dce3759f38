// Job parameters as processors read them: withDefaults fills in each schema default a record lacks,
// and the types derived from the schemas have every defaulted field, because no field with a
// default is optional in its schema.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { TObject } from "@sinclair/typebox";
import { DEFAULT_BOUNDS } from "../../core/jobs/bounds.js";
import { parameterSchemas, PARAMETER_SCHEMAS, withDefaults } from "../../core/jobs/parameters.js";
import { JOB_TYPES } from "../../core/jobs/types.js";

/** A schema's fields that have a default, with it. */
function defaultsOf(schema: TObject): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(schema.properties)
      .filter(([, property]) => "default" in property)
      .map(([name, property]) => [name, (property as { default: unknown }).default]),
  );
}

describe("parameter schemas", () => {
  const configured = parameterSchemas({ ...DEFAULT_BOUNDS, aiProviders: ["primary", "second"] });

  test("a field with a default is required in its schema, so its Static type has it", () => {
    let defaulted = 0;
    for (const schemas of [PARAMETER_SCHEMAS, configured]) {
      for (const type of JOB_TYPES) {
        const schema: TObject = schemas[type];
        for (const name of Object.keys(defaultsOf(schema))) {
          defaulted++;
          assert.ok(schema.required?.includes(name), `${type}.${name} has a default and is optional`);
        }
      }
    }
    assert.equal(defaulted, 2 * 27);
  });

  test("defaults do not depend on the configuration's bounds", () => {
    for (const type of JOB_TYPES) {
      assert.deepEqual(defaultsOf(configured[type]), defaultsOf(PARAMETER_SCHEMAS[type]), type);
    }
  });
});

describe("withDefaults", () => {
  test("fills in every default of the type's schema, and nothing else", () => {
    for (const type of JOB_TYPES) {
      assert.deepEqual(withDefaults(type, {}), defaultsOf(PARAMETER_SCHEMAS[type]), type);
      assert.deepEqual(withDefaults(type, undefined), defaultsOf(PARAMETER_SCHEMAS[type]), type);
    }
    assert.deepEqual(withDefaults("image_resize", { width: 10, height: 20 }), {
      width: 10,
      height: 20,
      quality: 85,
      fit: "cover",
      enlarge: false,
    });
    assert.deepEqual(withDefaults("audio_convert", { format: "flac" }), { format: "flac" });
  });

  test("keeps the values given, of every kind, and leaves the record as it is", () => {
    const recorded = { timestamp: 2.5, format: "png", width: 64 };
    assert.deepEqual(withDefaults("video_thumbnail", recorded), recorded);
    const partial = { watermark_image: "marks/logo.png", opacity: 0, color: "#000" };
    const read = withDefaults("image_watermark", partial);
    assert.deepEqual(read, { ...partial, position: "bottom-right" });
    assert.deepEqual(partial, { watermark_image: "marks/logo.png", opacity: 0, color: "#000" });
    assert.notEqual(read, partial);
    assert.deepEqual(withDefaults("image_optimize", { strip_metadata: true, quality: 1 }), {
      strip_metadata: true,
      quality: 1,
    });
  });

  test("its type has the defaulted fields, not optional", () => {
    // These assignments compile only if the defaulted fields are there in the type.
    const resize: { quality: number; fit: string; enlarge: boolean } = withDefaults("image_resize", {});
    const analyze: { max_frames: number; language: string } = withDefaults("analyze", {});
    const thumbnail: { timestamp: string | number; format: string } = withDefaults("video_thumbnail", {});
    assert.deepEqual([resize.quality, analyze.max_frames, thumbnail.timestamp], [85, 8, "00:00:01"]);
  });
});
