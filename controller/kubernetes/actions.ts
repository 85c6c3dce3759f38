// Carries out the Kubernetes executor's decisions (decide.ts) against the cluster and the store, and
// says what it did: a log line per change, the metrics, a Kubernetes Event on a failed job's Job.
// It decides nothing: every branch here is on what an API call or a store script answered.
import { ApiException, type BatchV1Api, type V1Job } from "@kubernetes/client-node";
import type { Logger } from "../../core/logger.js";
import type { JobStore } from "../../core/store/store.js";
import type { Action, InFlight } from "./decide.js";
import type { JobEventRecorder } from "./events.js";
import type { FailureReason } from "./job-status.js";
import type { ExecutorMetrics } from "./metrics.js";
import { jobName } from "./names.js";

/** What a leadership term remembers between decisions. */
export interface TermState {
  /** Claims whose Job is being created, by Job name. */
  inflight: Map<string, InFlight>;
  /** When each stuck pod (`<pod>/<reason>`) was first seen so. */
  stuckSince: Map<string, number>;
  /** No claims before this time. */
  pausedUntil: number;
  /** The Jobs whose wait for Kueue's admission is noted on their job's timeline. */
  admissionNoted: Set<string>;
}

export interface ActionRunnerOptions {
  store: JobStore;
  batch: BatchV1Api;
  namespace: string;
  leaseMs: number;
  recorder: JobEventRecorder;
  metrics: ExecutorMetrics | undefined;
  log: Logger;
  /** The cached Job of a name, if any (its uid goes on the Event). */
  cachedJob(name: string): V1Job | undefined;
}

export class ActionRunner {
  constructor(private readonly o: ActionRunnerOptions) {}

  /** Carries out `actions` in order; `log` names the job. */
  async apply(actions: readonly Action[], state: TermState, log: Logger): Promise<void> {
    for (const action of actions) await this.one(action, state, log);
  }

  private async one(a: Action, state: TermState, log: Logger): Promise<void> {
    const { store } = this.o;
    switch (a.kind) {
      case "create":
        await this.o.batch.createNamespacedJob({ namespace: this.o.namespace, body: a.manifest });
        this.o.metrics?.jobCreated(a.type);
        log.info({ type: a.type }, "Kubernetes Job created");
        return;
      case "adopt":
        log.info("Kubernetes Job exists already (created before a restart); adopted");
        return;
      case "drop":
        state.inflight.delete(jobName(a.id));
        log.info({ why: a.why }, "claim dropped: no Kubernetes Job for it");
        return;
      case "start":
        await store.start(a.id, this.o.leaseMs).catch((err: Error) => {
          log.warn({ err: err.message }, "could not mark the job processing");
        });
        return;
      case "fail": {
        if (a.recheck) {
          const again = await store.getJob(a.id);
          if (!again || again.status === "completed" || again.status === "failed") return;
        }
        const attempts = a.attempts !== undefined ? { attempts: a.attempts } : {};
        if (await store.fail(a.id, a.error, attempts)) await this.failed(a.id, a.reason, a.error);
        return;
      }
      case "delete":
        await this.deleteJob(a.name, a.why, log);
        state.admissionNoted.delete(a.name);
        return;
      case "requeue": {
        const outcome = await store.requeueJob(a.id, a.why, a.handback ? { handback: true } : {});
        if (outcome === "failed" && a.lost) {
          await this.failed(a.id, a.lost, (await store.getJob(a.id))?.error ?? a.why);
        } else if (outcome === "requeued") {
          log.warn({ why: a.why }, "job re-queued");
        }
        return;
      }
      case "renew":
        await store.renewLease(a.id, this.o.leaseMs);
        return;
      case "pause":
        state.pausedUntil = Date.now() + a.ms;
        return;
      case "stuck":
        state.stuckSince.set(a.key, a.since);
        return;
      case "unstuck":
        state.stuckSince.delete(a.key);
        return;
      case "admission":
        if (await store.noteWaiting(a.id, a.message)) log.info({ why: a.message }, "job waits for admission");
        state.admissionNoted.add(a.name);
        return;
      case "admitted":
        state.admissionNoted.delete(a.name);
        log.info("Kubernetes Job admitted (no longer suspended)");
        return;
      case "lookup":
        throw new Error(`a lookup of ${a.name} is the caller's to make`);
    }
  }

  /** What follows a failure the store recorded: the metric, a log line, the Job's Event. */
  async failed(id: string, reason: FailureReason, error: string): Promise<void> {
    this.o.metrics?.jobFailed(reason);
    const name = jobName(id);
    this.o.log.warn({ job_id: id, kubernetes_job: name, reason, error }, "job failed");
    await this.o.recorder.jobFailed(name, this.o.cachedJob(name), reason, error);
  }

  /** Whether the API server has the Job (the cache may lag behind a create). */
  async jobExists(name: string): Promise<boolean> {
    try {
      await this.o.batch.readNamespacedJob({ name, namespace: this.o.namespace });
      return true;
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return false;
      throw err;
    }
  }

  private async deleteJob(name: string, why: string, log: Logger): Promise<void> {
    try {
      await this.o.batch.deleteNamespacedJob({
        name,
        namespace: this.o.namespace,
        propagationPolicy: "Background",
      });
      log.info({ why }, "Kubernetes Job deleted");
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return;
      throw err;
    }
  }
}
