import { createReadStream, createWriteStream } from "node:fs";
import { stat } from "node:fs/promises";
import { pipeline } from "node:stream/promises";
import type { Readable } from "node:stream";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import type { StorageSettings } from "../core/storage/s3.js";
import { outputUrl } from "../core/storage/s3.js";
import { PermanentError } from "./errors.js";
import type { ObjectWriter, OutputData, UploadedOutput } from "./processor.js";

/** Files larger than this are uploaded in parts (and in parallel). */
export const MULTIPART_THRESHOLD = 16 * 1024 * 1024;
const PART_SIZE = 8 * 1024 * 1024;
/** Parts in flight at once. */
const PART_CONCURRENCY = 4;

const where = (bucket: string, key: string) => `s3://${bucket}/${key}`;

/** The HTTP status the object store answered a failed request with; undefined when none came. */
function answeredStatus(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;
}

/** The object store's refusals that the same request will always meet again. */
function storeError(
  err: unknown,
  bucket: string,
  key: string,
  role: "source" | "destination" | "object",
): Error {
  const e = err as { name?: string; Code?: string };
  const code = e.name ?? e.Code;
  const status = answeredStatus(err);
  if (code === "NoSuchKey" || code === "NotFound" || (status === 404 && code !== "NoSuchBucket")) {
    return new PermanentError(`${role} ${where(bucket, key)} not found`);
  }
  if (code === "NoSuchBucket") return new PermanentError(`${role} bucket ${bucket} does not exist`);
  if (code === "AccessDenied" || status === 403) {
    return new PermanentError(`access to ${role} ${where(bucket, key)} denied by the object store`);
  }
  if (code === "InvalidBucketName") return new PermanentError(`${role} bucket name ${bucket} is not valid`);
  return err instanceof Error ? err : new Error(String(err));
}

export interface DownloadResult {
  bytes: number;
  contentType?: string;
}

interface DownloadOptions {
  maxBytes: number;
  /** The setting `maxBytes` comes from, as an error names it; default limits.max_source_bytes. */
  limitName?: string;
  signal: AbortSignal;
  role?: "source" | "object";
}

/**
 * GETs an object and checks its declared size against `maxBytes`; the caller takes the body. The
 * body is counted as it arrives, and destroyed past `maxBytes` (a store may send more than it
 * declared, or declare nothing).
 */
async function getObject(
  s3: S3Client,
  bucket: string,
  key: string,
  options: DownloadOptions,
): Promise<{
  /** The body, counted against `maxBytes` from now on: call it right before reading. */
  body: () => Readable;
  size: number | undefined;
  contentType?: string;
  received: () => number;
}> {
  const role = options.role ?? "source";
  const limit = options.limitName ?? "limits.max_source_bytes";
  let response;
  try {
    response = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }), {
      abortSignal: options.signal,
    });
  } catch (err) {
    throw storeError(err, bucket, key, role);
  }
  const size = response.ContentLength;
  if (size !== undefined && size > options.maxBytes) {
    (response.Body as Readable | undefined)?.destroy();
    throw new PermanentError(
      `${role} ${where(bucket, key)} is ${size} bytes, more than ${limit} (${options.maxBytes})`,
    );
  }
  if (size === 0) throw new PermanentError(`${role} ${where(bucket, key)} is empty`);
  const body = response.Body as Readable;
  let bytes = 0;
  // Counted from when the caller starts reading: a 'data' listener would start the flow at once.
  const count = () => {
    body.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > options.maxBytes) {
        body.destroy(
          new PermanentError(`${role} ${where(bucket, key)} is larger than ${limit} (${options.maxBytes})`),
        );
      }
    });
    return body;
  };
  return {
    body: count,
    size,
    ...(response.ContentType ? { contentType: response.ContentType } : {}),
    received: () => bytes,
  };
}

/**
 * Every chunk of a download is a buffer of its own outside V8's heap, freed when a collection finds
 * its small JavaScript object dead; streaming to a file allocates too little JavaScript to set one
 * off, so a 6.9 MB source left twice its size in dead buffers in the runner's RSS until after its
 * job. With `gc` exposed (RUNNER_NODE_FLAGS' --expose-gc), a young-generation collection each
 * COLLECT_EVERY_BYTES frees them as the download goes (docs/performance.md, "Video jobs").
 */
const COLLECT_EVERY_BYTES = 1024 * 1024;

function collectingAsItGoes(body: Readable): Readable {
  const gc = globalThis.gc;
  if (!gc) return body;
  let since = 0;
  body.on("data", (chunk: Buffer) => {
    since += chunk.length;
    if (since < COLLECT_EVERY_BYTES) return;
    since = 0;
    gc({ type: "minor" });
  });
  return body;
}

/** Streams an object to a local file, refusing objects over `maxBytes`; never held in memory. */
export async function downloadObject(
  s3: S3Client,
  bucket: string,
  key: string,
  path: string,
  options: DownloadOptions,
): Promise<DownloadResult> {
  const got = await getObject(s3, bucket, key, options);
  await pipeline(collectingAsItGoes(got.body()), createWriteStream(path), { signal: options.signal });
  return { bytes: got.received(), ...(got.contentType ? { contentType: got.contentType } : {}) };
}

/** Where fetchSource put the object: in memory, or in the file it asked for. */
export type FetchedSource = DownloadResult & ({ buffer: Buffer } | { path: string });

/**
 * GETs an object into memory when its declared size is at most `inMemoryBytes`, else streams it to
 * the file `toFile()` names (called only then, so a job kept in memory makes no scratch directory).
 * An object without a declared size goes to a file. `maxBytes` holds either way.
 */
export async function fetchSource(
  s3: S3Client,
  bucket: string,
  key: string,
  options: DownloadOptions & { inMemoryBytes: number; toFile: () => Promise<string> },
): Promise<FetchedSource> {
  const got = await getObject(s3, bucket, key, options);
  const type = got.contentType ? { contentType: got.contentType } : {};
  if (got.size !== undefined && got.size <= options.inMemoryBytes) {
    const chunks: Buffer[] = [];
    await pipeline(
      got.body(),
      async (source: AsyncIterable<Buffer>) => {
        for await (const chunk of source) chunks.push(chunk);
      },
      { signal: options.signal },
    );
    return { bytes: got.received(), ...type, buffer: Buffer.concat(chunks, got.received()) };
  }
  let path: string;
  try {
    path = await options.toFile();
  } catch (err) {
    got.body().destroy();
    throw err;
  }
  await pipeline(collectingAsItGoes(got.body()), createWriteStream(path), { signal: options.signal });
  return { bytes: got.received(), ...type, path };
}

/**
 * Uploads a local file. Small files go in one PUT; large ones in parts, and a failed multipart
 * upload is aborted, so no partial object is ever left behind.
 */
export async function uploadFile(
  s3: S3Client,
  bucket: string,
  key: string,
  path: string,
  contentType: string,
  signal: AbortSignal,
): Promise<number> {
  const { size } = await stat(path);
  const range = (start: number, end: number) => createReadStream(path, { start, end: end - 1 });
  await upload(s3, bucket, key, size, range, contentType, signal);
  return size;
}

/** Uploads bytes held in memory, as uploadFile() uploads a file. */
export async function uploadBuffer(
  s3: S3Client,
  bucket: string,
  key: string,
  data: Buffer,
  contentType: string,
  signal: AbortSignal,
): Promise<number> {
  const range = (start: number, end: number) => data.subarray(start, end);
  await upload(s3, bucket, key, data.length, range, contentType, signal);
  return data.length;
}

/**
 * Uploads a processor's one output (a file, or bytes in memory) to bucket/key: what the runner does
 * with a job's output, and a pipeline with each step's.
 */
export async function uploadOutput(
  s3: S3Client,
  storage: StorageSettings,
  bucket: string,
  key: string,
  out: OutputData,
  signal: AbortSignal,
): Promise<UploadedOutput> {
  const size =
    "buffer" in out
      ? await uploadBuffer(s3, bucket, key, out.buffer, out.contentType, signal)
      : await uploadFile(s3, bucket, key, out.path, out.contentType, signal);
  return { output_url: outputUrl(storage, bucket, key), file_size: size };
}

/** The bytes [start, end) of what is uploaded, as a request body. */
type BodyRange = (start: number, end: number) => Readable | Buffer;

async function upload(
  s3: S3Client,
  bucket: string,
  key: string,
  size: number,
  range: BodyRange,
  contentType: string,
  signal: AbortSignal,
): Promise<void> {
  signal.throwIfAborted();
  try {
    if (size <= MULTIPART_THRESHOLD) {
      await s3.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: range(0, size),
          ContentLength: size,
          ContentType: contentType,
        }),
        { abortSignal: signal },
      );
    } else {
      await multipartUpload(s3, bucket, key, range, size, contentType, signal);
    }
  } catch (err) {
    throw await uploadError(s3, err, bucket, key, signal);
  }
}

/**
 * A store may answer a PUT it refuses (no such bucket, access denied) before it reads the body, and
 * close the connection: the client then sees only the broken connection (EPIPE, ECONNRESET), not the
 * answer (versitygw does this; requests of 2 MB and more wait for 100-continue and see the answer).
 * A failure without an answer is explained by asking about the bucket, so a missing destination
 * bucket still fails the job at once, with a message that names it. (A 403 there proves nothing: a
 * credential may write objects without the right to HEAD their bucket.)
 */
async function uploadError(
  s3: S3Client,
  err: unknown,
  bucket: string,
  key: string,
  signal: AbortSignal,
): Promise<Error> {
  if (answeredStatus(err) === undefined && !signal.aborted) {
    const status = await s3
      .send(new HeadBucketCommand({ Bucket: bucket }), { abortSignal: signal })
      .then(() => undefined, answeredStatus);
    if (status === 404) return new PermanentError(`destination bucket ${bucket} does not exist`);
  }
  return storeError(err, bucket, key, "destination");
}

/**
 * Parts of PART_SIZE read straight from the file (or memory), PART_CONCURRENCY at a time. Written here rather
 * than with @aws-sdk/lib-storage's Upload: an Upload stopped by its abort() leaves the multipart
 * upload open on the store (measured against our store), and the runner promises no partial
 * upload left behind; here any failure or abort ends in AbortMultipartUpload.
 */
async function multipartUpload(
  s3: S3Client,
  bucket: string,
  key: string,
  range: BodyRange,
  size: number,
  contentType: string,
  signal: AbortSignal,
): Promise<void> {
  const created = await s3.send(
    new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ContentType: contentType }),
    { abortSignal: signal },
  );
  const uploadId = created.UploadId!;
  try {
    const count = Math.ceil(size / PART_SIZE);
    const etags = new Array<string>(count);
    let next = 0;
    const worker = async () => {
      while (next < count) {
        const index = next++;
        const start = index * PART_SIZE;
        const length = Math.min(PART_SIZE, size - start);
        const part = await s3.send(
          new UploadPartCommand({
            Bucket: bucket,
            Key: key,
            UploadId: uploadId,
            PartNumber: index + 1,
            ContentLength: length,
            Body: range(start, start + length),
          }),
          { abortSignal: signal },
        );
        etags[index] = part.ETag!;
      }
    };
    await Promise.all(Array.from({ length: Math.min(PART_CONCURRENCY, count) }, worker));
    signal.throwIfAborted();
    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: key,
        UploadId: uploadId,
        MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
      }),
      { abortSignal: signal },
    );
  } catch (err) {
    // Not under the job's signal: the abort must reach the store even when the job was stopped.
    await s3
      .send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }))
      .catch(() => undefined);
    throw err;
  }
}

/** Keys one DeleteObjects request may name. */
const DELETE_BATCH = 1000;

/** A processor's ObjectWriter on the runner's store client. */
export function objectWriter(s3: S3Client): ObjectWriter {
  return {
    upload: (bucket, key, path, contentType, signal) =>
      uploadFile(s3, bucket, key, path, contentType, signal),
    remove: async (bucket, keys) => {
      for (let i = 0; i < keys.length; i += DELETE_BATCH) {
        const batch = keys.slice(i, i + DELETE_BATCH);
        const answer = await s3.send(
          new DeleteObjectsCommand({
            Bucket: bucket,
            Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
          }),
        );
        const failed = answer.Errors?.filter((e) => e.Code !== "NoSuchKey") ?? [];
        if (failed.length > 0) {
          const first = failed[0]!;
          throw new Error(
            `${failed.length} object(s) of s3://${bucket} could not be removed: ${first.Key} (${first.Code ?? "?"})`,
          );
        }
      }
    },
  };
}
