// Object operations: PutObject, GetObject / HeadObject, DeleteObject and CopyObject.

import type { OutgoingHttpHeaders } from "node:http";
import { MAX_OBJECT_SIZE, sendEmpty, sendXml, type RequestContext } from "./context.js";
import {
  S3Error,
  entityTooLarge,
  invalidArgument,
  invalidBucketName,
  invalidRequest,
  noSuchVersion,
  preconditionFailed,
} from "./errors.js";
import {
  checkReadConditions,
  deleteConditions,
  header,
  objectAttributesFromRequest,
  refuseUnsupportedWriteFeatures,
  objectHeaders,
  parseRange,
  type ByteRange,
} from "./http.js";
import { receivePayload, requireBodyLength, type PayloadResult } from "./payload.js";
import type { TempFile } from "./record.js";
import type { ChecksumAlgorithm } from "./checksum.js";
import { sendFileRange } from "./send-file.js";
import { decodePathComponent } from "./sigv4.js";
import { isValidBucketName, type ObjectMeta, type StoredChecksum, type WriteConditions } from "./model.js";
import { renderCopyObjectResult, renderObjectAttributes } from "./xml.js";

/** GetObject query parameters that override response headers. */
const RESPONSE_OVERRIDES: Record<string, string> = {
  "response-content-type": "Content-Type",
  "response-content-language": "Content-Language",
  "response-expires": "Expires",
  "response-cache-control": "Cache-Control",
  "response-content-disposition": "Content-Disposition",
  "response-content-encoding": "Content-Encoding",
};

export function writeConditions(ctx: RequestContext): WriteConditions {
  const ifMatch = header(ctx.req, "if-match");
  const ifNoneMatch = header(ctx.req, "if-none-match");
  if (ifNoneMatch !== undefined && ifNoneMatch.trim() !== "*") {
    throw new S3Error(
      "NotImplemented",
      501,
      "A header you provided implies functionality that is not implemented",
      { Header: "If-None-Match" },
    );
  }
  return {
    ...(ifMatch !== undefined ? { ifMatch } : {}),
    ...(ifNoneMatch !== undefined ? { ifNoneMatch } : {}),
  };
}

export function checksumHeaders(
  checksum: { algorithm: string; value: string; type?: string } | undefined,
): OutgoingHttpHeaders {
  if (!checksum) return {};
  return {
    [`x-amz-checksum-${checksum.algorithm}`]: checksum.value,
    ...(checksum.type ? { "x-amz-checksum-type": checksum.type } : {}),
  };
}

export async function putObject(ctx: RequestContext): Promise<void> {
  await ctx.storage.requireBucket(ctx.bucket);
  const attributes = objectAttributesFromRequest(ctx.req);
  const conditions = writeConditions(ctx);
  await receiveBody(ctx, undefined, async (temp, result) => {
    const checksum: StoredChecksum | undefined = result.checksum && {
      ...result.checksum,
      type: "FULL_OBJECT",
    };
    const meta = await ctx.storage.commitObject(
      ctx.bucket,
      ctx.key,
      temp,
      {
        ...attributes,
        size: result.size,
        etag: `"${result.md5.toString("hex")}"`,
        ...(checksum ? { checksum } : {}),
      },
      conditions,
    );
    sendEmpty(ctx, 200, { ETag: meta.etag, ...checksumHeaders(meta.checksum) });
  });
}

/**
 * Receives a PUT's or a part's body into a temporary file (verifying its signature, size and
 * checksum), hands it to `commit`, and discards whatever commit did not keep.
 */
export async function receiveBody(
  ctx: RequestContext,
  defaultChecksum: ChecksumAlgorithm | undefined,
  commit: (temp: TempFile, result: PayloadResult) => Promise<void>,
): Promise<void> {
  requireBodyLength(ctx.req);
  ctx.beginBody();
  const temp = await ctx.storage.createTemp();
  try {
    const result = await receivePayload(ctx.req, temp.stream, {
      auth: ctx.auth,
      maxSize: MAX_OBJECT_SIZE,
      tooLarge: () => entityTooLarge(MAX_OBJECT_SIZE),
      ...(defaultChecksum ? { defaultChecksum } : {}),
    });
    await commit(temp, result);
  } finally {
    await temp.discard();
  }
}

/** The byte range of part `partNumber` of an object (S3's GetObject?partNumber). */
function partRange(meta: ObjectMeta, partNumber: number): ByteRange {
  const sizes = meta.partSizes ?? [meta.size];
  if (partNumber > sizes.length) {
    throw new S3Error("InvalidPartNumber", 416, "The requested partnumber is not satisfiable", {
      PartNumberRequested: String(partNumber),
    });
  }
  const start = sizes.slice(0, partNumber - 1).reduce((a, b) => a + b, 0);
  return { start, end: start + sizes[partNumber - 1]! - 1 };
}

/** GetObject and HeadObject. */
export async function getObject(ctx: RequestContext): Promise<void> {
  const head = ctx.req.method === "HEAD";
  const partNumberRaw = ctx.query.get("partNumber");
  let partNumber: number | undefined;
  if (partNumberRaw !== undefined) {
    if (!/^\d+$/.test(partNumberRaw) || Number(partNumberRaw) < 1 || Number(partNumberRaw) > 10000) {
      throw invalidArgument("Part number must be an integer between 1 and 10000, inclusive", {
        ArgumentName: "partNumber",
        ArgumentValue: partNumberRaw,
      });
    }
    partNumber = Number(partNumberRaw);
    if (header(ctx.req, "range") !== undefined)
      throw invalidRequest("Cannot specify both Range header and partNumber query parameter");
  }
  const versionId = ctx.query.get("versionId");
  if (versionId !== undefined && versionId !== "null") throw noSuchVersion(versionId);

  const { meta, handle } = head
    ? { meta: await ctx.storage.headObject(ctx.bucket, ctx.key), handle: undefined }
    : await ctx.storage.openObject(ctx.bucket, ctx.key);
  try {
    const headers = objectHeaders(meta);
    if (checkReadConditions((name) => header(ctx.req, name), meta) === "not-modified") {
      ctx.res.writeHead(304, { ETag: meta.etag, "Last-Modified": headers["Last-Modified"] });
      ctx.res.end();
      return;
    }
    let range: ByteRange | undefined;
    if (partNumber !== undefined) {
      range = meta.size === 0 ? undefined : partRange(meta, partNumber);
      headers["x-amz-mp-parts-count"] = String(meta.partSizes?.length ?? 1);
    } else {
      range = parseRange(header(ctx.req, "range"), meta.size);
    }
    for (const [param, name] of Object.entries(RESPONSE_OVERRIDES)) {
      const value = ctx.query.get(param);
      if (value !== undefined) headers[name] = value;
    }
    // Full-object checksums only describe complete responses (S3 sends none for ranges); a part
    // is described by its own checksum (part 1 of a single-part object is the whole object).
    const whole = !range || (range.start === 0 && range.end === meta.size - 1 && partNumber === undefined);
    if (meta.checksum && header(ctx.req, "x-amz-checksum-mode")?.toUpperCase() === "ENABLED") {
      if (partNumber !== undefined) {
        const value = meta.partSizes ? meta.partChecksums?.[partNumber - 1] : meta.checksum.value;
        if (value !== undefined) Object.assign(headers, checksumHeaders({ ...meta.checksum, value }));
      } else if (whole) {
        Object.assign(headers, checksumHeaders(meta.checksum));
      }
    }
    let status = 200;
    let length = meta.size;
    if (range) {
      status = 206;
      length = range.end - range.start + 1;
      headers["Content-Range"] = `bytes ${range.start}-${range.end}/${meta.size}`;
    }
    headers["Content-Length"] = length;
    ctx.res.writeHead(status, headers);
    if (head || !handle || length === 0) {
      ctx.res.end();
      return;
    }
    await sendFileRange(handle, range?.start ?? 0, range?.end ?? meta.size - 1, ctx.res);
  } finally {
    await handle?.close();
  }
}

/** The headers of a DeleteObject's preconditions besides If-Match. */
const DELETE_CONDITION_HEADERS = {
  lastModified: "x-amz-if-match-last-modified-time",
  size: "x-amz-if-match-size",
} as const;

export async function deleteObject(ctx: RequestContext): Promise<void> {
  const versionId = ctx.query.get("versionId");
  if (versionId !== undefined && versionId !== "null") throw noSuchVersion(versionId);
  const conditions = deleteConditions(
    {
      ifMatch: header(ctx.req, "if-match"),
      lastModified: header(ctx.req, DELETE_CONDITION_HEADERS.lastModified),
      size: header(ctx.req, DELETE_CONDITION_HEADERS.size),
    },
    (field, value) =>
      invalidArgument(`Invalid ${DELETE_CONDITION_HEADERS[field]}`, {
        ArgumentName: DELETE_CONDITION_HEADERS[field],
        ArgumentValue: value,
      }),
  );
  await ctx.storage.deleteObject(ctx.bucket, ctx.key, conditions);
  ctx.res.writeHead(204);
  ctx.res.end();
}

export interface CopySource {
  bucket: string;
  key: string;
}

/** Parse x-amz-copy-source: "[/]bucket/key[?versionId=...]", URL-encoded. */
export function parseCopySource(value: string): CopySource {
  const q = value.indexOf("?");
  const pathPart = q < 0 ? value : value.slice(0, q);
  if (q >= 0) {
    const params = new URLSearchParams(value.slice(q + 1));
    const versionId = params.get("versionId");
    if (versionId !== null && versionId !== "null") throw noSuchVersion(versionId);
  }
  const decoded = decodePathComponent(pathPart).replace(/^\/+/, "");
  const slash = decoded.indexOf("/");
  if (slash <= 0 || slash === decoded.length - 1) {
    throw invalidArgument("Copy Source must mention the source bucket and key: sourcebucket/sourcekey", {
      ArgumentName: "x-amz-copy-source",
      ArgumentValue: value,
    });
  }
  const bucket = decoded.slice(0, slash);
  const key = decoded.slice(slash + 1);
  if (!isValidBucketName(bucket)) throw invalidBucketName(bucket);
  if (Buffer.byteLength(key) > 1024) throw invalidArgument("Copy Source key is too long");
  return { bucket, key };
}

/** x-amz-copy-source-if-* preconditions; for copies every failure is a 412. */
export function checkCopySourceConditions(ctx: RequestContext, meta: ObjectMeta): void {
  const result = checkReadConditions((name) => header(ctx.req, name), meta, {
    ifMatch: "x-amz-copy-source-if-match",
    ifNoneMatch: "x-amz-copy-source-if-none-match",
    ifModifiedSince: "x-amz-copy-source-if-modified-since",
    ifUnmodifiedSince: "x-amz-copy-source-if-unmodified-since",
  });
  if (result === "not-modified")
    throw preconditionFailed("x-amz-copy-source-If-None-Match / If-Modified-Since");
}

export async function copyObject(ctx: RequestContext): Promise<void> {
  refuseUnsupportedWriteFeatures(ctx.req);
  const source = parseCopySource(header(ctx.req, "x-amz-copy-source")!);
  await ctx.storage.requireBucket(ctx.bucket);
  const directive = (header(ctx.req, "x-amz-metadata-directive") ?? "COPY").toUpperCase();
  if (directive !== "COPY" && directive !== "REPLACE") {
    throw invalidArgument("Unknown metadata directive.", {
      ArgumentName: "x-amz-metadata-directive",
      ArgumentValue: directive,
    });
  }
  if (source.bucket === ctx.bucket && source.key === ctx.key && directive === "COPY") {
    throw invalidRequest(
      "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
    );
  }
  const conditions = writeConditions(ctx);
  const replacement = directive === "REPLACE" ? objectAttributesFromRequest(ctx.req) : undefined;
  const { meta: src, temp } = await ctx.storage.cloneToTemp(source.bucket, source.key);
  try {
    checkCopySourceConditions(ctx, src);
    // The copy is the source's content with everything stored about it (size, ETag, checksums,
    // parts), under its own key and time, and the source's attributes unless replaced.
    const { key: _key, lastModified: _lastModified, ...stored } = src;
    const meta = await ctx.storage.commitObject(
      ctx.bucket,
      ctx.key,
      temp,
      { ...stored, ...replacement },
      conditions,
    );
    sendXml(ctx, 200, renderCopyObjectResult(meta.etag, meta.lastModified, meta.checksum));
  } finally {
    await temp.discard();
  }
}

const OBJECT_ATTRIBUTES = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"];

/** GetObjectAttributes (GET ?attributes with x-amz-object-attributes). */
export async function getObjectAttributes(ctx: RequestContext): Promise<void> {
  const versionId = ctx.query.get("versionId");
  if (versionId !== undefined && versionId !== "null") throw noSuchVersion(versionId);
  const wanted = new Set(
    (header(ctx.req, "x-amz-object-attributes") ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== ""),
  );
  if (wanted.size === 0)
    throw invalidRequest(
      "The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty",
    );
  for (const name of wanted)
    if (!OBJECT_ATTRIBUTES.includes(name)) throw invalidArgument("Invalid attribute name specified.");
  const number = (name: string, fallback: number): number => {
    const raw = header(ctx.req, name);
    if (raw === undefined) return fallback;
    if (!/^\d{1,9}$/.test(raw.trim()))
      throw invalidArgument(`Invalid ${name}`, { ArgumentName: name, ArgumentValue: raw });
    return Number(raw.trim());
  };
  const maxParts = Math.min(number("x-amz-max-parts", 1000), 1000);
  const marker = number("x-amz-part-number-marker", 0);
  const meta = await ctx.storage.headObject(ctx.bucket, ctx.key);
  if (checkReadConditions((name) => header(ctx.req, name), meta) === "not-modified") {
    ctx.res.writeHead(304, { ETag: meta.etag });
    ctx.res.end();
    return;
  }
  sendXml(ctx, 200, renderObjectAttributes(meta, wanted, { maxParts, marker }), {
    "Last-Modified": new Date(meta.lastModified).toUTCString(),
  });
}
