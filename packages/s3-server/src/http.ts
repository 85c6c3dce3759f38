// HTTP-level helpers shared by the operation handlers: header access, object attribute headers,
// Range parsing and conditional-request evaluation, with S3's semantics.

import type { IncomingMessage, OutgoingHttpHeaders } from "node:http";
import {
  invalidRange,
  metadataTooLarge,
  notImplemented,
  preconditionFailed,
  type S3Error,
} from "./errors.js";
import { etagMatches, type DeleteConditions, type ObjectAttributes, type ObjectMeta } from "./model.js";

export const DEFAULT_CONTENT_TYPE = "binary/octet-stream";

/** Representation headers stored with an object and returned on GET/HEAD. */
const STORED_HEADERS = [
  "cache-control",
  "content-disposition",
  "content-encoding",
  "content-language",
  "expires",
] as const;

const MAX_USER_METADATA_BYTES = 2048;

export function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

// Features a write can ask for that this server does not offer. Accepting the request would store
// the object unencrypted, or deletable, while the client believes otherwise: 501 instead.
const UNSUPPORTED_WRITE_HEADERS: Array<[prefix: string, feature: string]> = [
  ["x-amz-server-side-encryption-customer-", "Server-side encryption with customer-provided keys (SSE-C)"],
  ["x-amz-server-side-encryption", "Server-side encryption (SSE-S3, SSE-KMS)"],
  ["x-amz-object-lock-", "Object Lock"],
];

/** 501 NotImplemented for a write that asks for encryption or Object Lock (see above). */
export function refuseUnsupportedWriteFeatures(req: IncomingMessage): void {
  for (const name of Object.keys(req.headers)) {
    const refused = UNSUPPORTED_WRITE_HEADERS.find(([prefix]) => name.startsWith(prefix));
    if (refused) throw notImplemented(`${refused[1]} is not supported by this server (header ${name}).`);
  }
}

/**
 * A delete's preconditions from their raw values (a DeleteObject's headers, a DeleteObjects
 * entry's elements); `invalid` makes the error for a value that cannot be read.
 */
export function deleteConditions(
  raw: { ifMatch: string | undefined; lastModified: string | undefined; size: string | undefined },
  invalid: (field: "lastModified" | "size", value: string) => S3Error,
): DeleteConditions {
  const conditions: DeleteConditions = {};
  if (raw.ifMatch !== undefined) conditions.ifMatch = raw.ifMatch;
  if (raw.lastModified !== undefined) {
    const t = Date.parse(raw.lastModified);
    if (Number.isNaN(t)) throw invalid("lastModified", raw.lastModified);
    conditions.lastModified = t;
  }
  if (raw.size !== undefined) {
    if (!/^\d{1,16}$/.test(raw.size.trim())) throw invalid("size", raw.size);
    conditions.size = Number(raw.size.trim());
  }
  return conditions;
}

/** Content-Type, stored representation headers and x-amz-meta-* of a PUT / CreateMultipartUpload. */
export function objectAttributesFromRequest(req: IncomingMessage): ObjectAttributes {
  refuseUnsupportedWriteFeatures(req);
  const headers: Record<string, string> = {};
  for (const name of STORED_HEADERS) {
    let value = header(req, name);
    if (value === undefined) continue;
    if (name === "content-encoding") {
      // aws-chunked describes the transfer to us, not the stored object.
      value = value
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== "" && s.toLowerCase() !== "aws-chunked")
        .join(", ");
      if (value === "") continue;
    }
    headers[name] = value;
  }
  const userMetadata: Record<string, string> = {};
  let metadataBytes = 0;
  for (const [name, value] of Object.entries(req.headers)) {
    if (!name.startsWith("x-amz-meta-") || value === undefined) continue;
    const key = name.slice("x-amz-meta-".length);
    const text = Array.isArray(value) ? value.join(",") : value;
    userMetadata[key] = text;
    metadataBytes += Buffer.byteLength(key) + Buffer.byteLength(text);
  }
  if (metadataBytes > MAX_USER_METADATA_BYTES) throw metadataTooLarge();
  return { contentType: header(req, "content-type") || DEFAULT_CONTENT_TYPE, headers, userMetadata };
}

/** Headers describing an object on GET/HEAD (without length and range information). */
export function objectHeaders(meta: ObjectMeta): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {
    ETag: meta.etag,
    "Last-Modified": new Date(meta.lastModified).toUTCString(),
    "Content-Type": meta.contentType,
    "Accept-Ranges": "bytes",
  };
  for (const [name, value] of Object.entries(meta.headers)) headers[name] = value;
  for (const [name, value] of Object.entries(meta.userMetadata)) headers[`x-amz-meta-${name}`] = value;
  return headers;
}

export interface ByteRange {
  start: number;
  /** Inclusive. */
  end: number;
}

/**
 * Parse a Range header against an object size. Returns undefined when the header is absent or
 * not a single valid byte range (served as a full 200 response, per RFC 9110 and S3), and throws
 * InvalidRange (416) when the range is valid but unsatisfiable.
 */
export function parseRange(value: string | undefined, size: number): ByteRange | undefined {
  if (value === undefined) return undefined;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(value);
  if (!m) return undefined;
  const [, first, last] = m as unknown as [string, string, string];
  if (first === "" && last === "") return undefined;
  if (first === "") {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) throw invalidRange(size);
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  const end = last === "" ? size - 1 : Number(last);
  if (last !== "" && end < start) return undefined;
  if (start >= size) throw invalidRange(size);
  return { start, end: Math.min(end, size - 1) };
}

/** Whole seconds, as HTTP dates carry no finer precision. */
function seconds(ms: number): number {
  return Math.floor(ms / 1000);
}

/**
 * RFC 9110 / S3 conditional GET and HEAD: If-Match and If-Unmodified-Since fail with 412;
 * If-None-Match and If-Modified-Since yield "not modified" (the caller answers 304).
 */
export function checkReadConditions(
  get: (name: string) => string | undefined,
  meta: Pick<ObjectMeta, "etag" | "lastModified">,
  names = {
    ifMatch: "if-match",
    ifNoneMatch: "if-none-match",
    ifModifiedSince: "if-modified-since",
    ifUnmodifiedSince: "if-unmodified-since",
  },
): "ok" | "not-modified" {
  const modified = seconds(Date.parse(meta.lastModified));
  const ifMatch = get(names.ifMatch);
  if (ifMatch !== undefined) {
    if (!etagMatches(ifMatch, meta.etag)) throw preconditionFailed("If-Match");
  } else {
    const since = get(names.ifUnmodifiedSince);
    const t = since === undefined ? Number.NaN : Date.parse(since);
    if (!Number.isNaN(t) && modified > seconds(t)) throw preconditionFailed("If-Unmodified-Since");
  }
  const ifNoneMatch = get(names.ifNoneMatch);
  if (ifNoneMatch !== undefined) {
    if (etagMatches(ifNoneMatch, meta.etag)) return "not-modified";
  } else {
    const since = get(names.ifModifiedSince);
    const t = since === undefined ? Number.NaN : Date.parse(since);
    if (!Number.isNaN(t) && modified <= seconds(t)) return "not-modified";
  }
  return "ok";
}
