// Filesystem layout of the embedded object store.
//
//   <dataDir>/.tmp/                          in-flight writes; wiped at startup. Same filesystem as
//                                            the buckets, so moving a finished file in is an atomic
//                                            rename. (Bucket names cannot start with '.', so this
//                                            never collides with a bucket.)
//   <dataDir>/<bucket>/bucket.json           bucket record (creation date, location constraint)
//   <dataDir>/<bucket>/objects/<hh>/<h>.json object metadata; h = sha256(key) in hex, hh = its first
//                                            two digits. This file is the commit point of a write.
//   <dataDir>/<bucket>/blobs/<bb>/<id>       object content, immutable, named by a random id that
//                                            the metadata points to.
//   <dataDir>/<bucket>/uploads/<uploadId>/   multipart upload: upload.json, <n>.json per part (the
//                                            part's commit point) and the part data <n>-<id>.part
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
// Why blobs separate from metadata: a write streams into .tmp, is renamed to a fresh blob name,
// then the metadata is written to a temp file and renamed over the key's metadata file. Readers
// therefore see either the complete old object or the complete new one, never a mix of one
// version's bytes with another's ETag, and a crash at any point leaves at worst an unreferenced
// blob, never a half-written object. Metadata commits and blob removal for one key are serialised
// by an in-process lock (this process is the only writer of the directory), and a reader opens the
// blob under the same lock, so an open file descriptor stays valid even if the object is replaced
// while it is being streamed.

import { createHash, randomBytes } from "node:crypto";
import { close as closeCb, createReadStream, createWriteStream, fsync, type WriteStream } from "node:fs";
import { once } from "node:events";
import { promisify } from "node:util";
import {
  copyFile,
  link,
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  type FileHandle,
} from "node:fs/promises";
import path from "node:path";
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
  blob: string;
  checksum?: StoredChecksum;
  /** Sizes of the parts of an object assembled by a multipart upload (for GET ?partNumber). */
  partSizes?: number[];
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
  file: string;
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

/** A file being written in the temp area. Either sealed and handed to a commit, or discarded. */
export class TempFile {
  private closed = false;

  private constructor(
    readonly path: string,
    readonly stream: WriteStream,
    private readonly fd: number,
  ) {}

  static async create(dir: string): Promise<TempFile> {
    const file = path.join(dir, randomId());
    // autoClose: false keeps the descriptor open after the stream finishes, for the fsync in
    // seal(). (A FileHandle-based write stream cannot be used here: on Node 20 closing its handle
    // after the stream finished never resolves.)
    const stream = createWriteStream(file, { flags: "wx", autoClose: false, highWaterMark: 1024 * 1024 });
    let fd: number;
    try {
      [fd] = (await once(stream, "open")) as [number];
    } catch (err) {
      stream.destroy();
      throw err;
    }
    return new TempFile(file, stream, fd);
  }

  /** Flush to stable storage and close; call after the stream has finished. */
  async seal(): Promise<void> {
    await fsyncFd(this.fd);
    this.closed = true;
    await closeFd(this.fd);
  }

  /** Close if still open and remove the file unless a commit already moved it away. */
  async discard(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      // Wait until no write is in flight on the descriptor before closing it (the number could
      // otherwise be reused by another open while a write still targets it).
      const stream = this.stream;
      const closed = new Promise<void>((resolve) =>
        stream.closed ? resolve() : stream.once("close", () => resolve()),
      );
      stream.destroy();
      await closed;
      await closeFd(this.fd).catch(() => {});
    }
    await rm(this.path, { force: true });
  }
}

export class Storage {
  private readonly tmpDir: string;
  private readonly keyLocks = new KeyedMutex();
  private readonly uploadLocks = new KeyedMutex();
  private readonly bucketLocks = new KeyedRWLock();
  private readonly indexes = new Map<string, Promise<KeyIndex>>();

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
    return storage;
  }

  createTemp(): Promise<TempFile> {
    return TempFile.create(this.tmpDir);
  }

  // ---- paths ---------------------------------------------------------------------------------

  private bucketDir(bucket: string): string {
    if (!isValidBucketName(bucket)) throw invalidBucketName(bucket);
    return path.join(this.dataDir, bucket);
  }

  private metaPath(bucket: string, key: string): string {
    const h = createHash("sha256").update(key, "utf8").digest("hex");
    return path.join(this.bucketDir(bucket), "objects", h.slice(0, 2), `${h}.json`);
  }

  private blobPath(bucket: string, blob: string): string {
    if (!ID_RE.test(blob)) throw new Error(`corrupt object metadata: invalid blob id in bucket ${bucket}`);
    return path.join(this.bucketDir(bucket), "blobs", blob.slice(0, 2), blob);
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
    return this.readJson<BucketInfo>(path.join(this.bucketDir(bucket), "bucket.json"));
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
        for (const sub of ["objects", "blobs", "uploads"])
          await mkdir(path.join(staging, sub), { recursive: true });
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
      await this.removeTree(dir);
    });
  }

  private async hasObjects(bucket: string): Promise<boolean> {
    const objects = path.join(this.bucketDir(bucket), "objects");
    for (const shard of await readdir(objects).catch(() => [] as string[])) {
      const files = await readdir(path.join(objects, shard)).catch(() => [] as string[]);
      if (files.some((f) => f.endsWith(".json"))) return true;
    }
    return false;
  }

  // ---- objects -------------------------------------------------------------------------------

  private lockKey(bucket: string, key: string): string {
    return `${bucket}\u0000${key}`;
  }

  private async readMeta(bucket: string, key: string): Promise<ObjectMeta | undefined> {
    const meta = await this.readJson<ObjectMeta>(this.metaPath(bucket, key));
    // A different key would mean a SHA-256 collision; treat it as absent rather than serve it.
    return meta && meta.key === key ? meta : undefined;
  }

  async headObject(bucket: string, key: string): Promise<ObjectMeta> {
    await this.requireBucket(bucket);
    const meta = await this.readMeta(bucket, key);
    if (!meta) throw noSuchKey(key);
    return meta;
  }

  /** Metadata plus an open handle on the content, consistent with each other. Caller closes it. */
  async openObject(bucket: string, key: string): Promise<{ meta: ObjectMeta; handle: FileHandle }> {
    await this.requireBucket(bucket);
    return this.keyLocks.run(this.lockKey(bucket, key), async () => {
      const meta = await this.readMeta(bucket, key);
      if (!meta) throw noSuchKey(key);
      const handle = await open(this.blobPath(bucket, meta.blob), "r");
      return { meta, handle };
    });
  }

  /**
   * A private copy of an object's content in the temp area (a hard link to the immutable blob
   * where the filesystem allows, else a file copy), for CopyObject.
   */
  async cloneToTemp(bucket: string, key: string): Promise<{ meta: ObjectMeta; tempPath: string }> {
    await this.requireBucket(bucket);
    return this.keyLocks.run(this.lockKey(bucket, key), async () => {
      const meta = await this.readMeta(bucket, key);
      if (!meta) throw noSuchKey(key);
      const source = this.blobPath(bucket, meta.blob);
      const tempPath = path.join(this.tmpDir, randomId());
      try {
        await link(source, tempPath);
      } catch {
        try {
          await copyFile(source, tempPath);
        } catch (err) {
          await rm(tempPath, { force: true });
          throw err;
        }
      }
      return { meta, tempPath };
    });
  }

  /** Make `tempPath` the content of `key`, atomically replacing any previous version. */
  async commitObject(
    bucket: string,
    key: string,
    tempPath: string,
    object: Omit<ObjectMeta, "key" | "lastModified" | "blob">,
    conditions: WriteConditions = {},
  ): Promise<ObjectMeta> {
    return this.bucketLocks.shared(bucket, () =>
      this.keyLocks.run(this.lockKey(bucket, key), async () => {
        await this.requireBucket(bucket);
        const previous = await this.readMeta(bucket, key);
        if (conditions.ifNoneMatch !== undefined && previous) {
          const tags = conditions.ifNoneMatch.split(",").map(unquoteEtag);
          if (tags.includes("*") || tags.includes(unquoteEtag(previous.etag)))
            throw preconditionFailed("If-None-Match");
        }
        if (conditions.ifMatch !== undefined) {
          if (!previous) throw noSuchKey(key);
          const tags = conditions.ifMatch.split(",").map(unquoteEtag);
          if (!tags.includes("*") && !tags.includes(unquoteEtag(previous.etag)))
            throw preconditionFailed("If-Match");
        }
        const blob = randomId();
        const blobFile = this.blobPath(bucket, blob);
        await mkdir(path.dirname(blobFile), { recursive: true });
        await rename(tempPath, blobFile);
        const meta: ObjectMeta = { ...object, key, lastModified: new Date().toISOString(), blob };
        const metaFile = this.metaPath(bucket, key);
        try {
          await mkdir(path.dirname(metaFile), { recursive: true });
          await this.writeJsonAtomic(metaFile, meta);
        } catch (err) {
          await rm(blobFile, { force: true });
          throw err;
        }
        await this.indexUpdate(bucket, (index) => index.upsert(indexEntry(meta)));
        if (previous) await this.removeBlob(bucket, previous.blob);
        return meta;
      }),
    );
  }

  /** Returns whether an object was deleted. */
  async deleteObject(bucket: string, key: string): Promise<boolean> {
    return this.bucketLocks.shared(bucket, () =>
      this.keyLocks.run(this.lockKey(bucket, key), async () => {
        await this.requireBucket(bucket);
        const previous = await this.readMeta(bucket, key);
        if (!previous) return false;
        await rm(this.metaPath(bucket, key), { force: true });
        await this.indexUpdate(bucket, (index) => index.remove(key));
        await this.removeBlob(bucket, previous.blob);
        return true;
      }),
    );
  }

  private async removeBlob(bucket: string, blob: string): Promise<void> {
    await rm(this.blobPath(bucket, blob), { force: true }).catch((err: unknown) =>
      this.log.warn({ err, bucket }, "embedded-s3: could not remove replaced blob"),
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
        if (name.endsWith(".json")) files.push(path.join(objects, shard, name));
      }
    }
    const entries: IndexEntry[] = [];
    let next = 0;
    const worker = async () => {
      while (next < files.length) {
        const file = files[next++]!;
        try {
          const meta = await this.readJson<ObjectMeta>(file);
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

  async commitPart(
    bucket: string,
    uploadId: string,
    key: string,
    partNumber: number,
    tempPath: string,
    part: { size: number; etag: string; checksum?: { algorithm: ChecksumAlgorithm; value: string } },
  ): Promise<PartMeta> {
    const dir = this.uploadDir(bucket, uploadId);
    return this.uploadLocks.run(`${bucket}/${uploadId}`, async () => {
      await this.getUpload(bucket, uploadId, key);
      const metaFile = path.join(dir, `${partNumber}.json`);
      const previous = await this.readJson<PartMeta>(metaFile);
      const file = `${partNumber}-${randomId()}.part`;
      try {
        await rename(tempPath, path.join(dir, file));
      } catch (err) {
        // The upload directory vanished under us (bucket deleted): the upload no longer exists.
        if (isNotFound(err)) throw noSuchUpload(uploadId);
        throw err;
      }
      const meta: PartMeta = { partNumber, file, ...part, lastModified: new Date().toISOString() };
      try {
        await this.writeJsonAtomic(metaFile, meta);
      } catch (err) {
        await rm(path.join(dir, file), { force: true });
        throw err;
      }
      if (previous) await rm(path.join(dir, path.basename(previous.file)), { force: true });
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
      if (!/^\d+\.json$/.test(name)) continue;
      const part = await this.readJson<PartMeta>(path.join(dir, name));
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
    options: { conditions?: WriteConditions; fullObjectChecksum?: string } = {},
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
      const temp = await this.createTemp();
      try {
        await pipeline(async function* () {
          for (const part of selected) {
            for await (const chunk of createReadStream(path.join(dir, path.basename(part.file)), {
              highWaterMark: 1024 * 1024,
            })) {
              fullChecksum?.update(chunk as Buffer);
              yield chunk as Buffer;
            }
          }
        }, temp.stream);
        await temp.seal();

        let checksum: StoredChecksum | undefined;
        if (algorithm && fullChecksum) {
          const value = fullChecksum.digest().toString("base64");
          if (options.fullObjectChecksum !== undefined && options.fullObjectChecksum !== value) {
            throw badDigest(
              `The ${algorithm.toUpperCase()} you specified did not match the calculated checksum.`,
            );
          }
          checksum = { algorithm, value, type: "FULL_OBJECT" };
        } else if (algorithm && selected.every((p) => p.checksum?.algorithm === algorithm)) {
          const digests = selected.map((p) => Buffer.from(p.checksum!.value, "base64"));
          checksum = {
            algorithm,
            value: `${checksumBase64(algorithm, ...digests)}-${selected.length}`,
            type: "COMPOSITE",
          };
        }
        const md5s = Buffer.concat(selected.map((p) => Buffer.from(unquoteEtag(p.etag), "hex")));
        const etag = `"${createHash("md5").update(md5s).digest("hex")}-${selected.length}"`;
        const meta = await this.commitObject(
          bucket,
          key,
          temp.path,
          {
            contentType: upload.contentType,
            headers: upload.headers,
            userMetadata: upload.userMetadata,
            size: selected.reduce((sum, p) => sum + p.size, 0),
            etag,
            ...(checksum ? { checksum } : {}),
            partSizes: selected.map((p) => p.size),
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
