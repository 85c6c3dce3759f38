// What a job type declares about itself, in its folder (jobs/<type>/definition.ts): everything the
// API, the configuration, the CLI, the chart and the dashboard say of it. Pure: schemas and text,
// no I/O, nothing of the services, so every process (and the dashboard's build) may read it. The
// type's processor (jobs/<type>/processor.ts, runner only) and its result view
// (jobs/<type>/view.tsx, dashboard only) sit beside it and are found by the folder's name.
import type { Static, TObject } from "../core/typebox.js";
import type { SchemaBounds } from "../core/jobs/bounds.js";

/** What a file is: an image, a video, audio, or (an analyze job's source) any of them. */
export type MediaKind = "image" | "video" | "audio" | "any";

/**
 * The default requests and limits a type's runners get (kubernetes.resources.<type>): `video` is
 * for heavy video work (encoding whole videos), `media` for reading a little of a video or audio.
 */
export type ResourceClass = "image" | "media" | "video" | "ai";

export interface JobTypeDefinition<Name extends string = string, Parameters extends TObject = TObject> {
  /** The type's name: its queue, the `type` of its jobs, and its folder under jobs/. */
  name: Name;
  /** Its submit route under /api/v1 (the path is also what the CLI accepts as the type). */
  route: { path: `/jobs/${string}`; summary: string };
  /** What its source is, and its output (null: it writes no output file, and takes no dest_*). */
  media: { source: MediaKind; output: MediaKind | null };
  /**
   * A type that writes many objects under a prefix takes `dest_prefix` instead of `dest_key`: this
   * gives the key its job is recorded with (dest_key), the object a client starts from (a master
   * playlist), from the prefix and the parameters.
   */
  entryKey?: (prefix: string, parameters: Record<string, unknown>) => string;
  /**
   * Its parameters, with the configuration's bounds: names, rules, defaults and descriptions, as
   * the API validates them, the OpenAPI document and `submit --help` show them, and the processor
   * reads them (withDefaults). A field with a default is never Type.Optional (its Static type has it).
   */
  parameters: (bounds: SchemaBounds) => Parameters;
  /**
   * The parameters of a small valid job (the schema's defaults fill in the rest): what the tests that
   * run every type submit beside a source of its media.source, so that a new type needs no test edit.
   */
  example: Partial<Static<Parameters>>;
  /**
   * Its result's shape, named in the OpenAPI document (types that share a shape share its name; the
   * document describes each shape with the types that have it).
   */
  result: { name: string; schema: TObject };
  /**
   * A rule across its parameters that a schema cannot say (e.g. distinct values in a list of
   * objects): the sentence a 400 says, or undefined. Run on every submission after the schema, with
   * the configuration's bounds.
   */
  check?: (parameters: Record<string, unknown>, bounds: SchemaBounds) => string | undefined;
  /**
   * A type whose parts each name where they write (the pipeline): its body takes `dest_bucket` and
   * `dest_prefix`, both optional, and they are recorded in its parameters too, where its `check` and
   * its processor read them.
   */
  destinationsInParameters?: boolean;
  /** How its runners run. */
  runner: {
    /** executor.timeouts.<type>: a Go-style duration. */
    timeout: string;
    /** kubernetes.resources.<type>'s defaults. */
    resources: ResourceClass;
    /**
     * The processor reads its source only through openImage (a file or its bytes), so a small
     * source is kept in memory (limits.in_memory_source_bytes); otherwise it hands a file to ffmpeg.
     */
    inMemorySource: boolean;
    /** It calls an AI provider (its runners get the providers' settings). */
    ai?: boolean;
  };
}

/** A definition as written, its name and parameter schema kept as their own types. */
export function defineJobType<const Name extends string, Parameters extends TObject>(
  definition: JobTypeDefinition<Name, Parameters>,
): JobTypeDefinition<Name, Parameters> {
  return definition;
}

/** The prefix a type that writes under one (`entryKey`) recorded its job with: the key less its last segment. */
export const prefixOfEntry = (destKey: string) => destKey.slice(0, destKey.lastIndexOf("/"));
