// The result view of each job type: the default export of jobs/<type>/view.tsx, found by the
// folder's name (Vite bundles every such file), so a new type brings its view with it. A view.tsx
// that exports `live = true` is shown at every state of the job, not only with its result, fed the
// job as its stream updates it (a pipeline's graph of steps).
import type { ComponentType } from "preact";
import type { ResultViewProps } from "./results.js";

const VIEWS = import.meta.glob<ComponentType<ResultViewProps>>("../../jobs/*/view.tsx", {
  eager: true,
  import: "default",
});

const LIVE = import.meta.glob<boolean | undefined>("../../jobs/*/view.tsx", { eager: true, import: "live" });

const byType = <T>(exports: Record<string, T>) =>
  new Map(Object.entries(exports).map(([path, value]) => [path.split("/").at(-2)!, value] as const));

const BY_TYPE = byType(VIEWS);
const LIVE_BY_TYPE = byType(LIVE);

/** The view of a type's result; none for a type this build does not know. */
export function resultView(type: string): ComponentType<ResultViewProps> | undefined {
  return BY_TYPE.get(type);
}

/** Whether a type's view is shown at every state of a job (its `live` export), not only with a result. */
export function isLive(type: string): boolean {
  return LIVE_BY_TYPE.get(type) === true;
}
