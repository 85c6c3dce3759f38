// What the settings add to a runner Job besides the controller's own labels: labels and annotations
// (global < job type < client), the Kueue LocalQueue it is submitted to, and the PriorityClass or
// Kueue WorkloadPriorityClass of the job's priority band. A pure function of the job, its client and
// the settings; the configuration refused at load whatever would clash with the controller's labels.
import type { Config } from "../../core/config/load.js";
import { KUEUE_LABELS } from "../../core/kubernetes-labels.js";
import { PRIORITY, type JobType } from "../../core/jobs/types.js";

type Settings = Pick<
  Config["kubernetes"],
  "jobLabels" | "jobAnnotations" | "kueue" | "perType" | "perClient" | "priorityBands" | "priorityClassName"
>;

export interface JobMetadata {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** The Kueue LocalQueue, when Kueue manages the Job (it is created suspended). */
  queueName?: string;
  priorityClassName?: string;
}

/** The band of a priority: the one with the highest `minPriority` at most it, if any. */
export function priorityBand(
  priority: number,
  bands: Settings["priorityBands"],
): Settings["priorityBands"][number] | undefined {
  let found: Settings["priorityBands"][number] | undefined;
  for (const band of bands) {
    if (band.minPriority <= priority && (!found || band.minPriority > found.minPriority)) found = band;
  }
  return found;
}

/**
 * The labels, annotations, queue and PriorityClass of the runner Job of a job of `type` and
 * `priority` submitted by `client` (undefined: none recorded).
 */
export function jobMetadata(
  job: { type: JobType; priority?: number },
  client: string | undefined,
  settings: Settings,
): JobMetadata {
  const ofType = settings.perType[job.type];
  const ofClient = client !== undefined ? settings.perClient?.[client] : undefined;
  const labels = { ...settings.jobLabels, ...ofType?.labels, ...ofClient?.labels };
  const annotations = { ...settings.jobAnnotations, ...ofType?.annotations, ...ofClient?.annotations };
  const queueName = ofClient?.queueName ?? ofType?.queueName ?? settings.kueue.queueName;
  const band = priorityBand(job.priority ?? PRIORITY.default, settings.priorityBands);
  if (queueName) labels[KUEUE_LABELS.queueName] = queueName;
  if (band?.workloadPriorityClass) labels[KUEUE_LABELS.priorityClass] = band.workloadPriorityClass;
  const priorityClassName = band?.priorityClassName ?? settings.priorityClassName;
  return {
    labels,
    annotations,
    ...(queueName ? { queueName } : {}),
    ...(priorityClassName ? { priorityClassName } : {}),
  };
}
