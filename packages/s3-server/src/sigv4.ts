// AWS Signature Version 4 verification for S3: the Authorization header form, presigned URLs
// (X-Amz-* query parameters) and the per-chunk / trailer signatures of
// STREAMING-AWS4-HMAC-SHA256-PAYLOAD bodies. The canonical request follows the AWS specification
// with S3's particularities: the path is URI-encoded exactly once (no double encoding, '/' kept),
// the query string is sorted by encoded name then value, and the signed headers are lower-cased with
// values trimmed and inner whitespace runs collapsed.
//
// The canonical request is rebuilt from the request as received: the raw path is split on '/',
// each segment percent-decoded and re-encoded canonically, so a client that encodes more or fewer
// characters on the wire than the canonical form (e.g. '!' or '~') still verifies.

import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import {
  AnonymousRequestDenied,
  accessDenied,
  authorizationHeaderMalformed,
  authorizationQueryParametersError,
  invalidAccessKeyId,
  invalidArgument,
  invalidRequest,
  invalidUri,
  requestTimeTooSkewed,
  signatureDoesNotMatch,
} from "./errors.js";

export const SIGV4_ALGORITHM = "AWS4-HMAC-SHA256";
export const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
export const UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";

/** Requests older or newer than this (by their signed timestamp) are refused, as S3 does. */
const MAX_CLOCK_SKEW_MS = 15 * 60 * 1000;
const MAX_PRESIGN_EXPIRES_S = 7 * 24 * 60 * 60;

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export interface SigV4Request {
  method: string;
  /** Request target path exactly as received (still percent-encoded). */
  rawPath: string;
  /** Query string as received, without the leading '?'. */
  rawQuery: string;
  /** Node's IncomingMessage.rawHeaders: [name, value, name, value, ...]. */
  rawHeaders: string[];
}

export interface AuthResult {
  accessKeyId: string;
  presigned: boolean;
  /** ISO 8601 basic timestamp the request was signed with (20240101T000000Z). */
  amzDate: string;
  /** Credential scope: <date>/<region>/<service>/aws4_request. */
  scope: string;
  signingKey: Buffer;
  /** The request signature; the first chunk of a signed streaming body chains from it. */
  seedSignature: string;
  /** The x-amz-content-sha256 value that was signed: a hex digest, UNSIGNED-PAYLOAD or STREAMING-*. */
  payloadHash: string;
}

const hex = (b: Buffer) => b.toString("hex");

export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

export function hmac(key: Uint8Array | string, data: string): Buffer {
  return createHmac("sha256", key).update(data, "utf8").digest();
}

/** URI-encode per the SigV4 rules: unreserved characters (A-Z a-z 0-9 - _ . ~) kept, all else %XX. */
export function uriEncode(value: string, keepSlash: boolean): string {
  const encoded = encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase(),
  );
  return keepSlash ? encoded.replace(/%2F/g, "/") : encoded;
}

/** Percent-decode a path component ('+' is a literal plus in paths). Throws InvalidURI on bad input. */
export function decodePathComponent(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw invalidUri();
  }
}

/** Percent-decode a query component; '+' means space there. */
function decodeQueryComponent(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, " "));
  } catch {
    throw invalidUri();
  }
}

/** Decoded query parameters in request order (a name without '=' has the value ""). */
export function parseQuery(rawQuery: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const part of rawQuery.split("&")) {
    if (part === "") continue;
    const eq = part.indexOf("=");
    const name = eq < 0 ? part : part.slice(0, eq);
    const value = eq < 0 ? "" : part.slice(eq + 1);
    out.push([decodeQueryComponent(name), decodeQueryComponent(value)]);
  }
  return out;
}

export function canonicalUri(rawPath: string): string {
  return rawPath
    .split("/")
    .map((segment) => uriEncode(decodePathComponent(segment), false))
    .join("/");
}

export function canonicalQuery(params: Array<[string, string]>, exclude?: string): string {
  return params
    .filter(([name]) => name !== exclude)
    .map(([name, value]) => [uriEncode(name, false), uriEncode(value, false)] as const)
    .sort(([an, av], [bn, bv]) => (an < bn ? -1 : an > bn ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join("&");
}

/** Header values by lower-cased name, taken from rawHeaders so repeated headers are all kept. */
export function headerValues(rawHeaders: string[]): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    const list = map.get(name);
    if (list) list.push(rawHeaders[i + 1]!);
    else map.set(name, [rawHeaders[i + 1]!]);
  }
  return map;
}

function canonicalHeaders(headers: Map<string, string[]>, signedHeaders: string[]): string {
  return signedHeaders
    .map((name) => {
      const values = headers.get(name) ?? [];
      return `${name}:${values.map((v) => v.trim().replace(/\s+/g, " ")).join(",")}\n`;
    })
    .join("");
}

const signingKeyCache = new Map<string, Buffer>();

export function deriveSigningKey(secret: string, date: string, region: string, service: string): Buffer {
  const cacheKey = `${date}/${region}/${service}/${sha256Hex(secret)}`;
  const cached = signingKeyCache.get(cacheKey);
  if (cached) return cached;
  const kDate = hmac("AWS4" + secret, date);
  const kRegion = hmac(kDate, region);
  const kService = hmac(kRegion, service);
  const key = hmac(kService, "aws4_request");
  if (signingKeyCache.size > 64) signingKeyCache.clear();
  signingKeyCache.set(cacheKey, key);
  return key;
}

/** Constant-time comparison of two hex signatures. */
export function signaturesEqual(expected: string, provided: string): boolean {
  const a = Buffer.from(expected, "utf8");
  const b = Buffer.from(provided.toLowerCase(), "utf8");
  if (a.length !== b.length) {
    timingSafeEqual(a, a);
    return false;
  }
  return timingSafeEqual(a, b);
}

function parseAmzDate(value: string): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!m) return undefined;
  const t = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
  return Number.isNaN(t) ? undefined : t;
}

function toAmzDate(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}/, "");
}

interface ParsedCredential {
  accessKeyId: string;
  date: string;
  region: string;
  service: string;
  scope: string;
}

function parseCredential(value: string, malformed: (message: string) => Error): ParsedCredential {
  const parts = value.split("/");
  if (parts.length < 5)
    throw malformed(`Credential is malformed: expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".`);
  const [date, region, service, terminator] = parts.slice(-4) as [string, string, string, string];
  const accessKeyId = parts.slice(0, -4).join("/");
  if (!/^\d{8}$/.test(date))
    throw malformed(`Invalid credential date "${date}". This date is not the same as X-Amz-Date.`);
  if (service !== "s3")
    throw malformed(
      `The authorization header is malformed; incorrect service "${service}". This endpoint belongs to "s3".`,
    );
  if (terminator !== "aws4_request")
    throw malformed(
      `The authorization header is malformed; incorrect terminal "${terminator}". This endpoint uses "aws4_request".`,
    );
  if (region === "") throw malformed("The authorization header is malformed; the region is empty.");
  return { accessKeyId, date, region, service, scope: `${date}/${region}/${service}/aws4_request` };
}

function parseSignedHeaders(value: string, malformed: (message: string) => Error): string[] {
  const names = value.split(";").map((n) => n.trim().toLowerCase());
  if (names.some((n) => n === "")) throw malformed("SignedHeaders is malformed.");
  if (!names.includes("host")) throw accessDenied("Host header must be signed.");
  return names;
}

interface VerifyInput {
  req: SigV4Request;
  headers: Map<string, string[]>;
  query: Array<[string, string]>;
  credential: ParsedCredential;
  signedHeaders: string[];
  amzDate: string;
  payloadHash: string;
  signature: string;
  presigned: boolean;
}

function verifySignature(input: VerifyInput, creds: Credentials): AuthResult {
  const { req, credential } = input;
  if (credential.accessKeyId !== creds.accessKeyId) throw invalidAccessKeyId(credential.accessKeyId);
  const canonicalRequest = [
    req.method.toUpperCase(),
    canonicalUri(req.rawPath),
    canonicalQuery(input.query, input.presigned ? "X-Amz-Signature" : undefined),
    canonicalHeaders(input.headers, input.signedHeaders),
    input.signedHeaders.join(";"),
    input.payloadHash,
  ].join("\n");
  // Node gives header values as one character per byte received (latin1); hashed the same way, the
  // canonical request is the bytes the client signed, UTF-8 metadata included. The rest of it is
  // ASCII (the path and query are re-encoded).
  const stringToSign = [
    SIGV4_ALGORITHM,
    input.amzDate,
    credential.scope,
    sha256Hex(Buffer.from(canonicalRequest, "latin1")),
  ].join("\n");
  const signingKey = deriveSigningKey(
    creds.secretAccessKey,
    credential.date,
    credential.region,
    credential.service,
  );
  const expected = hex(hmac(signingKey, stringToSign));
  if (!signaturesEqual(expected, input.signature)) {
    throw signatureDoesNotMatch({
      AWSAccessKeyId: credential.accessKeyId,
      StringToSign: stringToSign,
      SignatureProvided: input.signature,
      CanonicalRequest: canonicalRequest,
    });
  }
  return {
    accessKeyId: credential.accessKeyId,
    presigned: input.presigned,
    amzDate: input.amzDate,
    scope: credential.scope,
    signingKey,
    seedSignature: expected,
    payloadHash: input.payloadHash,
  };
}

function checkPayloadHashFormat(value: string): void {
  if (/^[0-9a-fA-F]{64}$/.test(value) || value === UNSIGNED_PAYLOAD || value.startsWith("STREAMING-")) return;
  throw invalidArgument(
    "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid sha256 value.",
    { ArgumentName: "x-amz-content-sha256", ArgumentValue: value },
  );
}

/**
 * Authenticate a request signed with SigV4, either in the Authorization header or as a presigned
 * URL. Throws the S3Error the client must see (AccessDenied for anonymous requests,
 * InvalidAccessKeyId, SignatureDoesNotMatch, RequestTimeTooSkewed, expired presigned URL, ...).
 */
export function authenticate(req: SigV4Request, creds: Credentials, now = Date.now()): AuthResult {
  const headers = headerValues(req.rawHeaders);
  const query = parseQuery(req.rawQuery);
  const authorization = headers.get("authorization")?.[0];
  const queryParam = (name: string) => query.find(([n]) => n === name)?.[1];
  const presigned =
    queryParam("X-Amz-Algorithm") !== undefined || queryParam("X-Amz-Signature") !== undefined;

  if (authorization !== undefined && presigned) {
    throw invalidArgument(
      "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter or the Authorization header should be specified",
    );
  }
  if (authorization === undefined && !presigned) {
    if (queryParam("AWSAccessKeyId") !== undefined && queryParam("Signature") !== undefined) {
      throw invalidRequest(
        "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.",
      );
    }
    throw new AnonymousRequestDenied();
  }

  if (presigned) {
    const malformed = authorizationQueryParametersError;
    const algorithm = queryParam("X-Amz-Algorithm");
    if (algorithm !== SIGV4_ALGORITHM) throw malformed('X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"');
    const credentialRaw = queryParam("X-Amz-Credential");
    const amzDate = queryParam("X-Amz-Date");
    const expiresRaw = queryParam("X-Amz-Expires");
    const signedHeadersRaw = queryParam("X-Amz-SignedHeaders");
    const signature = queryParam("X-Amz-Signature");
    if (!credentialRaw || !amzDate || !expiresRaw || !signedHeadersRaw || !signature) {
      throw malformed(
        "Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.",
      );
    }
    const credential = parseCredential(credentialRaw, malformed);
    const signedAt = parseAmzDate(amzDate);
    if (signedAt === undefined)
      throw malformed("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"");
    if (credential.date !== amzDate.slice(0, 8))
      throw malformed("Invalid credential date. Date is not the same as X-Amz-Date.");
    if (/^-\d+$/.test(expiresRaw)) throw malformed("X-Amz-Expires must be non-negative");
    if (!/^\d+$/.test(expiresRaw)) throw malformed("X-Amz-Expires should be a number");
    // 0 is a valid value (as on S3): the URL has expired by the time it is used (403 below).
    const expires = Number(expiresRaw);
    if (expires > MAX_PRESIGN_EXPIRES_S)
      throw malformed("X-Amz-Expires must be less than a week (in seconds) that is 604800");
    const signedHeaders = parseSignedHeaders(signedHeadersRaw, malformed);
    const payloadHash = queryParam("X-Amz-Content-Sha256") ?? UNSIGNED_PAYLOAD;
    checkPayloadHashFormat(payloadHash);
    const result = verifySignature(
      { req, headers, query, credential, signedHeaders, amzDate, payloadHash, signature, presigned: true },
      creds,
    );
    if (now < signedAt - MAX_CLOCK_SKEW_MS) throw accessDenied("Request is not valid yet");
    if (now > signedAt + expires * 1000) throw accessDenied("Request has expired");
    return result;
  }

  const malformed = authorizationHeaderMalformed;
  const auth = authorization!.trim();
  const space = auth.indexOf(" ");
  const scheme = space < 0 ? auth : auth.slice(0, space);
  if (scheme !== SIGV4_ALGORITHM) {
    throw invalidRequest(
      "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.",
    );
  }
  const fields = new Map<string, string>();
  for (const part of auth.slice(space + 1).split(",")) {
    const eq = part.indexOf("=");
    if (eq > 0) fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const credentialRaw = fields.get("Credential");
  const signedHeadersRaw = fields.get("SignedHeaders");
  const signature = fields.get("Signature");
  if (!credentialRaw || !signedHeadersRaw || !signature) {
    throw malformed(
      "The authorization header is malformed; the Credential, SignedHeaders and Signature fields are required.",
    );
  }
  const credential = parseCredential(credentialRaw, malformed);
  // x-amz-date takes precedence; a plain Date header is the documented alternative.
  const amzDateHeader = headers.get("x-amz-date")?.[0]?.trim();
  let signedAt: number | undefined;
  let amzDate: string;
  if (amzDateHeader !== undefined) {
    signedAt = parseAmzDate(amzDateHeader);
    amzDate = amzDateHeader;
  } else {
    const dateHeader = headers.get("date")?.[0];
    const parsed = dateHeader === undefined ? Number.NaN : Date.parse(dateHeader);
    signedAt = Number.isNaN(parsed) ? undefined : parsed;
    amzDate = signedAt === undefined ? "" : toAmzDate(signedAt);
  }
  if (signedAt === undefined)
    throw accessDenied("AWS authentication requires a valid Date or x-amz-date header");
  if (credential.date !== amzDate.slice(0, 8)) {
    throw malformed(
      `The authorization header is malformed; Invalid credential date. Date is not the same as X-Amz-Date.`,
    );
  }
  const signedHeaders = parseSignedHeaders(signedHeadersRaw, malformed);
  const payloadHash = headers.get("x-amz-content-sha256")?.[0]?.trim();
  if (payloadHash === undefined)
    throw invalidRequest("Missing required header for this request: x-amz-content-sha256");
  checkPayloadHashFormat(payloadHash);
  const result = verifySignature(
    { req, headers, query, credential, signedHeaders, amzDate, payloadHash, signature, presigned: false },
    creds,
  );
  if (Math.abs(now - signedAt) > MAX_CLOCK_SKEW_MS) throw requestTimeTooSkewed();
  return result;
}

/** Expected signature of one chunk of a STREAMING-AWS4-HMAC-SHA256-PAYLOAD body. */
export function chunkSignature(
  auth: Pick<AuthResult, "amzDate" | "scope" | "signingKey">,
  previousSignature: string,
  chunkSha256Hex: string,
): string {
  const stringToSign = [
    "AWS4-HMAC-SHA256-PAYLOAD",
    auth.amzDate,
    auth.scope,
    previousSignature,
    EMPTY_SHA256,
    chunkSha256Hex,
  ].join("\n");
  return hex(hmac(auth.signingKey, stringToSign));
}

/** Expected x-amz-trailer-signature of a STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER body. */
export function trailerSignature(
  auth: Pick<AuthResult, "amzDate" | "scope" | "signingKey">,
  previousSignature: string,
  trailerSha256Hex: string,
): string {
  const stringToSign = [
    "AWS4-HMAC-SHA256-TRAILER",
    auth.amzDate,
    auth.scope,
    previousSignature,
    trailerSha256Hex,
  ].join("\n");
  return hex(hmac(auth.signingKey, stringToSign));
}
