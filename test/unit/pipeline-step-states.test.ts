// stepState (jobs/pipeline/step-states.ts): what the dashboard's graph of a pipeline says of each
// step, from the job's record at each of its states: waiting, running with its percent once its input
// is done, completed, failed with its error, not run with why.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Job } from "../../core/jobs/records.js";
import { stepState, type Step } from "../../jobs/pipeline/step-states.js";

const STEPS: Record<string, Step> = {
  small: { type: "image_resize" },
  tiny: { type: "image_resize", input: "small" },
  colours: { type: "image_colors" },
};

const job = (fields: Partial<Job>): Job => ({
  id: "j1",
  type: "pipeline",
  status: "pending",
  source_bucket: "in",
  source_key: "a.jpg",
  parameters: { steps: STEPS },
  created_at: "2026-01-01T00:00:00Z",
  updated_at: "2026-01-01T00:00:00Z",
  ...fields,
});

const states = (record: Job) =>
  Object.fromEntries(Object.keys(STEPS).map((name) => [name, stepState(record, STEPS, name)]));

describe("stepState", () => {
  test("pending, or processing before the first report: every step waits", () => {
    for (const record of [job({}), job({ status: "processing" })]) {
      assert.deepEqual(Object.values(states(record)), [
        { state: "waiting" },
        { state: "waiting" },
        { state: "waiting" },
      ]);
    }
  });

  test("processing: a step at 100 % is completed; one whose input is done runs with its percent; one whose input is not waits", () => {
    const running = job({ status: "processing", steps_progress: { small: 40, tiny: 0, colours: 100 } });
    assert.deepEqual(states(running), {
      small: { state: "running", percent: 40 },
      tiny: { state: "waiting" },
      colours: { state: "completed" },
    });
    const later = job({ status: "processing", steps_progress: { small: 100, tiny: 0, colours: 100 } });
    assert.deepEqual(stepState(later, STEPS, "tiny"), { state: "running", percent: 0 });
  });

  test("steps_progress left on a record that is no longer processing is not read", () => {
    const record = job({ status: "pending", steps_progress: { small: 100, tiny: 50, colours: 100 } });
    assert.deepEqual(stepState(record, STEPS, "small"), { state: "waiting" });
  });

  test("a result's steps: completed with its result, failed with its error, not run with why", () => {
    const small = { output_url: "s3://out/p/small.jpg", file_size: 10 };
    const record = job({
      status: "failed",
      error: "step tiny (image_resize): the output would be too large",
      result: {
        steps: {
          small,
          tiny: { error: "the output would be too large" },
          colours: { error: "not run: the pipeline was stopped" },
        },
      },
    });
    assert.deepEqual(states(record), {
      small: { state: "completed", result: small },
      tiny: { state: "failed", error: "the output would be too large" },
      colours: { state: "not-run", reason: "the pipeline was stopped" },
    });
  });

  test("failed without a result: the step the error names failed, the others have no result; a cancelled job's did not run", () => {
    const failed = job({
      status: "failed",
      error: "step tiny (image_resize): source s3://in/a.jpg not found",
    });
    assert.deepEqual(stepState(failed, STEPS, "tiny"), {
      state: "failed",
      error: "source s3://in/a.jpg not found",
    });
    assert.deepEqual(stepState(failed, STEPS, "small"), {
      state: "not-run",
      reason: "the pipeline stopped when another step failed; no result was kept",
    });
    const cancelled = job({
      status: "failed",
      error: "cancelled by request",
      cancelled_at: "2026-01-01T00:00:01Z",
    });
    assert.deepEqual(stepState(cancelled, STEPS, "small"), {
      state: "not-run",
      reason: "the job was cancelled",
    });
  });

  test("a step whose name begins another's is not taken for it in the job's error", () => {
    const steps: Record<string, Step> = { a: { type: "image_resize" }, ab: { type: "image_resize" } };
    const failed = job({ status: "failed", error: "step ab (image_resize): bad", parameters: { steps } });
    assert.equal(stepState(failed, steps, "a").state, "not-run");
    assert.deepEqual(stepState(failed, steps, "ab"), { state: "failed", error: "bad" });
  });

  test("completed without a result's entry for the step: completed", () => {
    assert.deepEqual(stepState(job({ status: "completed", result: { steps: {} } }), STEPS, "small"), {
      state: "completed",
    });
  });
});
