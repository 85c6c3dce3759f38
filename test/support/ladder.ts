// video_adaptive's processor on a real store: the embedded S3 server in this process, with its own
// log of every request kept (what was written, in what order), and what a ladder holds read back.
import { execFile } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { promisify } from "node:util";
import { GetObjectCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { startEmbeddedS3, type EmbeddedS3 } from "@media-service/s3-server";
import { pino } from "pino";
import { objectWriter } from "../../runner/object-io.js";
import type { Logger } from "../../core/logger.js";
const TEST_ACCESS_KEY = "ladder-access-key";
const TEST_SECRET_KEY = "ladder-secret-key";

export interface StoreRequest {
  method: string;
  path: string;
  operation: string;
  status: number;
}

export interface LadderStore {
  server: EmbeddedS3;
  s3: S3Client;
  bucket: string;
  /** Every request the store answered, in the order it finished answering them. */
  requests: StoreRequest[];
  /** Called with each request as the store logs it. */
  onRequest?: (request: StoreRequest) => void;
  writer: ReturnType<typeof objectWriter>;
  /** The keys under a prefix, sorted. */
  list(prefix: string): Promise<string[]>;
  text(key: string): Promise<string>;
  bytes(key: string): Promise<Buffer>;
  close(): Promise<void>;
}

export async function startLadderStore(bucket = "ladders"): Promise<LadderStore> {
  const dataDir = await mkdtemp(join(tmpdir(), "ladder-s3-"));
  const requests: StoreRequest[] = [];
  const store = {} as LadderStore;
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split("\n")) {
        if (!line) continue;
        const entry = JSON.parse(line) as Partial<StoreRequest> & { msg?: string };
        if (entry.msg?.startsWith("embedded-s3 request") && entry.method) {
          const request = entry as StoreRequest;
          requests.push(request);
          store.onRequest?.(request);
        }
      }
      done();
    },
  });
  const logger = pino({ level: "debug" }, sink) as unknown as Logger;
  const server = await startEmbeddedS3({
    port: 0,
    dataDir,
    accessKeyId: TEST_ACCESS_KEY,
    secretAccessKey: TEST_SECRET_KEY,
    buckets: [bucket],
    logger,
  });
  const s3 = new S3Client({
    endpoint: server.url,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: TEST_ACCESS_KEY, secretAccessKey: TEST_SECRET_KEY },
  });
  const bytes = async (key: string) => {
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return Buffer.from(await got.Body!.transformToByteArray());
  };
  return Object.assign(store, {
    server,
    s3,
    bucket,
    requests,
    writer: objectWriter(s3),
    list: async (prefix: string) => {
      const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
      return (listed.Contents ?? []).map((o) => o.Key!).sort();
    },
    text: async (key: string) => (await bytes(key)).toString("utf8"),
    bytes,
    close: async () => {
      s3.destroy();
      await server.close();
    },
  });
}

/** The presentation times (s, to the millisecond) of a file's key video packets, in order. */
export async function keyframeTimesOf(file: string): Promise<number[]> {
  const { stdout } = await promisify(execFile)("ffprobe", [
    ...["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,flags"],
    ...["-of", "csv=p=0", file],
  ]);
  return stdout
    .split("\n")
    .map((line) => line.split(","))
    .filter(([, flags]) => flags?.startsWith("K"))
    .map(([time]) => Math.round(Number(time) * 1000) / 1000)
    .sort((a, b) => a - b);
}
