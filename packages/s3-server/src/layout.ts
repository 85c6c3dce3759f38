// Filesystem layout of the embedded object store.
//
//   <dataDir>/.tmp/                          in-flight writes; wiped at startup. Same filesystem as
//                                            the buckets, so moving a finished file in is an atomic
//                                            rename. (Bucket names cannot start with '.', so this
//                                            never collides with a bucket.)
//   <dataDir>/<bucket>/bucket.json           bucket record (creation date, location constraint)
//   <dataDir>/<bucket>/objects/<hh>/<h>.obj  one object: its content, then its metadata (see
//                                            record.ts); h = sha256(key) in hex, hh =
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
// Why one file per object: record.ts. Stores made before that layout (objects/<hh>/<h>.json
// beside blobs/) are moved to it when opened (moveToOneFileLayout below).

import { createHash } from "node:crypto";
import { mkdir, open, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "pino";
import { invalidBucketName, noSuchUpload } from "./errors.js";
import { ID_RE, isValidBucketName, randomId } from "./model.js";
import { isNotFound, TempFile } from "./record.js";

/** Where everything lives under the data directory, and the small files written there atomically. */
export class Layout {
  readonly tmpDir: string;

  constructor(readonly dataDir: string) {
    this.tmpDir = path.join(dataDir, ".tmp");
  }

  /** The data directory made ready: created when missing, its temp area emptied. */
  async prepare(): Promise<void> {
    await mkdir(this.dataDir, { recursive: true });
    // Anything left in the temp area belongs to writes that never completed (crash, kill -9).
    await rm(this.tmpDir, { recursive: true, force: true });
    await mkdir(this.tmpDir, { recursive: true });
  }

  createTemp(): Promise<TempFile> {
    return TempFile.create(this.tmpDir);
  }

  bucketDir(bucket: string): string {
    if (!isValidBucketName(bucket)) throw invalidBucketName(bucket);
    return path.join(this.dataDir, bucket);
  }

  objectPath(bucket: string, key: string): string {
    const h = createHash("sha256").update(key, "utf8").digest("hex");
    return path.join(this.bucketDir(bucket), "objects", h.slice(0, 2), `${h}.obj`);
  }

  partPath(bucket: string, uploadId: string, partNumber: number): string {
    return path.join(this.uploadDir(bucket, uploadId), `${partNumber}.part`);
  }

  uploadDir(bucket: string, uploadId: string): string {
    if (!ID_RE.test(uploadId)) throw noSuchUpload(uploadId);
    return path.join(this.bucketDir(bucket), "uploads", uploadId);
  }

  completedFile(bucket: string, uploadId: string): string {
    if (!ID_RE.test(uploadId)) throw noSuchUpload(uploadId);
    return path.join(this.bucketDir(bucket), "completed", `${uploadId}.json`);
  }

  async writeJsonAtomic(target: string, value: unknown): Promise<void> {
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

  async readJson<T>(file: string): Promise<T | undefined> {
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
  async removeTree(dir: string): Promise<void> {
    const trash = path.join(this.tmpDir, `trash-${randomId()}`);
    try {
      await rename(dir, trash);
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
    await rm(trash, { recursive: true, force: true });
  }
}

/**
 * Stores written before objects became one file kept the metadata in objects/<hh>/<h>.json and
 * the content in blobs/ (parts likewise: <n>.json and <n>-<id>.part). Each such pair becomes one
 * record file: the metadata is appended to the content file (cut back to its content first, so
 * a move interrupted by a crash simply runs again), which is then renamed into place.
 */
export async function moveToOneFileLayout(layout: Layout, log: Logger): Promise<void> {
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
  for (const bucket of await dirs(layout.dataDir)) {
    if (!isValidBucketName(bucket)) continue;
    const bucketDir = path.join(layout.dataDir, bucket);
    const blobs = path.join(bucketDir, "blobs");
    if (!(await stat(blobs).catch(() => undefined))) continue;
    for (const shard of await dirs(path.join(bucketDir, "objects"))) {
      for (const name of await dirs(path.join(bucketDir, "objects", shard))) {
        if (!name.endsWith(".json")) continue;
        const jsonFile = path.join(bucketDir, "objects", shard, name);
        const meta = await layout.readJson<Legacy>(jsonFile);
        if (!meta?.blob || !ID_RE.test(meta.blob)) continue;
        const target = path.join(bucketDir, "objects", shard, name.replace(/\.json$/, ".obj"));
        await move(jsonFile, meta, path.join(blobs, meta.blob.slice(0, 2), meta.blob), target);
      }
    }
    for (const uploadId of await dirs(path.join(bucketDir, "uploads"))) {
      const dir = path.join(bucketDir, "uploads", uploadId);
      for (const name of await dirs(dir)) {
        if (!/^\d+\.json$/.test(name)) continue;
        const part = await layout.readJson<Legacy>(path.join(dir, name));
        if (!part?.file) continue;
        const target = path.join(dir, name.replace(/\.json$/, ".part"));
        await move(path.join(dir, name), part, path.join(dir, path.basename(part.file)), target);
      }
    }
    // What is left in blobs/ belonged to no object (a write cut short by a crash).
    await layout.removeTree(blobs);
  }
  if (moved > 0) log.info({ moved }, "embedded-s3: objects moved to the one-file layout");
}
