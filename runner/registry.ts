import { definitionOf, JOB_TYPES, type JobType } from "../core/jobs/types.js";
import type { Processor } from "./processor.js";

// Each type's processor is jobs/<type>/processor.ts, whose default export is the Processor. It is
// loaded on first use, so a runner for an image job never loads ffmpeg's wrapper and the other way
// round (a runner starts faster when it loads less), and no other process loads one at all.
const loaded = new Map<JobType, Promise<Processor>>();

export function loadProcessor(type: JobType): Promise<Processor> {
  let processor = loaded.get(type);
  if (!processor) {
    processor = import(`../jobs/${type}/processor.js`).then((module: { default?: Processor }) => {
      if (typeof module.default !== "function")
        throw new Error(`jobs/${type}/processor: its default export is not a processor`);
      return module.default;
    });
    loaded.set(type, processor);
  }
  return processor;
}

/**
 * The types whose processors read the source only through openImage (a file or its bytes): a small
 * source of theirs is kept in memory (limits.in_memory_source_bytes). The others hand a file to
 * ffmpeg and ffprobe.
 */
export const IN_MEMORY_TYPES: ReadonlySet<JobType> = new Set(
  JOB_TYPES.filter((type) => definitionOf(type).runner.inMemorySource),
);
