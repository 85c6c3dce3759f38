// Names and label values of the Kubernetes objects the controller creates. Every function here is
// deterministic: the same job id always gives the same Job name, so a controller that retries a create
// after a crash meets `AlreadyExists` instead of starting a second Job.
import { createHash } from "node:crypto";
import { isLabelValue } from "../../core/kubernetes-labels.js";

export { isLabelValue };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

const JOB_NAME_PREFIX = "media-";

function digest(value: string, length: number): string {
  return createHash("sha256").update(value).digest("hex").slice(0, length);
}

/**
 * The name of the Kubernetes Job of a media job: `media-<uuid>` for a job id that is a lowercase
 * UUID (42 characters), else `media-<sanitized id, cut>-<hash of the raw id>`. Always a DNS-1123
 * label (≤ 63 characters, lowercase alphanumerics and '-'), so it also names the Job's pods.
 */
export function jobName(jobId: string): string {
  if (UUID.test(jobId)) return `${JOB_NAME_PREFIX}${jobId}`;
  const hash = digest(jobId, 10);
  const cleaned = jobId
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/-+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 63 - JOB_NAME_PREFIX.length - 1 - hash.length)
    .replace(/-+$/, "");
  return cleaned ? `${JOB_NAME_PREFIX}${cleaned}-${hash}` : `${JOB_NAME_PREFIX}${hash}`;
}

/** A valid label value for any string: the string itself when it is one, else a cut, cleaned form plus a hash. */
export function labelValue(value: string): string {
  if (isLabelValue(value)) return value;
  const hash = digest(value, 10);
  const cleaned = value
    .replace(/[^A-Za-z0-9_.-]+/g, "-")
    .slice(0, 63 - 1 - hash.length)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, "");
  return cleaned ? `${cleaned}-${hash}` : hash;
}

export function isDnsLabel(value: string): boolean {
  return DNS_LABEL.test(value);
}
