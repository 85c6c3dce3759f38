// What the client commands take from the command line, checked before anything is sent: job types
// (by name or by their route's path, which must stay the API's), s3:// locations, key=value
// parameters; and when output is coloured.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { SUBMIT_ROUTES } from "../../api/schemas.js";
import { parseJobType, parseParams, parseS3Url, typePath } from "../../client/args.js";
import { UsageError } from "../../client/errors.js";
import { colorEnabled } from "../../client/output.js";
import { JOB_TYPES } from "../../core/jobs/types.js";

describe("job types", () => {
  test("each type's path is its submit route's, and either names the type", () => {
    assert.equal(SUBMIT_ROUTES.length, JOB_TYPES.length);
    for (const route of SUBMIT_ROUTES) {
      assert.equal(`/jobs/${typePath(route.type)}`, route.path);
      assert.equal(parseJobType(route.type), route.type);
      assert.equal(parseJobType(route.path.replace(/^\/jobs\//, "")), route.type);
      assert.equal(parseJobType(route.path), route.type);
    }
  });

  test("an unknown type is a usage error listing the types", () => {
    assert.throws(
      () => parseJobType("image/sharpen"),
      (err: unknown) =>
        err instanceof UsageError &&
        err.exitCode === 2 &&
        /^unknown job type "image\/sharpen"; the types are image_resize \(image\/resize\), .*analyze \(analyze\), pipeline \(pipeline\)$/.test(
          err.message,
        ),
    );
  });
});

describe("s3:// locations", () => {
  test("bucket and key, the key taken as written", () => {
    assert.deepEqual(parseS3Url("s3://media/in/a b%20c.jpg", "--source"), {
      bucket: "media",
      key: "in/a b%20c.jpg",
    });
    assert.deepEqual(parseS3Url("s3://media", "dest", { keyOptional: true }), { bucket: "media", key: "" });
    assert.deepEqual(parseS3Url("s3://media/dir/", "dest", { keyOptional: true }), {
      bucket: "media",
      key: "dir/",
    });
  });

  for (const [raw, message] of [
    ["media/in/a.jpg", /must be an s3:\/\/bucket\/key URL/],
    ["https://media/in/a.jpg", /must be an s3:\/\/bucket\/key URL/],
    ["s3://Media_Bucket/a.jpg", /"Media_Bucket" is not a bucket name/],
    ["s3://ab/a.jpg", /"ab" is not a bucket name/],
    ["s3://media", /must name an object: s3:\/\/media\/<key>/],
    ["s3://media/", /must name an object/],
    ["s3://media/a\nb", /control characters/],
  ] as const) {
    test(`${JSON.stringify(raw)} is refused`, () => {
      assert.throws(
        () => parseS3Url(raw, "--source"),
        (err: unknown) => err instanceof UsageError && message.test(err.message),
      );
    });
  }
});

describe("parameters", () => {
  test("a value that parses as JSON is JSON, any other a string; pairs override --params", () => {
    assert.deepEqual(
      parseParams(
        [
          "width=800",
          "enlarge=true",
          "format=webp",
          "timestamp=00:01:30",
          'resources={"cpu":"500m"}',
          "tags=[1,2]",
          'watermark_text="2026"',
          "prompt=a=b",
          "empty=",
        ],
        '{"width": 100, "height": 50}',
      ),
      {
        width: 800,
        height: 50,
        enlarge: true,
        format: "webp",
        timestamp: "00:01:30",
        resources: { cpu: "500m" },
        tags: [1, 2],
        watermark_text: "2026",
        prompt: "a=b",
        empty: "",
      },
    );
  });

  for (const [pairs, json, message] of [
    [["width"], undefined, /parameters are key=value \(such as width=800\); got "width"/],
    [["=800"], undefined, /parameters are key=value/],
    [[], "{width", /--params is not valid JSON/],
    [[], "[1]", /--params must be a JSON object/],
  ] as const) {
    test(`${JSON.stringify([...pairs])} ${json ?? ""} is refused`, () => {
      assert.throws(
        () => parseParams([...pairs], json),
        (err: unknown) => err instanceof UsageError && message.test(err.message),
      );
    });
  }
});

test("colours only on a terminal, without NO_COLOR or --no-color", () => {
  const tty = { isTTY: true };
  assert.equal(colorEnabled(tty, undefined, {}), true);
  assert.equal(colorEnabled(tty, true, {}), true);
  assert.equal(colorEnabled(tty, false, {}), false);
  assert.equal(colorEnabled(tty, undefined, { NO_COLOR: "1" }), false);
  assert.equal(colorEnabled(tty, undefined, { NO_COLOR: "" }), true, "an empty NO_COLOR is unset");
  assert.equal(colorEnabled({ isTTY: false }, undefined, {}), false);
  assert.equal(colorEnabled({}, true, {}), false);
});
