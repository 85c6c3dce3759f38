// Every key carries one hash tag ({prefix}) so the scripts run unchanged on Redis Cluster.
export class Keys {
  readonly prefix: string;
  constructor(keyPrefix: string) {
    this.prefix = `{${keyPrefix}}:`;
  }
  job(id: string) {
    return `${this.prefix}job:${id}`;
  }
  /** Pub/sub channel of one job's changes (SSE). */
  jobChannel(id: string) {
    return `${this.prefix}events:${id}`;
  }
  pending(type: string) {
    return `${this.prefix}queue:${type}:pending`;
  }
  active(type: string) {
    return `${this.prefix}queue:${type}:active`;
  }
  stats(type: string) {
    return `${this.prefix}stats:${type}`;
  }
  histogram(type: string) {
    return `${this.prefix}hist:${type}`;
  }
  /** The job or batch index everyone's records are in: by status, or all of them by creation. */
  index(kind: "jobs" | "batches", status?: string) {
    return status ? `${this.prefix}${kind}:status:${status}` : `${this.prefix}${kind}:by_created`;
  }
  jobsByCreated() {
    return this.index("jobs");
  }
  jobsByStatus(status: string) {
    return this.index("jobs", status);
  }
  batch(id: string) {
    return `${this.prefix}batch:${id}`;
  }
  batchJobs(id: string) {
    return `${this.prefix}batch:${id}:jobs`;
  }
  batchesByCreated() {
    return this.index("batches");
  }
  batchesByStatus(status: string) {
    return this.index("batches", status);
  }
  /** A client's own copy of the job or batch indexes (lib.lua client_index). */
  clientIndex(client: string, kind: "jobs" | "batches", status?: string) {
    return status
      ? `${this.prefix}client:${client}:${kind}:status:${status}`
      : `${this.prefix}client:${client}:${kind}:by_created`;
  }
  /** Pub/sub channel that tells executors a queue has new work. */
  queuesChannel() {
    return `${this.prefix}queues`;
  }
  /** The durable events stream (notifier). */
  events() {
    return `${this.prefix}events`;
  }
  /** Webhook delivery attempts by result (metrics). */
  webhookStats() {
    return `${this.prefix}webhooks:stats`;
  }
  expiry() {
    return `${this.prefix}expiry`;
  }
}
