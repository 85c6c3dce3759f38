// The Kubernetes executor's own metrics (this replica's view), registered on the controller's
// /metrics next to the cluster-wide job metrics read from Redis.
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { JOB_TYPES, type JobType } from "../../core/jobs/types.js";
import type { FailureReason } from "./job-status.js";

export interface ExecutorMetrics {
  jobCreated(type: JobType): void;
  jobFailed(reason: FailureReason): void;
  reconciled(seconds: number): void;
}

export interface ExecutorGauges {
  isLeader(): boolean;
  activeJobs(): Map<JobType, number>;
  /** Runner Jobs suspended, waiting for Kueue's admission. */
  waitingAdmission(): number;
}

export function registerExecutorMetrics(registry: Registry, gauges: ExecutorGauges): ExecutorMetrics {
  const created = new Counter({
    name: "media_controller_jobs_created_total",
    help: "Kubernetes Jobs created for media jobs, by job type",
    labelNames: ["type"],
    registers: [registry],
  });
  const failed = new Counter({
    name: "media_controller_jobs_failed_total",
    help: "Media jobs failed by the controller from what Kubernetes reported, by reason",
    labelNames: ["reason"],
    registers: [registry],
  });
  const reconcile = new Histogram({
    name: "media_controller_reconcile_duration_seconds",
    help: "Duration of a full reconcile pass (cluster and store compared)",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  new Gauge({
    name: "media_controller_jobs_active",
    help: "Kubernetes Jobs of media jobs created and not finished, by job type (leader only)",
    labelNames: ["type"],
    registers: [registry],
    collect() {
      const active = gauges.activeJobs();
      for (const type of JOB_TYPES) this.set({ type }, active.get(type) ?? 0);
    },
  });
  new Gauge({
    name: "media_controller_jobs_waiting_admission",
    help: "Kubernetes Jobs of media jobs suspended, waiting for Kueue to admit them (leader only)",
    registers: [registry],
    collect() {
      this.set(gauges.waitingAdmission());
    },
  });
  new Gauge({
    name: "media_controller_leader",
    help: "1 when this controller replica holds the leader lease",
    registers: [registry],
    collect() {
      this.set(gauges.isLeader() ? 1 : 0);
    },
  });
  for (const type of JOB_TYPES) created.inc({ type }, 0);
  return {
    jobCreated: (type) => created.inc({ type }),
    jobFailed: (reason) => failed.inc({ reason }),
    reconciled: (seconds) => reconcile.observe(seconds),
  };
}
