// Multipart uploads: an upload is a directory of its own (upload.json and one record file per
// part, see layout.ts); completing one assembles the chosen parts into a temp file and commits it
// as an object through the store (storage.ts), then keeps the answer for an hour so a repeated
// completion is answered as the first.

import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, readdir, rm, stat } from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { checksumBase64, createChecksummer, type ChecksumAlgorithm } from "./checksum.js";
import { badDigest, entityTooSmall, invalidPart, invalidPartOrder, noSuchUpload } from "./errors.js";
import type { Layout } from "./layout.js";
import {
  ID_RE,
  MIN_PART_SIZE,
  randomId,
  unquoteEtag,
  type ChecksumType,
  type CompletedUpload,
  type CompletePart,
  type ObjectAttributes,
  type ObjectMeta,
  type PartMeta,
  type StoredChecksum,
  type UploadMeta,
  type WriteConditions,
} from "./model.js";
import { isNotFound, readRecordFile, type TempFile } from "./record.js";
import { KeyedMutex } from "./locks.js";
import type { Storage } from "./storage.js";

/** How long a completed upload's answer is kept for a repeated CompleteMultipartUpload. */
const COMPLETED_UPLOAD_KEPT_MS = 60 * 60 * 1000;

export class Uploads {
  private readonly locks = new KeyedMutex();

  constructor(
    private readonly layout: Layout,
    /** The buckets and objects: an upload lives in a bucket and completes as an object. */
    private readonly store: Storage,
  ) {}

  async createUpload(
    bucket: string,
    key: string,
    attributes: ObjectAttributes,
    checksum?: { algorithm: ChecksumAlgorithm; type: ChecksumType },
  ): Promise<UploadMeta> {
    return this.store.bucketLocks.shared(bucket, async () => {
      await this.store.requireBucket(bucket);
      const uploadId = randomId();
      const dir = this.layout.uploadDir(bucket, uploadId);
      await mkdir(dir, { recursive: true });
      const upload: UploadMeta = {
        ...attributes,
        uploadId,
        key,
        initiated: new Date().toISOString(),
        ...(checksum ? { checksumAlgorithm: checksum.algorithm, checksumType: checksum.type } : {}),
      };
      try {
        await this.layout.writeJsonAtomic(path.join(dir, "upload.json"), upload);
      } catch (err) {
        await rm(dir, { recursive: true, force: true });
        throw err;
      }
      return upload;
    });
  }

  /** The upload, if it exists and (when given) belongs to `key`. */
  async getUpload(bucket: string, uploadId: string, key?: string): Promise<UploadMeta> {
    await this.store.requireBucket(bucket);
    const upload = await this.layout.readJson<UploadMeta>(
      path.join(this.layout.uploadDir(bucket, uploadId), "upload.json"),
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
    return this.locks.run(`${bucket}/${uploadId}`, async () => {
      await this.getUpload(bucket, uploadId, key);
      try {
        await temp.moveTo(this.layout.partPath(bucket, uploadId, partNumber));
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
    const dir = this.layout.uploadDir(bucket, uploadId);
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
    const done = await this.layout.readJson<CompletedUpload & { key: string; at: number }>(
      this.layout.completedFile(bucket, uploadId),
    );
    if (!done || done.key !== key || Date.now() - done.at > COMPLETED_UPLOAD_KEPT_MS) return undefined;
    return { etag: done.etag, ...(done.checksum ? { checksum: done.checksum } : {}) };
  }

  /** Records a completion for uploadOrCompletion() and drops the records that have expired. */
  private async recordCompletion(bucket: string, uploadId: string, key: string, meta: ObjectMeta) {
    const file = this.layout.completedFile(bucket, uploadId);
    const dir = path.dirname(file);
    await mkdir(dir, { recursive: true });
    const now = Date.now();
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      const old = path.join(dir, name);
      const info = await stat(old).catch(() => undefined);
      if (info && now - info.mtimeMs > COMPLETED_UPLOAD_KEPT_MS) await rm(old, { force: true });
    }
    await this.layout.writeJsonAtomic(file, {
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
    const dir = this.layout.uploadDir(bucket, uploadId);
    return this.locks.run(`${bucket}/${uploadId}`, async () => {
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
      const partFile = (partNumber: number) => this.layout.partPath(bucket, uploadId, partNumber);
      const temp = await this.layout.createTemp();
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
        const meta = await this.store.commitObject(
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
        await this.layout.removeTree(dir);
        return meta;
      } finally {
        await temp.discard();
      }
    });
  }

  async abortUpload(bucket: string, uploadId: string, key?: string): Promise<void> {
    const dir = this.layout.uploadDir(bucket, uploadId);
    await this.locks.run(`${bucket}/${uploadId}`, async () => {
      await this.getUpload(bucket, uploadId, key);
      await this.layout.removeTree(dir);
    });
  }

  async listUploads(bucket: string): Promise<UploadMeta[]> {
    await this.store.requireBucket(bucket);
    const root = path.join(this.layout.bucketDir(bucket), "uploads");
    const uploads: UploadMeta[] = [];
    for (const id of await readdir(root).catch(() => [] as string[])) {
      if (!ID_RE.test(id)) continue;
      const upload = await this.layout
        .readJson<UploadMeta>(path.join(root, id, "upload.json"))
        .catch(() => undefined);
      if (upload) uploads.push(upload);
    }
    return uploads.sort(
      (a, b) =>
        Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)) ||
        (a.initiated < b.initiated ? -1 : a.initiated > b.initiated ? 1 : 0),
    );
  }
}
