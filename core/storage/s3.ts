import { GetObjectCommand, HeadBucketCommand, ListBucketsCommand, S3Client } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import type { Config } from "../config/load.js";

export type StorageSettings = Config["storage"];

export function createS3Client(storage: StorageSettings): S3Client {
  return new S3Client({
    region: storage.region,
    ...(storage.endpoint ? { endpoint: storage.endpoint } : {}),
    forcePathStyle: storage.forcePathStyle,
    ...(storage.accessKeyId && storage.secretAccessKey
      ? { credentials: { accessKeyId: storage.accessKeyId, secretAccessKey: storage.secretAccessKey } }
      : {}),
    maxAttempts: 3,
  });
}

/** Where an output object can be fetched (`output_url`, docs/job-types.md). */
export function outputUrl(storage: StorageSettings, bucket: string, key: string): string {
  const path = `${encodeURIComponent(bucket)}/${key.split("/").map(encodeURIComponent).join("/")}`;
  if (storage.publicBaseUrl) return `${storage.publicBaseUrl}/${path}`;
  if (storage.endpoint) return `${storage.endpoint.replace(/\/+$/, "")}/${path}`;
  return `s3://${bucket}/${key}`;
}

/**
 * A presigned GET of an object, valid for `expiresMs` (rounded to whole seconds): the storage
 * endpoint's own URL, so a client that follows it needs no credentials of its own.
 */
export function presignedGet(
  client: S3Client,
  bucket: string,
  key: string,
  expiresMs: number,
): Promise<string> {
  return getSignedUrl(client, new GetObjectCommand({ Bucket: bucket, Key: key }), {
    expiresIn: Math.max(1, Math.round(expiresMs / 1000)),
  });
}

/** A cheap authenticated round trip: HeadBucket on the health bucket, else ListBuckets. */
export async function probeStorage(
  client: S3Client,
  storage: StorageSettings,
  signal: AbortSignal,
): Promise<void> {
  if (storage.healthBucket) {
    await client.send(new HeadBucketCommand({ Bucket: storage.healthBucket }), { abortSignal: signal });
  } else {
    await client.send(new ListBucketsCommand({}), { abortSignal: signal });
  }
}
