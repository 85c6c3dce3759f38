import { Type } from "../../core/typebox.js";
import { BUCKET_PATTERN, NO_CONTROL_PATTERN } from "../../core/jobs/patterns.js";
import { Enum } from "../../core/jobs/enum.js";
import { defineJobType } from "../define.js";
import { planPipeline, stepTypes } from "./graph.js";

/** A step's name: a key of `steps`. */
export const STEP_NAME_PATTERN = "^[a-z][a-z0-9_-]{0,31}$";
export const PIPELINE_LIMITS = { minSteps: 1, maxSteps: 20 } as const;

// A step of a pipeline. Built when the schemas are (parameters()), not when this file loads: the
// registry imports this file, so its list of types is there only once every definition has loaded.
const Step = () =>
  Type.Object(
    {
      type: Enum(stepTypes(), { description: "The step's job type: any type but pipeline" }),
      parameters: Type.Optional(
        Type.Object(
          {},
          {
            additionalProperties: true,
            description:
              "The type's parameters, as its own route takes them (defaults and bounds alike); checked at submit, an error names the step: steps.<name>.parameters.<field>",
          },
        ),
      ),
      input: Type.Optional(
        Type.String({
          pattern: STEP_NAME_PATTERN,
          description:
            "Another step whose output this one reads (default: the pipeline's source). That step must write one file, of a kind this type reads",
        }),
      ),
      dest_bucket: Type.Optional(
        Type.String({
          pattern: BUCKET_PATTERN,
          description: "Bucket for this step's output; default: the pipeline's dest_bucket",
        }),
      ),
      dest_key: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 1024,
          pattern: NO_CONTROL_PATTERN,
          description:
            "Key of this step's output (a type that writes many objects: the prefix it writes them under); default: `{dest_prefix}/{step}.{ext}`, the extension of the output's format (`{dest_prefix}/{step}/` for many objects)",
        }),
      ),
    },
    { additionalProperties: false },
  );

export const definition = defineJobType({
  name: "pipeline",
  route: {
    path: "/jobs/pipeline",
    summary: "Run several jobs' steps on one source in one job (many outputs, one download)",
  },
  media: { source: "any", output: null },
  destinationsInParameters: true,
  parameters: () =>
    Type.Object(
      {
        steps: Type.Object(
          {},
          {
            additionalProperties: Step(),
            minProperties: PIPELINE_LIMITS.minSteps,
            maxProperties: PIPELINE_LIMITS.maxSteps,
            description: `The steps, ${PIPELINE_LIMITS.minSteps} to ${PIPELINE_LIMITS.maxSteps}, keyed by name (a lowercase letter, then up to 31 lowercase letters, digits, _ or -). A step reads the source or another step's output (\`input\`); a step starts as soon as its input is ready, several at once within the job's CPUs`,
          },
        ),
        keep_partial: Type.Boolean({
          default: false,
          description:
            "When a step fails: keep the outputs of the steps that completed (the job fails with their results and the failed step's error in result.steps); default: remove them",
        }),
      },
      { additionalProperties: false },
    ),
  example: {
    steps: {
      small: { type: "image_resize", parameters: { width: 50, height: 50 } },
      optimized: { type: "image_optimize", input: "small" },
    },
  },
  result: {
    name: "PipelineResult",
    schema: Type.Object({
      steps: Type.Record(
        Type.String(),
        Type.Object(
          {},
          {
            additionalProperties: true,
            description:
              "The step's type's result (with output_url and file_size where it writes a file), or { error } for a step that failed or did not run",
          },
        ),
        { description: "Per step, by name" },
      ),
    }),
  },
  runner: { timeout: "30m", resources: "image", inMemorySource: false },
  check: (parameters, bounds) => {
    const plan = planPipeline(parameters, bounds);
    return typeof plan === "string" ? plan : undefined;
  },
});
