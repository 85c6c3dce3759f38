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
