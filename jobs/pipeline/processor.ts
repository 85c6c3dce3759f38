// pipeline: many steps on one source in one job. The runner has downloaded the source once; a step
// starts as soon as its input is ready (the source at once, another step's output when that step has
// written it), as many steps at once as the job has CPUs, in the order planPipeline gives.
// Each step is its type's own processor on a child context: the step as a job of its type, the
// source or its input step's output, a scratch directory of its own, the job's abort signal, its own
// progress. Each step's output is uploaded as the runner uploads a job's one output
// (ctx.uploadOutput), to the step's dest_key or `{dest_prefix}/{step}.{ext}`.
//
// Image steps that read the same input share one decode (runner/image/shared.ts): the input is
// decoded once, auto-oriented, to raw pixels, and each step's openImage reads those.
//
// Failure: a step that fails stops the others (their signal is aborted) and the objects already
// written are removed; the job fails, permanently when the step's error was permanent. With
// keep_partial the other steps go on (those reading a failed step do not run), nothing is removed,
// and the job fails with every step's result or error in result.steps. A retry runs the whole
// pipeline again, onto the same keys.
import { mkdir, writeFile } from "node:fs/promises";
import { extname, join } from "node:path";
import { schemaBounds } from "../../core/jobs/bounds.js";
import { withDefaults } from "../../core/jobs/parameters.js";
import { definitionOf, type JobType } from "../../core/jobs/types.js";
import { pipelineProgress } from "../../core/policy.js";
import { availableCpus } from "../../runner/cpus.js";
import {
  describeError,
  FailedWithResultError,
  isPermanent,
  PermanentError,
  TransientWithResultError,
} from "../../runner/errors.js";
import {
  CONTENT_TYPES,
  EXTENSIONS as IMAGE_EXTENSIONS,
  type OutputFormat,
} from "../../runner/image/encode.js";
import { sharedDecodes } from "../../runner/image/shared.js";
import type { ObjectWriter, OutputData, ProcessContext, Processor } from "../../runner/processor.js";
import { loadProcessor } from "../../runner/registry.js";
import { planPipeline, stepOutput, trimPrefix, type PipelineParameters, type PipelineStep } from "./graph.js";
import { NOT_RUN } from "./step-states.js";

/** What a step's output is to the steps that read it. */
type StepSource = { path: string; contentType: string } | { buffer: Buffer; contentType: string };

/** A content type's extension: the image encoder's own formats, and what other steps write. */
const EXTENSIONS: Record<string, string> = {
  ...Object.fromEntries(
    (Object.keys(CONTENT_TYPES) as OutputFormat[]).map((f) => [
      CONTENT_TYPES[f],
      IMAGE_EXTENSIONS[f].slice(1),
    ]),
  ),
  "image/gif": "gif",
  "image/tiff": "tiff",
  "video/quicktime": "mov",
  "video/x-matroska": "mkv",
  "audio/mpeg": "mp3",
};

/** The extension of an output's key: its file's, else its format's. */
export function extensionOf(output: OutputData): string {
  const fromPath = "path" in output ? extname(output.path).slice(1).toLowerCase() : "";
  if (/^[a-z0-9]{1,8}$/.test(fromPath)) return fromPath;
  const type = output.contentType.split(";")[0]!.trim().toLowerCase();
  return EXTENSIONS[type] ?? type.split("/")[1]?.replace(/^x-/, "") ?? "bin";
}

/** At most `limit` holders at once; the others wait their turn, first come first served. */
class Slots {
  private readonly waiting: Array<() => void> = [];

  constructor(private free: number) {}

  async take(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

/** The objects a pipeline has written, by bucket: what a failure removes. */
class Written {
  private readonly byBucket = new Map<string, Set<string>>();

  add(bucket: string, key: string): void {
    let keys = this.byBucket.get(bucket);
    if (!keys) this.byBucket.set(bucket, (keys = new Set()));
    keys.add(key);
  }

  forget(bucket: string, keys: readonly string[]): void {
    for (const key of keys) this.byBucket.get(bucket)?.delete(key);
  }

  /** An ObjectWriter that notes what a step writes through it (a ladder's segments and playlists). */
  noting(objects: ObjectWriter): ObjectWriter {
    return {
      upload: async (bucket, key, path, contentType, signal) => {
        const size = await objects.upload(bucket, key, path, contentType, signal);
        this.add(bucket, key);
        return size;
      },
      remove: async (bucket, keys) => {
        await objects.remove(bucket, keys);
        this.forget(bucket, keys);
      },
    };
  }

  async removeAll(objects: ObjectWriter): Promise<number> {
    let count = 0;
    for (const [bucket, keys] of this.byBucket) {
      await objects.remove(bucket, [...keys]);
      count += keys.size;
    }
    this.byBucket.clear();
    return count;
  }
}

export const pipeline: Processor = async (ctx) => {
  const parameters = ctx.job.parameters as unknown as PipelineParameters;
  const plan = planPipeline(ctx.job.parameters, schemaBounds(ctx.config));
  if (typeof plan === "string") throw new PermanentError(plan);
  const { steps } = parameters;
  const keepPartial = parameters.keep_partial === true;
  const objects = ctx.objects;
  const upload = ctx.uploadOutput;
  if (!objects || !upload) throw new Error("pipeline: the runner gave no way to write objects");
  const stop = new AbortController();
  const signal = AbortSignal.any([ctx.signal, stop.signal]);
  const written = new Written();
  const noting = written.noting(objects);

  const names = plan.waves.flat();
  const percents: Record<string, number> = Object.fromEntries(names.map((name) => [name, 0]));
  const typeOf = (name: string) => steps[name]!.type as JobType;
  const report = (message: string) =>
    ctx.progress(
      pipelineProgress(percents, (name) => definitionOf(typeOf(name)).runner.resources),
      message,
      { ...percents },
    );

  const outputs = new Map<string, StepSource>();
  const readBy = new Set(names.map((name) => steps[name]!.input).filter((i) => i !== undefined));
  const results: Record<string, Record<string, unknown>> = {};
  let failure: { name: string; err: unknown } | undefined;

  const runStep = async (name: string, shared: Map<string | undefined, Buffer>) => {
    const step = steps[name]!;
    const type = typeOf(name);
    const definition = definitionOf(type);
    const stepParameters = withDefaults(type, step.parameters ?? {}) as Record<string, unknown>;
    const bucket = step.dest_bucket ?? parameters.dest_bucket;
    const prefix = parameters.dest_prefix !== undefined ? trimPrefix(parameters.dest_prefix) : undefined;
    const scratchDir = join(ctx.scratchDir, "steps", name);
    await mkdir(scratchDir, { recursive: true });
    const source = await sourceOf(step, scratchDir, definition.runner.inMemorySource);
    const entryKey = "entryKey" in definition ? definition.entryKey : undefined;
    const job = {
      ...ctx.job,
      type,
      parameters: stepParameters,
      ...(bucket !== undefined ? { dest_bucket: bucket } : {}),
      ...(entryKey
        ? { dest_key: entryKey(trimPrefix(step.dest_key ?? `${prefix}/${name}`), stepParameters) }
        : {}),
    };
    if (!entryKey) delete (job as { dest_key?: string }).dest_key;
    // The step's own source only: not the pipeline's, whatever the pipeline's context holds.
    const { sourceBuffer: _buffer, sourceContentType: _type, ...common } = ctx;
    const child: ProcessContext = {
      ...common,
      job,
      ...source,
      scratchDir,
      signal,
      progress: (percent) => {
        percents[name] = Math.min(100, Math.max(0, Math.round(percent)));
        report(`step ${name}: ${type}`);
      },
      objects: noting,
      logger: ctx.logger.child({ step: name, step_type: type }),
    };
    // Its input decoded once for the wave's image steps (runner/image/shared.ts).
    const decoded = shared.get(step.input);
    if (decoded !== undefined) child.sourceBuffer = decoded;
    const processor = await loadProcessor(type);
    const out = await processor(child);
    signal.throwIfAborted();
    let result: Record<string, unknown> = { ...out.result };
    if (out.output) {
      const to = stepOutput(parameters, name, extensionOf(out.output));
      if (!to) throw new PermanentError(`${type} needs a dest_bucket and a dest_key or dest_prefix`);
      const where = await upload(to.bucket, to.key, out.output, signal);
      written.add(to.bucket, to.key);
      result = { ...where, ...result };
      if (readBy.has(name)) outputs.set(name, out.output);
    }
    percents[name] = 100;
    report(`step ${name} done`);
    ctx.logger.info({ step: name, step_type: type }, "pipeline step completed");
    return result;
  };

  /** A step's source: the job's, or its input step's output (a file where its type reads files). */
  const sourceOf = async (
    step: PipelineStep,
    scratchDir: string,
    inMemory: boolean,
  ): Promise<Pick<ProcessContext, "sourcePath" | "sourceBuffer" | "sourceContentType">> => {
    if (step.input === undefined) {
      return {
        sourcePath: ctx.sourcePath,
        ...(ctx.sourceBuffer ? { sourceBuffer: ctx.sourceBuffer } : {}),
        ...(ctx.sourceContentType ? { sourceContentType: ctx.sourceContentType } : {}),
      };
    }
    const input = outputs.get(step.input)!;
    if ("path" in input) return { sourcePath: input.path, sourceContentType: input.contentType };
    const path = join(scratchDir, `input.${extensionOf(input)}`);
    if (inMemory)
      return { sourcePath: path, sourceBuffer: input.buffer, sourceContentType: input.contentType };
    await writeFile(path, input.buffer);
    return { sourcePath: path, sourceContentType: input.contentType };
  };

  const slots = new Slots(availableCpus());
  const order = new Map(names.map((name, i) => [name, i]));
  const readersOf = (input: string | undefined) =>
    names.filter((name) => steps[name]!.input === input).sort((a, b) => order.get(a)! - order.get(b)!);

  /** Runs the steps reading `input` (undefined: the source), which is ready, and theirs after them. */
  const runReaders = async (input: string | undefined): Promise<void> => {
    const group = readersOf(input);
    if (group.length === 0) return;
    // Image steps reading one input share its decode (when it decodes).
    const shared = signal.aborted
      ? new Map<string | undefined, Buffer>()
      : await sharedDecodes(
          group.map((name) => ({ input, type: typeOf(name), parameters: steps[name]!.parameters })),
          () =>
            input === undefined ? (ctx.sourceBuffer ?? ctx.sourcePath) : bytesOrPath(outputs.get(input)!),
          ctx,
        ).catch((err: unknown) => {
          // An input that cannot be decoded: each step opens it on its own, and fails with its name.
          ctx.logger.debug({ error: describeError(err) }, "pipeline: no shared decode");
          return new Map<string | undefined, Buffer>();
        });
    await Promise.all(
      group.map(async (name) => {
        await slots.take();
        try {
          if (signal.aborted) {
            results[name] = { error: `${NOT_RUN}the pipeline was stopped` };
            return;
          }
          results[name] = await runStep(name, shared);
        } catch (err) {
          results[name] = { error: describeError(err) };
          failure ??= { name, err };
          ctx.logger.info(
            { step: name, step_type: typeOf(name), error: describeError(err) },
            "pipeline step failed",
          );
          if (!keepPartial) stop.abort(new Error(`step ${name} failed`));
        } finally {
          slots.give();
        }
        if (outputs.has(name)) return runReaders(name);
        const error = results[name]?.error;
        const why =
          typeof error !== "string"
            ? "wrote no output"
            : error.startsWith(NOT_RUN)
              ? "did not run"
              : "failed";
        for (const reader of readersOf(name)) skip(reader, `${NOT_RUN}its input step ${name} ${why}`);
      }),
    );
  };
  /** A step that will not run, and every step after it. */
  const skip = (name: string, error: string) => {
    results[name] = { error };
    for (const reader of readersOf(name)) skip(reader, `${NOT_RUN}its input step ${name} did not run`);
  };
  await runReaders(undefined);
  const ordered = Object.fromEntries(
    Object.keys(steps).map((name) => [name, results[name] ?? { error: `${NOT_RUN}an earlier step failed` }]),
  );
  if (!failure) return { result: { steps: ordered } };

  const { name, err } = failure;
  const message = `step ${name} (${typeOf(name)}): ${describeError(err)}`;
  const permanent = isPermanent(err) && !ctx.signal.aborted;
  if (!keepPartial) {
    const removed = await written.removeAll(objects);
    if (removed > 0) ctx.logger.info({ removed }, "pipeline failed: the outputs it had written are removed");
    throw permanent ? new PermanentError(message) : ctx.signal.aborted ? err : new Error(message);
  }
  if (permanent) throw new FailedWithResultError(message, { steps: ordered });
  throw ctx.signal.aborted ? err : new TransientWithResultError(message, { steps: ordered });
};

const bytesOrPath = (source: StepSource): string | Buffer =>
  "buffer" in source ? source.buffer : source.path;

export default pipeline;
