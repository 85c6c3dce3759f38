// Vite's additions to the browser code's modules (import.meta.glob), and the job types' lists, which
// vite.config.ts makes at build time from the registry (jobs/registry.ts).
/// <reference types="vite/client" />

declare module "virtual:job-types" {
  /** The job types, in the registry's order. */
  export const JOB_TYPES: readonly string[];
  /** What each type's source and output are (image, video, audio, any; null: no output file). */
  export const JOB_MEDIA: Readonly<Record<string, { source: string; output: string | null }>>;
}
