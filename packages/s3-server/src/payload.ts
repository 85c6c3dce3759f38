// Request body intake: decodes the body according to x-amz-content-sha256 (plain, aws-chunked
// unsigned with trailers, aws-chunked with chunk signatures), streams the object bytes into a sink
// while computing MD5 (for the ETag) and whichever integrity values the client asserted, and
// verifies them all once the body is complete: the payload SHA-256, Content-MD5, the
// x-amz-checksum-* header or trailer and x-amz-decoded-content-length. The caller commits nothing
// until this resolves, so a body that fails any check never becomes an object.

import { createHash, type Hash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { Readable, Transform, Writable, type TransformCallback } from "node:stream";
import { pipeline } from "node:stream/promises";
import { AwsChunkedDecoder } from "./chunked.js";
import {
  CHECKSUM_ALGORITHMS,
  algorithmLabel,
  createChecksummer,
  isValidChecksumValue,
  parseChecksumAlgorithm,
  type ChecksumAlgorithm,
  type Checksummer,
} from "./checksum.js";
import {
  badDigest,
  contentSha256Mismatch,
  incompleteBody,
  invalidDigest,
  invalidRequest,
  notImplemented,
  missingContentLength,
} from "./errors.js";
import type { S3Error } from "./errors.js";
import { UNSIGNED_PAYLOAD, chunkSignature, trailerSignature, type AuthResult } from "./sigv4.js";

export interface PayloadOptions {
  auth: AuthResult;
  /** Largest acceptable decoded body. */
  maxSize: number;
  /** Error to report when the body exceeds maxSize. */
  tooLarge: () => S3Error;
  /** Compute this checksum even if the client sent none (multipart uploads created with one). */
  defaultChecksum?: ChecksumAlgorithm;
  /**
   * The x-amz-checksum-* and x-amz-sdk-checksum-algorithm headers describe the object the request
   * makes, not its body (CompleteMultipartUpload): the body is not checked against them.
   */
  checksumHeadersDescribeObject?: boolean;
}

export interface PayloadResult {
  size: number;
  md5: Buffer;
  /** The checksum the client asserted (verified) or that defaultChecksum asked for, base64. */
  checksum?: { algorithm: ChecksumAlgorithm; value: string };
}

type Mode = { kind: "plain"; sha256?: string } | { kind: "chunked"; signed: boolean; signedTrailer: boolean };

function payloadMode(auth: AuthResult): Mode {
  const value = auth.payloadHash;
  if (value === UNSIGNED_PAYLOAD) return { kind: "plain" };
  if (/^[0-9a-fA-F]{64}$/.test(value)) return { kind: "plain", sha256: value.toLowerCase() };
  switch (value) {
    case "STREAMING-UNSIGNED-PAYLOAD-TRAILER":
      return { kind: "chunked", signed: false, signedTrailer: false };
    case "STREAMING-AWS4-HMAC-SHA256-PAYLOAD":
      return { kind: "chunked", signed: true, signedTrailer: false };
    case "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER":
      return { kind: "chunked", signed: true, signedTrailer: true };
    default:
      throw notImplemented(`x-amz-content-sha256 "${value}" is not supported by this server.`);
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(",") : v;
}

interface ChecksumExpectation {
  algorithm: ChecksumAlgorithm;
  /** Value from the x-amz-checksum-* header; undefined when it comes in a trailer or not at all. */
  headerValue?: string;
  /** Name of the trailing header that carries the value. */
  trailer?: string;
}

function checksumExpectation(
  req: IncomingMessage,
  mode: Mode,
  fallback?: ChecksumAlgorithm,
  headersDescribeObject = false,
): ChecksumExpectation | undefined {
  const fromHeaders = CHECKSUM_ALGORITHMS.flatMap((algorithm) => {
    if (headersDescribeObject) return [];
    const value = header(req, `x-amz-checksum-${algorithm}`);
    return value === undefined ? [] : [{ algorithm, headerValue: value.trim() }];
  });
  if (fromHeaders.length > 1) {
    throw invalidRequest(
      "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.",
    );
  }
  const trailerNames = (header(req, "x-amz-trailer") ?? "")
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== "");
  const trailerChecksums = trailerNames.filter((n) => n.startsWith("x-amz-checksum-"));
  if (trailerChecksums.length > 0 && mode.kind !== "chunked") {
    throw invalidRequest("x-amz-trailer requires a STREAMING-*-TRAILER x-amz-content-sha256");
  }
  if (trailerChecksums.length + fromHeaders.length > 1) {
    throw invalidRequest(
      "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.",
    );
  }
  const sdkRaw = headersDescribeObject ? undefined : header(req, "x-amz-sdk-checksum-algorithm");
  const sdkAlgorithm = sdkRaw === undefined ? undefined : parseChecksumAlgorithm(sdkRaw);
  if (sdkRaw !== undefined && !sdkAlgorithm) {
    throw invalidRequest("Value for x-amz-sdk-checksum-algorithm header is invalid.");
  }

  const fromHeader = fromHeaders[0];
  if (fromHeader) {
    if (!isValidChecksumValue(fromHeader.algorithm, fromHeader.headerValue)) {
      throw invalidRequest(`Value for x-amz-checksum-${fromHeader.algorithm} header is invalid.`);
    }
    return fromHeader;
  }
  const trailer = trailerChecksums[0];
  if (trailer !== undefined) {
    const algorithm = parseChecksumAlgorithm(trailer.slice("x-amz-checksum-".length));
    if (!algorithm) throw invalidRequest(`The value specified in the x-amz-trailer header is not supported`);
    return { algorithm, trailer };
  }
  const algorithm = sdkAlgorithm ?? fallback;
  return algorithm ? { algorithm } : undefined;
}

/** Pass-through stream that counts and hashes the decoded object bytes. */
class Digester extends Transform {
  size = 0;
  readonly md5 = createHash("md5");
  readonly sha256: Hash | undefined;
  readonly checksum: Checksummer | undefined;

  constructor(
    private readonly maxSize: number,
    private readonly tooLarge: () => S3Error,
    wantSha256: boolean,
    checksumAlgorithm: ChecksumAlgorithm | undefined,
  ) {
    super();
    this.sha256 = wantSha256 ? createHash("sha256") : undefined;
    this.checksum = checksumAlgorithm ? createChecksummer(checksumAlgorithm) : undefined;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.maxSize) {
      callback(this.tooLarge());
      return;
    }
    this.md5.update(chunk);
    this.sha256?.update(chunk);
    this.checksum?.update(chunk);
    callback(null, chunk);
  }
}

function parseLength(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,16}$/.test(value.trim())) throw invalidRequest(`Invalid ${name} header`);
  return Number(value.trim());
}

/**
 * Stream the request body into `sink`, verifying every integrity assertion of the request.
 * Resolves once the sink has finished and all checks passed; rejects with an S3Error on a failed
 * check, or with the stream error when the client went away mid-body. The request stream itself is
 * never destroyed here, so the caller can still send an error response.
 */
export async function receivePayload(
  req: IncomingMessage,
  sink: Writable,
  options: PayloadOptions,
): Promise<PayloadResult> {
  const mode = payloadMode(options.auth);
  const expectation = checksumExpectation(
    req,
    mode,
    options.defaultChecksum,
    options.checksumHeadersDescribeObject,
  );

  const contentMd5 = header(req, "content-md5");
  let expectedMd5: Buffer | undefined;
  if (contentMd5 !== undefined) {
    expectedMd5 = Buffer.from(contentMd5.trim(), "base64");
    if (expectedMd5.length !== 16 || !/^[A-Za-z0-9+/]+={0,2}$/.test(contentMd5.trim())) throw invalidDigest();
  }

  const decodedLength =
    mode.kind === "chunked"
      ? parseLength(header(req, "x-amz-decoded-content-length"), "x-amz-decoded-content-length")
      : undefined;
  const contentLength = parseLength(header(req, "content-length"), "Content-Length");
  const declared = mode.kind === "chunked" ? decodedLength : contentLength;
  if (declared !== undefined && declared > options.maxSize) throw options.tooLarge();

  const auth = options.auth;
  const decoder =
    mode.kind === "chunked"
      ? new AwsChunkedDecoder({
          signedTrailer: mode.signedTrailer,
          ...(mode.signed
            ? {
                signing: {
                  seedSignature: auth.seedSignature,
                  chunk: (previous, hash) => chunkSignature(auth, previous, hash),
                  trailer: (previous, hash) => trailerSignature(auth, previous, hash),
                },
              }
            : {}),
        })
      : undefined;
  const digester = new Digester(
    options.maxSize,
    options.tooLarge,
    mode.kind === "plain" && mode.sha256 !== undefined,
    expectation?.algorithm,
  );

  // Iterating with destroyOnReturn: false keeps the request (and its socket) alive when a later
  // stage fails, so an error response can still be written.
  const source = Readable.from(req.iterator({ destroyOnReturn: false }), { objectMode: false });
  if (decoder) await pipeline(source, decoder, digester, sink);
  else await pipeline(source, digester, sink);

  // Node reports a connection lost mid-body as a stream error; these checks make sure a short
  // body can never pass as complete, whatever the payload signing mode.
  if (!req.complete) throw incompleteBody();
  if (!decoder && contentLength !== undefined && digester.size !== contentLength) throw incompleteBody();
  if (decoder && decodedLength !== undefined && decoder.decodedLength !== decodedLength) {
    throw incompleteBody("The decoded length of the body does not match x-amz-decoded-content-length");
  }
  if (mode.kind === "plain" && mode.sha256 !== undefined) {
    const computed = digester.sha256!.digest("hex");
    if (computed !== mode.sha256) throw contentSha256Mismatch(mode.sha256, computed);
  }
  const md5 = digester.md5.digest();
  if (expectedMd5 && !expectedMd5.equals(md5)) throw badDigest();

  let checksum: PayloadResult["checksum"];
  if (expectation) {
    const computed = digester.checksum!.digest().toString("base64");
    let asserted = expectation.headerValue;
    if (expectation.trailer !== undefined) {
      asserted = decoder?.trailers.get(expectation.trailer);
      if (asserted === undefined)
        throw invalidRequest(`The trailing header ${expectation.trailer} was declared but not sent.`);
      if (!isValidChecksumValue(expectation.algorithm, asserted)) {
        throw invalidRequest(`Value for ${expectation.trailer} trailing header is invalid.`);
      }
    }
    if (asserted !== undefined && asserted !== computed) {
      throw badDigest(
        `The ${algorithmLabel(expectation.algorithm)} you specified did not match the calculated checksum.`,
      );
    }
    checksum = { algorithm: expectation.algorithm, value: computed };
  }
  return { size: digester.size, md5, ...(checksum ? { checksum } : {}) };
}

/** Collects a (small) body in memory. */
class Collector extends Writable {
  readonly chunks: Buffer[] = [];
  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.chunks.push(chunk);
    callback();
  }
}

/**
 * Object data must say how long it is: a request with neither Content-Length nor Transfer-Encoding
 * has no body at all in HTTP/1.1, and storing it as an empty object would lose what the client
 * meant to send (S3 answers 411 as well).
 */
export function requireBodyLength(req: IncomingMessage): void {
  if (req.headers["content-length"] === undefined && req.headers["transfer-encoding"] === undefined)
    throw missingContentLength();
}

/** Read a small request body (XML documents) with the same integrity checks as object data. */
export async function readPayload(
  req: IncomingMessage,
  options: PayloadOptions,
): Promise<{ body: Buffer; result: PayloadResult }> {
  const collector = new Collector();
  const result = await receivePayload(req, collector, options);
  return { body: Buffer.concat(collector.chunks), result };
}
