// A pipeline's steps as their graph, on the job's page at every state: a column for the source, then
// one for each wave (waves.ts: a step's column after its input's), a node for each step with its name, type, what
// it reads, its state in words and a shape (waiting, running with its percent, completed with its
// output, failed with its error, not run with why), and the edges from each step's input drawn
// between the columns. The job page keeps `job` up to date from the job's stream (steps_progress),
// so the graph follows the run.
import { useLayoutEffect, useRef, useState } from "preact/hooks";
import { ProgressBar } from "../../ui/src/components.js";
import { typeLabel } from "../../ui/src/format.js";
import { downloadObject, IMAGE_OUTPUT, usePreview } from "../../ui/src/preview.js";
import { describeImage, PreviewImage, type ResultViewProps } from "../../ui/src/results.js";
import type { Job } from "../../ui/src/types.js";
import { stepState, type Step, type StepState } from "./step-states.js";
import { ordered } from "./waves.js";

const WORDS: Record<StepState["state"], { label: string; shape: string; badge: string }> = {
  waiting: { label: "waiting", shape: "○", badge: "pending" },
  running: { label: "running", shape: "◐", badge: "processing" },
  completed: { label: "completed", shape: "✓", badge: "completed" },
  failed: { label: "failed", shape: "✕", badge: "failed" },
  "not-run": { label: "not run", shape: "⊘", badge: "cancelled" },
};

// Not a step's name (STEP_NAME_PATTERN): no step can be taken for the source.
const SOURCE_NODE = ":source";
const nodeId = (job: string, name: string) => `pipeline-${job}-${name}`;

/** An edge between two nodes, in the graph's own coordinates. */
interface Edge {
  from: string;
  to: string;
  d: string;
}

/** The edges from each step's input (or the source) to the step, measured from the laid-out nodes. */
function useEdges(
  graph: { current: HTMLDivElement | null },
  links: Array<{ from: string; to: string }>,
  redrawOn: unknown,
): { edges: Edge[]; width: number; height: number } {
  const [drawn, setDrawn] = useState<{ edges: Edge[]; width: number; height: number }>({
    edges: [],
    width: 0,
    height: 0,
  });
  const key = JSON.stringify(links);
  useLayoutEffect(() => {
    const box = graph.current;
    if (!box) return;
    const measure = () => {
      const origin = box.getBoundingClientRect();
      const rectOf = (id: string) =>
        box.querySelector<HTMLElement>(`[data-node="${CSS.escape(id)}"]`)?.getBoundingClientRect();
      const edges: Edge[] = [];
      for (const { from, to } of links) {
        const [a, b] = [rectOf(from), rectOf(to)];
        if (!a || !b) continue;
        const x1 = a.right - origin.left + box.scrollLeft;
        const y1 = a.top + Math.min(a.height / 2, 28) - origin.top + box.scrollTop;
        const x2 = b.left - origin.left + box.scrollLeft;
        const y2 = b.top + Math.min(b.height / 2, 28) - origin.top + box.scrollTop;
        const bend = Math.max(12, (x2 - x1) / 2);
        edges.push({ from, to, d: `M ${x1} ${y1} C ${x1 + bend} ${y1}, ${x2 - bend} ${y2}, ${x2} ${y2}` });
      }
      const next = { edges, width: box.scrollWidth, height: box.scrollHeight };
      setDrawn((now) => (JSON.stringify(now) === JSON.stringify(next) ? now : next));
    };
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(box);
    return () => observer.disconnect();
    // `links` is read through its key; redrawOn: a node's content may have changed its size.
  }, [key, redrawOn]);
  return drawn;
}

/** A file's name in its URL (its last segment, decoded). */
function lastSegment(url: string): string {
  const name = url.split("/").pop() ?? url;
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/**
 * A step's output_url: a link where a browser can follow it (the store's or a CDN's http(s) URL),
 * else (`s3://bucket/key`, no endpoint configured) the address as text.
 */
function OutputLink(props: { url: string }) {
  if (!/^https?:\/\//i.test(props.url)) {
    return (
      <span class="mono" data-testid="pipeline-node-output">
        {props.url}
      </span>
    );
  }
  return (
    <a href={props.url} rel="noreferrer" data-testid="pipeline-node-output">
      {lastSegment(props.url)}
    </a>
  );
}

/** Saves a step's output, read through the API with the key (the object store need not be reachable). */
function StepDownload(props: { job: Job; name: string; url: string }) {
  const [state, setState] = useState<{ busy: boolean; error?: string }>({ busy: false });
  const save = async () => {
    setState({ busy: true });
    try {
      await downloadObject(props.job.id, "output", lastSegment(props.url), props.name);
      setState({ busy: false });
    } catch (err) {
      setState({ busy: false, error: `Could not download: ${(err as Error).message}` });
    }
  };
  return (
    <>
      <button
        type="button"
        class="pipeline-node-download"
        disabled={state.busy}
        onClick={() => void save()}
        data-testid="pipeline-node-download"
      >
        {state.busy ? "Downloading…" : "Download"}
        <span class="visually-hidden"> the output of step {props.name}</span>
      </button>
      {state.error && <p class="error-message">{state.error}</p>}
    </>
  );
}

function StepNode(props: { job: Job; name: string; step: Step; state: StepState }) {
  const { job, name, step, state } = props;
  const words = WORDS[state.state];
  const result = state.state === "completed" ? state.result : undefined;
  // An image a step wrote: its preview through the API, as a job's output has.
  const showsImage = result?.output_url !== undefined && IMAGE_OUTPUT.has(step.type ?? "");
  const preview = usePreview(job.id, "output", showsImage, name);
  return (
    <li
      class={`pipeline-node pipeline-node-${state.state}`}
      id={nodeId(job.id, name)}
      data-node={name}
      data-testid="pipeline-node"
      data-step={name}
      data-state={state.state}
    >
      <p class="pipeline-node-head">
        <strong class="mono">{name}</strong>{" "}
        <span class={`badge badge-${words.badge}`} data-testid="pipeline-node-state">
          <span class="badge-shape" aria-hidden="true">
            {words.shape}
          </span>
          <span class="badge-text">{words.label}</span>
        </span>
      </p>
      <p class="pipeline-node-type">{step.type ? typeLabel(step.type) : "—"}</p>
      <p class="subtle">
        reads{" "}
        {step.input === undefined ? (
          "the source"
        ) : (
          <a href={`#${nodeId(job.id, step.input)}`} class="mono">
            {step.input}
          </a>
        )}
      </p>
      {state.state === "running" && <ProgressBar percent={state.percent} label={`Step ${name}`} />}
      {state.state === "failed" && (
        <p class="error-message" data-testid="pipeline-node-error">
          {state.error}
        </p>
      )}
      {state.state === "not-run" && (
        <p class="subtle" data-testid="pipeline-node-reason">
          {state.reason}
        </p>
      )}
      {showsImage && (
        <PreviewImage
          preview={preview}
          alt={`The output of step ${name}`}
          testId="pipeline-node-preview"
          what="Preview"
        />
      )}
      {result?.output_url && (
        <p class="pipeline-node-output">
          <OutputLink url={result.output_url} />
          {describeImage(result) && <span class="subtle"> · {describeImage(result)}</span>}{" "}
          <StepDownload job={job} name={name} url={result.output_url} />
        </p>
      )}
    </li>
  );
}

/** The graph of a pipeline's steps, at every state of the job. */
export function PipelineGraph(props: ResultViewProps) {
  const { job } = props;
  const steps = (job.parameters as { steps?: Record<string, Step> }).steps ?? {};
  const names = Object.keys(steps);
  const { waves, left } = ordered(names, steps);
  // A record's steps are a valid graph (the submission was checked); anything else is shown last.
  const columns = left.length > 0 ? [...waves, left] : waves;
  const states = Object.fromEntries(names.map((name) => [name, stepState(job, steps, name)]));
  const links = names.map((name) => ({ from: steps[name]!.input ?? SOURCE_NODE, to: name }));
  const graph = useRef<HTMLDivElement>(null);
  const { edges, width, height } = useEdges(graph, links, JSON.stringify(states));
  const done = names.filter((name) => states[name]!.state === "completed").length;
  return (
    <section class="pipeline" aria-labelledby="pipeline-heading" data-testid="pipeline-graph">
      <h2 id="pipeline-heading">Steps</h2>
      <p class="subtle" data-testid="pipeline-summary">
        {done} of {names.length} steps completed, in {waves.length} {waves.length === 1 ? "wave" : "waves"}; a
        step runs once the step it reads has.
      </p>
      <div class="pipeline-graph" ref={graph}>
        <svg
          class="pipeline-edges"
          aria-hidden="true"
          width={width}
          height={height}
          viewBox={`0 0 ${width} ${height}`}
        >
          {edges.map((edge) => (
            <path
              d={edge.d}
              class={`pipeline-edge pipeline-edge-${states[edge.to]?.state ?? "waiting"}`}
              data-from={edge.from}
              data-to={edge.to}
            />
          ))}
        </svg>
        <section class="pipeline-wave" aria-label="Source">
          <h3>Source</h3>
          <ol>
            <li
              class="pipeline-node pipeline-node-source"
              data-node={SOURCE_NODE}
              data-testid="pipeline-source"
            >
              <p class="pipeline-node-head">
                <strong>Source</strong>
              </p>
              <p class="mono subtle">
                {job.source_bucket}/{job.source_key}
              </p>
            </li>
          </ol>
        </section>
        {columns.map((wave, i) => (
          <section class="pipeline-wave" aria-label={`Wave ${i + 1}`}>
            <h3>Wave {i + 1}</h3>
            <ol>
              {wave.map((name) => (
                <StepNode job={job} name={name} step={steps[name]!} state={states[name]!} />
              ))}
            </ol>
          </section>
        ))}
      </div>
    </section>
  );
}

export default PipelineGraph;

/** The job page shows this view at every state of the job, not only with its result (ui/src/result-views.ts). */
export const live = true;
