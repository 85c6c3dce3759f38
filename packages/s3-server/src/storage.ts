// Filesystem layout of the embedded object store.
//
//   <dataDir>/.tmp/                          in-flight writes; wiped at startup. Same filesystem as
//                                            the buckets, so moving a finished file in is an atomic
//                                            rename. (Bucket names cannot start with '.', so this
//                                            never collides with a bucket.)
//   <dataDir>/<bucket>/bucket.json           bucket record (creation date, location constraint)
//   <dataDir>/<bucket>/objects/<hh>/<h>.obj  one object: its content, then its metadata (see
//                                            "Why one file" below); h = sha256(key) in hex, hh =
//                                            its first two digits. Renaming it into place is the
//                                            commit point of a write.
//   <dataDir>/<bucket>/uploads/<uploadId>/   multipart upload: upload.json and <n>.part per part
//                                            (content, then the part's metadata, as objects)
//   <dataDir>/<bucket>/completed/<id>.json   answers of recently completed multipart uploads
//
// Why hashed names: S3 keys are up to 1024 bytes of arbitrary UTF-8 ('/', '..', spaces, control
// characters, names differing only in case or Unicode normalisation). Mapping them to paths would
// run into NAME_MAX/PATH_MAX, case-insensitive and normalising filesystems (macOS, Windows),
// reserved names and file/directory clashes ("a" and "a/b" are both valid keys). A hash of the key
// has none of these problems: a key never becomes a path component, so no key can reach outside
// the bucket directory or collide with metadata, blobs or multipart files. The real key is stored
// in the metadata and verified on every read; listing order comes from an in-memory index
// (keyindex.ts) built from the metadata.
//
// Why one file: a write streams into .tmp; once the body is complete and verified, the metadata
// (key, size, ETag, checksums, headers) is appended after the content with its length and a magic
// number, the file is synced once and renamed over the key's file. A reader opens the key's file
// and reads the metadata from its end, so it always has one version's bytes with that version's
// ETag, even while the key is replaced (an open file outlives the rename). A crash at any point
// leaves the old object or the new one, never a mix, and costs one sync per object. (Metadata in
// a separate file would need a second sync, or would be lost or torn in a crash.) Stores made
// before this layout (objects/<hh>/<h>.json beside blobs/) are moved to it when opened.

import { createHash, randomBytes } from "node:crypto";
import {
  close as closeCb,
  createReadStream,
  createWriteStream,
  fsync,
  open as openCb,
  write as writeCb,
  type WriteStream,
} from "node:fs";
import { once } from "node:events";
import { promisify } from "node:util";
import {
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  truncate,
  type FileHandle,
} from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Logger } from "pino";
import { checksumBase64, createChecksummer, type ChecksumAlgorithm } from "./checksum.js";
import {
  bucketAlreadyOwnedByYou,
  bucketNotEmpty,
  entityTooSmall,
  invalidBucketName,
  invalidPart,
  invalidPartOrder,
  noSuchBucket,
  noSuchKey,
  noSuchUpload,
  preconditionFailed,
  badDigest,
} from "./errors.js";
import { KeyIndex, type IndexEntry, type ListPage, type ListQuery } from "./keyindex.js";
import { KeyedMutex, KeyedRWLock } from "./locks.js";

export const MIN_PART_SIZE = 5 * 1024 * 1024;

export type ChecksumType = "FULL_OBJECT" | "COMPOSITE";

export interface StoredChecksum {
  algorithm: ChecksumAlgorithm;
  /** Base64 digest; composite checksums carry a "-<parts>" suffix like S3's. */
  value: string;
  type: ChecksumType;
}

/** What a write supplies besides the bytes. */
export interface ObjectAttributes {
  contentType: string;
  /** Stored representation headers by lower-case name (content-encoding, cache-control, ...). */
  headers: Record<string, string>;
  /** x-amz-meta-* values by lower-case name without the prefix. */
  userMetadata: Record<string, string>;
}

export interface ObjectMeta extends ObjectAttributes {
  key: string;
  size: number;
  /** Quoted ETag as sent in headers. */
  etag: string;
  /** ISO 8601 time of the write. */
  lastModified: string;
  checksum?: StoredChecksum;
  /** Sizes of the parts of an object assembled by a multipart upload (for GET ?partNumber). */
  partSizes?: number[];
  /** Base64 checksums (checksum.algorithm) of those parts, when every part had one. */
  partChecksums?: string[];
}

/** What CompleteMultipartUpload answers. */
export interface CompletedUpload {
  etag: string;
  checksum?: StoredChecksum;
}

/** How long a completed upload's answer is kept for a repeated CompleteMultipartUpload. */
const COMPLETED_UPLOAD_KEPT_MS = 60 * 60 * 1000;

export interface BucketInfo {
  name: string;
  created: string;
  locationConstraint: string;
}

export interface UploadMeta extends ObjectAttributes {
  uploadId: string;
  key: string;
  initiated: string;
  checksumAlgorithm?: ChecksumAlgorithm;
  checksumType?: ChecksumType;
}

export interface PartMeta {
  partNumber: number;
  etag: string;
  size: number;
  lastModified: string;
  checksum?: { algorithm: ChecksumAlgorithm; value: string };
}

export interface WriteConditions {
  /** If-Match: the current object's ETag must match ("*" = must exist). */
  ifMatch?: string;
  /** If-None-Match: "*" = the key must not exist. */
  ifNoneMatch?: string;
}

/** Preconditions of a DeleteObject / DeleteObjects entry; a missing object is not an error. */
export interface DeleteConditions {
  /** If-Match / <ETag>: the current object's ETag must match ("*" = any). */
  ifMatch?: string;
  /** x-amz-if-match-last-modified-time / <LastModifiedTime>, ms since the epoch (whole seconds compared). */
  lastModified?: number;
  /** x-amz-if-match-size / <Size>. */
  size?: number;
}

export interface CompletePart {
  partNumber: number;
  etag: string;
  checksum?: string;
}

const randomId = () => randomBytes(16).toString("hex");
const ID_RE = /^[0-9a-f]{32}$/;

export function unquoteEtag(etag: string): string {
  return etag
    .trim()
    .replace(/^W\//, "")
    .replace(/^"(.*)"$/, "$1");
}

/** Whether an If-Match / If-None-Match list ("*" or ETags, comma-separated) names `etag`. */
export function etagMatches(list: string, etag: string): boolean {
  const tags = list.split(",").map(unquoteEtag);
  return tags.includes("*") || tags.includes(unquoteEtag(etag));
}

/** S3 bucket naming rules (general purpose buckets). */
export function isValidBucketName(name: string): boolean {
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name)) return false;
  if (name.includes("..") || name.includes(".-") || name.includes("-.")) return false;
  if (/^\d+\.\d+\.\d+\.\d+$/.test(name)) return false;
  if (/^(xn--|sthree-|amzn-s3-demo-)/.test(name)) return false;
  if (/(-s3alias|--ol-s3|\.mrap|--x-s3|--table-s3)$/.test(name)) return false;
  return true;
}

function isNotFound(err: unknown): boolean {
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
async function readRecord<T extends { size: number }>(handle: FileHandle, file: string): Promise<T> {
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
async function openIfExists(file: string): Promise<FileHandle | undefined> {
  try {
    return await open(file, "r");
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** The record of the file at `file`, or undefined when there is none. */
async function readRecordFile<T extends { size: number }>(file: string): Promise<T | undefined> {
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

export class Storage {
  private readonly tmpDir: string;
  private readonly keyLocks = new KeyedMutex();
  private readonly uploadLocks = new KeyedMutex();
  private readonly bucketLocks = new KeyedRWLock();
  private readonly indexes = new Map<string, Promise<KeyIndex>>();
  /** Bucket records read so far (this process is the directory's only writer). */
  private readonly buckets = new Map<string, BucketInfo>();
  /** Object shard directories known to exist (forgotten when a bucket is deleted). */
  private readonly shards = new Set<string>();
  /** Bumped by every bucket deletion: a record read across one is not kept. */
  private bucketDeletions = 0;

  private constructor(
    readonly dataDir: string,
    private readonly log: Logger,
  ) {
    this.tmpDir = path.join(dataDir, ".tmp");
  }

  static async open(dataDir: string, log: Logger): Promise<Storage> {
    const storage = new Storage(path.resolve(dataDir), log);
    await mkdir(storage.dataDir, { recursive: true });
    // Anything left in the temp area belongs to writes that never completed (crash, kill -9).
    await rm(storage.tmpDir, { recursive: true, force: true });
    await mkdir(storage.tmpDir, { recursive: true });
    await storage.moveToOneFileLayout();
    return storage;
  }

  /**
   * Stores written before objects became one file kept the metadata in objects/<hh>/<h>.json and
   * the content in blobs/ (parts likewise: <n>.json and <n>-<id>.part). Each such pair becomes one
   * record file: the metadata is appended to the content file (cut back to its content first, so
   * a move interrupted by a crash simply runs again), which is then renamed into place.
   */
  private async moveToOneFileLayout(): Promise<void> {
    let moved = 0;
    type Legacy = { size: number; blob?: string; file?: string };
    const move = async (jsonFile: string, meta: Legacy, contentFile: string, target: string) => {
      if (await stat(contentFile).catch(() => undefined)) {
        const { blob: _blob, file: _file, ...record } = meta;
        const temp = await TempFile.adopt(contentFile, record.size);
        try {
          await temp.seal(record);
        } catch (err) {
          await temp.discard();
          throw err;
        }
        await rename(contentFile, target);
        moved++;
      }
      await rm(jsonFile, { force: true });
    };
    const dirs = (dir: string) => readdir(dir).catch(() => [] as string[]);
    for (const bucket of await dirs(this.dataDir)) {
      if (!isValidBucketName(bucket)) continue;
      const bucketDir = path.join(this.dataDir, bucket);
      const blobs = path.join(bucketDir, "blobs");
      if (!(await stat(blobs).catch(() => undefined))) continue;
      for (const shard of await dirs(path.join(bucketDir, "objects"))) {
        for (const name of await dirs(path.join(bucketDir, "objects", shard))) {
          if (!name.endsWith(".json")) continue;
          const jsonFile = path.join(bucketDir, "objects", shard, name);
          const meta = await this.readJson<Legacy>(jsonFile);
          if (!meta?.blob || !ID_RE.test(meta.blob)) continue;
          const target = path.join(bucketDir, "objects", shard, name.replace(/\.json$/, ".obj"));
          await move(jsonFile, meta, path.join(blobs, meta.blob.slice(0, 2), meta.blob), target);
        }
      }
      for (const uploadId of await dirs(path.join(bucketDir, "uploads"))) {
        const dir = path.join(bucketDir, "uploads", uploadId);
        for (const name of await dirs(dir)) {
          if (!/^\d+\.json$/.test(name)) continue;
          const part = await this.readJson<Legacy>(path.join(dir, name));
          if (!part?.file) continue;
          const target = path.join(dir, name.replace(/\.json$/, ".part"));
          await move(path.join(dir, name), part, path.join(dir, path.basename(part.file)), target);
        }
      }
      // What is left in blobs/ belonged to no object (a write cut short by a crash).
      await this.removeTree(blobs);
    }
    if (moved > 0) this.log.info({ moved }, "embedded-s3: objects moved to the one-file layout");
  }

  createTemp(): Promise<TempFile> {
    return TempFile.create(this.tmpDir);
  }

  // ---- paths ---------------------------------------------------------------------------------

  private bucketDir(bucket: string): string {
    if (!isValidBucketName(bucket)) throw invalidBucketName(bucket);
    return path.join(this.dataDir, bucket);
  }

  private objectPath(bucket: string, key: string): string {
    const h = createHash("sha256").update(key, "utf8").digest("hex");
    return path.join(this.bucketDir(bucket), "objects", h.slice(0, 2), `${h}.obj`);
  }

  private partPath(bucket: string, uploadId: string, partNumber: number): string {
    return path.join(this.uploadDir(bucket, uploadId), `${partNumber}.part`);
  }

  private uploadDir(bucket: string, uploadId: string): string {
    if (!ID_RE.test(uploadId)) throw noSuchUpload(uploadId);
    return path.join(this.bucketDir(bucket), "uploads", uploadId);
  }

  private completedFile(bucket: string, uploadId: string): string {
    if (!ID_RE.test(uploadId)) throw noSuchUpload(uploadId);
    return path.join(this.bucketDir(bucket), "completed", `${uploadId}.json`);
  }

  private async writeJsonAtomic(target: string, value: unknown): Promise<void> {
    const tmp = path.join(this.tmpDir, randomId());
    try {
      const handle = await open(tmp, "wx");
      try {
        await handle.writeFile(JSON.stringify(value));
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, target);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  private async readJson<T>(file: string): Promise<T | undefined> {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
    return JSON.parse(text) as T;
  }

  /** Move a directory into the temp area (atomic), then delete it. */
  private async removeTree(dir: string): Promise<void> {
    const trash = path.join(this.tmpDir, `trash-${randomId()}`);
    try {
      await rename(dir, trash);
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
    await rm(trash, { recursive: true, force: true });
  }

  // ---- buckets -------------------------------------------------------------------------------

  async bucketInfo(bucket: string): Promise<BucketInfo | undefined> {
    const known = this.buckets.get(bucket);
    if (known) return known;
    const deletions = this.bucketDeletions;
    const info = await this.readJson<BucketInfo>(path.join(this.bucketDir(bucket), "bucket.json"));
    if (info && deletions === this.bucketDeletions) this.buckets.set(bucket, info);
    return info;
  }

  async requireBucket(bucket: string): Promise<BucketInfo> {
    const info = await this.bucketInfo(bucket);
    if (!info) throw noSuchBucket(bucket);
    return info;
  }

  async listBuckets(): Promise<BucketInfo[]> {
    const entries = await readdir(this.dataDir, { withFileTypes: true });
    const buckets: BucketInfo[] = [];
    for (const entry of entries) {
      if (!entry.isDirectory() || !isValidBucketName(entry.name)) continue;
      const info = await this.bucketInfo(entry.name).catch(() => undefined);
      if (info) buckets.push(info);
    }
    return buckets.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async createBucket(bucket: string, locationConstraint: string): Promise<void> {
    const target = this.bucketDir(bucket);
    await this.bucketLocks.exclusive(bucket, async () => {
      if (await this.bucketInfo(bucket)) throw bucketAlreadyOwnedByYou(bucket);
      // Build the bucket in the temp area and rename it into place, so a bucket either exists
      // completely or not at all.
      const staging = path.join(this.tmpDir, `bucket-${randomId()}`);
      try {
        for (const sub of ["objects", "uploads"]) await mkdir(path.join(staging, sub), { recursive: true });
        const info: BucketInfo = { name: bucket, created: new Date().toISOString(), locationConstraint };
        await this.writeJsonAtomic(path.join(staging, "bucket.json"), info);
        try {
          await rename(staging, target);
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === "ENOTEMPTY" || code === "EEXIST" || code === "EPERM")
            throw bucketAlreadyOwnedByYou(bucket);
          throw err;
        }
      } finally {
        await rm(staging, { recursive: true, force: true });
      }
    });
  }

  async deleteBucket(bucket: string): Promise<void> {
    const dir = this.bucketDir(bucket);
    await this.bucketLocks.exclusive(bucket, async () => {
      await this.requireBucket(bucket);
      if (await this.hasObjects(bucket)) throw bucketNotEmpty(bucket);
      this.indexes.delete(bucket);
      try {
        await this.removeTree(dir);
      } finally {
        // After the directory is gone, so no read that began before can bring the record back.
        this.bucketDeletions++;
        this.buckets.delete(bucket);
        this.shards.clear();
      }
    });
  }

  private async hasObjects(bucket: string): Promise<boolean> {
    const objects = path.join(this.bucketDir(bucket), "objects");
    for (const shard of await readdir(objects).catch(() => [] as string[])) {
      const files = await readdir(path.join(objects, shard)).catch(() => [] as string[]);
      if (files.some((f) => f.endsWith(".obj"))) return true;
    }
    return false;
  }

  // ---- objects -------------------------------------------------------------------------------

  private lockKey(bucket: string, key: string): string {
    return `${bucket}\u0000${key}`;
  }

  private async readMeta(bucket: string, key: string): Promise<ObjectMeta | undefined> {
    const meta = await readRecordFile<ObjectMeta>(this.objectPath(bucket, key));
    // A different key would mean a SHA-256 collision; treat it as absent rather than serve it.
    return meta && meta.key === key ? meta : undefined;
  }

  async headObject(bucket: string, key: string): Promise<ObjectMeta> {
    await this.requireBucket(bucket);
    const meta = await this.readMeta(bucket, key);
    if (!meta) throw noSuchKey(key);
    return meta;
  }

  /**
   * Metadata plus an open handle on the content (its first meta.size bytes), consistent with each
   * other whatever writes follow. Caller closes it.
   */
  async openObject(bucket: string, key: string): Promise<{ meta: ObjectMeta; handle: FileHandle }> {
    await this.requireBucket(bucket);
    const file = this.objectPath(bucket, key);
    const handle = await openIfExists(file);
    if (!handle) throw noSuchKey(key);
    try {
      const meta = await readRecord<ObjectMeta>(handle, file);
      if (meta.key !== key) throw noSuchKey(key);
      return { meta, handle };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  /**
   * A private copy of an object's content in the temp area, for CopyObject, to be sealed with the
   * copy's metadata.
   */
  async cloneToTemp(bucket: string, key: string): Promise<{ meta: ObjectMeta; temp: TempFile }> {
    const { meta, handle } = await this.openObject(bucket, key);
    const tempPath = path.join(this.tmpDir, randomId());
    try {
      // Copied from the open file, so the copy is the version whose metadata was read.
      await pipeline(
        meta.size === 0
          ? Readable.from([])
          : handle.createReadStream({ start: 0, end: meta.size - 1, autoClose: false }),
        createWriteStream(tempPath, { flags: "wx", highWaterMark: 1024 * 1024 }),
      );
      return { meta, temp: await TempFile.adopt(tempPath, meta.size) };
    } catch (err) {
      await rm(tempPath, { force: true });
      throw err;
    } finally {
      await handle.close();
    }
  }

  /**
   * Seal `temp` (its content complete) with the object's metadata and make it the object at `key`,
   * atomically replacing any previous version.
   */
  async commitObject(
    bucket: string,
    key: string,
    temp: TempFile,
    object: Omit<ObjectMeta, "key" | "lastModified">,
    conditions: WriteConditions = {},
  ): Promise<ObjectMeta> {
    const meta: ObjectMeta = { ...object, key, lastModified: new Date().toISOString() };
    await temp.seal(meta);
    return this.bucketLocks.shared(bucket, () =>
      this.keyLocks.run(this.lockKey(bucket, key), async () => {
        await this.requireBucket(bucket);
        const conditional = conditions.ifNoneMatch !== undefined || conditions.ifMatch !== undefined;
        const previous = conditional ? await this.readMeta(bucket, key) : undefined;
        if (
          conditions.ifNoneMatch !== undefined &&
          previous &&
          etagMatches(conditions.ifNoneMatch, previous.etag)
        )
          throw preconditionFailed("If-None-Match");
        if (conditions.ifMatch !== undefined) {
          if (!previous) throw noSuchKey(key);
          if (!etagMatches(conditions.ifMatch, previous.etag)) throw preconditionFailed("If-Match");
        }
        const file = this.objectPath(bucket, key);
        const shard = path.dirname(file);
        if (!this.shards.has(shard)) {
          await mkdir(shard, { recursive: true });
          this.shards.add(shard);
        }
        await temp.moveTo(file);
        await this.indexUpdate(bucket, (index) => index.upsert(indexEntry(meta)));
        return meta;
      }),
    );
  }

  /** Returns whether an object was deleted. */
  async deleteObject(bucket: string, key: string, conditions: DeleteConditions = {}): Promise<boolean> {
    return this.bucketLocks.shared(bucket, () =>
      this.keyLocks.run(this.lockKey(bucket, key), async () => {
        await this.requireBucket(bucket);
        const previous = await this.readMeta(bucket, key);
        if (!previous) return false;
        if (conditions.ifMatch !== undefined && !etagMatches(conditions.ifMatch, previous.etag))
          throw preconditionFailed("If-Match");
        if (
          conditions.lastModified !== undefined &&
          Math.floor(Date.parse(previous.lastModified) / 1000) !== Math.floor(conditions.lastModified / 1000)
        )
          throw preconditionFailed("x-amz-if-match-last-modified-time");
        if (conditions.size !== undefined && previous.size !== conditions.size)
          throw preconditionFailed("x-amz-if-match-size");
        await rm(this.objectPath(bucket, key), { force: true });
        await this.indexUpdate(bucket, (index) => index.remove(key));
        return true;
      }),
    );
  }

  // ---- listing -------------------------------------------------------------------------------

  async listObjects(bucket: string, query: ListQuery): Promise<ListPage> {
    await this.requireBucket(bucket);
    return (await this.index(bucket)).list(query);
  }

  private index(bucket: string): Promise<KeyIndex> {
    let pending = this.indexes.get(bucket);
    if (!pending) {
      const loading = this.loadIndex(bucket);
      pending = loading;
      this.indexes.set(bucket, loading);
      loading.catch(() => {
        if (this.indexes.get(bucket) === loading) this.indexes.delete(bucket);
      });
    }
    return pending;
  }

  /**
   * Apply a write to the index if it is loaded or loading. A commit that races with the initial
   * scan waits for it, so its update lands after the scan's (possibly older) view of the key.
   */
  private async indexUpdate(bucket: string, update: (index: KeyIndex) => void): Promise<void> {
    const pending = this.indexes.get(bucket);
    if (!pending) return;
    try {
      update(await pending);
    } catch {
      // The load failed and was forgotten; the next listing rebuilds it from disk.
    }
  }

  private async loadIndex(bucket: string): Promise<KeyIndex> {
    const objects = path.join(this.bucketDir(bucket), "objects");
    const files: string[] = [];
    for (const shard of await readdir(objects).catch(() => [] as string[])) {
      for (const name of await readdir(path.join(objects, shard)).catch(() => [] as string[])) {
        if (name.endsWith(".obj")) files.push(path.join(objects, shard, name));
      }
    }
    const entries: IndexEntry[] = [];
    let next = 0;
    const worker = async () => {
      while (next < files.length) {
        const file = files[next++]!;
        try {
          const meta = await readRecordFile<ObjectMeta>(file);
          if (meta && typeof meta.key === "string") entries.push(indexEntry(meta));
        } catch (err) {
          this.log.warn({ err, file }, "embedded-s3: skipping unreadable object metadata");
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(32, files.length) }, worker));
    return KeyIndex.fromEntries(entries);
  }

  // ---- multipart uploads ---------------------------------------------------------------------

  async createUpload(
    bucket: string,
    key: string,
    attributes: ObjectAttributes,
    checksum?: { algorithm: ChecksumAlgorithm; type: ChecksumType },
  ): Promise<UploadMeta> {
    return this.bucketLocks.shared(bucket, async () => {
      await this.requireBucket(bucket);
      const uploadId = randomId();
      const dir = this.uploadDir(bucket, uploadId);
      await mkdir(dir, { recursive: true });
      const upload: UploadMeta = {
        ...attributes,
        uploadId,
        key,
        initiated: new Date().toISOString(),
        ...(checksum ? { checksumAlgorithm: checksum.algorithm, checksumType: checksum.type } : {}),
      };
      try {
        await this.writeJsonAtomic(path.join(dir, "upload.json"), upload);
      } catch (err) {
        await rm(dir, { recursive: true, force: true });
        throw err;
      }
      return upload;
    });
  }

  /** The upload, if it exists and (when given) belongs to `key`. */
  async getUpload(bucket: string, uploadId: string, key?: string): Promise<UploadMeta> {
    await this.requireBucket(bucket);
    const upload = await this.readJson<UploadMeta>(
      path.join(this.uploadDir(bucket, uploadId), "upload.json"),
    );
    if (!upload || (key !== undefined && upload.key !== key)) throw noSuchUpload(uploadId);
    return upload;
  }

  /** Seal `temp` (its content complete) with the part's metadata and make it part `partNumber`. */
  async commitPart(
    bucket: string,
    uploadId: string,
    key: string,
    partNumber: number,
    temp: TempFile,
    part: { size: number; etag: string; checksum?: { algorithm: ChecksumAlgorithm; value: string } },
  ): Promise<PartMeta> {
    const meta: PartMeta = { partNumber, ...part, lastModified: new Date().toISOString() };
    await temp.seal(meta);
    return this.uploadLocks.run(`${bucket}/${uploadId}`, async () => {
      await this.getUpload(bucket, uploadId, key);
      try {
        await temp.moveTo(this.partPath(bucket, uploadId, partNumber));
      } catch (err) {
        // The upload directory vanished under us (bucket deleted): the upload no longer exists.
        if (isNotFound(err)) throw noSuchUpload(uploadId);
        throw err;
      }
      return meta;
    });
  }

  async listParts(bucket: string, uploadId: string, key?: string): Promise<PartMeta[]> {
    await this.getUpload(bucket, uploadId, key);
    return this.readParts(bucket, uploadId);
  }

  private async readParts(bucket: string, uploadId: string): Promise<PartMeta[]> {
    const dir = this.uploadDir(bucket, uploadId);
    const parts: PartMeta[] = [];
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      if (!/^\d+\.part$/.test(name)) continue;
      const part = await readRecordFile<PartMeta>(path.join(dir, name));
      if (part) parts.push(part);
    }
    return parts.sort((a, b) => a.partNumber - b.partNumber);
  }

  /**
   * An upload in progress or, once it is gone, its result if it completed within
   * COMPLETED_UPLOAD_KEPT_MS: a repeated CompleteMultipartUpload (an SDK retrying after a lost
   * answer) is answered as the first, as S3 does. NoSuchUpload otherwise.
   */
  async uploadOrCompletion(
    bucket: string,
    uploadId: string,
    key: string,
  ): Promise<UploadMeta | CompletedUpload> {
    try {
      return await this.getUpload(bucket, uploadId, key);
    } catch (err) {
      const done = await this.completedUpload(bucket, uploadId, key);
      if (done) return done;
      throw err;
    }
  }

  private async completedUpload(
    bucket: string,
    uploadId: string,
    key: string,
  ): Promise<CompletedUpload | undefined> {
    const done = await this.readJson<CompletedUpload & { key: string; at: number }>(
      this.completedFile(bucket, uploadId),
    );
    if (!done || done.key !== key || Date.now() - done.at > COMPLETED_UPLOAD_KEPT_MS) return undefined;
    return { etag: done.etag, ...(done.checksum ? { checksum: done.checksum } : {}) };
  }

  /** Records a completion for uploadOrCompletion() and drops the records that have expired. */
  private async recordCompletion(bucket: string, uploadId: string, key: string, meta: ObjectMeta) {
    const file = this.completedFile(bucket, uploadId);
    const dir = path.dirname(file);
    await mkdir(dir, { recursive: true });
    const now = Date.now();
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      const old = path.join(dir, name);
      const info = await stat(old).catch(() => undefined);
      if (info && now - info.mtimeMs > COMPLETED_UPLOAD_KEPT_MS) await rm(old, { force: true });
    }
    await this.writeJsonAtomic(file, {
      key,
      at: now,
      etag: meta.etag,
      ...(meta.checksum ? { checksum: meta.checksum } : {}),
    });
  }

  async completeUpload(
    bucket: string,
    uploadId: string,
    key: string,
    requested: CompletePart[],
    options: { conditions?: WriteConditions; fullObjectChecksum?: string; compositeChecksum?: string } = {},
  ): Promise<CompletedUpload> {
    const dir = this.uploadDir(bucket, uploadId);
    return this.uploadLocks.run(`${bucket}/${uploadId}`, async () => {
      // A repeat that waited for the first completion to finish answers as the first.
      const upload = await this.uploadOrCompletion(bucket, uploadId, key);
      if (!("uploadId" in upload)) return upload;
      const stored = new Map((await this.readParts(bucket, uploadId)).map((p) => [p.partNumber, p]));
      const selected: PartMeta[] = [];
      let previousNumber = 0;
      for (const req of requested) {
        if (req.partNumber <= previousNumber) throw invalidPartOrder();
        previousNumber = req.partNumber;
        const part = stored.get(req.partNumber);
        if (!part || unquoteEtag(part.etag) !== unquoteEtag(req.etag)) throw invalidPart();
        if (req.checksum !== undefined && part.checksum && req.checksum !== part.checksum.value)
          throw invalidPart();
        selected.push(part);
      }
      selected.forEach((part, i) => {
        if (i < selected.length - 1 && part.size < MIN_PART_SIZE) throw entityTooSmall(part.partNumber);
      });

      const algorithm = upload.checksumAlgorithm;
      const fullChecksum =
        algorithm && upload.checksumType === "FULL_OBJECT" ? createChecksummer(algorithm) : undefined;
      // Every part's checksum, when every part has one of the upload's algorithm.
      const partChecksums =
        algorithm && selected.every((p) => p.checksum?.algorithm === algorithm)
          ? selected.map((p) => p.checksum!.value)
          : undefined;
      const mismatch = () =>
        badDigest(`The ${algorithm?.toUpperCase()} you specified did not match the calculated checksum.`);
      const partFile = (partNumber: number) => this.partPath(bucket, uploadId, partNumber);
      const temp = await this.createTemp();
      try {
        await pipeline(async function* () {
          for (const part of selected) {
            if (part.size === 0) continue;
            for await (const chunk of createReadStream(partFile(part.partNumber), {
              start: 0,
              end: part.size - 1,
              highWaterMark: 1024 * 1024,
            })) {
              fullChecksum?.update(chunk as Buffer);
              yield chunk as Buffer;
            }
          }
        }, temp.stream);

        let checksum: StoredChecksum | undefined;
        if (algorithm && fullChecksum) {
          const value = fullChecksum.digest().toString("base64");
          if (options.fullObjectChecksum !== undefined && options.fullObjectChecksum !== value)
            throw mismatch();
          checksum = { algorithm, value, type: "FULL_OBJECT" };
        } else if (algorithm && partChecksums) {
          const composite = checksumBase64(algorithm, ...partChecksums.map((v) => Buffer.from(v, "base64")));
          const asserted = options.compositeChecksum;
          if (
            asserted !== undefined &&
            asserted !== composite &&
            asserted !== `${composite}-${selected.length}`
          )
            throw mismatch();
          checksum = { algorithm, value: `${composite}-${selected.length}`, type: "COMPOSITE" };
        } else if (algorithm && options.compositeChecksum !== undefined) {
          throw mismatch();
        }
        const md5s = Buffer.concat(selected.map((p) => Buffer.from(unquoteEtag(p.etag), "hex")));
        const etag = `"${createHash("md5").update(md5s).digest("hex")}-${selected.length}"`;
        const meta = await this.commitObject(
          bucket,
          key,
          temp,
          {
            contentType: upload.contentType,
            headers: upload.headers,
            userMetadata: upload.userMetadata,
            size: selected.reduce((sum, p) => sum + p.size, 0),
            etag,
            ...(checksum ? { checksum } : {}),
            partSizes: selected.map((p) => p.size),
            ...(partChecksums ? { partChecksums } : {}),
          },
          options.conditions,
        );
        await this.recordCompletion(bucket, uploadId, key, meta);
        await this.removeTree(dir);
        return meta;
      } finally {
        await temp.discard();
      }
    });
  }

  async abortUpload(bucket: string, uploadId: string, key?: string): Promise<void> {
    const dir = this.uploadDir(bucket, uploadId);
    await this.uploadLocks.run(`${bucket}/${uploadId}`, async () => {
      await this.getUpload(bucket, uploadId, key);
      await this.removeTree(dir);
    });
  }

  async listUploads(bucket: string): Promise<UploadMeta[]> {
    await this.requireBucket(bucket);
    const root = path.join(this.bucketDir(bucket), "uploads");
    const uploads: UploadMeta[] = [];
    for (const id of await readdir(root).catch(() => [] as string[])) {
      if (!ID_RE.test(id)) continue;
      const upload = await this.readJson<UploadMeta>(path.join(root, id, "upload.json")).catch(
        () => undefined,
      );
      if (upload) uploads.push(upload);
    }
    return uploads.sort(
      (a, b) =>
        Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)) ||
        (a.initiated < b.initiated ? -1 : a.initiated > b.initiated ? 1 : 0),
    );
  }
}

function indexEntry(meta: ObjectMeta): IndexEntry {
  return { key: meta.key, size: meta.size, etag: meta.etag, lastModified: meta.lastModified };
}
