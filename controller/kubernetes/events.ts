import type { CoreV1Api, V1Job } from "@kubernetes/client-node";
import type { Logger } from "../../core/logger.js";

// Kubernetes Events on runner Jobs, so `kubectl describe job media-<id>` and `kubectl get events`
// say why a media job failed. Best effort: an Event that cannot be written is logged, never fatal.

const MESSAGE_MAX = 1024;

export class JobEventRecorder {
  constructor(
    private readonly core: Pick<CoreV1Api, "createNamespacedEvent">,
    private readonly namespace: string,
    private readonly instance: string,
    private readonly log: Logger,
  ) {}

  /** A Warning Event on the Job (by name; with its uid when the Job is known). */
  async jobFailed(jobName: string, job: V1Job | undefined, reason: string, message: string): Promise<void> {
    const now = new Date();
    try {
      await this.core.createNamespacedEvent({
        namespace: this.namespace,
        body: {
          metadata: { generateName: `${jobName}.`, namespace: this.namespace },
          involvedObject: {
            apiVersion: "batch/v1",
            kind: "Job",
            name: jobName,
            namespace: this.namespace,
            ...(job?.metadata?.uid ? { uid: job.metadata.uid } : {}),
          },
          type: "Warning",
          reason: `MediaJobFailed${reasonSuffix(reason)}`,
          message: message.length > MESSAGE_MAX ? `${message.slice(0, MESSAGE_MAX - 1)}…` : message,
          source: { component: "media-service-controller" },
          reportingComponent: "media-service.io/controller",
          reportingInstance: this.instance,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
    } catch (err) {
      this.log.debug({ job: jobName, err: (err as Error).message }, "could not record a Kubernetes Event");
    }
  }
}

// The failure reason label (oom, deadline, image_pull, …) as a CamelCase suffix: OOM → "Oom".
function reasonSuffix(reason: string): string {
  return reason
    .split("_")
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("");
}
