// Tests of the embedded S3-protocol server against the real AWS SDK v3
// (default checksum settings and requestChecksumCalculation: "WHEN_REQUIRED") and lib-storage,
// plus raw HTTP for what an SDK never does (disconnecting mid-body, tampered bodies, anonymous
// requests) and the published AWS Signature V4 test vectors for the verifier itself.

import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash, createHmac, randomBytes } from "node:crypto";
import { createReadStream, existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { setTimeout as delay } from "node:timers/promises";
import { crc32 } from "node:zlib";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetBucketLocationCommand,
  GetObjectAttributesCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  NoSuchBucket,
  NoSuchKey,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  type ListObjectsV2CommandOutput,
  type S3ClientConfig,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { Hash } from "@smithy/hash-node";
import { SignatureV4 } from "@smithy/signature-v4";
import { createChecksummer } from "../src/checksum.js";
import { AwsChunkedDecoder } from "../src/chunked.js";
import { startEmbeddedS3, type EmbeddedS3 } from "../src/server.js";
import { authenticate, chunkSignature, deriveSigningKey } from "../src/sigv4.js";

const ACCESS_KEY = "AKIDEMBEDDEDTEST";
const SECRET_KEY = "embedded-test-secret/with+chars";

/** AWS's own SigV4 signer, with the test credentials. */
const testSigner = () =>
  new SignatureV4({
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
    region: "us-east-1",
    service: "s3",
    sha256: Hash.bind(null, "sha256"),
    uriEscapePath: false,
  });
const md5 = (data: Uint8Array) => createHash("md5").update(data).digest("hex");
const sha256 = (data: Uint8Array | string) => createHash("sha256").update(data).digest("hex");

interface S3ErrorLike {
  name: string;
  Code?: string;
  message: string;
  $metadata: { httpStatusCode?: number };
}

/** assert.rejects with an S3 error of the given name (and HTTP status). */
async function rejectsWith(promise: Promise<unknown>, name: string, status?: number): Promise<S3ErrorLike> {
  let caught: S3ErrorLike | undefined;
  await assert.rejects(promise, (err: S3ErrorLike) => {
    caught = err;
    assert.equal(err.name, name, `expected ${name}, got ${err.name}: ${err.message}`);
    if (status !== undefined) assert.equal(err.$metadata?.httpStatusCode, status);
    return true;
  });
  return caught!;
}

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function rawRequest(
  url: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: Buffer;
    agent?: http.Agent;
    /** Send neither Content-Length nor Transfer-Encoding (Node's default for a PUT is chunked). */
    lengthless?: boolean;
  } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: options.method ?? "GET", headers: options.headers ?? {}, agent: options.agent ?? false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        res.on("error", reject);
      },
    );
    if (options.lengthless) req.useChunkedEncodingByDefault = false;
    req.on("error", reject);
    req.end(options.body);
  });
}

/** A request exactly as the SDK would send it (signed), captured instead of sent. */
interface CapturedRequest {
  method: string;
  path: string;
  query: Record<string, string | string[] | null>;
  headers: Record<string, string>;
}

class Captured extends Error {
  constructor(readonly request: CapturedRequest) {
    super("captured");
  }
}

function urlOf(endpoint: string, captured: CapturedRequest): string {
  const query = Object.entries(captured.query)
    .flatMap(([k, v]) =>
      v === null
        ? [encodeURIComponent(k)]
        : [v].flat().map((x) => `${encodeURIComponent(k)}=${encodeURIComponent(x)}`),
    )
    .join("&");
  return `${endpoint}${captured.path}${query ? `?${query}` : ""}`;
}

/** Polls `predicate` every 20 ms until it holds; rejects after `timeoutMs` or with its own error. */
async function waitFor(predicate: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await delay(20);
  }
}

describe("embedded S3 server", () => {
  let root: string;
  let dataDir: string;
  let s3: EmbeddedS3;
  let client: S3Client;
  let requiredClient: S3Client;

  const config = (overrides: Partial<S3ClientConfig> = {}): S3ClientConfig => ({
    endpoint: s3.url,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
    maxAttempts: 1,
    ...overrides,
  });

  /** Sign `command` with the SDK (WHEN_REQUIRED checksums) and return the request unsent. */
  async function capture(
    command: PutObjectCommand,
    setHeaders: Record<string, string | undefined> = {},
  ): Promise<CapturedRequest> {
    const capturing = new S3Client(
      config({
        requestChecksumCalculation: "WHEN_REQUIRED",
        requestHandler: {
          handle: async (request: CapturedRequest) => {
            throw new Captured({ ...request, headers: { ...request.headers } });
          },
        } as unknown as S3ClientConfig["requestHandler"],
      }),
    );
    capturing.middlewareStack.add(
      (next) => async (args) => {
        const request = args.request as { headers: Record<string, string> };
        for (const [name, value] of Object.entries(setHeaders)) {
          for (const existing of Object.keys(request.headers)) {
            if (existing.toLowerCase() === name) delete request.headers[existing];
          }
          if (value !== undefined) request.headers[name] = value;
        }
        return next(args);
      },
      { step: "build", name: "testSetHeaders" },
    );
    try {
      await capturing.send(command);
    } catch (err) {
      if (err instanceof Captured) return err.request;
      throw err;
    } finally {
      capturing.destroy();
    }
    throw new Error("request was not captured");
  }

  const tmpEntries = () => readdir(path.join(dataDir, ".tmp"));

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), "embedded-s3-test-"));
    dataDir = path.join(root, "data");
    s3 = await startEmbeddedS3({ port: 0, dataDir, accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY });
    client = new S3Client(config());
    requiredClient = new S3Client(
      config({ requestChecksumCalculation: "WHEN_REQUIRED", responseChecksumValidation: "WHEN_REQUIRED" }),
    );
  });

  after(async () => {
    client?.destroy();
    requiredClient?.destroy();
    await s3?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  test("listens on the real port when started with port 0", () => {
    assert.ok(s3.port > 0);
    assert.equal(s3.url, `http://127.0.0.1:${s3.port}`);
  });

  test("bucket lifecycle", async () => {
    await client.send(new CreateBucketCommand({ Bucket: "lifecycle" }));
    await rejectsWith(
      client.send(new CreateBucketCommand({ Bucket: "lifecycle" })),
      "BucketAlreadyOwnedByYou",
      409,
    );
    await client.send(new HeadBucketCommand({ Bucket: "lifecycle" }));

    await client.send(
      new CreateBucketCommand({
        Bucket: "lifecycle-eu",
        CreateBucketConfiguration: { LocationConstraint: "eu-west-1" },
      }),
    );
    const location = await client.send(new GetBucketLocationCommand({ Bucket: "lifecycle-eu" }));
    assert.equal(location.LocationConstraint, "eu-west-1");
    const plainLocation = await client.send(new GetBucketLocationCommand({ Bucket: "lifecycle" }));
    assert.ok(!plainLocation.LocationConstraint, "a bucket without a constraint reports us-east-1 as empty");

    const paged = await client.send(new ListBucketsCommand({ Prefix: "lifecycle", MaxBuckets: 1 }));
    assert.deepEqual(
      paged.Buckets?.map((b) => b.Name),
      ["lifecycle"],
    );
    assert.ok(paged.ContinuationToken);
    const page2 = await client.send(
      new ListBucketsCommand({
        Prefix: "lifecycle",
        MaxBuckets: 1,
        ContinuationToken: paged.ContinuationToken,
      }),
    );
    assert.deepEqual(
      page2.Buckets?.map((b) => b.Name),
      ["lifecycle-eu"],
    );
    assert.equal(page2.ContinuationToken, undefined);

    const listed = await client.send(new ListBucketsCommand({}));
    const names = listed.Buckets?.map((b) => b.Name) ?? [];
    assert.ok(names.includes("lifecycle") && names.includes("lifecycle-eu"));
    assert.ok(listed.Buckets?.every((b) => b.CreationDate instanceof Date));

    await client.send(new PutObjectCommand({ Bucket: "lifecycle", Key: "x", Body: "x" }));
    await rejectsWith(client.send(new DeleteBucketCommand({ Bucket: "lifecycle" })), "BucketNotEmpty", 409);
    await client.send(new DeleteObjectCommand({ Bucket: "lifecycle", Key: "x" }));
    await client.send(new DeleteBucketCommand({ Bucket: "lifecycle" }));
    await client.send(new DeleteBucketCommand({ Bucket: "lifecycle-eu" }));
    await rejectsWith(client.send(new HeadBucketCommand({ Bucket: "lifecycle" })), "NotFound", 404);
    await rejectsWith(client.send(new DeleteBucketCommand({ Bucket: "lifecycle" })), "NoSuchBucket", 404);
    const after = await client.send(new ListBucketsCommand({}));
    assert.ok(!after.Buckets?.some((b) => b.Name === "lifecycle"));
  });

  test("invalid bucket names are rejected", async () => {
    for (const bucket of ["ab", "Upper-Case", "under_score", "a..b", "-leading", "192.168.1.1"]) {
      await rejectsWith(client.send(new CreateBucketCommand({ Bucket: bucket })), "InvalidBucketName", 400);
    }
  });

  describe("objects", () => {
    before(async () => {
      await client.send(new CreateBucketCommand({ Bucket: "objects" }));
    });

    test("put/get/head/delete round trip with metadata and content type", async () => {
      const body = Buffer.from("hello embedded s3 \u00e9\u00e8", "utf8");
      const put = await client.send(
        new PutObjectCommand({
          Bucket: "objects",
          Key: "docs/hello.txt",
          Body: body,
          ContentType: "text/plain; charset=utf-8",
          CacheControl: "max-age=60",
          ContentDisposition: 'attachment; filename="hello.txt"',
          Metadata: { owner: "media-service", "job-id": "42" },
        }),
      );
      assert.equal(put.ETag, `"${md5(body)}"`);

      const got = await client.send(new GetObjectCommand({ Bucket: "objects", Key: "docs/hello.txt" }));
      assert.deepEqual(Buffer.from(await got.Body!.transformToByteArray()), body);
      assert.equal(got.ContentType, "text/plain; charset=utf-8");
      assert.equal(got.CacheControl, "max-age=60");
      assert.equal(got.ContentDisposition, 'attachment; filename="hello.txt"');
      assert.deepEqual(got.Metadata, { owner: "media-service", "job-id": "42" });
      assert.equal(got.ETag, put.ETag);
      assert.equal(got.ContentLength, body.length);
      assert.equal(got.AcceptRanges, "bytes");
      assert.ok(
        got.LastModified instanceof Date && Math.abs(got.LastModified.getTime() - Date.now()) < 60_000,
      );

      const head = await client.send(new HeadObjectCommand({ Bucket: "objects", Key: "docs/hello.txt" }));
      assert.equal(head.ContentLength, body.length);
      assert.equal(head.ETag, put.ETag);
      assert.equal(head.ContentType, "text/plain; charset=utf-8");
      assert.deepEqual(head.Metadata, { owner: "media-service", "job-id": "42" });

      await client.send(new DeleteObjectCommand({ Bucket: "objects", Key: "docs/hello.txt" }));
      await rejectsWith(
        client.send(new HeadObjectCommand({ Bucket: "objects", Key: "docs/hello.txt" })),
        "NotFound",
        404,
      );
      // Deleting a missing key is not an error.
      const again = await client.send(new DeleteObjectCommand({ Bucket: "objects", Key: "docs/hello.txt" }));
      assert.equal(again.$metadata.httpStatusCode, 204);
    });

    test("default content type and an empty object", async () => {
      await requiredClient.send(
        new PutObjectCommand({ Bucket: "objects", Key: "empty", Body: Buffer.alloc(0) }),
      );
      const head = await client.send(new HeadObjectCommand({ Bucket: "objects", Key: "empty" }));
      assert.equal(head.ContentLength, 0);
      const got = await client.send(new GetObjectCommand({ Bucket: "objects", Key: "empty" }));
      assert.equal((await got.Body!.transformToByteArray()).length, 0);
      assert.equal(got.ETag, `"${md5(Buffer.alloc(0))}"`);
      await rejectsWith(
        client.send(new GetObjectCommand({ Bucket: "objects", Key: "empty", Range: "bytes=0-" })),
        "InvalidRange",
        416,
      );

      // The SDK always sends a Content-Type; a PUT without one gets S3's default.
      const body = Buffer.from("typeless");
      const captured = await capture(
        new PutObjectCommand({ Bucket: "objects", Key: "typeless", Body: body }),
        {
          "content-type": undefined,
        },
      );
      assert.equal(captured.headers["content-type"], undefined);
      const res = await rawRequest(urlOf(s3.url, captured), {
        method: "PUT",
        headers: captured.headers,
        body,
      });
      assert.equal(res.status, 200, res.body);
      const typeless = await client.send(new HeadObjectCommand({ Bucket: "objects", Key: "typeless" }));
      assert.equal(typeless.ContentType, "binary/octet-stream");
    });

    test("missing keys and buckets map to the SDK's typed errors", async () => {
      const noKey = await rejectsWith(
        client.send(new GetObjectCommand({ Bucket: "objects", Key: "nope" })),
        "NoSuchKey",
        404,
      );
      assert.ok(noKey instanceof NoSuchKey);
      const noBucket = await rejectsWith(
        client.send(new GetObjectCommand({ Bucket: "no-such-bucket", Key: "x" })),
        "NoSuchBucket",
        404,
      );
      assert.ok(noBucket instanceof NoSuchBucket);
      await rejectsWith(
        client.send(new PutObjectCommand({ Bucket: "no-such-bucket", Key: "x", Body: "x" })),
        "NoSuchBucket",
        404,
      );
      await rejectsWith(
        client.send(new ListObjectsV2Command({ Bucket: "no-such-bucket" })),
        "NoSuchBucket",
        404,
      );
      await rejectsWith(
        client.send(new HeadObjectCommand({ Bucket: "no-such-bucket", Key: "x" })),
        "NotFound",
        404,
      );
    });

    test("a large body to a missing bucket is refused before the body is sent (100-continue)", async () => {
      await rejectsWith(
        client.send(
          new PutObjectCommand({
            Bucket: "no-such-bucket",
            Key: "big",
            Body: Buffer.alloc(8 * 1024 * 1024, 1),
          }),
        ),
        "NoSuchBucket",
        404,
      );
      // The connection state is still sane for the next request.
      await client.send(new HeadBucketCommand({ Bucket: "objects" }));
    });

    test("a streamed upload without a length to a missing bucket gets its answer, not a broken pipe", async () => {
      // How the SDK sends a file stream (aws-chunked with a checksum trailer, no Content-Length, no
      // 100-continue): the store answers from the headers while the body is still coming. Before
      // the store read the rest of such a body, closing at once reset the connection under the
      // client's writes and every one of these uploads failed with EPIPE.
      const file = path.join(root, "streamed.bin");
      await writeFile(file, randomBytes(256 * 1024));
      try {
        for (let i = 0; i < 10; i++) {
          await rejectsWith(
            client.send(
              new PutObjectCommand({
                Bucket: "no-such-bucket",
                Key: "streamed",
                Body: createReadStream(file),
                ContentLength: 256 * 1024,
              }),
            ),
            "NoSuchBucket",
            404,
          );
        }
      } finally {
        await rm(file);
      }
    });

    test("an answered body is read to its end and the connection serves the next request", async () => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const sockets = new Set<unknown>();
        const send = (body: Buffer) =>
          new Promise<number>((resolve, reject) => {
            const req = http.request(`${s3.url}/no-such-bucket/k`, { method: "PUT", agent }, (res) => {
              res.resume();
              res.on("end", () => resolve(res.statusCode ?? 0));
            });
            req.on("socket", (socket) => sockets.add(socket));
            req.on("error", reject);
            // Chunked, in pieces, so most of the body arrives after the answer was sent.
            const pieces = Array.from({ length: 16 }, (_, n) => body.subarray(n * 65536, (n + 1) * 65536));
            const next = () => {
              const piece = pieces.shift();
              if (piece) req.write(piece, next);
              else req.end();
            };
            next();
          });
        // Anonymous, for a bucket that does not exist: NoSuchBucket, from the headers.
        assert.equal(await send(randomBytes(1024 * 1024)), 404, "anonymous: refused from the headers");
        assert.equal(await send(randomBytes(1024 * 1024)), 404);
        assert.equal(sockets.size, 1, "the second request reused the first one's connection");
      } finally {
        agent.destroy();
      }
    });

    test("range requests", async () => {
      const body = Buffer.from("0123456789abcdefghij");
      await client.send(new PutObjectCommand({ Bucket: "objects", Key: "range.txt", Body: body }));
      const cases: Array<[string, string, string]> = [
        ["bytes=2-5", "2345", "bytes 2-5/20"],
        ["bytes=15-", "fghij", "bytes 15-19/20"],
        ["bytes=-3", "hij", "bytes 17-19/20"],
        ["bytes=10-1000", "abcdefghij", "bytes 10-19/20"],
      ];
      for (const [range, expected, contentRange] of cases) {
        const got = await client.send(
          new GetObjectCommand({ Bucket: "objects", Key: "range.txt", Range: range }),
        );
        assert.equal(got.$metadata.httpStatusCode, 206, range);
        assert.equal(got.ContentRange, contentRange, range);
        assert.equal(got.ContentLength, expected.length, range);
        assert.equal(await got.Body!.transformToString(), expected, range);
      }
      await rejectsWith(
        client.send(new GetObjectCommand({ Bucket: "objects", Key: "range.txt", Range: "bytes=20-30" })),
        "InvalidRange",
        416,
      );
      // A syntactically invalid range is ignored: full content with 200.
      const full = await client.send(
        new GetObjectCommand({ Bucket: "objects", Key: "range.txt", Range: "bytes=5-2" }),
      );
      assert.equal(full.$metadata.httpStatusCode, 200);
      assert.equal(await full.Body!.transformToString(), body.toString());
    });

    test("GETs of large objects and ranges across read chunks, many at once, each get their own bytes", async () => {
      await client.send(new CreateBucketCommand({ Bucket: "large-reads" }));
      // Several objects of a few read chunks each (the store reads 256 KiB at a time through
      // reused buffers): a buffer handed to one response too early would show up in another's bytes.
      const objects = Array.from({ length: 6 }, (_, i) => randomBytes(700 * 1024 + i * 4099));
      await Promise.all(
        objects.map((body, i) =>
          client.send(new PutObjectCommand({ Bucket: "large-reads", Key: `o${i}`, Body: body })),
        ),
      );
      const whole = await Promise.all(
        [...objects, ...objects].map(async (_, n) => {
          const i = n % objects.length;
          const got = await client.send(new GetObjectCommand({ Bucket: "large-reads", Key: `o${i}` }));
          return { i, body: Buffer.from(await got.Body!.transformToByteArray()) };
        }),
      );
      for (const { i, body } of whole) assert.ok(body.equals(objects[i]!), `object ${i}, whole`);
      // A range from inside the first chunk to inside the third.
      const got = await client.send(
        new GetObjectCommand({ Bucket: "large-reads", Key: "o2", Range: "bytes=100000-600000" }),
      );
      assert.equal(got.$metadata.httpStatusCode, 206);
      const part = Buffer.from(await got.Body!.transformToByteArray());
      assert.ok(part.equals(objects[2]!.subarray(100000, 600001)), "the range's bytes");
    });

    test("a client that leaves in the middle of a GET does not disturb the next ones", async () => {
      await client.send(new CreateBucketCommand({ Bucket: "left-reads" }));
      const body = randomBytes(8 * 1024 * 1024);
      await client.send(new PutObjectCommand({ Bucket: "left-reads", Key: "big", Body: body }));
      for (let i = 0; i < 3; i++) {
        const controller = new AbortController();
        const got = await client.send(new GetObjectCommand({ Bucket: "left-reads", Key: "big" }), {
          abortSignal: controller.signal,
        });
        const stream = got.Body as Readable;
        // One chunk read, then the connection is cut while the store is still sending.
        await new Promise<void>((resolve) => stream.once("data", () => resolve()));
        stream.destroy();
        controller.abort();
      }
      const again = await client.send(new GetObjectCommand({ Bucket: "left-reads", Key: "big" }));
      assert.ok(Buffer.from(await again.Body!.transformToByteArray()).equals(body));
    });

    test("conditional requests", async () => {
      const put = await client.send(
        new PutObjectCommand({ Bucket: "objects", Key: "cond.txt", Body: "conditional" }),
      );
      await rejectsWith(
        client.send(new GetObjectCommand({ Bucket: "objects", Key: "cond.txt", IfMatch: '"0000"' })),
        "PreconditionFailed",
        412,
      );
      // 304 Not Modified surfaces as an SDK error carrying the status.
      await assert.rejects(
        client.send(new GetObjectCommand({ Bucket: "objects", Key: "cond.txt", IfNoneMatch: put.ETag })),
        (err: S3ErrorLike) => {
          assert.equal(err.$metadata.httpStatusCode, 304);
          return true;
        },
      );
      const modifiedSince = new Date(Date.now() + 60_000);
      await assert.rejects(
        client.send(
          new GetObjectCommand({ Bucket: "objects", Key: "cond.txt", IfModifiedSince: modifiedSince }),
        ),
        (err: S3ErrorLike) => err.$metadata.httpStatusCode === 304,
      );
      const ok = await client.send(
        new GetObjectCommand({ Bucket: "objects", Key: "cond.txt", IfMatch: put.ETag }),
      );
      assert.equal(await ok.Body!.transformToString(), "conditional");
      // Conditional write: If-None-Match: * refuses to overwrite.
      await rejectsWith(
        client.send(
          new PutObjectCommand({ Bucket: "objects", Key: "cond.txt", Body: "other", IfNoneMatch: "*" }),
        ),
        "PreconditionFailed",
        412,
      );
      const still = await client.send(new GetObjectCommand({ Bucket: "objects", Key: "cond.txt" }));
      assert.equal(await still.Body!.transformToString(), "conditional");
    });

    test("keys with spaces, unicode, slashes and reserved characters round-trip", async () => {
      const keys = [
        "dir with spaces/file name.txt",
        "ünïcødé/日本語/😀.bin",
        "a+b=c&d?e#f%g;h,i:j@k$l!m'n(o)p*q~r",
        "trailing/",
        "/leading//double//slashes",
        "tab\tand\u0001control",
        "percent%2Fencoded-looking",
        "x".repeat(1000),
      ];
      for (const [i, key] of keys.entries()) {
        const c = i % 2 === 0 ? client : requiredClient;
        await c.send(new PutObjectCommand({ Bucket: "objects", Key: key, Body: `content of ${key}` }));
        const got = await c.send(new GetObjectCommand({ Bucket: "objects", Key: key }));
        assert.equal(await got.Body!.transformToString(), `content of ${key}`, key);
      }
      const listed = new Set<string>();
      for (const encodingType of [undefined, "url"] as const) {
        let token: string | undefined;
        do {
          const page = await client.send(
            new ListObjectsV2Command({
              Bucket: "objects",
              ContinuationToken: token,
              ...(encodingType ? { EncodingType: encodingType } : {}),
            }),
          );
          for (const c of page.Contents ?? []) listed.add(c.Key!);
          token = page.NextContinuationToken;
        } while (token);
        for (const key of keys)
          assert.ok(
            listed.has(key),
            `listing (encoding ${encodingType ?? "none"}) returns ${JSON.stringify(key)}`,
          );
      }
      await rejectsWith(
        client.send(new PutObjectCommand({ Bucket: "objects", Key: "y".repeat(1025), Body: "x" })),
        "KeyTooLongError",
        400,
      );
    });

    test("user metadata in UTF-8 verifies against the signature and is kept byte for byte", async () => {
      // Signed by the AWS SDK's own signer over the UTF-8 text, sent as UTF-8 bytes (as boto and
      // curl send it; Node's HTTP client writes a header's characters as single bytes).
      const note = "ünïcødé 日本語";
      const body = Buffer.from("utf-8 metadata");
      const signer = testSigner();
      const signed = await signer.sign({
        method: "PUT",
        protocol: "http:",
        hostname: "127.0.0.1",
        port: s3.port,
        path: "/objects/utf8-meta.txt",
        query: {},
        headers: {
          host: `127.0.0.1:${s3.port}`,
          "x-amz-meta-note": note,
          "x-amz-content-sha256": sha256(body),
          "content-length": String(body.length),
        },
        body,
      });
      const headers = Object.fromEntries(
        Object.entries(signed.headers).map(([k, v]) => [k, Buffer.from(v, "utf8").toString("latin1")]),
      );
      const put = await rawRequest(`${s3.url}/objects/utf8-meta.txt`, { method: "PUT", headers, body });
      assert.equal(put.status, 200, put.body);
      const head = await rawRequest(
        await getSignedUrl(client, new HeadObjectCommand({ Bucket: "objects", Key: "utf8-meta.txt" })),
        { method: "HEAD" },
      );
      const stored = head.headers["x-amz-meta-note"] as string;
      assert.equal(Buffer.from(stored, "latin1").toString("utf8"), note);
    });

    test("URL-encoded listings percent-encode spaces as %20 and keep slashes", async () => {
      for (const key of ["enc list/quux ab/thud", "enc list/foo+1/bar"]) {
        await client.send(new PutObjectCommand({ Bucket: "objects", Key: key, Body: "x" }));
      }
      for (const command of [
        new ListObjectsV2Command({ Bucket: "objects", Prefix: "enc list/", EncodingType: "url" }),
        new ListObjectsCommand({ Bucket: "objects", Prefix: "enc list/", EncodingType: "url" }),
        new ListObjectsV2Command({
          Bucket: "objects",
          Prefix: "enc list/",
          Delimiter: "/",
          EncodingType: "url",
        }),
      ]) {
        const xml = await (await fetch(await getSignedUrl(client, command))).text();
        assert.ok(!xml.includes("+"), xml);
        const names = [...xml.matchAll(/<(?:Key|Prefix)>([^<]*)<\/(?:Key|Prefix)>/g)].map((m) => m[1]);
        assert.ok(names.includes("enc%20list/"), xml);
        assert.ok(
          names.some((n) => n === "enc%20list/quux%20ab/thud" || n === "enc%20list/quux%20ab/"),
          xml,
        );
        assert.ok(
          names.some((n) => n === "enc%20list/foo%2B1/bar" || n === "enc%20list/foo%2B1/"),
          xml,
        );
      }
    });

    test("path traversal attempts cannot escape the data directory", async () => {
      const evilKeys = [
        "../../../outside.txt",
        "..",
        "../objects/../..",
        "a/../../../../../tmp/escape",
        "..\\..\\windows.txt",
      ];
      for (const key of evilKeys) {
        await client.send(new PutObjectCommand({ Bucket: "objects", Key: key, Body: `evil ${key}` }));
        const got = await client.send(new GetObjectCommand({ Bucket: "objects", Key: key }));
        assert.equal(await got.Body!.transformToString(), `evil ${key}`);
      }
      // Nothing was written next to the data directory, nor at the places the keys name.
      assert.deepEqual(await readdir(root), ["data"]);
      assert.equal(existsSync(path.join(dataDir, "outside.txt")), false);
      assert.equal(existsSync(path.join(dataDir, "objects", "outside.txt")), false);
      assert.equal(existsSync("/tmp/escape"), false);
      // Encoded traversal in the bucket position is an invalid bucket name, not a path.
      const res = await rawRequest(`${s3.url}/..%2F..%2Fetc/passwd`);
      assert.equal(res.status, 403); // anonymous: refused before anything else
      for (const key of evilKeys) await client.send(new DeleteObjectCommand({ Bucket: "objects", Key: key }));
    });

    test("uploads with default SDK checksums and with WHEN_REQUIRED", async () => {
      const data = randomBytes(300 * 1024);
      for (const [label, c] of [
        ["default", client],
        ["when-required", requiredClient],
      ] as const) {
        // Buffer body: checksum in a header (default) / none (WHEN_REQUIRED), payload SHA-256 signed.
        const a = await c.send(
          new PutObjectCommand({ Bucket: "objects", Key: `cks/${label}/buffer`, Body: data }),
        );
        assert.equal(a.ETag, `"${md5(data)}"`);
        // Stream body: aws-chunked with a trailing x-amz-checksum-crc32 (default) / UNSIGNED-PAYLOAD.
        const chunks = [data.subarray(0, 100_000), data.subarray(100_000, 250_000), data.subarray(250_000)];
        const b = await c.send(
          new PutObjectCommand({
            Bucket: "objects",
            Key: `cks/${label}/stream`,
            Body: Readable.from(chunks),
            ContentLength: data.length,
          }),
        );
        assert.equal(b.ETag, `"${md5(data)}"`);
        for (const kind of ["buffer", "stream"]) {
          const got = await c.send(
            new GetObjectCommand({ Bucket: "objects", Key: `cks/${label}/${kind}`, ChecksumMode: "ENABLED" }),
          );
          assert.equal(md5(await got.Body!.transformToByteArray()), md5(data), `${label}/${kind}`);
          if (label === "default") {
            const expected = createChecksummer("crc32");
            expected.update(data);
            assert.equal(
              got.ChecksumCRC32,
              expected.digest().toString("base64"),
              `${label}/${kind} stored checksum`,
            );
          }
        }
      }
      // Explicit algorithms, verified by the server and returned on GET with checksum mode.
      for (const algorithm of ["CRC32C", "SHA256", "SHA1", "CRC64NVME"] as const) {
        await client.send(
          new PutObjectCommand({
            Bucket: "objects",
            Key: `cks/${algorithm}`,
            Body: data,
            ChecksumAlgorithm: algorithm,
          }),
        );
        const got = await client.send(
          new GetObjectCommand({ Bucket: "objects", Key: `cks/${algorithm}`, ChecksumMode: "ENABLED" }),
        );
        assert.equal(md5(await got.Body!.transformToByteArray()), md5(data));
        const sum = createChecksummer(algorithm.toLowerCase() as Lowercase<typeof algorithm>);
        sum.update(data);
        assert.equal(got[`Checksum${algorithm}`], sum.digest().toString("base64"), algorithm);
      }
    });

    test("a wrong checksum or body hash is rejected and stores nothing", async () => {
      await rejectsWith(
        client.send(
          new PutObjectCommand({
            Bucket: "objects",
            Key: "bad-crc",
            Body: "some data",
            ChecksumCRC32: "AAAAAA==",
          }),
        ),
        "BadDigest",
        400,
      );
      await rejectsWith(
        client.send(new HeadObjectCommand({ Bucket: "objects", Key: "bad-crc" })),
        "NotFound",
        404,
      );
      await rejectsWith(
        client.send(
          new PutObjectCommand({
            Bucket: "objects",
            Key: "bad-md5",
            Body: "some data",
            ContentMD5: Buffer.alloc(16).toString("base64"),
          }),
        ),
        "BadDigest",
        400,
      );

      // The SDK signed the SHA-256 of one body; a different body of the same length is refused.
      const original = Buffer.from("the signed body!");
      const captured = await capture(
        new PutObjectCommand({ Bucket: "objects", Key: "tampered", Body: original }),
      );
      assert.equal(captured.headers["x-amz-content-sha256"], sha256(original));
      const res = await rawRequest(urlOf(s3.url, captured), {
        method: "PUT",
        headers: captured.headers,
        body: Buffer.from("a forged payload"),
      });
      assert.equal(res.status, 400);
      assert.match(res.body, /<Code>XAmzContentSHA256Mismatch<\/Code>/);
      await rejectsWith(
        client.send(new HeadObjectCommand({ Bucket: "objects", Key: "tampered" })),
        "NotFound",
        404,
      );
      // The untampered request is accepted.
      const okRes = await rawRequest(urlOf(s3.url, captured), {
        method: "PUT",
        headers: captured.headers,
        body: original,
      });
      assert.equal(okRes.status, 200);
      assert.equal(okRes.headers.etag, `"${md5(original)}"`);
      assert.deepEqual(await tmpEntries(), []);
    });

    test("signed aws-chunked uploads (STREAMING-AWS4-HMAC-SHA256-PAYLOAD) are decoded and verified", async () => {
      const data = randomBytes(200 * 1024 + 17);
      const chunkSize = 64 * 1024;
      const pieces: Buffer[] = [];
      for (let i = 0; i < data.length; i += chunkSize) pieces.push(data.subarray(i, i + chunkSize));
      pieces.push(Buffer.alloc(0));
      const encode = (signatures: string[]) =>
        Buffer.concat(
          pieces.flatMap((p, i) => [
            Buffer.from(`${p.length.toString(16)};chunk-signature=${signatures[i]}\r\n`),
            p,
            Buffer.from("\r\n"),
          ]),
        );
      const placeholder = encode(pieces.map(() => "0".repeat(64)));

      const headers = {
        "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
        "content-encoding": "aws-chunked",
        "x-amz-decoded-content-length": String(data.length),
      };
      const captured = await capture(
        new PutObjectCommand({
          Bucket: "objects",
          Key: "signed-chunks",
          Body: placeholder,
          ContentType: "application/x-test",
        }),
        headers,
      );
      const auth = captured.headers.authorization!;
      const seed = /Signature=([0-9a-f]{64})/.exec(auth)![1]!;
      const amzDate = captured.headers["x-amz-date"]!;
      const scope = /Credential=[^/]+\/([^,]+)/.exec(auth)![1]!;
      const [date, region] = scope.split("/") as [string, string];
      const signingKey = deriveSigningKey(SECRET_KEY, date, region, "s3");
      const signatures: string[] = [];
      let previous = seed;
      for (const p of pieces) {
        previous = chunkSignature({ amzDate, scope, signingKey }, previous, sha256(p));
        signatures.push(previous);
      }
      const url = urlOf(s3.url, captured);

      // One flipped signature character: refused, nothing stored.
      const forged = [...signatures];
      forged[1] = (forged[1]![0] === "a" ? "b" : "a") + forged[1]!.slice(1);
      const bad = await rawRequest(url, { method: "PUT", headers: captured.headers, body: encode(forged) });
      assert.equal(bad.status, 403);
      assert.match(bad.body, /<Code>SignatureDoesNotMatch<\/Code>/);
      await rejectsWith(
        client.send(new HeadObjectCommand({ Bucket: "objects", Key: "signed-chunks" })),
        "NotFound",
        404,
      );

      const good = await rawRequest(url, {
        method: "PUT",
        headers: captured.headers,
        body: encode(signatures),
      });
      assert.equal(good.status, 200, good.body);
      const got = await client.send(new GetObjectCommand({ Bucket: "objects", Key: "signed-chunks" }));
      assert.deepEqual(Buffer.from(await got.Body!.transformToByteArray()), data);
      assert.equal(got.ContentType, "application/x-test");
      assert.equal(got.ContentEncoding, undefined, "aws-chunked is not stored as the object's encoding");
    });

    test("CopyObject keeps or replaces metadata", async () => {
      await client.send(
        new PutObjectCommand({
          Bucket: "objects",
          Key: "copy/src",
          Body: "copy me",
          ContentType: "text/x-src",
          Metadata: { a: "1" },
        }),
      );
      const copied = await client.send(
        new CopyObjectCommand({ Bucket: "objects", Key: "copy/dst", CopySource: "objects/copy/src" }),
      );
      assert.equal(copied.CopyObjectResult?.ETag, `"${md5(Buffer.from("copy me"))}"`);
      const dst = await client.send(new GetObjectCommand({ Bucket: "objects", Key: "copy/dst" }));
      assert.equal(await dst.Body!.transformToString(), "copy me");
      assert.equal(dst.ContentType, "text/x-src");
      assert.deepEqual(dst.Metadata, { a: "1" });

      await client.send(
        new CopyObjectCommand({
          Bucket: "objects",
          Key: "copy/dst with space ü",
          CopySource: encodeURIComponent("objects/copy/src"),
          MetadataDirective: "REPLACE",
          ContentType: "text/x-new",
          Metadata: { b: "2" },
        }),
      );
      const replaced = await client.send(
        new HeadObjectCommand({ Bucket: "objects", Key: "copy/dst with space ü" }),
      );
      assert.equal(replaced.ContentType, "text/x-new");
      assert.deepEqual(replaced.Metadata, { b: "2" });

      // The source is independent of the copy.
      await client.send(new DeleteObjectCommand({ Bucket: "objects", Key: "copy/src" }));
      const survivor = await client.send(new GetObjectCommand({ Bucket: "objects", Key: "copy/dst" }));
      assert.equal(await survivor.Body!.transformToString(), "copy me");

      await rejectsWith(
        client.send(
          new CopyObjectCommand({ Bucket: "objects", Key: "copy/dst", CopySource: "objects/copy/dst" }),
        ),
        "InvalidRequest",
        400,
      );
      await rejectsWith(
        client.send(
          new CopyObjectCommand({ Bucket: "objects", Key: "copy/x", CopySource: "objects/copy/missing" }),
        ),
        "NoSuchKey",
        404,
      );
    });

    test("DeleteObjects", async () => {
      for (const key of ["del/1", "del/2", "del/3"])
        await client.send(new PutObjectCommand({ Bucket: "objects", Key: key, Body: key }));
      for (const c of [client, requiredClient]) {
        const result = await c.send(
          new DeleteObjectsCommand({
            Bucket: "objects",
            Delete: { Objects: [{ Key: "del/1" }, { Key: "del/2" }, { Key: "del/missing" }] },
          }),
        );
        assert.deepEqual(result.Deleted?.map((d) => d.Key).sort(), ["del/1", "del/2", "del/missing"]);
        assert.equal(result.Errors, undefined);
      }
      const left = await client.send(new ListObjectsV2Command({ Bucket: "objects", Prefix: "del/" }));
      assert.deepEqual(
        left.Contents?.map((c) => c.Key),
        ["del/3"],
      );
    });

    test("concurrent PUTs of one key end with one complete object", async () => {
      await client.send(new CreateBucketCommand({ Bucket: "race" }));
      const bodies = Array.from({ length: 8 }, (_, i) => Buffer.alloc(256 * 1024 + i, i + 1));
      await Promise.all(
        bodies.map((body, i) =>
          (i % 2 ? client : requiredClient).send(
            new PutObjectCommand({ Bucket: "race", Key: "same", Body: body }),
          ),
        ),
      );
      const got = await client.send(new GetObjectCommand({ Bucket: "race", Key: "same" }));
      const content = Buffer.from(await got.Body!.transformToByteArray());
      const winner = bodies.find((b) => b.equals(content));
      assert.ok(winner, "content is exactly one of the uploaded bodies");
      assert.equal(
        got.ETag,
        `"${md5(winner)}"`,
        "ETag and metadata belong to the same upload as the content",
      );
      // One file per object: the replaced versions are gone, no temp files are left.
      const files = (
        await Promise.all(
          (await readdir(path.join(dataDir, "race", "objects"))).map((d) =>
            readdir(path.join(dataDir, "race", "objects", d)),
          ),
        )
      ).flat();
      assert.equal(files.length, 1);
      assert.deepEqual(await tmpEntries(), []);
    });

    test("a read that began before a replacement gets the whole old version with its own ETag", async () => {
      await client.send(new CreateBucketCommand({ Bucket: "reread" }));
      const old = randomBytes(3 * 1024 * 1024);
      await client.send(new PutObjectCommand({ Bucket: "reread", Key: "k", Body: old }));
      const reading = await client.send(new GetObjectCommand({ Bucket: "reread", Key: "k" }));
      const fresh = randomBytes(1024);
      await client.send(new PutObjectCommand({ Bucket: "reread", Key: "k", Body: fresh }));
      await client.send(new DeleteObjectCommand({ Bucket: "reread", Key: "k" }));
      const body = Buffer.from(await reading.Body!.transformToByteArray());
      assert.equal(body.length, old.length);
      assert.ok(body.equals(old), "the old content, not the new one or its metadata");
      assert.equal(reading.ETag, `"${md5(old)}"`);
    });

    for (const payload of ["signed SHA-256", "UNSIGNED-PAYLOAD"] as const) {
      test(`a client that disconnects mid-upload leaves no object and no temp file (${payload})`, async () => {
        const body = randomBytes(4 * 1024 * 1024);
        const captured = await capture(
          new PutObjectCommand({ Bucket: "objects", Key: "aborted", Body: body }),
          payload === "UNSIGNED-PAYLOAD" ? { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" } : {},
        );
        assert.equal(
          captured.headers["x-amz-content-sha256"] === "UNSIGNED-PAYLOAD",
          payload === "UNSIGNED-PAYLOAD",
        );
        const headers = Object.fromEntries(
          Object.entries(captured.headers).filter(([k]) => k.toLowerCase() !== "expect"),
        );
        const req = http.request(urlOf(s3.url, captured), { method: "PUT", headers, agent: false });
        const failed = new Promise<void>((resolve) => {
          req.on("error", () => resolve());
          req.on("close", () => resolve());
        });
        req.write(body.subarray(0, 1024 * 1024));
        // The upload is streaming into a temp file...
        await waitFor(async () => (await tmpEntries()).length > 0);
        // ...when the client goes away.
        req.destroy();
        await failed;
        await waitFor(async () => (await tmpEntries()).length === 0);
        await rejectsWith(
          client.send(new HeadObjectCommand({ Bucket: "objects", Key: "aborted" })),
          "NotFound",
          404,
        );
        // The server is still healthy.
        await client.send(new PutObjectCommand({ Bucket: "objects", Key: "after-abort", Body: "ok" }));
      });
    }

    test("unsupported operations answer NotImplemented", async () => {
      // SSE-C would otherwise silently store plaintext.
      await rejectsWith(
        client.send(
          new PutObjectCommand({
            Bucket: "objects",
            Key: "ssec",
            Body: "x",
            SSECustomerAlgorithm: "AES256",
            SSECustomerKey: "k".repeat(32),
          }),
        ),
        "NotImplemented",
        501,
      );
      await client.send(new PutObjectCommand({ Bucket: "objects", Key: "tagged", Body: "x" }));
      await rejectsWith(
        client.send(new GetObjectTaggingCommand({ Bucket: "objects", Key: "tagged" })),
        "NotImplemented",
        501,
      );
    });

    test("encryption and Object Lock are refused with 501, never stored as plain objects", async () => {
      const refused = [
        new PutObjectCommand({ Bucket: "objects", Key: "sse-s3", Body: "x", ServerSideEncryption: "AES256" }),
        new PutObjectCommand({
          Bucket: "objects",
          Key: "sse-kms",
          Body: "x",
          ServerSideEncryption: "aws:kms",
          SSEKMSKeyId: "alias/key",
        }),
        new PutObjectCommand({
          Bucket: "objects",
          Key: "locked",
          Body: "x",
          ObjectLockMode: "GOVERNANCE",
          ObjectLockRetainUntilDate: new Date(Date.now() + 86_400_000),
        }),
        new PutObjectCommand({ Bucket: "objects", Key: "held", Body: "x", ObjectLockLegalHoldStatus: "ON" }),
        new CreateMultipartUploadCommand({
          Bucket: "objects",
          Key: "sse-mpu",
          ServerSideEncryption: "AES256",
        }),
        new CopyObjectCommand({
          Bucket: "objects",
          Key: "sse-copy",
          CopySource: "objects/tagged",
          ServerSideEncryption: "AES256",
        }),
      ];
      for (const command of refused) {
        await rejectsWith(client.send(command as never), "NotImplemented", 501);
      }
      for (const key of ["sse-s3", "sse-kms", "locked", "held", "sse-copy"]) {
        await rejectsWith(
          client.send(new HeadObjectCommand({ Bucket: "objects", Key: key })),
          "NotFound",
          404,
        );
      }
      await rejectsWith(
        client.send(new CreateBucketCommand({ Bucket: "locked-bucket", ObjectLockEnabledForBucket: true })),
        "NotImplemented",
        501,
      );
      await rejectsWith(client.send(new HeadBucketCommand({ Bucket: "locked-bucket" })), "NotFound", 404);
    });
  });

  describe("listing", () => {
    const keys = ["a/1", "a/2", "a/b/3", "a/b/4", "a-c", "b/1", "c", "d/e/f/g", "z"];

    before(async () => {
      await client.send(new CreateBucketCommand({ Bucket: "listing" }));
      await Promise.all(
        keys.map((key) =>
          client.send(new PutObjectCommand({ Bucket: "listing", Key: key, Body: `v:${key}` })),
        ),
      );
    });

    test("ListObjectsV2 returns keys in order with sizes and ETags", async () => {
      const all = await client.send(new ListObjectsV2Command({ Bucket: "listing" }));
      assert.deepEqual(
        all.Contents?.map((c) => c.Key),
        [...keys].sort(),
      );
      assert.equal(all.KeyCount, keys.length);
      assert.equal(all.IsTruncated, false);
      const first = all.Contents[0]!;
      assert.equal(first.Size, Buffer.byteLength(`v:${first.Key}`));
      assert.equal(first.ETag, `"${md5(Buffer.from(`v:${first.Key}`))}"`);
      assert.ok(first.LastModified instanceof Date);
    });

    test("prefix and delimiter produce CommonPrefixes", async () => {
      const top = await client.send(new ListObjectsV2Command({ Bucket: "listing", Delimiter: "/" }));
      assert.deepEqual(
        top.Contents?.map((c) => c.Key),
        ["a-c", "c", "z"],
      );
      assert.deepEqual(
        top.CommonPrefixes?.map((p) => p.Prefix),
        ["a/", "b/", "d/"],
      );
      assert.equal(top.KeyCount, 6);

      const underA = await client.send(
        new ListObjectsV2Command({ Bucket: "listing", Prefix: "a/", Delimiter: "/" }),
      );
      assert.deepEqual(
        underA.Contents?.map((c) => c.Key),
        ["a/1", "a/2"],
      );
      assert.deepEqual(
        underA.CommonPrefixes?.map((p) => p.Prefix),
        ["a/b/"],
      );

      const prefixOnly = await client.send(new ListObjectsV2Command({ Bucket: "listing", Prefix: "a" }));
      assert.deepEqual(
        prefixOnly.Contents?.map((c) => c.Key),
        ["a-c", "a/1", "a/2", "a/b/3", "a/b/4"],
      );

      const none = await client.send(new ListObjectsV2Command({ Bucket: "listing", Prefix: "nothing/" }));
      assert.equal(none.KeyCount, 0);
      assert.equal(none.Contents, undefined);
    });

    test("pagination with max-keys and continuation tokens", async () => {
      const seen: string[] = [];
      let token: string | undefined;
      let pages = 0;
      do {
        const page = await client.send(
          new ListObjectsV2Command({ Bucket: "listing", MaxKeys: 2, ContinuationToken: token }),
        );
        pages++;
        assert.ok((page.KeyCount ?? 0) <= 2);
        seen.push(...(page.Contents ?? []).map((c) => c.Key!));
        assert.equal(page.IsTruncated, page.NextContinuationToken !== undefined);
        token = page.NextContinuationToken;
      } while (token);
      assert.deepEqual(seen, [...keys].sort());
      assert.equal(pages, Math.ceil(keys.length / 2));

      // Pagination over common prefixes does not repeat or lose entries.
      const entries: string[] = [];
      token = undefined;
      do {
        const page: ListObjectsV2CommandOutput = await client.send(
          new ListObjectsV2Command({
            Bucket: "listing",
            Delimiter: "/",
            MaxKeys: 1,
            ContinuationToken: token,
          }),
        );
        entries.push(
          ...(page.Contents ?? []).map((c) => c.Key!),
          ...(page.CommonPrefixes ?? []).map((p) => p.Prefix!),
        );
        token = page.NextContinuationToken;
      } while (token);
      assert.deepEqual(entries, ["a-c", "a/", "b/", "c", "d/", "z"]);

      const startAfter = await client.send(
        new ListObjectsV2Command({ Bucket: "listing", StartAfter: "b/1" }),
      );
      assert.deepEqual(
        startAfter.Contents?.map((c) => c.Key),
        ["c", "d/e/f/g", "z"],
      );

      await rejectsWith(
        client.send(new ListObjectsV2Command({ Bucket: "listing", ContinuationToken: "garbage!" })),
        "InvalidArgument",
        400,
      );
    });

    test("ListObjects (v1) with marker", async () => {
      const first = await client.send(new ListObjectsCommand({ Bucket: "listing", MaxKeys: 3 }));
      assert.deepEqual(
        first.Contents?.map((c) => c.Key),
        ["a-c", "a/1", "a/2"],
      );
      assert.equal(first.IsTruncated, true);
      const next = await client.send(new ListObjectsCommand({ Bucket: "listing", Marker: "a/2" }));
      assert.deepEqual(
        next.Contents?.map((c) => c.Key),
        ["a/b/3", "a/b/4", "b/1", "c", "d/e/f/g", "z"],
      );
      const delimited = await client.send(
        new ListObjectsCommand({ Bucket: "listing", Delimiter: "/", MaxKeys: 2 }),
      );
      assert.deepEqual(
        [
          ...(delimited.Contents ?? []).map((c) => c.Key),
          ...(delimited.CommonPrefixes ?? []).map((p) => p.Prefix),
        ],
        ["a-c", "a/"],
      );
      assert.equal(delimited.NextMarker, "a/");
      const rest = await client.send(
        new ListObjectsCommand({ Bucket: "listing", Delimiter: "/", Marker: delimited.NextMarker }),
      );
      assert.deepEqual(
        [
          ...(rest.Contents ?? []).map((c) => c.Key),
          ...(rest.CommonPrefixes ?? []).map((p) => p.Prefix),
        ].sort(),
        ["b/", "c", "d/", "z"],
      );
    });
  });

  describe("multipart uploads", () => {
    before(async () => {
      await client.send(new CreateBucketCommand({ Bucket: "multipart" }));
    });

    for (const mode of ["default", "when-required"] as const) {
      test(`lib-storage Upload of ~12 MB in 5 MiB parts (${mode} checksums)`, async () => {
        const c = mode === "default" ? client : requiredClient;
        const data = randomBytes(12 * 1024 * 1024 + 12345);
        const upload = new Upload({
          client: c,
          params: {
            Bucket: "multipart",
            Key: `big/${mode}.bin`,
            Body: Readable.from([data.subarray(0, 7_000_000), data.subarray(7_000_000)]),
            ContentType: "video/mp4",
            Metadata: { origin: "test" },
          },
          partSize: 5 * 1024 * 1024,
          queueSize: 2,
        });
        const result = await upload.done();
        const partMd5s = [0, 1, 2].map((i) =>
          createHash("md5")
            .update(data.subarray(i * 5 * 1024 * 1024, (i + 1) * 5 * 1024 * 1024))
            .digest(),
        );
        assert.equal(result.ETag, `"${md5(Buffer.concat(partMd5s))}-3"`);

        const got = await c.send(
          new GetObjectCommand({ Bucket: "multipart", Key: `big/${mode}.bin`, ChecksumMode: "ENABLED" }),
        );
        assert.equal(got.ContentLength, data.length);
        assert.equal(got.ContentType, "video/mp4");
        assert.deepEqual(got.Metadata, { origin: "test" });
        const hash = createHash("sha256");
        for await (const chunk of got.Body as Readable) hash.update(chunk as Buffer);
        assert.equal(hash.digest("hex"), sha256(data));

        // GET ?partNumber returns the part's bytes.
        const part2 = await c.send(
          new GetObjectCommand({ Bucket: "multipart", Key: `big/${mode}.bin`, PartNumber: 2 }),
        );
        assert.equal(part2.PartsCount, 3);
        assert.equal(
          md5(await part2.Body!.transformToByteArray()),
          md5(data.subarray(5 * 1024 * 1024, 10 * 1024 * 1024)),
        );

        const uploadsDir = path.join(dataDir, "multipart", "uploads");
        assert.deepEqual(await readdir(uploadsDir), [], "completed uploads leave no state behind");
      });
    }

    test("abort, list parts and completion errors", async () => {
      const { UploadId } = await client.send(
        new CreateMultipartUploadCommand({ Bucket: "multipart", Key: "manual" }),
      );
      assert.ok(UploadId);
      const small = Buffer.from("too small for a non-final part");
      const p1 = await client.send(
        new UploadPartCommand({ Bucket: "multipart", Key: "manual", UploadId, PartNumber: 1, Body: small }),
      );
      const p2 = await client.send(
        new UploadPartCommand({ Bucket: "multipart", Key: "manual", UploadId, PartNumber: 2, Body: small }),
      );
      assert.equal(p1.ETag, `"${md5(small)}"`);
      const parts = await client.send(new ListPartsCommand({ Bucket: "multipart", Key: "manual", UploadId }));
      assert.deepEqual(
        parts.Parts?.map((p) => [p.PartNumber, p.Size, p.ETag]),
        [
          [1, small.length, p1.ETag],
          [2, small.length, p2.ETag],
        ],
      );

      const complete = (Parts: Array<{ PartNumber: number; ETag: string | undefined }>) =>
        client.send(
          new CompleteMultipartUploadCommand({
            Bucket: "multipart",
            Key: "manual",
            UploadId,
            MultipartUpload: { Parts },
          }),
        );
      await rejectsWith(
        complete([{ PartNumber: 1, ETag: '"00000000000000000000000000000000"' }]),
        "InvalidPart",
        400,
      );
      await rejectsWith(
        complete([
          { PartNumber: 2, ETag: p2.ETag },
          { PartNumber: 1, ETag: p1.ETag },
        ]),
        "InvalidPartOrder",
        400,
      );
      await rejectsWith(
        complete([
          { PartNumber: 1, ETag: p1.ETag },
          { PartNumber: 2, ETag: p2.ETag },
        ]),
        "EntityTooSmall",
        400,
      );

      await client.send(new AbortMultipartUploadCommand({ Bucket: "multipart", Key: "manual", UploadId }));
      await rejectsWith(
        client.send(new ListPartsCommand({ Bucket: "multipart", Key: "manual", UploadId })),
        "NoSuchUpload",
        404,
      );
      await rejectsWith(
        client.send(
          new UploadPartCommand({ Bucket: "multipart", Key: "manual", UploadId, PartNumber: 3, Body: "x" }),
        ),
        "NoSuchUpload",
        404,
      );
      await rejectsWith(
        client.send(new HeadObjectCommand({ Bucket: "multipart", Key: "manual" })),
        "NotFound",
        404,
      );
    });

    test("a single small part completes", async () => {
      const { UploadId } = await requiredClient.send(
        new CreateMultipartUploadCommand({ Bucket: "multipart", Key: "single" }),
      );
      const p1 = await requiredClient.send(
        new UploadPartCommand({
          Bucket: "multipart",
          Key: "single",
          UploadId,
          PartNumber: 1,
          Body: "only part",
        }),
      );
      const done = await requiredClient.send(
        new CompleteMultipartUploadCommand({
          Bucket: "multipart",
          Key: "single",
          UploadId,
          MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.ETag }] },
        }),
      );
      assert.match(done.ETag ?? "", /^"[0-9a-f]{32}-1"$/);
      const got = await requiredClient.send(new GetObjectCommand({ Bucket: "multipart", Key: "single" }));
      assert.equal(await got.Body!.transformToString(), "only part");
    });

    test("a repeated CompleteMultipartUpload answers as the first (an SDK retry after a lost answer)", async () => {
      const { UploadId } = await client.send(
        new CreateMultipartUploadCommand({ Bucket: "multipart", Key: "again" }),
      );
      const p1 = await client.send(
        new UploadPartCommand({ Bucket: "multipart", Key: "again", UploadId, PartNumber: 1, Body: "once" }),
      );
      const complete = (Key: string) =>
        client.send(
          new CompleteMultipartUploadCommand({
            Bucket: "multipart",
            Key,
            UploadId,
            MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.ETag }] },
          }),
        );
      const first = await complete("again");
      const second = await complete("again");
      assert.match(first.ETag ?? "", /^"[0-9a-f]{32}-1"$/);
      assert.equal(second.ETag, first.ETag);
      assert.equal(second.Key, "again");
      await rejectsWith(complete("other-key"), "NoSuchUpload", 404);
      const got = await client.send(new GetObjectCommand({ Bucket: "multipart", Key: "again" }));
      assert.equal(await got.Body!.transformToString(), "once");
    });

    test("a whole-object checksum sent with CompleteMultipartUpload is checked against the object", async () => {
      const data = randomBytes(5 * 1024 * 1024 + 1000);
      const parts = [data.subarray(0, 5 * 1024 * 1024), data.subarray(5 * 1024 * 1024)];
      const crc = (bytes: Buffer) => {
        const value = Buffer.alloc(4);
        value.writeUInt32BE(crc32(bytes));
        return value.toString("base64");
      };
      for (const [Key, sent, outcome] of [
        ["whole-right", crc(data), "ok"],
        ["whole-wrong", crc(Buffer.from("something else")), "BadDigest"],
      ] as const) {
        const { UploadId } = await client.send(
          new CreateMultipartUploadCommand({
            Bucket: "multipart",
            Key,
            ChecksumAlgorithm: "CRC32",
            ChecksumType: "FULL_OBJECT",
          }),
        );
        const Parts = [];
        for (const [i, Body] of parts.entries()) {
          const part = await client.send(
            new UploadPartCommand({
              Bucket: "multipart",
              Key,
              UploadId,
              PartNumber: i + 1,
              Body,
              ChecksumCRC32: crc(Body),
            }),
          );
          Parts.push({ PartNumber: i + 1, ETag: part.ETag, ChecksumCRC32: crc(Body) });
        }
        const completing = client.send(
          new CompleteMultipartUploadCommand({
            Bucket: "multipart",
            Key,
            UploadId,
            ChecksumCRC32: sent,
            ChecksumType: "FULL_OBJECT",
            MultipartUpload: { Parts },
          }),
        );
        if (outcome === "ok") {
          const done = await completing;
          assert.equal(done.ChecksumCRC32, crc(data));
        } else {
          await rejectsWith(completing, "BadDigest", 400);
        }
      }
    });
  });

  describe("authentication", () => {
    before(async () => {
      await client.send(new CreateBucketCommand({ Bucket: "auth" }));
      await client.send(new PutObjectCommand({ Bucket: "auth", Key: "secret.txt", Body: "top secret" }));
    });

    test("wrong secret is SignatureDoesNotMatch", async () => {
      const wrong = new S3Client(
        config({ credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: "not-the-secret" } }),
      );
      try {
        await rejectsWith(
          wrong.send(new GetObjectCommand({ Bucket: "auth", Key: "secret.txt" })),
          "SignatureDoesNotMatch",
          403,
        );
        await rejectsWith(
          wrong.send(new PutObjectCommand({ Bucket: "auth", Key: "planted", Body: "x" })),
          "SignatureDoesNotMatch",
          403,
        );
        await rejectsWith(wrong.send(new ListBucketsCommand({})), "SignatureDoesNotMatch", 403);
      } finally {
        wrong.destroy();
      }
      await rejectsWith(
        client.send(new HeadObjectCommand({ Bucket: "auth", Key: "planted" })),
        "NotFound",
        404,
      );
    });

    test("unknown access key is InvalidAccessKeyId", async () => {
      const unknown = new S3Client(
        config({ credentials: { accessKeyId: "AKIDUNKNOWN", secretAccessKey: SECRET_KEY } }),
      );
      try {
        await rejectsWith(
          unknown.send(new GetObjectCommand({ Bucket: "auth", Key: "secret.txt" })),
          "InvalidAccessKeyId",
          403,
        );
      } finally {
        unknown.destroy();
      }
    });

    test("any region is accepted", async () => {
      const other = new S3Client(config({ region: "ap-southeast-2" }));
      try {
        const got = await other.send(new GetObjectCommand({ Bucket: "auth", Key: "secret.txt" }));
        assert.equal(await got.Body!.transformToString(), "top secret");
      } finally {
        other.destroy();
      }
    });

    test("anonymous requests are AccessDenied", async () => {
      for (const target of ["/", "/auth", "/auth/secret.txt"]) {
        const res = await rawRequest(`${s3.url}${target}`);
        assert.equal(res.status, 403, target);
        assert.match(res.body, /<Code>AccessDenied<\/Code>/);
        assert.match(res.body, /<RequestId>[0-9A-F]+<\/RequestId>/);
        assert.ok(res.headers["x-amz-request-id"]);
      }
      const put = await rawRequest(`${s3.url}/auth/anonymous.txt`, { method: "PUT", body: Buffer.from("x") });
      assert.equal(put.status, 403);
      // A small rejected body is drained, so a keep-alive connection stays usable.
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const first = await rawRequest(`${s3.url}/auth/anonymous.txt`, {
          method: "PUT",
          body: Buffer.alloc(1000, 1),
          agent,
        });
        assert.equal(first.status, 403);
        assert.equal(first.headers.connection, "keep-alive");
        const second = await rawRequest(`${s3.url}/auth/secret.txt`, { agent });
        assert.equal(second.status, 403);
        assert.match(second.body, /<Code>AccessDenied<\/Code>/);
      } finally {
        agent.destroy();
      }
      await rejectsWith(
        client.send(new HeadObjectCommand({ Bucket: "auth", Key: "anonymous.txt" })),
        "NotFound",
        404,
      );
    });

    test("presigned GET URL from @aws-sdk/s3-request-presigner", async () => {
      const url = await getSignedUrl(client, new GetObjectCommand({ Bucket: "auth", Key: "secret.txt" }), {
        expiresIn: 60,
      });
      const res = await rawRequest(url);
      assert.equal(res.status, 200);
      assert.equal(res.body, "top secret");
      const tampered = await rawRequest(url.replace("secret.txt", "secret.txx"));
      assert.equal(tampered.status, 403);
    });
  });

  describe("found by Ceph's s3-tests", () => {
    before(() => client.send(new CreateBucketCommand({ Bucket: "suite" })));

    test("an Expect header other than 100-continue is ignored, as S3 does, not answered 417", async () => {
      const body = Buffer.from("expectations");
      const captured = await capture(new PutObjectCommand({ Bucket: "suite", Key: "expect", Body: body }));
      const res = await rawRequest(urlOf(s3.url, captured), {
        method: "PUT",
        headers: { ...captured.headers, expect: "200" },
        body,
      });
      assert.equal(res.status, 200, res.body);
    });

    test("DeleteObject with If-Match deletes only the version it names", async () => {
      const put = await client.send(new PutObjectCommand({ Bucket: "suite", Key: "cond", Body: "v1" }));
      await rejectsWith(
        client.send(new DeleteObjectCommand({ Bucket: "suite", Key: "cond", IfMatch: '"0123"' })),
        "PreconditionFailed",
        412,
      );
      await client.send(new HeadObjectCommand({ Bucket: "suite", Key: "cond" }));
      await client.send(new DeleteObjectCommand({ Bucket: "suite", Key: "cond", IfMatch: put.ETag }));
      await rejectsWith(
        client.send(new HeadObjectCommand({ Bucket: "suite", Key: "cond" })),
        "NotFound",
        404,
      );
    });

    test("a presigned URL that expires at once is expired (403), not malformed", async () => {
      await client.send(new PutObjectCommand({ Bucket: "suite", Key: "presigned", Body: "x" }));
      const signer = testSigner();
      const presigned = await signer.presign(
        {
          method: "GET",
          protocol: "http:",
          hostname: "127.0.0.1",
          port: s3.port,
          path: "/suite/presigned",
          query: {},
          headers: { host: `127.0.0.1:${s3.port}`, "x-amz-content-sha256": "UNSIGNED-PAYLOAD" },
        },
        { expiresIn: 0 },
      );
      assert.equal(presigned.query?.["X-Amz-Expires"], "0");
      const query = new URLSearchParams(presigned.query as Record<string, string>).toString();
      const expired = await rawRequest(`${s3.url}/suite/presigned?${query}`);
      assert.equal(expired.status, 403);
      assert.match(expired.body, /<Code>AccessDenied<\/Code>[\s\S]*expired/);
    });

    test("a CORS preflight is refused as by a bucket without CORS, not as a bad signature", async () => {
      const noOrigin = await rawRequest(`${s3.url}/suite/k`, { method: "OPTIONS" });
      assert.equal(noOrigin.status, 400);
      const preflight = await rawRequest(`${s3.url}/suite/k`, {
        method: "OPTIONS",
        headers: { origin: "http://example.com", "access-control-request-method": "GET" },
      });
      assert.equal(preflight.status, 403);
      assert.match(preflight.body, /<Code>AccessForbidden<\/Code>/);
    });

    test("anonymous: a bucket that does not exist is NoSuchBucket; one that does is AccessDenied", async () => {
      const missing = await rawRequest(`${s3.url}/no-such-bucket-here/k`);
      assert.equal(missing.status, 404);
      assert.match(missing.body, /<Code>NoSuchBucket<\/Code>/);
      const existing = await rawRequest(`${s3.url}/suite/k`);
      assert.equal(existing.status, 403);
      assert.match(existing.body, /<Code>AccessDenied<\/Code>/);
    });

    test("an unsigned request for a feature the store does not offer is 501, not 403", async () => {
      const res = await rawRequest(`${s3.url}/suite?acl`);
      assert.equal(res.status, 501);
      assert.match(res.body, /<Code>NotImplemented<\/Code>/);
    });

    test("CompleteMultipartUpload checks a composite checksum it is given", async () => {
      const { UploadId } = await client.send(
        new CreateMultipartUploadCommand({ Bucket: "suite", Key: "composite", ChecksumAlgorithm: "CRC32" }),
      );
      const part = await client.send(
        new UploadPartCommand({
          Bucket: "suite",
          Key: "composite",
          UploadId,
          PartNumber: 1,
          Body: Buffer.from("one part"),
          ChecksumAlgorithm: "CRC32",
        }),
      );
      const parts = [{ PartNumber: 1, ETag: part.ETag, ChecksumCRC32: part.ChecksumCRC32 }];
      await rejectsWith(
        client.send(
          new CompleteMultipartUploadCommand({
            Bucket: "suite",
            Key: "composite",
            UploadId,
            ChecksumCRC32: "AAAAAA==-1",
            MultipartUpload: { Parts: parts },
          }),
        ),
        "BadDigest",
        400,
      );
      const done = await client.send(
        new CompleteMultipartUploadCommand({
          Bucket: "suite",
          Key: "composite",
          UploadId,
          MultipartUpload: { Parts: parts },
        }),
      );
      const right = await client.send(
        new GetObjectAttributesCommand({
          Bucket: "suite",
          Key: "composite",
          ObjectAttributes: ["ETag", "Checksum", "ObjectParts", "ObjectSize", "StorageClass"],
        }),
      );
      assert.equal(`"${right.ETag}"`, done.ETag);
      assert.equal(right.ObjectSize, 8);
      assert.equal(right.StorageClass, "STANDARD");
      assert.equal(right.ObjectParts?.TotalPartsCount, 1);
      assert.equal(right.Checksum?.ChecksumCRC32, done.ChecksumCRC32);
    });

    test("a PUT that says nothing of its length is 411, not an empty object", async () => {
      const captured = await capture(new PutObjectCommand({ Bucket: "suite", Key: "lengthless", Body: "" }), {
        "content-length": undefined,
      });
      const res = await rawRequest(urlOf(s3.url, captured), {
        method: "PUT",
        headers: captured.headers,
        lengthless: true,
      });
      assert.equal(res.status, 411, res.body);
      assert.match(res.body, /<Code>MissingContentLength<\/Code>/);
      await rejectsWith(
        client.send(new HeadObjectCommand({ Bucket: "suite", Key: "lengthless" })),
        "NotFound",
        404,
      );
    });

    test("ListObjectsV2 with an empty continuation token lists from the start", async () => {
      await client.send(new PutObjectCommand({ Bucket: "suite", Key: "listed", Body: "x" }));
      const listed = await client.send(new ListObjectsV2Command({ Bucket: "suite", ContinuationToken: "" }));
      assert.ok(listed.Contents?.some((o) => o.Key === "listed"));
    });

    test("Content-Encoding is kept as sent once aws-chunked is taken off", async () => {
      await client.send(
        new PutObjectCommand({
          Bucket: "suite",
          Key: "encoded",
          Body: Readable.from([Buffer.from("compressed, twice")]),
          ContentLength: 17,
          ContentEncoding: "gzip, br",
        }),
      );
      const got = await client.send(new HeadObjectCommand({ Bucket: "suite", Key: "encoded" }));
      assert.equal(got.ContentEncoding, "gzip, br");
    });
  });

  test("a data directory in the layout before one file per object is moved to it and served", async () => {
    // Written as that layout was: metadata in objects/<hh>/<sha256(key)>.json naming a blob, parts
    // as <n>.json naming <n>-<id>.part.
    const legacy = path.join(root, "legacy");
    const bucketDir = path.join(legacy, "old");
    const key = "photos/ünïcode key.jpg";
    const content = randomBytes(70_000);
    const h = sha256(key);
    const blob = "ab" + "0".repeat(30);
    const write = async (file: string, data: string | Buffer) => {
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, data);
    };
    const json = (value: unknown) => JSON.stringify(value);
    await write(
      path.join(bucketDir, "bucket.json"),
      json({ name: "old", created: "2026-01-02T03:04:05.000Z", locationConstraint: "" }),
    );
    await write(path.join(bucketDir, "blobs", "ab", blob), content);
    const common = { contentType: "image/jpeg", headers: {}, userMetadata: { a: "1" } };
    await write(
      path.join(bucketDir, "objects", h.slice(0, 2), `${h}.json`),
      json({
        ...common,
        key,
        size: content.length,
        etag: `"${md5(content)}"`,
        lastModified: "2026-01-02T03:04:05.000Z",
        blob,
      }),
    );
    await write(path.join(bucketDir, "blobs", "cd", "cd" + "1".repeat(30)), "orphan of a crashed write");
    const uploadId = "ef" + "2".repeat(30);
    const part = Buffer.alloc(1000, 7);
    const uploadDir = path.join(bucketDir, "uploads", uploadId);
    await write(
      path.join(uploadDir, "upload.json"),
      json({ ...common, uploadId, key: "multi", initiated: "2026-01-02T03:04:05.000Z" }),
    );
    await write(path.join(uploadDir, "1-" + "3".repeat(32) + ".part"), part);
    await write(
      path.join(uploadDir, "1.json"),
      json({
        partNumber: 1,
        file: "1-" + "3".repeat(32) + ".part",
        etag: `"${md5(part)}"`,
        size: part.length,
        lastModified: "2026-01-02T03:04:05.000Z",
      }),
    );

    const reopened = await startEmbeddedS3({
      port: 0,
      dataDir: legacy,
      accessKeyId: ACCESS_KEY,
      secretAccessKey: SECRET_KEY,
    });
    const legacyClient = new S3Client(config({ endpoint: reopened.url }));
    try {
      const got = await legacyClient.send(new GetObjectCommand({ Bucket: "old", Key: key }));
      assert.ok(Buffer.from(await got.Body!.transformToByteArray()).equals(content));
      assert.equal(got.ETag, `"${md5(content)}"`);
      assert.deepEqual(got.Metadata, { a: "1" });
      const listed = await legacyClient.send(new ListObjectsV2Command({ Bucket: "old" }));
      assert.deepEqual(
        listed.Contents?.map((o) => [o.Key, o.Size]),
        [[key, content.length]],
      );
      const done = await legacyClient.send(
        new CompleteMultipartUploadCommand({
          Bucket: "old",
          Key: "multi",
          UploadId: uploadId,
          MultipartUpload: { Parts: [{ PartNumber: 1, ETag: `"${md5(part)}"` }] },
        }),
      );
      assert.match(done.ETag ?? "", /-1"$/);
      const multi = await legacyClient.send(new GetObjectCommand({ Bucket: "old", Key: "multi" }));
      assert.ok(Buffer.from(await multi.Body!.transformToByteArray()).equals(part));
      assert.ok(!existsSync(path.join(bucketDir, "blobs")), "the old blobs directory is gone");
    } finally {
      legacyClient.destroy();
      await reopened.close();
    }
  });

  test("close() resolves with idle keep-alive connections open", { timeout: 30_000 }, async () => {
    const dir = path.join(root, "data-close");
    const other = await startEmbeddedS3({
      port: 0,
      dataDir: dir,
      accessKeyId: ACCESS_KEY,
      secretAccessKey: SECRET_KEY,
    });
    const c = new S3Client({ ...config(), endpoint: other.url });
    await c.send(new CreateBucketCommand({ Bucket: "closing" }));
    await c.send(new PutObjectCommand({ Bucket: "closing", Key: "k", Body: "v" }));
    // Idle keep-alive connections do not hold close() up (a hang fails the test by its timeout).
    await other.close();
    await assert.rejects(c.send(new HeadBucketCommand({ Bucket: "closing" })));
    c.destroy();

    // The data survives a restart.
    const reopened = await startEmbeddedS3({
      port: 0,
      dataDir: dir,
      accessKeyId: ACCESS_KEY,
      secretAccessKey: SECRET_KEY,
    });
    const c2 = new S3Client({ ...config(), endpoint: reopened.url });
    try {
      const got = await c2.send(new GetObjectCommand({ Bucket: "closing", Key: "k" }));
      assert.equal(await got.Body!.transformToString(), "v");
      const listed = await c2.send(new ListObjectsV2Command({ Bucket: "closing" }));
      assert.deepEqual(
        listed.Contents?.map((o) => o.Key),
        ["k"],
      );
    } finally {
      c2.destroy();
      await reopened.close();
    }
  });
});

// Published AWS Signature V4 examples ("Authenticating Requests: Using the Authorization Header",
// "... Query Parameters", "... Transferring Payload in Multiple Chunks"): the verifier must accept
// exactly these signatures, independent of any client implementation.
describe("SigV4 verifier against the AWS documentation examples", () => {
  const creds = {
    accessKeyId: "AKIAIOSFODNN7EXAMPLE",
    secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  };
  const at = Date.UTC(2013, 4, 24, 0, 0, 30);

  test("GET object with the Authorization header", () => {
    const signature = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";
    const request = (sig: string) => ({
      method: "GET",
      rawPath: "/test.txt",
      rawQuery: "",
      rawHeaders: [
        "Host",
        "examplebucket.s3.amazonaws.com",
        "Range",
        "bytes=0-9",
        "x-amz-content-sha256",
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "x-amz-date",
        "20130524T000000Z",
        "Authorization",
        `AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=${sig}`,
      ],
    });
    const auth = authenticate(request(signature), creds, at);
    assert.equal(auth.seedSignature, signature);
    assert.throws(() => authenticate(request(signature.replace(/^f/, "e")), creds, at), {
      code: "SignatureDoesNotMatch",
    });
    assert.throws(() => authenticate(request(signature), creds, at + 60 * 60 * 1000), {
      code: "RequestTimeTooSkewed",
    });
    assert.throws(() => authenticate(request(signature), { ...creds, accessKeyId: "OTHER" }, at), {
      code: "InvalidAccessKeyId",
    });
  });

  test("presigned URL", () => {
    const signature = "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
    const request = (sig: string) => ({
      method: "GET",
      rawPath: "/test.txt",
      rawQuery:
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=" +
        sig,
      rawHeaders: ["Host", "examplebucket.s3.amazonaws.com"],
    });
    const auth = authenticate(request(signature), creds, at);
    assert.equal(auth.presigned, true);
    assert.throws(() => authenticate(request(signature.replace(/^a/, "b")), creds, at), {
      code: "SignatureDoesNotMatch",
    });
    assert.throws(
      () => authenticate(request(signature), creds, at + 86401 * 1000),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, "AccessDenied");
        assert.match(err.message, /expired/);
        return true;
      },
    );
  });

  test("signed chunked upload: seed and chunk signatures", async () => {
    const rawHeaders = [
      "Host",
      "s3.amazonaws.com",
      "x-amz-date",
      "20130524T000000Z",
      "x-amz-storage-class",
      "REDUCED_REDUNDANCY",
      "x-amz-content-sha256",
      "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
      "Content-Encoding",
      "aws-chunked",
      "x-amz-decoded-content-length",
      "66560",
      "Content-Length",
      "66824",
      "Authorization",
      "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
    ];
    const auth = authenticate(
      { method: "PUT", rawPath: "/examplebucket/chunkObject.txt", rawQuery: "", rawHeaders },
      creds,
      at,
    );
    const chunkSigs = [
      "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
      "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
      "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
    ];
    const body = Buffer.concat([
      Buffer.from(`10000;chunk-signature=${chunkSigs[0]}\r\n`),
      Buffer.alloc(65536, "a"),
      Buffer.from(`\r\n400;chunk-signature=${chunkSigs[1]}\r\n`),
      Buffer.alloc(1024, "a"),
      Buffer.from(`\r\n0;chunk-signature=${chunkSigs[2]}\r\n\r\n`),
    ]);
    assert.equal(body.length, 66824);
    const decode = async (input: Buffer) => {
      const decoder = new AwsChunkedDecoder({
        signing: {
          seedSignature: auth.seedSignature,
          chunk: (prev, hash) => chunkSignature(auth, prev, hash),
          trailer: () => "",
        },
      });
      const out: Buffer[] = [];
      // Feed in awkward slices to exercise the parser's state across buffer boundaries.
      const slices: Buffer[] = [];
      for (let i = 0; i < input.length; i += 997) slices.push(input.subarray(i, i + 997));
      for await (const chunk of Readable.from(slices).pipe(decoder)) out.push(chunk as Buffer);
      return Buffer.concat(out);
    };
    const decoded = await decode(body);
    assert.equal(decoded.length, 66560);
    assert.ok(decoded.equals(Buffer.alloc(66560, "a")));
    const tampered = Buffer.from(body);
    tampered[100] = "b".charCodeAt(0);
    await assert.rejects(decode(tampered), { code: "SignatureDoesNotMatch" });
    await assert.rejects(decode(body.subarray(0, 70000 - 4000)), { code: "IncompleteBody" });
  });

  test("checksum implementations match the reference check values", () => {
    const check = Buffer.from("123456789");
    const hex = (algorithm: "crc32" | "crc32c" | "crc64nvme", portable = false) => {
      const c = createChecksummer(algorithm, { portable });
      c.update(check.subarray(0, 4));
      c.update(check.subarray(4));
      return c.digest().toString("hex");
    };
    assert.equal(hex("crc32"), "cbf43926");
    assert.equal(hex("crc32", true), "cbf43926");
    assert.equal(hex("crc32c"), "e3069283");
    assert.equal(hex("crc64nvme"), "ae8b14860a799888");
    const data = randomBytes(100_000);
    const native = createChecksummer("crc32");
    const portable = createChecksummer("crc32", { portable: true });
    native.update(data);
    portable.update(data);
    assert.deepEqual(portable.digest(), native.digest());
    // HMAC sanity for the signing-key derivation used by chunk signatures.
    const key = deriveSigningKey(creds.secretAccessKey, "20130524", "us-east-1", "s3");
    const manual = ["20130524", "us-east-1", "s3", "aws4_request"].reduce<Buffer>(
      (k, part) => createHmac("sha256", k).update(part).digest(),
      Buffer.from("AWS4" + creds.secretAccessKey),
    );
    assert.deepEqual(key, manual);
  });
});
