// A GET's bytes, from the object's open file to the response, through reused buffers.
//
// A stream read (createReadStream) allocates a new buffer for every chunk: 2 MB served is 2 MB of
// short-lived external memory, and V8 answers external memory growth with full garbage collections
// (measured: one every few GETs of 2 MB, a third of the store's CPU for them). Here each response
// reads into buffers taken from a small free list and gives each one back once the socket has
// taken its bytes (the write's callback), two per response so that the next read overlaps the
// current write. A buffer whose write never completed (the client went away) is left to the
// garbage collector, never reused.
import type { FileHandle } from "node:fs/promises";
import type { ServerResponse } from "node:http";
import { finished } from "node:stream/promises";

/** Bytes per read and per write. */
const CHUNK_BYTES = 256 * 1024;
/** Buffers kept for reuse between responses (2 per response in flight). */
const MAX_FREE = 16;
const free: Buffer[] = [];

const take = (): Buffer => free.pop() ?? Buffer.allocUnsafeSlow(CHUNK_BYTES);
const give = (buffer: Buffer) => {
  if (free.length < MAX_FREE) free.push(buffer);
};

/**
 * Writes the bytes [start, end] (inclusive) of `handle` to `res` and ends it. Resolves when the
 * last byte was handed to the socket; rejects when the response is closed first or a read fails.
 */
export async function sendFileRange(
  handle: FileHandle,
  start: number,
  end: number,
  res: ServerResponse,
): Promise<void> {
  let position = start;
  let inFlight: Promise<void> | undefined;
  // A response closed before it ends (the client went away) stops the wait for a write's callback.
  let onClose!: () => void;
  const closed = new Promise<never>((_, reject) => {
    onClose = () => reject(new Error("aborted"));
    res.once("close", onClose);
  });
  closed.catch(() => undefined);
  try {
    while (position <= end) {
      const buffer = take();
      const length = Math.min(CHUNK_BYTES, end - position + 1);
      const { bytesRead } = await handle.read(buffer, 0, length, position);
      if (bytesRead === 0) throw new Error(`object file ended at byte ${position}, before ${end + 1}`);
      position += bytesRead;
      // At most one write in flight: the previous one completes before this one starts.
      await Promise.race([inFlight, closed]);
      if (res.destroyed) throw new Error("aborted");
      inFlight = new Promise<void>((resolve, reject) => {
        res.write(buffer.subarray(0, bytesRead), (err) => {
          if (err) return reject(err);
          give(buffer);
          resolve();
        });
      });
      // Awaited above or below; a read failing meanwhile must not leave it unhandled.
      inFlight.catch(() => undefined);
    }
    await Promise.race([inFlight, closed]);
    res.end();
    await finished(res);
  } catch (err) {
    // As stream.pipeline does: a response cut short is destroyed, so the client sees it end early.
    res.destroy();
    throw err;
  } finally {
    res.off("close", onClose);
  }
}
