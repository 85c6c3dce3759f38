// The result view of each job type: the default export of jobs/<type>/view.tsx, found by the
// folder's name (Vite bundles every such file), so a new type brings its view with it.
import type { ComponentType } from "preact";
import type { ResultViewProps } from "./results.js";

const VIEWS = import.meta.glob<ComponentType<ResultViewProps>>("../../jobs/*/view.tsx", {
  eager: true,
  import: "default",
});

const BY_TYPE = new Map(
  Object.entries(VIEWS).map(([path, view]) => [path.split("/").at(-2)!, view] as const),
);

/** The view of a type's result; none for a type this build does not know. */
export function resultView(type: string): ComponentType<ResultViewProps> | undefined {
  return BY_TYPE.get(type);
}
