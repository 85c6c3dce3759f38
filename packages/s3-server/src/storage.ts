// The embedded object store: its buckets, its objects and their listing, on a data directory laid
// out as layout.ts describes, each object one record file (record.ts). Multipart uploads are its
// part `uploads` (uploads.ts). This process is the directory's only writer: in-process locks
// (locks.ts) make each commit atomic to concurrent requests, and the key index behind listings
// (keyindex.ts) is kept current by every write.

import { createWriteStream } from "node:fs";
import { mkdir, readdir, rename, rm, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Logger } from "pino";
import {
  bucketAlreadyOwnedByYou,
  bucketNotEmpty,
  noSuchBucket,
  noSuchKey,
  preconditionFailed,
} from "./errors.js";
import { KeyIndex, type IndexEntry, type ListPage, type ListQuery } from "./keyindex.js";
import { Layout, moveToOneFileLayout } from "./layout.js";
import { KeyedMutex, KeyedRWLock } from "./locks.js";
import {
  etagMatches,
  isValidBucketName,
  randomId,
  type BucketInfo,
  type DeleteConditions,
  type ObjectMeta,
  type WriteConditions,
} from "./model.js";
import { openIfExists, readRecord, readRecordFile, TempFile } from "./record.js";
import { Uploads } from "./uploads.js";

export class Storage {
  /** Held shared by every write into a bucket, exclusive by its creation and deletion. */
  readonly bucketLocks = new KeyedRWLock();
  /** The multipart uploads of every bucket. */
  readonly uploads: Uploads;
  private readonly keyLocks = new KeyedMutex();
  private readonly indexes = new Map<string, Promise<KeyIndex>>();
  /** Bucket records read so far (this process is the directory's only writer). */
  private readonly buckets = new Map<string, BucketInfo>();
  /** Object shard directories known to exist (forgotten when a bucket is deleted). */
  private readonly shards = new Set<string>();
  /** Bumped by every bucket deletion: a record read across one is not kept. */
  private bucketDeletions = 0;

  private constructor(
    private readonly layout: Layout,
    private readonly log: Logger,
  ) {
    this.uploads = new Uploads(layout, this);
  }

  static async open(dataDir: string, log: Logger): Promise<Storage> {
    const layout = new Layout(path.resolve(dataDir));
    await layout.prepare();
    await moveToOneFileLayout(layout, log);
    return new Storage(layout, log);
  }

  get dataDir(): string {
    return this.layout.dataDir;
  }

  createTemp(): Promise<TempFile> {
    return this.layout.createTemp();
  }

  // ---- buckets -------------------------------------------------------------------------------

  async bucketInfo(bucket: string): Promise<BucketInfo | undefined> {
    const known = this.buckets.get(bucket);
    if (known) return known;
    const deletions = this.bucketDeletions;
    const info = await this.layout.readJson<BucketInfo>(
      path.join(this.layout.bucketDir(bucket), "bucket.json"),
    );
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
    const target = this.layout.bucketDir(bucket);
    await this.bucketLocks.exclusive(bucket, async () => {
      if (await this.bucketInfo(bucket)) throw bucketAlreadyOwnedByYou(bucket);
      // Build the bucket in the temp area and rename it into place, so a bucket either exists
      // completely or not at all.
      const staging = path.join(this.layout.tmpDir, `bucket-${randomId()}`);
      try {
        for (const sub of ["objects", "uploads"]) await mkdir(path.join(staging, sub), { recursive: true });
        const info: BucketInfo = { name: bucket, created: new Date().toISOString(), locationConstraint };
        await this.layout.writeJsonAtomic(path.join(staging, "bucket.json"), info);
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
    const dir = this.layout.bucketDir(bucket);
    await this.bucketLocks.exclusive(bucket, async () => {
      await this.requireBucket(bucket);
      if (await this.hasObjects(bucket)) throw bucketNotEmpty(bucket);
      this.indexes.delete(bucket);
      try {
        await this.layout.removeTree(dir);
      } finally {
        // After the directory is gone, so no read that began before can bring the record back.
        this.bucketDeletions++;
        this.buckets.delete(bucket);
        this.shards.clear();
      }
    });
  }

  private async hasObjects(bucket: string): Promise<boolean> {
    const objects = path.join(this.layout.bucketDir(bucket), "objects");
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
    const meta = await readRecordFile<ObjectMeta>(this.layout.objectPath(bucket, key));
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
    const file = this.layout.objectPath(bucket, key);
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
    const tempPath = path.join(this.layout.tmpDir, randomId());
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
        const file = this.layout.objectPath(bucket, key);
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
        await rm(this.layout.objectPath(bucket, key), { force: true });
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
    const objects = path.join(this.layout.bucketDir(bucket), "objects");
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
}

function indexEntry(meta: ObjectMeta): IndexEntry {
  return { key: meta.key, size: meta.size, etag: meta.etag, lastModified: meta.lastModified };
}
