import { usePreview } from "../../ui/src/preview.js";
import { describeImage, PreviewImage, type ImageResult, type ResultViewProps } from "../../ui/src/results.js";

/** The frame, with where it was taken. */
export default function Thumbnail(props: ResultViewProps) {
  const { job } = props;
  const result = props.result as ImageResult;
  const output = usePreview(job.id, "output", true);
  return (
    <figure class="single-media">
      <PreviewImage
        preview={output}
        alt={`Frame at ${result.timestamp ?? "the requested time"}`}
        testId="output-image"
        what="Thumbnail"
      />
      <figcaption>
        Frame at <strong>{result.timestamp ?? "—"}</strong> · {describeImage(result)}
      </figcaption>
    </figure>
  );
}
