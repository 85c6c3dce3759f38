// Leader election over one coordination.k8s.io Lease, as client-go's leaderelection does it: a
// candidate takes the Lease when its holder has not renewed it for leaseDuration (measured on this
// process' clock from when the record last changed, so clocks need not agree), the leader renews it
// every retryPeriod, and stops leading when it could not renew for renewDeadline — before any
// standby may take over. Optimistic concurrency (resourceVersion) settles races: a 409 loses.
import {
  ApiException,
  V1MicroTime,
  type CoordinationV1Api,
  type V1Lease,
  type V1LeaseSpec,
} from "@kubernetes/client-node";
import type { Logger } from "../../core/logger.js";
import { describeError } from "./api-errors.js";

export interface LeaderElectionOptions {
  api: CoordinationV1Api;
  namespace: string;
  leaseName: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  logger: Logger;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
}

export class LeaderElector {
  private leading = false;
  private stopped = false;
  private observedRecord: string | undefined;
  private observedAt = 0;
  private lastRenew = 0;
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<void> = Promise.resolve();
  private lastError: string | undefined;

  constructor(private readonly options: LeaderElectionOptions) {}

  get isLeader(): boolean {
    return this.leading;
  }

  /** The holder of the Lease as last observed (undefined: none yet). */
  holder: string | undefined;

  /** When the last call to the API server succeeded (0: never): readiness. */
  lastContactMs = 0;

  get error(): string | undefined {
    return this.lastError;
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops campaigning; a leader gives the Lease up so a standby takes over at its next try. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.current;
    if (this.leading) {
      await this.release().catch((err: Error) =>
        this.options.logger.warn({ err: err.message }, "could not release the leader lease"),
      );
      this.setLeading(false);
    }
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.current = this.tick().finally(() => {
        // Jitter keeps candidates from retrying in lockstep (client-go uses a factor of 1.2).
        const jitter = this.leading ? 0 : Math.random() * 0.2 * this.options.retryPeriodMs;
        this.schedule(this.options.retryPeriodMs + jitter);
      });
    }, ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const now = Date.now();
    let acquired = false;
    try {
      acquired = await this.tryAcquireOrRenew(now);
      this.lastContactMs = Date.now();
      this.lastError = undefined;
    } catch (err) {
      this.lastError = describeError(err);
      this.options.logger.warn({ err: this.lastError }, "leader election: lease request failed");
    }
    if (this.stopped) return;
    if (acquired) {
      this.lastRenew = now;
      if (!this.leading) this.setLeading(true);
    } else if (this.leading && Date.now() - this.lastRenew >= this.options.renewDeadlineMs) {
      this.options.logger.error(
        { renew_deadline_ms: this.options.renewDeadlineMs },
        "leader election: could not renew the lease in time; stepping down",
      );
      this.setLeading(false);
    } else if (this.leading && !acquired && this.holder !== this.options.identity) {
      this.setLeading(false);
    }
  }

  private setLeading(leading: boolean): void {
    if (this.leading === leading) return;
    this.leading = leading;
    const { logger, identity, leaseName } = this.options;
    if (leading) {
      logger.info({ identity, lease: leaseName }, "became the leader");
      this.options.onStartedLeading();
    } else {
      logger.info({ identity, lease: leaseName }, "stopped leading");
      this.options.onStoppedLeading();
    }
  }

  private async tryAcquireOrRenew(now: number): Promise<boolean> {
    const { api, namespace, leaseName: name, identity } = this.options;
    const durationSeconds = Math.ceil(this.options.leaseDurationMs / 1000);
    let lease: V1Lease;
    try {
      lease = await api.readNamespacedLease({ name, namespace });
    } catch (err) {
      if (!(err instanceof ApiException && err.code === 404)) throw err;
      const time = new V1MicroTime(now);
      try {
        await api.createNamespacedLease({
          namespace,
          body: {
            metadata: { name, namespace },
            spec: {
              holderIdentity: identity,
              leaseDurationSeconds: durationSeconds,
              acquireTime: time,
              renewTime: time,
              leaseTransitions: 0,
            },
          },
        });
      } catch (createErr) {
        if (createErr instanceof ApiException && createErr.code === 409) return false;
        throw createErr;
      }
      this.observe(identity, now);
      return true;
    }

    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity || undefined;
    this.observe(holder, now, `${holder}|${String(spec.renewTime)}|${spec.leaseTransitions}`);
    const observedDuration = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (holder && holder !== identity && this.observedAt + observedDuration > now) return false;

    const time = new V1MicroTime(now);
    const changingHands = holder !== identity;
    try {
      await this.replaceLease(lease, {
        holderIdentity: identity,
        leaseDurationSeconds: durationSeconds,
        ...(changingHands ? { acquireTime: time } : {}),
        renewTime: time,
        leaseTransitions: (spec.leaseTransitions ?? 0) + (changingHands ? 1 : 0),
      });
    } catch (err) {
      if (err instanceof ApiException && err.code === 409) return false;
      throw err;
    }
    this.observe(identity, now);
    return true;
  }

  // Read MicroTimes come back as plain Dates, which the API server refuses (milliseconds): re-wrap.
  private replaceLease(lease: V1Lease, changes: Partial<V1LeaseSpec>): Promise<V1Lease> {
    const { api, namespace, leaseName: name } = this.options;
    const acquireTime = lease.spec?.acquireTime && new V1MicroTime(lease.spec.acquireTime);
    return api.replaceNamespacedLease({
      name,
      namespace,
      body: { ...lease, spec: { ...lease.spec, acquireTime, ...changes } },
    });
  }

  // The local time a Lease record was last seen to change: expiry is judged against it.
  private observe(holder: string | undefined, now: number, record?: string): void {
    this.holder = holder;
    if (record === undefined || record !== this.observedRecord) {
      this.observedRecord = record;
      this.observedAt = now;
    }
  }

  private async release(): Promise<void> {
    const { api, namespace, leaseName: name, identity } = this.options;
    const lease = await api.readNamespacedLease({ name, namespace });
    if (lease.spec?.holderIdentity !== identity) return;
    await this.replaceLease(lease, {
      holderIdentity: "",
      leaseDurationSeconds: 1,
      renewTime: new V1MicroTime(Date.now()),
    });
    this.options.logger.info({ lease: name }, "released the leader lease");
  }
}
