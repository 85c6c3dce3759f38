// One object (or part) is one file: its content, then its metadata (key, size, ETag, checksums,
// headers) as JSON, the JSON's length (uint32 BE) and a magic number. A write streams into a
// TempFile in the temp area; once the body is complete and verified, seal() appends the metadata
// and syncs the file once, and the commit renames it over the key's file. A reader opens the key's
// file and reads the metadata from its end, so it always has one version's bytes with that
// version's ETag, even while the key is replaced (an open file outlives the rename). A crash at any
// point leaves the old object or the new one, never a mix, and costs one sync per object.
// (Metadata in a separate file would need a second sync, or would be lost or torn in a crash.)

import {
  close as closeCb,
  createWriteStream,
  fsync,
  open as openCb,
  write as writeCb,
  type WriteStream,
} from "node:fs";
import { once } from "node:events";
import { open, rename, rm, truncate, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { randomId } from "./model.js";

/** Whether a filesystem error says the file does not exist. */
export function isNotFound(err: unknown): boolean {
  return (err as NodeJS.ErrnoException)?.code === "ENOENT";
}

const fsyncFd = promisify(fsync);
const closeFd = promisify(closeCb);
const writeFd = promisify(writeCb);
const openFd = promisify(openCb);

/** Ends every object and part file: the metadata's length (uint32 BE), then this. */
const RECORD_MAGIC = Buffer.from("ES3\u0001", "latin1");
const RECORD_FOOTER = 8;
/** The last bytes of a file read at once: enough for the metadata of nearly every object. */
const RECORD_TAIL = 4096;

/** Content followed by metadata: the trailer appended to a file whose content is `size` bytes. */
function recordTrailer(meta: { size: number }): Buffer {
  const json = Buffer.from(JSON.stringify(meta), "utf8");
  const footer = Buffer.alloc(RECORD_FOOTER);
  footer.writeUInt32BE(json.length, 0);
  RECORD_MAGIC.copy(footer, 4);
  return Buffer.concat([json, footer]);
}

/**
 * The metadata at the end of an open object or part file, checked against the file's length (a
 * file that is not a complete record is reported as corrupt, never served).
 */
export async function readRecord<T extends { size: number }>(handle: FileHandle, file: string): Promise<T> {
  const { size: fileSize } = await handle.stat();
  const corrupt = () => new Error(`corrupt object file ${file}: no metadata record at its end`);
  if (fileSize < RECORD_FOOTER) throw corrupt();
  const tailLength = Math.min(fileSize, RECORD_TAIL);
  let tail = Buffer.alloc(tailLength);
  await handle.read(tail, 0, tailLength, fileSize - tailLength);
  if (!tail.subarray(tailLength - 4).equals(RECORD_MAGIC)) throw corrupt();
  const jsonLength = tail.readUInt32BE(tailLength - RECORD_FOOTER);
  if (jsonLength + RECORD_FOOTER > fileSize) throw corrupt();
  if (jsonLength + RECORD_FOOTER > tailLength) {
    tail = Buffer.alloc(jsonLength + RECORD_FOOTER);
    await handle.read(tail, 0, tail.length, fileSize - tail.length);
  }
  const json = tail.subarray(tail.length - RECORD_FOOTER - jsonLength, tail.length - RECORD_FOOTER);
  const meta = JSON.parse(json.toString("utf8")) as T;
  if (meta.size + jsonLength + RECORD_FOOTER !== fileSize) throw corrupt();
  return meta;
}

/** The file opened for reading, or undefined when it does not exist. */
export async function openIfExists(file: string): Promise<FileHandle | undefined> {
  try {
    return await open(file, "r");
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** The record of the file at `file`, or undefined when there is none. */
export async function readRecordFile<T extends { size: number }>(file: string): Promise<T | undefined> {
  const handle = await openIfExists(file);
  if (!handle) return undefined;
  try {
    return await readRecord<T>(handle, file);
  } finally {
    await handle.close();
  }
}

/**
 * A file being written in the temp area: content through `stream`, then sealed with its metadata
 * (one sync) and handed to a commit, or discarded.
 */
export class TempFile {
  private closed = false;
  /** Renamed into place by moveTo(): nothing is left to remove. */
  private moved = false;

  private constructor(
    readonly path: string,
    private readonly fd: number,
    private readonly writer?: WriteStream,
  ) {}

  static async create(dir: string): Promise<TempFile> {
    const file = path.join(dir, randomId());
    // autoClose: false keeps the descriptor open after the stream finishes, for the metadata and
    // the sync in seal(). (A FileHandle-based write stream cannot be used here: on Node 20 closing
    // its handle after the stream finished never resolves.)
    const stream = createWriteStream(file, { flags: "wx", autoClose: false, highWaterMark: 1024 * 1024 });
    let fd: number;
    try {
      [fd] = (await once(stream, "open")) as [number];
    } catch (err) {
      stream.destroy();
      throw err;
    }
    return new TempFile(file, fd, stream);
  }

  /** A temp file that already holds `size` bytes of content (a copy): ready to be sealed. */
  static async adopt(file: string, size: number): Promise<TempFile> {
    await truncate(file, size);
    return new TempFile(file, await openFd(file, "r+"));
  }

  /** Where the content goes; finish it before seal(). */
  get stream(): WriteStream {
    if (!this.writer) throw new Error("an adopted temp file has its content already");
    return this.writer;
  }

  /**
   * Append the metadata after the content (`meta.size` bytes), flush to stable storage once and
   * close: the file is then a complete record, ready to be renamed into place.
   */
  async seal(meta: { size: number }): Promise<void> {
    const trailer = recordTrailer(meta);
    let written = 0;
    while (written < trailer.length) {
      const { bytesWritten } = await writeFd(
        this.fd,
        trailer,
        written,
        trailer.length - written,
        meta.size + written,
      );
      written += bytesWritten;
    }
    await fsyncFd(this.fd);
    this.closed = true;
    await closeFd(this.fd);
  }

  /** Renames the sealed file to `target` (the commit); discard() then has nothing to remove. */
  async moveTo(target: string): Promise<void> {
    await rename(this.path, target);
    this.moved = true;
  }

  /** Close if still open and remove the file unless a commit already moved it away. */
  async discard(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      // Wait until no write is in flight on the descriptor before closing it (the number could
      // otherwise be reused by another open while a write still targets it).
      const stream = this.writer;
      if (stream) {
        const closed = new Promise<void>((resolve) =>
          stream.closed ? resolve() : stream.once("close", () => resolve()),
        );
        stream.destroy();
        await closed;
      }
      await closeFd(this.fd).catch(() => {});
    }
    if (!this.moved) await rm(this.path, { force: true });
  }
}
