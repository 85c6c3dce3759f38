import { formatBytes } from "../../ui/src/format.js";
import type { ResultViewProps } from "../../ui/src/results.js";

interface Step {
  type?: string;
  input?: string;
}

type StepResult = { output_url?: string; file_size?: number; error?: string } & Record<string, unknown>;

/** Each step's wave: 1 for a step reading the source, one more than its input's otherwise. */
function waveOf(steps: Record<string, Step>, name: string, seen = new Set<string>()): number {
  const input = steps[name]?.input;
  if (input === undefined || seen.has(name)) return 1;
  seen.add(name);
  return waveOf(steps, input, seen) + 1;
}

/**
 * The steps in wave order (the order they ran in): each one's name, type, what it read, its state
 * (done, failed with its error, running with its percent, waiting) and its output's link and size.
 */
export default function PipelineResultView(props: ResultViewProps) {
  const { job } = props;
  const steps = (job.parameters as { steps?: Record<string, Step> }).steps ?? {};
  const results = (props.result as { steps?: Record<string, StepResult> }).steps ?? {};
  const progress = (job as { steps_progress?: Record<string, number> }).steps_progress ?? {};
  const names = Object.keys(steps).sort((a, b) => waveOf(steps, a) - waveOf(steps, b));
  const stateOf = (name: string): string => {
    const result = results[name];
    if (result?.error !== undefined) return `failed: ${result.error}`;
    if (result) return "done";
    if (progress[name] !== undefined) return `running, ${progress[name]} %`;
    return job.status === "failed" ? "not run" : "waiting";
  };
  return (
    <table class="facts pipeline-steps" data-testid="pipeline-steps">
      <thead>
        <tr>
          <th scope="col">Wave</th>
          <th scope="col">Step</th>
          <th scope="col">Type</th>
          <th scope="col">Reads</th>
          <th scope="col">State</th>
          <th scope="col">Output</th>
        </tr>
      </thead>
      <tbody>
        {names.map((name) => {
          const result = results[name];
          return (
            <tr data-testid="pipeline-step">
              <td>{waveOf(steps, name)}</td>
              <td class="mono">{name}</td>
              <td>{steps[name]?.type ?? "—"}</td>
              <td class="mono">{steps[name]?.input ?? "source"}</td>
              <td>{stateOf(name)}</td>
              <td>
                {result?.output_url ? (
                  <a href={result.output_url} rel="noreferrer">
                    {result.output_url.split("/").pop()}
                  </a>
                ) : (
                  "—"
                )}
                {result?.file_size !== undefined ? ` · ${formatBytes(result.file_size)}` : ""}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
