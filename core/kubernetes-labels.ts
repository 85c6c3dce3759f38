// The labels and annotations of runner Jobs: the controller's own (it selects its Jobs and pods by
// them, so no setting may change them), Kueue's, and Kubernetes' syntax of a label, so that the
// configuration refuses at load what the API server would refuse at every create.

/** The controller's labels on every runner Job and its pod. */
export const LABELS = {
  name: "app.kubernetes.io/name",
  component: "app.kubernetes.io/component",
  managedBy: "app.kubernetes.io/managed-by",
  instance: "app.kubernetes.io/instance",
  jobId: "media-service.io/job-id",
  jobType: "media-service.io/job-type",
  batchId: "media-service.io/batch-id",
} as const;

/** Raw (unsanitized) ids, for when a label value had to be cleaned or cut. */
export const ANNOTATIONS = {
  jobId: "media-service.io/job-id",
  batchId: "media-service.io/batch-id",
} as const;

/** Kueue's labels: the LocalQueue a Job is submitted to, and its WorkloadPriorityClass. */
export const KUEUE_LABELS = {
  queueName: "kueue.x-k8s.io/queue-name",
  priorityClass: "kueue.x-k8s.io/priority-class",
} as const;

/** Every key under this prefix is the controller's. */
const OWN_PREFIX = "media-service.io/";

const NAME = /^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/;
const PREFIX = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?$/;

/**
 * Why `key` is no label (or annotation) key, or undefined when it is one: an optional DNS subdomain
 * prefix of at most 253 characters and `/`, then a name of at most 63 characters (alphanumerics,
 * `-`, `_`, `.`, beginning and ending with an alphanumeric).
 */
export function labelKeyError(key: string): string | undefined {
  const slash = key.lastIndexOf("/");
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length > 253 || !PREFIX.test(prefix))) {
    return "its prefix (before /) must be a DNS subdomain of at most 253 characters";
  }
  if (!NAME.test(name)) {
    return "its name must be 1-63 characters: alphanumerics, '-', '_' or '.', beginning and ending with an alphanumeric";
  }
  return undefined;
}

export function isLabelValue(value: string): boolean {
  return LABEL_VALUE.test(value);
}

/** Whether a label key is the controller's or Kueue's own (set by the controller, never by a setting). */
export function isReservedLabel(key: string): boolean {
  return (
    key.startsWith(OWN_PREFIX) ||
    (Object.values(LABELS) as string[]).includes(key) ||
    (Object.values(KUEUE_LABELS) as string[]).includes(key)
  );
}

/** Whether an annotation key is the controller's own. */
export function isReservedAnnotation(key: string): boolean {
  return key.startsWith(OWN_PREFIX);
}
