// put and get: files to and from the object store the service uses, with its configuration
// (core/config: storage.endpoint and credentials from config.yaml or S3_* variables). Without
// S3_ENDPOINT that is the embedded store `media-service start` runs (storage.embedded_host and
// embedded_port, its credentials: local/credentials.ts), as the service itself would use it.
import { randomBytes } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import type { Readable } from "node:stream";
import { CreateBucketCommand, GetObjectCommand, HeadBucketCommand, type S3Client } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { lookup } from "mime-types";
import { isUnspecified } from "../core/config/exposure.js";
import { ConfigError, loadConfig, type Config } from "../core/config/load.js";
import { createS3Client, outputUrl } from "../core/storage/s3.js";
import { ENV, StorageConfig } from "../core/config/schema.js";
import { embeddedCredentials } from "../local/credentials.js";
import { readStartState, sameApi } from "../core/start-state.js";
import { parseS3Url, type S3Location } from "./args.js";
import { CliError, UsageError } from "./errors.js";
import { bytes, type Output } from "./output.js";

/** EMBEDDED_S3_PORT: set, it names the store whatever a running `start` says. */
const EMBEDDED_PORT_ENV = (StorageConfig.properties.embedded_port as unknown as { [ENV]: string })[ENV];

/** The object store as the service is configured to use it, and whether it is the embedded one. */
export interface Store {
  client: S3Client;
  storage: Config["storage"];
  endpoint: string;
  embedded: boolean;
}

/**
 * `apiUrl`: the API the command line talks to (--url). When it is the API of the `start` running on
 * this data directory, put and get use the embedded store that `start` runs, wherever it listens.
 */
export function openStore(env: NodeJS.ProcessEnv = process.env, apiUrl?: string): Store {
  let config: Config;
  try {
    config = loadConfig({ env });
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
  let storage = config.storage;
  const embedded = !storage.endpoint;
  if (embedded) {
    // What `media-service start` runs when S3_ENDPOINT is unset (local/stack.ts).
    const host = isUnspecified(storage.embeddedHost) ? "127.0.0.1" : storage.embeddedHost;
    const { accessKeyId, secretAccessKey } = embeddedCredentials(storage);
    const running = readStartState(config.dataDir);
    const endpoint =
      running?.s3 && apiUrl && sameApi(running.api, apiUrl) && !env[EMBEDDED_PORT_ENV]
        ? running.s3
        : `http://${host.includes(":") ? `[${host}]` : host}:${storage.embeddedPort}`;
    storage = {
      ...storage,
      endpoint,
      accessKeyId,
      secretAccessKey,
      forcePathStyle: true,
    };
  }
  return { client: createS3Client(storage), storage, endpoint: storage.endpoint!, embedded };
}

export interface PutResult {
  bucket: string;
  key: string;
  size: number;
  content_type: string;
  etag?: string;
  url: string;
}

/** media-service put FILE s3://bucket/key (a key ending in / gets the file's name). */
export async function put(file: string, target: string, out: Output, store: Store): Promise<number> {
  const location = parseS3Url(target, "the destination", { keyOptional: true });
  if (location.key === "" || location.key.endsWith("/")) location.key += basename(file);
  const size = await fileSize(file);
  const contentType = lookup(file) || "application/octet-stream";
  try {
    if (store.embedded) await ensureBucket(store, location.bucket);
    const upload = new Upload({
      client: store.client,
      params: {
        Bucket: location.bucket,
        Key: location.key,
        Body: createReadStream(file),
        ContentType: contentType,
      },
    });
    const done = await upload.done();
    const result: PutResult = {
      bucket: location.bucket,
      key: location.key,
      size,
      content_type: contentType,
      ...(done.ETag ? { etag: done.ETag } : {}),
      url: outputUrl(store.storage, location.bucket, location.key),
    };
    if (out.json) out.printJson(result);
    else out.print(`uploaded ${file} to ${where(location)} (${bytes(size)}, ${contentType})`);
    return 0;
  } catch (err) {
    throw storeError(err, store, location);
  } finally {
    store.client.destroy();
  }
}

/** media-service get s3://bucket/key FILE; FILE "-" is stdout, a directory gets the key's name. */
export async function get(source: string, file: string, out: Output, store: Store): Promise<number> {
  const location = parseS3Url(source, "the source");
  const toStdout = file === "-";
  let path = file;
  if (!toStdout && (file.endsWith("/") || (await isDirectory(file)))) {
    path = join(file, basename(location.key));
  }
  const partial = join(dirname(path), `.${basename(path)}.${randomBytes(4).toString("hex")}.part`);
  try {
    const response = await store.client.send(
      new GetObjectCommand({ Bucket: location.bucket, Key: location.key }),
    );
    const body = response.Body as Readable;
    if (toStdout) {
      try {
        await pipeline(body, process.stdout, { end: false });
      } catch (err) {
        // The reader went away (`… | head`): what it wanted, it has.
        if ((err as NodeJS.ErrnoException).code === "EPIPE") return 0;
        throw err;
      }
      return 0;
    }
    // Into a file beside the target, renamed once complete: a failed download leaves nothing.
    try {
      await pipeline(body, createWriteStream(partial, { flags: "wx" }));
      await rename(partial, path);
    } catch (err) {
      await rm(partial, { force: true });
      if ((err as NodeJS.ErrnoException).code && !("$metadata" in (err as object))) {
        throw new CliError(`cannot write ${path}: ${(err as Error).message}`);
      }
      throw err;
    }
    const size = (await stat(path)).size;
    const contentType = response.ContentType ?? "application/octet-stream";
    if (out.json) {
      out.printJson({
        bucket: location.bucket,
        key: location.key,
        size,
        content_type: contentType,
        file: path,
      });
    } else {
      out.print(`downloaded ${where(location)} to ${path} (${bytes(size)}, ${contentType})`);
    }
    return 0;
  } catch (err) {
    throw storeError(err, store, location);
  } finally {
    store.client.destroy();
  }
}

/** The embedded store makes buckets on request, as a person using it expects (it has `media` ready). */
async function ensureBucket(store: Store, bucket: string): Promise<void> {
  try {
    await store.client.send(new HeadBucketCommand({ Bucket: bucket }));
  } catch (err) {
    if (httpStatus(err) !== 404) throw err;
    await store.client.send(new CreateBucketCommand({ Bucket: bucket }));
  }
}

async function fileSize(file: string): Promise<number> {
  let info;
  try {
    info = await stat(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UsageError(
      `cannot read ${file}: ${code === "ENOENT" ? "no such file" : (err as Error).message}`,
    );
  }
  if (!info.isFile()) throw new UsageError(`${file} is not a file`);
  return info.size;
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

const where = (l: S3Location) => `s3://${l.bucket}/${l.key}`;

function httpStatus(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

/** The object store's failure in one line. */
function storeError(err: unknown, store: Store, location: S3Location): Error {
  if (err instanceof CliError) return err;
  const e = err as { name?: string; code?: string; message?: string; errors?: Array<{ code?: string }> };
  const status = httpStatus(err);
  const name = e.name ?? "";
  if (status === undefined) {
    const code = e.code ?? e.errors?.find((x) => x.code)?.code;
    const reason =
      code === "ECONNREFUSED"
        ? `connection refused${store.embedded ? " (is media-service start running? without S3_ENDPOINT this is the embedded store it runs)" : ""}`
        : code === "ENOTFOUND" || code === "EAI_AGAIN"
          ? "host not found"
          : (e.message ?? String(err));
    return new CliError(`cannot reach the object store at ${store.endpoint}: ${reason}`);
  }
  if (name === "NoSuchKey" || (status === 404 && name !== "NoSuchBucket")) {
    return new CliError(`${where(location)} not found`);
  }
  if (name === "NoSuchBucket") return new CliError(`bucket ${location.bucket} does not exist`);
  if (name === "InvalidAccessKeyId" || name === "SignatureDoesNotMatch") {
    return new CliError(
      `the object store at ${store.endpoint} refused the credentials (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY): ${e.message ?? name}`,
    );
  }
  if (name === "AccessDenied" || status === 403) {
    return new CliError(`access to ${where(location)} denied by the object store: ${e.message ?? name}`);
  }
  return new CliError(
    `object store: ${status} ${name}${e.message && e.message !== name ? `: ${e.message}` : ""}`,
  );
}
