import type { ResultViewProps } from "../../ui/src/results.js";

/** The model's answer, its tags and (audio) the transcript it is based on. */
export default function Analysis(props: ResultViewProps) {
  const { result } = props;
  const text = typeof result.text === "string" ? result.text : "";
  const tags = Array.isArray(result.tags) ? (result.tags as string[]) : [];
  return (
    <div class="analysis">
      <div class="ai-text">
        {text.split(/\n{2,}/).map((paragraph) => (
          <p>{paragraph}</p>
        ))}
      </div>
      {tags.length > 0 && (
        <ul class="chips" aria-label="Tags">
          {tags.map((tag) => (
            <li class="chip">
              <span class="chip-word">{tag}</span>
            </li>
          ))}
        </ul>
      )}
      {typeof result.transcript === "string" && (
        <details>
          <summary>Transcript</summary>
          <p class="transcript">{result.transcript}</p>
        </details>
      )}
      <p class="subtle">
        Answered by {typeof result.model === "string" ? result.model : "—"} (
        {typeof result.provider === "string" ? result.provider : "—"}).
      </p>
    </div>
  );
}
