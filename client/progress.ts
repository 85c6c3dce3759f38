// Progress bars on stderr (cli-progress), drawn only when stderr is a terminal: piped or redirected,
// a command prints its result and nothing else.
import { Presets, SingleBar } from "cli-progress";
import type { Output } from "./output.js";

/** A bar, or nothing when there is no terminal to draw it on. */
export interface Bar {
  update(value: number, payload?: Record<string, string | number>): void;
  stop(): void;
}

const NO_BAR: Bar = { update: () => undefined, stop: () => undefined };

/**
 * A bar from 0 to `total`; `format` holds cli-progress tokens ({bar}, {percentage}, {value},
 * {total}) and the payload's own. The bar itself is cyan when colours are on.
 */
export function createBar(
  out: Output,
  total: number,
  format: string,
  payload: Record<string, string | number>,
): Bar {
  if (!out.interactive) return NO_BAR;
  const bar = new SingleBar(
    {
      format: format.replace("{bar}", out.err.cyan("{bar}")),
      stream: process.stderr,
      barsize: 30,
      hideCursor: true,
      clearOnComplete: false,
      // Ctrl-C is handled by the command, which stops the bar first.
      gracefulExit: false,
    },
    Presets.shades_classic,
  );
  bar.start(total, 0, payload);
  let stopped = false;
  return {
    update: (value, more) => {
      if (!stopped) bar.update(value, more ?? {});
    },
    stop: () => {
      if (stopped) return;
      stopped = true;
      bar.stop();
    },
  };
}
