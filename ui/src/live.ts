// Live updates for pages: the job changes of GET /api/v1/events, and a job's own stream.
import { useEffect, useRef, useState } from "preact/hooks";
import { query } from "./api.js";
import { dataOf, openSse } from "./sse.js";
import type { JobChange } from "./types.js";

export type LiveStateName = "connecting" | "live" | "retrying" | "off";

/**
 * Calls `onChange` for every job change the key may see (optionally of one type or batch), from the
 * moment the page opens until it closes; `onReconnect` after an interruption, so the page can read
 * again what it may have missed beyond what Last-Event-ID replays.
 */
export function useJobChanges(
  filter: { type?: string | undefined; batch_id?: string | undefined },
  onChange: (change: JobChange) => void,
  onReconnect?: () => void,
): LiveStateName {
  const [state, setState] = useState<LiveStateName>("connecting");
  const handlers = useRef({ onChange, onReconnect });
  handlers.current = { onChange, onReconnect };
  const path = `/events${query({ type: filter.type, batch_id: filter.batch_id })}`;
  useEffect(() => {
    setState("connecting");
    const stream = openSse(path, {
      onOpen: (reconnected) => {
        setState("live");
        if (reconnected) handlers.current.onReconnect?.();
      },
      onDown: (retryMs) => setState(retryMs === null ? "off" : "retrying"),
      onEvent: (message) => {
        if (message.event !== "job") return;
        const change = dataOf<JobChange>(message);
        if (change && typeof change.id === "string") handlers.current.onChange(change);
      },
    });
    return () => stream.close();
  }, [path]);
  return state;
}

/** Calls `fn` at most once per `ms`, trailing. */
export function throttle(fn: () => void, ms: number): { (): void; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const run = () => {
    if (timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      fn();
    }, ms);
  };
  run.cancel = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
  return run;
}
