import { render, type JSX } from "preact";
import { useEffect, useRef } from "preact/hooks";
import { checkSession, session, signOut } from "./api.js";
import { ChartPatterns } from "./chart.js";
import { Notice } from "./components.js";
import { BatchesPage, BatchPage } from "./pages/batches.js";
import { JobPage } from "./pages/job.js";
import { JobsPage } from "./pages/jobs.js";
import { LoginPage } from "./pages/login.js";
import { OverviewPage } from "./pages/overview.js";
import { TemplatesPage } from "./pages/templates.js";
import { Link, match, navigate, useLocation } from "./router.js";
import { useStore } from "./store.js";
import "./styles.css";

const NAV = [
  { href: "/", label: "Overview", current: (path: string) => path === "/" },
  { href: "/jobs", label: "Jobs", current: (path: string) => path.startsWith("/jobs") },
  { href: "/batches", label: "Batches", current: (path: string) => path.startsWith("/batches") },
  { href: "/templates", label: "Templates", current: (path: string) => path === "/templates" },
];

function route(path: string): { title: string; page: JSX.Element } {
  let params: Record<string, string> | null;
  if (path === "/") return { title: "Overview", page: <OverviewPage /> };
  if (path === "/jobs") return { title: "Jobs", page: <JobsPage /> };
  if ((params = match("/jobs/:id", path))) {
    return { title: `Job ${params.id!.slice(0, 8)}`, page: <JobPage id={params.id!} key={params.id} /> };
  }
  if (path === "/batches") return { title: "Batches", page: <BatchesPage /> };
  if (path === "/templates") return { title: "Templates", page: <TemplatesPage /> };
  if ((params = match("/batches/:id", path))) {
    return { title: `Batch ${params.id}`, page: <BatchPage id={params.id!} key={params.id} /> };
  }
  return {
    title: "Not found",
    page: (
      <main id="main" tabIndex={-1}>
        <h1>Page not found</h1>
        <p>
          The dashboard has no page here. <Link href="/">Go to the overview</Link>.
        </p>
      </main>
    ),
  };
}

function App() {
  const state = useStore(session);
  const { path } = useLocation();
  useEffect(() => void checkSession(), []);
  // The login view is not a page of its own: after signing in, the page asked for is shown.
  useEffect(() => {
    if (path === "/login" && state.kind === "ready") navigate("/", { replace: true });
  }, [path, state.kind]);

  const { title, page } =
    state.kind === "ready" ? route(path) : { title: "Sign in", page: null as JSX.Element | null };
  useEffect(() => {
    document.title = `${state.kind === "login" ? "Sign in" : title} · media-service`;
  }, [title, state.kind]);
  // After a change of page, focus moves to its main region, so keyboard and screen reader users start
  // there (the skip link does the same on demand).
  const first = useRef(true);
  useEffect(() => {
    // Not on the first page of a visit: there, Tab starts from the top (the skip link).
    if (first.current) {
      first.current = state.kind === "checking";
      return;
    }
    document.getElementById("main")?.focus({ preventScroll: true });
  }, [path, state.kind]);

  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <ChartPatterns />
      <header class="top">
        <Link href="/" class="brand">
          media-service
        </Link>
        {state.kind === "ready" && (
          <nav aria-label="Main">
            <ul>
              {NAV.map((item) => (
                <li>
                  <Link href={item.href} aria-current={item.current(path) ? "page" : undefined}>
                    {item.label}
                  </Link>
                </li>
              ))}
            </ul>
          </nav>
        )}
        {state.kind === "ready" && state.keyRequired && (
          <button type="button" class="link-button" onClick={signOut}>
            Sign out
          </button>
        )}
      </header>
      {state.kind === "checking" && (
        <main id="main" tabIndex={-1}>
          <p class="loading" role="status">
            Connecting to the API…
          </p>
        </main>
      )}
      {state.kind === "unreachable" && (
        <main id="main" tabIndex={-1}>
          <h1>The API is not answering</h1>
          <Notice kind="error">{state.message}</Notice>
          <button type="button" onClick={() => void checkSession()}>
            Try again
          </button>
        </main>
      )}
      {state.kind === "login" && <LoginPage notice={state.notice} />}
      {page}
    </>
  );
}

render(<App />, document.getElementById("app")!);
