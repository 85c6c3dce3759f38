// Submitting a pipeline through the API: its steps recorded as given with the destination in its
// parameters, each rule of its graph refused with a 400 naming the step (on its route and in a
// batch, whose entries come from the registry), bounds from the configuration, and the OpenAPI
// document describing its body.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startTestStack, type TestStack } from "../support/api.js";
import { answer, recorded as recordedJob } from "../support/jobs.js";

let stack: TestStack;

before(async () => {
  stack = await startTestStack({
    apiKeys: ["pipeline-test-key"],
    config: { limits: { max_output_dimension: 4000 } },
  });
});
after(() => stack.close());

const PATH = "/api/v1/jobs/pipeline";
const base = { source_bucket: "media", source_key: "in/photo.jpg", dest_bucket: "out", dest_prefix: "p/" };
const resize = { type: "image_resize", parameters: { width: 100, height: 100 } };

const submit = (body: Record<string, unknown>, path = PATH) => answer(stack, path, body);
const recorded = (id: unknown) => recordedJob(stack, id);

describe("POST /jobs/pipeline", () => {
  test("recorded with its steps, keep_partial's default and the destination in its parameters", async () => {
    const steps = { small: resize, optimized: { type: "image_optimize", input: "small" } };
    const { status, body } = await submit({ ...base, steps });
    assert.equal(status, 202, JSON.stringify(body));
    const job = await recorded(body.job_id);
    assert.equal(job.type, "pipeline");
    assert.equal(job.dest_bucket, "out");
    assert.equal(job.dest_key, undefined);
    assert.deepEqual(job.parameters, { steps, keep_partial: false, dest_bucket: "out", dest_prefix: "p/" });
  });

  test("every rule of the graph is a 400 naming the step and its field", async () => {
    const cases: Array<[Record<string, unknown>, string | RegExp]> = [
      [{ steps: {} }, /steps/],
      [
        { steps: { thumb: { type: "image_resize", parameters: { width: 4001, height: 10 } } } },
        "steps.thumb.parameters.width: must be at most 4000 pixels (limits.max_output_dimension)",
      ],
      // The schema lists the step types, the pipeline not among them.
      [{ steps: { a: { type: "pipeline" } } }, /^steps\.a\.type must be one of image_resize, .*, analyze$/],
      [{ steps: { a: { ...resize, input: "a" } } }, "steps.a.input: a step cannot read its own output"],
      [{ steps: { a: { ...resize, input: "b" } } }, 'steps.a.input: no step is named "b"'],
      [
        { steps: { a: { ...resize, input: "b" }, b: { ...resize, input: "a" } } },
        "steps.a.input: the steps a → b → a read each other in a circle",
      ],
      [
        { steps: { c: { type: "image_colors" }, a: { ...resize, input: "c" } } },
        "steps.a.input: step c (image_colors) writes no file, so no step can read its output",
      ],
      [
        { steps: { a: resize, t: { type: "video_thumbnail" } } },
        /^steps\.t: video_thumbnail reads a video source/,
      ],
      [{ dest_prefix: undefined, steps: { a: resize } }, /^steps\.a: image_resize writes a file: give/],
      [
        { steps: { a: { ...resize, dest_key: "k" }, b: { ...resize, dest_key: "k" } } },
        /^steps\.b: its output would overwrite step a's/,
      ],
      [{ steps: { a: { ...resize, colour: 1 } } }, /unknown field steps\.a\.colour/],
    ];
    for (const [body, message] of cases) {
      const answer = await submit({ ...base, ...body });
      assert.equal(answer.status, 400, JSON.stringify(body));
      if (typeof message === "string") assert.equal(answer.body.error, message, JSON.stringify(body));
      else assert.match(String(answer.body.error), message, JSON.stringify(body));
    }
  });

  test("in a batch: a pipeline entry is recorded, and a broken one names the entry and the step", async () => {
    const entry = {
      type: "pipeline",
      source_bucket: "media",
      source_key: "in/photo.jpg",
      dest_bucket: "out",
      dest_prefix: "b",
      parameters: { steps: { small: resize } },
    };
    const ok = await submit({ jobs: [entry, { ...entry, dest_prefix: "c" }] }, "/api/v1/jobs/batch");
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    const job = await recorded((ok.body.job_ids as string[])[0]);
    assert.equal(job.type, "pipeline");
    assert.deepEqual((job.parameters as { dest_prefix: string }).dest_prefix, "b");
    const broken = { ...entry, parameters: { steps: { small: { ...resize, input: "small" } } } };
    const refused = await submit({ jobs: [entry, broken] }, "/api/v1/jobs/batch");
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error, "jobs[1]: steps.small.input: a step cannot read its own output");
  });

  test("the OpenAPI document describes its body: steps keyed by name, keep_partial, an optional destination", async () => {
    const res = await stack.request("/docs/json");
    const document = (await res.json()) as {
      paths: Record<
        string,
        { post?: { requestBody: { content: Record<string, { schema: Record<string, unknown> }> } } }
      >;
    };
    const schema = document.paths["/api/v1/jobs/pipeline"]!.post!.requestBody.content["application/json"]!
      .schema as {
      properties: Record<string, { additionalProperties?: unknown; default?: unknown }>;
      required: string[];
    };
    assert.ok(schema.properties.steps!.additionalProperties, "steps: an object of steps");
    assert.equal(schema.properties.keep_partial!.default, false);
    assert.deepEqual(schema.required.sort(), ["source_bucket", "source_key", "steps"]);
  });
});
