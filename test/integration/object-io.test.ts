// The runner's object transfers against the S3-protocol store: streamed downloads with the size
// limit, single and multipart uploads, and no partial object when an upload is stopped.
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { PermanentError } from "../../runner/errors.js";
import { downloadObject, MULTIPART_THRESHOLD, uploadFile } from "../../runner/object-io.js";
import { startTestStack, type TestStack } from "../support/api.js";

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

describe("runner object transfers", () => {
  let stack: TestStack;
  let dir: string;
  before(async () => {
    stack = await startTestStack();
    dir = await mkdtemp(join(tmpdir(), "media-service-objio-"));
  });
  after(async () => {
    await stack?.close();
    await rm(dir, { recursive: true, force: true });
  });
  const s3 = () => stack.services.s3;
  const never = () => new AbortController().signal;

  test("a large file goes up in parts and comes back identical, with its content type", async () => {
    const body = randomBytes(MULTIPART_THRESHOLD + 5 * 1024 * 1024);
    const path = join(dir, "large.bin");
    await writeFile(path, body);
    const size = await uploadFile(s3(), stack.bucket, "io/large.bin", path, "video/mp4", never());
    assert.equal(size, body.length);
    const got = await s3().send(new GetObjectCommand({ Bucket: stack.bucket, Key: "io/large.bin" }));
    assert.equal(got.ContentType, "video/mp4");
    assert.match(got.ETag ?? "", /-\d+"$/, "a multipart ETag");
    assert.equal(sha(Buffer.from(await got.Body!.transformToByteArray())), sha(body));
  });

  test("a stopped multipart upload leaves no object and no upload behind", async () => {
    const path = join(dir, "stopped.bin");
    await writeFile(path, randomBytes(MULTIPART_THRESHOLD * 2));
    const controller = new AbortController();
    const upload = uploadFile(
      s3(),
      stack.bucket,
      "io/stopped.bin",
      path,
      "application/octet-stream",
      controller.signal,
    );
    upload.catch(() => undefined);
    // Stopped once the multipart upload is under way on the store.
    const uploads = () =>
      s3().send(new ListMultipartUploadsCommand({ Bucket: stack.bucket, Prefix: "io/stopped" }));
    while (((await uploads()).Uploads ?? []).length === 0) await new Promise((r) => setTimeout(r, 2));
    controller.abort();
    await assert.rejects(upload);
    assert.deepEqual((await uploads()).Uploads ?? [], [], "the multipart upload was aborted on the store");
    await assert.rejects(s3().send(new HeadObjectCommand({ Bucket: stack.bucket, Key: "io/stopped.bin" })));
    const listed = await s3().send(new ListObjectsV2Command({ Bucket: stack.bucket, Prefix: "io/stopped" }));
    assert.equal(listed.KeyCount ?? 0, 0);
  });

  test("a download streams to disk, and a source over the limit is refused as permanent", async () => {
    const body = randomBytes(300_000);
    await s3().send(
      new PutObjectCommand({ Bucket: stack.bucket, Key: "io/src.bin", Body: body, ContentType: "image/png" }),
    );
    const path = join(dir, "src.bin");
    const result = await downloadObject(s3(), stack.bucket, "io/src.bin", path, {
      maxBytes: 1_000_000,
      signal: never(),
    });
    assert.equal(result.bytes, body.length);
    assert.equal(result.contentType, "image/png");
    assert.equal(sha(await readFile(path)), sha(body));
    await assert.rejects(
      downloadObject(s3(), stack.bucket, "io/src.bin", join(dir, "x.bin"), {
        maxBytes: 1000,
        signal: never(),
      }),
      (err: unknown) =>
        err instanceof PermanentError &&
        /is 300000 bytes, more than limits\.max_source_bytes \(1000\)/.test(err.message),
    );
  });

  test("missing sources and buckets are permanent errors that name them", async () => {
    await assert.rejects(
      downloadObject(s3(), stack.bucket, "io/nope.bin", join(dir, "n.bin"), {
        maxBytes: 10,
        signal: never(),
      }),
      (err: unknown) =>
        err instanceof PermanentError && err.message === `source s3://${stack.bucket}/io/nope.bin not found`,
    );
    const path = join(dir, "small.bin");
    await writeFile(path, "x");
    await assert.rejects(
      uploadFile(s3(), "no-such-bucket", "k", path, "text/plain", never()),
      (err: unknown) =>
        err instanceof PermanentError && /destination bucket no-such-bucket does not exist/.test(err.message),
    );
  });

  test("a PUT cut off without an answer asks about the bucket: a missing one is permanent", async () => {
    // What versitygw does to a PUT it refuses before reading the body: the answer is lost with the
    // connection. Here the connection is cut without one; HEAD on the bucket says what is wrong.
    let bucketStatus = 404;
    const server = createServer((req, res) => {
      if (req.method === "PUT") return req.socket.destroy();
      res.writeHead(bucketStatus).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    const client = new S3Client({
      endpoint: `http://127.0.0.1:${port}`,
      region: "us-east-1",
      forcePathStyle: true,
      credentials: { accessKeyId: "a", secretAccessKey: "b" },
      maxAttempts: 1,
    });
    try {
      const path = join(dir, "cut.bin");
      await writeFile(path, "x");
      await assert.rejects(
        uploadFile(client, "gone", "k", path, "text/plain", never()),
        (err: unknown) =>
          err instanceof PermanentError && err.message === "destination bucket gone does not exist",
      );
      // The bucket is there, or HEAD on it is not allowed: the broken connection stays transient.
      for (bucketStatus of [200, 403]) {
        await assert.rejects(
          uploadFile(client, "there", "k", path, "text/plain", never()),
          (err: unknown) => err instanceof Error && !(err instanceof PermanentError),
        );
      }
    } finally {
      client.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
