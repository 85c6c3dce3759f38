// Client-side routes under /ui, on the History API: the API answers every /ui/* path that names no
// file with index.html, so a reload or a shared link opens the same page.
import type { ComponentChildren } from "preact";
import { Store, useStore } from "./store.js";

export const BASE = "/ui";

export interface Location {
  /** The path below /ui, starting with "/". */
  path: string;
  query: URLSearchParams;
}

function read(): Location {
  let path = window.location.pathname;
  if (path.startsWith(BASE)) path = path.slice(BASE.length);
  if (!path.startsWith("/")) path = `/${path}`;
  if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1);
  return { path, query: new URLSearchParams(window.location.search) };
}

export const location = new Store<Location>(read());
window.addEventListener("popstate", () => location.set(read()));

export function useLocation(): Location {
  return useStore(location);
}

/** Goes to a dashboard path ("/jobs?status=failed"); `replace` rewrites the current entry instead. */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const url = `${BASE}${to === "/" ? "/" : to}`;
  if (options.replace) window.history.replaceState(null, "", url);
  else window.history.pushState(null, "", url);
  location.set(read());
  if (!options.replace) window.scrollTo(0, 0);
}

/** A link to a dashboard path, followed without reloading the page (unless opened elsewhere). */
export function Link(props: {
  href: string;
  children: ComponentChildren;
  class?: string;
  "aria-current"?: "page" | undefined;
}) {
  const { href, children, ...rest } = props;
  const onClick = (event: MouseEvent) => {
    if (event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(href);
  };
  return (
    <a {...rest} href={`${BASE}${href === "/" ? "/" : href}`} onClick={onClick}>
      {children}
    </a>
  );
}

/** Matches "/jobs/:id" against a path; the parameters, or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split("/");
  const got = path.split("/");
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const g = got[i]!;
    if (w.startsWith(":")) {
      if (!g) return null;
      params[w.slice(1)] = decodeURIComponent(g);
    } else if (w !== g) return null;
  }
  return params;
}
