import type { Redis } from "ioredis";
import { decodeJobChannelMessage, type JobChannelMessage } from "./events.js";
import type { Keys } from "./keys.js";

/** One change of a job as published by the transition scripts (events.ts). */
export type JobEventMessage = JobChannelMessage;
export type JobEventListener = (message: JobEventMessage) => void;

/**
 * Fans one Redis subscriber connection out to any number of listeners per job. A job's channel is
 * subscribed while it has at least one listener, so a client that goes away leaves nothing behind.
 */
export class JobEventHub {
  private readonly listeners = new Map<string, Set<JobEventListener>>();

  constructor(
    private readonly subscriber: Redis,
    private readonly keys: Keys,
  ) {
    subscriber.on("message", (channel: string, text: string) => this.dispatch(channel, text));
  }

  /** Resolves once Redis has confirmed the subscription; returns the function that ends it. */
  async subscribe(jobId: string, listener: JobEventListener): Promise<() => Promise<void>> {
    const channel = this.keys.jobChannel(jobId);
    let set = this.listeners.get(channel);
    if (!set) {
      set = new Set();
      this.listeners.set(channel, set);
      set.add(listener);
      try {
        await this.subscriber.subscribe(channel);
      } catch (err) {
        set.delete(listener);
        if (set.size === 0) this.listeners.delete(channel);
        throw err;
      }
    } else {
      set.add(listener);
    }
    let done = false;
    return async () => {
      if (done) return;
      done = true;
      const current = this.listeners.get(channel);
      if (!current) return;
      current.delete(listener);
      if (current.size === 0) {
        this.listeners.delete(channel);
        await this.subscriber.unsubscribe(channel).catch(() => undefined);
      }
    };
  }

  /** Channels with at least one listener (for leak checks and metrics). */
  get activeChannels(): number {
    return this.listeners.size;
  }

  private dispatch(channel: string, text: string): void {
    const set = this.listeners.get(channel);
    if (!set) return;
    const message = decodeJobChannelMessage(text);
    if (!message) return;
    for (const listener of [...set]) listener(message);
  }
}
