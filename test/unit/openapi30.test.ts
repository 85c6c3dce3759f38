import assert from "node:assert/strict";
import { test } from "node:test";
import { toOpenApi30 } from "../../api/openapi30.js";
import { CROSS_FIELD_RULE } from "../../core/jobs/patterns.js";
import { definitionOf } from "../../jobs/registry.js";
import { schemaBounds } from "../../core/jobs/bounds.js";
import { loadConfig } from "../../core/config/load.js";

const marked = {
  [CROSS_FIELD_RULE]: true,
  if: { required: ["crf"] },
  then: { properties: { video_bitrate: { not: {} } } },
};
const plain = { if: { required: ["format"] }, then: { properties: { bitrate: { pattern: "^1k$" } } } };

test("marked rules across fields move to x-rules; unmarked if/then and other allOf members stay", () => {
  const schema = {
    type: "object",
    properties: { jobs: { items: { allOf: [marked, plain, { minProperties: 1 }] } } },
  };
  const out = toOpenApi30(schema);
  assert.deepEqual(out.properties.jobs.items, { allOf: [plain, { minProperties: 1 }], "x-rules": [marked] });
  assert.deepEqual(
    schema.properties.jobs.items.allOf,
    [marked, plain, { minProperties: 1 }],
    "the input is untouched",
  );
});

test("an allOf of marked rules only is removed", () => {
  assert.deepEqual(toOpenApi30({ type: "object", allOf: [marked] }), { type: "object", "x-rules": [marked] });
});

test("video_transcode's parameters: every rule of its allOf is marked, so the document has no if/then for it", () => {
  const schema = definitionOf("video_transcode").parameters(schemaBounds(loadConfig({ env: {} })));
  const json = JSON.parse(JSON.stringify(toOpenApi30(schema))) as { allOf?: unknown; "x-rules"?: unknown[] };
  assert.equal(json.allOf, undefined);
  assert.ok((json["x-rules"]?.length ?? 0) > 5, "its rules in x-rules");
  assert.ok(!JSON.stringify({ ...json, "x-rules": [] }).includes('"if"'), "no if outside x-rules");
});
