// A time chart in plain SVG: stacked bars and lines over one stretch of time per point (a minute, or several). A few dozen lines do
// what the overview needs, where a charting library would weigh more than the rest of the dashboard.
// Each series has its own pattern or dash as well as its colour, the figure says its totals in words,
// and the numbers are in a table beside it.
import { formatTime } from "./format.js";

export interface Series {
  name: string;
  /** One value per point; null: no value (a line has a gap there). */
  values: Array<number | null>;
  kind: "bar" | "line";
  /** CSS class giving colour and pattern: series-completed, series-failed, series-p50, … */
  className: string;
}

// The drawing's own units: about the size a chart is shown at, so its text is about 12 px.
const WIDTH = 400;
const HEIGHT = 170;
const PAD = { left: 50, right: 8, top: 10, bottom: 22 };

/** A round maximum for the y axis: 1, 2, 5 × 10^n at or above `max`. */
function niceMax(max: number): number {
  if (!(max > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * power >= max) return step * power;
  return 10 * power;
}

/** Patterns the charts fill with (failures hatched): defined once per page. */
export function ChartPatterns() {
  return (
    <svg class="chart-patterns" width="0" height="0" aria-hidden="true" focusable="false">
      <defs>
        <pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
          <rect class="hatch-bg" width="6" height="6" />
          <line class="hatch-line" x1="0" y1="0" x2="0" y2="6" />
        </pattern>
      </defs>
    </svg>
  );
}

export function TimeChart(props: {
  title: string;
  summary: string;
  times: string[];
  series: Series[];
  format: (value: number) => string;
  /** Bars of the series are stacked (completed + failed). */
  stacked?: boolean;
}) {
  const { times, series, format } = props;
  const n = times.length;
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const bars = series.filter((s) => s.kind === "bar");
  const lines = series.filter((s) => s.kind === "line");
  let max = 0;
  for (let i = 0; i < n; i++) {
    const barTotal = bars.reduce((sum, s) => sum + (s.values[i] ?? 0), 0);
    max = Math.max(max, barTotal, ...lines.map((s) => s.values[i] ?? 0));
  }
  const top = niceMax(max);
  const x = (i: number) => PAD.left + (n <= 1 ? plotW / 2 : (i / (n - 1)) * plotW);
  const slot = n > 0 ? plotW / n : plotW;
  const y = (v: number) => PAD.top + plotH - (v / top) * plotH;
  // Gridlines at 0, half and the top; a half that reads as one of them (a top of 1 job) is left out.
  const ticks = [0, top / 2, top].filter(
    (t, i, all) => i !== 1 || (format(t) !== format(all[0]!) && format(t) !== format(all[2]!)),
  );
  const labelAt = n > 0 ? [0, Math.floor((n - 1) / 2), n - 1] : [];

  const barRects = [];
  for (let i = 0; i < n; i++) {
    let base = 0;
    for (const s of bars) {
      const v = s.values[i] ?? 0;
      if (v <= 0) continue;
      const left = PAD.left + i * slot + slot * 0.15;
      barRects.push(
        <rect
          class={`bar ${s.className}`}
          x={left}
          width={Math.max(1, slot * 0.7)}
          y={y(base + v)}
          height={Math.max(0.5, y(base) - y(base + v))}
        >
          <title>{`${formatTime(times[i]!)}: ${format(v)} ${s.name}`}</title>
        </rect>,
      );
      base += v;
    }
  }

  const linePaths = lines.map((s) => {
    let d = "";
    let pen = false;
    s.values.forEach((v, i) => {
      if (v === null || v === undefined) {
        pen = false;
        return;
      }
      d += `${pen ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
      pen = true;
    });
    // A lone point (no neighbour to draw a line to) is shown as a dot.
    const dots = s.values
      .map((v, i) => ({ v, i }))
      .filter(
        ({ v, i }) => v !== null && (s.values[i - 1] ?? null) === null && (s.values[i + 1] ?? null) === null,
      )
      .map(({ v, i }) => <circle class={`dot ${s.className}`} cx={x(i)} cy={y(v!)} r={3} />);
    return (
      <g>
        <path class={`line ${s.className}`} d={d} />
        {dots}
      </g>
    );
  });

  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={`${props.title}. ${props.summary}`}>
        {ticks.map((t) => (
          <g class="tick">
            <line x1={PAD.left} x2={WIDTH - PAD.right} y1={y(t)} y2={y(t)} />
            <text x={PAD.left - 6} y={y(t) + 4} text-anchor="end">
              {format(t)}
            </text>
          </g>
        ))}
        {labelAt.map((i) => (
          <text
            class="axis-label"
            x={bars.length > 0 ? PAD.left + (i + 0.5) * slot : x(i)}
            y={HEIGHT - 6}
            text-anchor={i === 0 ? "start" : i === n - 1 ? "end" : "middle"}
          >
            {formatTime(times[i]!)}
          </text>
        ))}
        {barRects}
        {linePaths}
      </svg>
      <ul class="legend">
        {series.map((s) => (
          <li>
            <svg class="legend-key" viewBox="0 0 24 12" aria-hidden="true">
              {s.kind === "bar" ? (
                <rect class={`bar ${s.className}`} x="2" y="1" width="20" height="10" />
              ) : (
                <line class={`line ${s.className}`} x1="1" y1="6" x2="23" y2="6" />
              )}
            </svg>
            {s.name}
          </li>
        ))}
      </ul>
      <details class="chart-data">
        <summary>Numbers of this chart</summary>
        <div class="table-scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">Time</th>
                {series.map((s) => (
                  <th scope="col">{s.name}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {times.map((t, i) => (
                <tr>
                  <th scope="row">{formatTime(t)}</th>
                  {series.map((s) => {
                    const v = s.values[i];
                    return <td>{v === null || v === undefined ? "—" : format(v)}</td>;
                  })}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
