import { formatPercent } from "../../ui/src/format.js";
import type { ResultViewProps } from "../../ui/src/results.js";

/** The keywords, each with a bar of its confidence. */
export default function Keywords(props: ResultViewProps) {
  const result = props.result as { keywords?: string[]; confidence_scores?: number[] };
  const keywords = result.keywords ?? [];
  const scores = result.confidence_scores ?? [];
  return (
    <ul class="chips" aria-label="Keywords">
      {keywords.map((keyword, i) => {
        const score = scores[i] ?? 0;
        return (
          <li class="chip">
            <span class="chip-word">{keyword}</span>
            <span class="chip-bar" aria-hidden="true">
              <span class="chip-fill" style={{ width: `${Math.round(score * 100)}%` }} />
            </span>
            <span class="chip-score">{formatPercent(score)}</span>
          </li>
        );
      })}
    </ul>
  );
}
