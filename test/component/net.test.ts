// Starting on free ports: a start that loses its port to another process between freePort() and
// its bind (here: a listener of the test takes it first, for real) runs again on new ports; any
// other failure is thrown at once; a race lost on every attempt throws the start's own error.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:net";
import { describe, test } from "node:test";
import { onFreePorts, PortTakenError } from "../../core/net.js";

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen({ port, host: "127.0.0.1", exclusive: true }, () => resolve(server));
  });
}

const close = (server: Server) => new Promise((resolve) => server.close(resolve));

describe("onFreePorts", () => {
  test("a port taken before the start binds it: the start runs again on another one", async () => {
    const seen: number[][] = [];
    const squatters: Server[] = [];
    const server = await onFreePorts(2, 3, async (ports) => {
      seen.push(ports);
      if (seen.length === 1) squatters.push(await listen(ports[1]!)); // another process, first
      const first = await listen(ports[0]!);
      try {
        return [first, await listen(ports[1]!)];
      } catch (err) {
        await close(first);
        if ((err as NodeJS.ErrnoException).code === "EADDRINUSE") {
          throw new PortTakenError(`port ${ports[1]} taken`, { cause: err });
        }
        throw err;
      }
    }).catch(async (err: unknown) => {
      await Promise.all(squatters.map(close));
      throw err;
    });
    try {
      assert.equal(seen.length, 2);
      assert.equal(seen[0]!.length, 2);
      assert.notDeepEqual(seen[1], seen[0]);
      assert.deepEqual(
        server.map((s) => (s.address() as { port: number }).port),
        seen[1],
      );
    } finally {
      await Promise.all([...server, ...squatters].map(close));
    }
  });

  test("any other failure is thrown at once, without another attempt", async () => {
    let calls = 0;
    await assert.rejects(
      onFreePorts(1, 5, () => {
        calls++;
        return Promise.reject(new Error("the binary is missing"));
      }),
      /the binary is missing/,
    );
    assert.equal(calls, 1);
  });

  test("a race lost on every attempt throws the start's own error after the last one", async () => {
    let calls = 0;
    const cause = new Error("redis-server: Address already in use");
    await assert.rejects(
      onFreePorts(1, 3, () => {
        calls++;
        return Promise.reject(new PortTakenError("taken", { cause }));
      }),
      (err) => err === cause,
    );
    assert.equal(calls, 3);
  });
});
