// A TCP relay in front of a real redis-server that can go silent as a lost node does: the
// connections it carries stay open and get nothing back, nothing reaches the server, and new
// connections are refused (the node's address no longer answers). `restore` brings it back.
import { createServer, connect, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

export interface SilentRelay {
  /** The redis URL through the relay (the target's password and database kept). */
  url: string;
  /** From now on: open connections get nothing either way, new ones are refused. */
  silence(): void;
  /** Listens again on the same port; new connections reach the server. */
  restore(): Promise<void>;
  close(): void;
}

export async function silentRelay(target: string): Promise<SilentRelay> {
  const to = new URL(target);
  const pairs = new Set<[Socket, Socket]>();
  const relay = (client: Socket) => {
    const server = connect(Number(to.port), to.hostname);
    const pair: [Socket, Socket] = [client, server];
    pairs.add(pair);
    client.pipe(server);
    server.pipe(client);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      server.destroy();
    };
    client.on("error", end).on("close", end);
    server.on("error", end).on("close", end);
  };
  let listener: Server = createServer(relay);
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  const { port } = listener.address() as AddressInfo;
  const url = new URL(target);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  // Stops listening at once; the carried connections stay as they are.
  const stopListening = () => listener.close(() => undefined);
  return {
    url: url.toString(),
    silence: () => {
      for (const [client, server] of pairs) {
        client.unpipe(server);
        server.unpipe(client);
        // What the client sends is read and dropped; nothing comes back.
        client.removeAllListeners("data");
        client.on("data", () => undefined);
        server.pause();
      }
      stopListening();
    },
    restore: async () => {
      listener = createServer(relay);
      await new Promise<void>((resolve) => listener.listen(port, "127.0.0.1", resolve));
    },
    close: () => {
      for (const [client, server] of pairs) {
        client.destroy();
        server.destroy();
      }
      stopListening();
    },
  };
}
