// The result view of each job type: the default export of jobs/<type>/view.tsx, found by the
// folder's name (Vite bundles every such file), so a new type brings its view with it. A view.tsx
// that exports `live = true` is shown at every state of the job, not only with its result, fed the
// job as its stream updates it (a pipeline's graph of steps).
import type { ComponentType } from "preact";
import type { ResultViewProps } from "./results.js";

/** What a view.tsx exports: its view, and whether the view is shown at every state of a job. */
interface ViewModule {
  default: ComponentType<ResultViewProps>;
  live?: boolean;
}

const MODULES = import.meta.glob<ViewModule>("../../jobs/*/view.tsx", { eager: true });

const BY_TYPE = new Map(
  Object.entries(MODULES).map(([path, module]) => [path.split("/").at(-2)!, module] as const),
);

/** The view of a type's result; none for a type this build does not know. */
export function resultView(type: string): ComponentType<ResultViewProps> | undefined {
  return BY_TYPE.get(type)?.default;
}

/** Whether a type's view is shown at every state of a job (its `live` export), not only with a result. */
export function isLive(type: string): boolean {
  return BY_TYPE.get(type)?.live === true;
}
