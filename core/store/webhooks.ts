import { StoreBase } from "./base.js";

/** What one webhook delivery attempt came to; all but `retry` end the delivery. */
export const WEBHOOK_RESULTS = ["delivered", "retry", "failed", "refused"] as const;
export type WebhookResult = (typeof WEBHOOK_RESULTS)[number];

export interface WebhookAttempt {
  kind: "job" | "batch";
  id: string;
  webhookId: string;
  result: WebhookResult;
  /** What happened, for the record: "HTTP 200", "HTTP 503", "no response within 10 s". */
  summary: string;
  statusCode?: number;
  /** With result retry: when the next attempt is due (epoch ms). */
  nextAttemptAt?: number;
  /** The notifier's consumer group and the event's stream entry, acknowledged on a final result. */
  group: string;
  entryId: string;
}

/** The webhook notifier's record of its deliveries (ADR 002): on the job or batch, and counted. */
export abstract class Webhooks extends StoreBase {
  /**
   * Records a webhook delivery attempt on the job or batch and in the delivery counters; a final
   * result also acknowledges the event (lua/webhook.lua). Returns the attempts now on the record.
   */
  async recordWebhookAttempt(a: WebhookAttempt): Promise<number> {
    return (await this.script(
      "webhook",
      a.kind,
      a.id,
      a.webhookId,
      a.result,
      a.summary,
      a.statusCode ?? "",
      a.nextAttemptAt ?? "",
      a.group,
      a.entryId,
    )) as number;
  }

  /** Webhook delivery attempts by result, since the store was created. */
  async webhookDeliveries(): Promise<Record<WebhookResult, number>> {
    return this.tally(this.keys.webhookStats(), WEBHOOK_RESULTS);
  }
}
