import { createServer } from "node:net";

// Asks the OS for a currently free TCP port by binding port 0 and closing the listener again. The port
// is only *probably* still free when the caller binds it (another process may grab it in between), so
// callers that hand it to a child process should retry with a new port when the bind fails.
export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen({ port: 0, host, exclusive: true }, () => {
      const address = server.address();
      if (address === null || typeof address === "string") {
        server.close();
        reject(new Error(`could not determine the port bound on ${host}`));
        return;
      }
      server.close((err) => (err ? reject(err) : resolve(address.port)));
    });
  });
}

/**
 * What a start on a port from freePort() throws when another process took the port before the
 * start bound it: onFreePorts() tries again on new ports. `cause`: the start's own error, thrown
 * when no attempt is left.
 */
export class PortTakenError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PortTakenError";
  }
}

/**
 * Runs `start` on `count` ports from freePort(), and again on new ones when it throws
 * PortTakenError (the race freePort() cannot close), up to `attempts` times in all. Any other
 * error is thrown at once; a race lost on the last attempt throws its cause.
 */
export async function onFreePorts<T>(
  count: number,
  attempts: number,
  start: (ports: number[]) => Promise<T>,
  host = "127.0.0.1",
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) ports.push(await freePort(host));
    try {
      return await start(ports);
    } catch (err) {
      if (!(err instanceof PortTakenError)) throw err;
      if (attempt >= attempts) throw err.cause instanceof Error ? err.cause : err;
    }
  }
}
