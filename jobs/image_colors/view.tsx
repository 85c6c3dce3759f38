import type { ResultViewProps } from "../../ui/src/results.js";

/** The dominant colours as swatches, with their shares. */
export default function Colors(props: ResultViewProps) {
  const result = props.result as { colors?: string[]; percentages?: number[] };
  const colors = result.colors ?? [];
  const shares = result.percentages ?? [];
  return (
    <ul class="swatches" aria-label="Dominant colours">
      {colors.map((color, i) => (
        <li class="swatch" data-testid="swatch">
          <span class="swatch-chip" style={{ backgroundColor: color }} aria-hidden="true" />
          <span class="mono">{color}</span>
          <span class="swatch-share">{(shares[i] ?? 0).toFixed(1)} %</span>
        </li>
      ))}
    </ul>
  );
}
