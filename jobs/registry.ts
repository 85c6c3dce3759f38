// The job types: one line each, in the order the interface lists them (the API's routes, the
// configuration's per-type settings, the dashboard's lists). Each is a folder of its own:
// definition.ts (this list's entry), processor.ts (loaded by the runner, by the folder's name) and
// view.tsx (the dashboard's result view, found the same way). docs/architecture.md says more;
// test/unit/job-types.test.ts checks that every type has every part.
import { definition as imageResize } from "./image_resize/definition.js";
import { definition as imageOptimize } from "./image_optimize/definition.js";
import { definition as imageWatermark } from "./image_watermark/definition.js";
import { definition as imageColors } from "./image_colors/definition.js";
import { definition as imageMetadata } from "./image_metadata/definition.js";
import { definition as imageAiKeywords } from "./image_ai_keywords/definition.js";
import { definition as videoThumbnail } from "./video_thumbnail/definition.js";
import { definition as videoTranscode } from "./video_transcode/definition.js";
import { definition as videoAdaptive } from "./video_adaptive/definition.js";
import { definition as audioConvert } from "./audio_convert/definition.js";
import { definition as mediaProbe } from "./media_probe/definition.js";
import { definition as analyze } from "./analyze/definition.js";
import { definition as pipeline } from "./pipeline/definition.js";

export const JOB_DEFINITIONS = [
  imageResize,
  imageOptimize,
  imageWatermark,
  imageColors,
  imageMetadata,
  imageAiKeywords,
  videoThumbnail,
  videoTranscode,
  videoAdaptive,
  audioConvert,
  mediaProbe,
  analyze,
  pipeline,
] as const;

type Definition = (typeof JOB_DEFINITIONS)[number];
export type JobType = Definition["name"];
/** The definition of one type, with its own parameter schema's type. */
export type DefinitionOf<T extends JobType> = Extract<Definition, { name: T }>;

const BY_NAME = new Map<string, Definition>(JOB_DEFINITIONS.map((d) => [d.name, d]));

/** The definition of a type. */
export function definitionOf<T extends JobType>(type: T): DefinitionOf<T> {
  return BY_NAME.get(type) as DefinitionOf<T>;
}
