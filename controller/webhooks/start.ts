import type { Config } from "../../core/config/load.js";
import type { Logger } from "../../core/logger.js";
import type { CoreServices } from "../../core/services.js";
import { blockingConnection } from "../../core/store/store.js";
import { WebhookClient } from "./http-client.js";
import { WebhookNotifier } from "./notifier.js";

/** The webhook notifier of a controller process, on a Redis connection of its own. */
export async function startNotifier(
  config: Config,
  services: CoreServices,
  logger: Logger,
): Promise<{ stop(): Promise<void> }> {
  const client = new WebhookClient({
    allowPrivate: config.webhooks.allowPrivate ?? false,
    allowedHosts: config.webhooks.allowedHosts,
  });
  const reader = blockingConnection(services.redis, "media-service:webhooks");
  const notifier = new WebhookNotifier({
    store: services.store,
    reader,
    config: config.webhooks,
    client,
    logger,
  });
  await notifier.start();
  return {
    stop: async () => {
      await notifier.stop();
      client.close();
    },
  };
}
