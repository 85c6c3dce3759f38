// Service- and bucket-level operations: ListBuckets, CreateBucket, HeadBucket, DeleteBucket,
// GetBucketLocation, GetBucketVersioning, ListObjects (v1 and v2), DeleteObjects and
// ListMultipartUploads.

import { MAX_XML_BODY, sendEmpty, sendXml, type RequestContext } from "./context.js";
import {
  S3Error,
  invalidArgument,
  invalidRequest,
  malformedXml,
  maxMessageLengthExceeded,
  notImplemented,
} from "./errors.js";
import { deleteConditions, header } from "./http.js";
import type { ListPage } from "./keyindex.js";
import { readPayload } from "./payload.js";
import { parseXml, childElements, childText } from "./xml-parse.js";
import {
  renderDeleteResult,
  renderListBuckets,
  renderListMultipartUploads,
  renderListObjectsV1,
  renderListObjectsV2,
  renderLocation,
  renderVersioning,
} from "./xml.js";

const MAX_LIST_KEYS = 1000;
const MAX_DELETE_KEYS = 1000;

async function readXmlBody(ctx: RequestContext): Promise<string> {
  ctx.beginBody();
  const { body } = await readPayload(ctx.req, {
    auth: ctx.auth,
    maxSize: MAX_XML_BODY,
    tooLarge: maxMessageLengthExceeded,
  });
  return body.toString("utf8");
}

function parseMaxKeys(ctx: RequestContext, name: string): number {
  const raw = ctx.query.get(name);
  if (raw === undefined) return MAX_LIST_KEYS;
  if (!/^\d+$/.test(raw))
    throw invalidArgument(`Provided ${name} not an integer or within integer range`, {
      ArgumentName: name,
      ArgumentValue: raw,
    });
  return Math.min(Number(raw), MAX_LIST_KEYS);
}

function parseEncodingType(ctx: RequestContext): "url" | undefined {
  const raw = ctx.query.get("encoding-type");
  if (raw === undefined) return undefined;
  if (raw.toLowerCase() !== "url")
    throw invalidArgument("Invalid Encoding Method specified in Request", {
      ArgumentName: "encoding-type",
      ArgumentValue: raw,
    });
  return "url";
}

export async function listBuckets(ctx: RequestContext): Promise<void> {
  const prefix = ctx.query.get("prefix") ?? "";
  const maxRaw = ctx.query.get("max-buckets");
  if (maxRaw !== undefined && !(/^\d{1,5}$/.test(maxRaw) && Number(maxRaw) >= 1 && Number(maxRaw) <= 10000)) {
    throw invalidArgument("max-buckets must be an integer between 1 and 10000", {
      ArgumentName: "max-buckets",
      ArgumentValue: maxRaw,
    });
  }
  const token = ctx.query.get("continuation-token");
  const after = token ? Buffer.from(token, "base64url").toString("utf8") : "";
  const all = (await ctx.storage.listBuckets()).filter((b) => b.name.startsWith(prefix) && b.name > after);
  const page = maxRaw === undefined ? all : all.slice(0, Number(maxRaw));
  const last = page[page.length - 1];
  const next =
    last && page.length < all.length ? Buffer.from(last.name, "utf8").toString("base64url") : undefined;
  sendXml(
    ctx,
    200,
    renderListBuckets(ctx.owner, page, {
      ...(next ? { continuationToken: next } : {}),
      ...(ctx.query.has("prefix") ? { prefix } : {}),
    }),
  );
}

export async function createBucket(ctx: RequestContext): Promise<void> {
  if ((header(ctx.req, "x-amz-bucket-object-lock-enabled") ?? "").trim().toLowerCase() === "true") {
    throw notImplemented(
      "Object Lock is not supported by this server (header x-amz-bucket-object-lock-enabled).",
    );
  }
  const body = await readXmlBody(ctx);
  let locationConstraint = "";
  if (body.trim() !== "") {
    const root = parseXml(body);
    if (root.name !== "CreateBucketConfiguration") throw malformedXml();
    locationConstraint = childText(root, "LocationConstraint")?.trim() ?? "";
  }
  await ctx.storage.createBucket(ctx.bucket, locationConstraint);
  sendEmpty(ctx, 200, { Location: `/${ctx.bucket}` });
}

export async function headBucket(ctx: RequestContext): Promise<void> {
  const info = await ctx.storage.requireBucket(ctx.bucket);
  sendEmpty(ctx, 200, { "x-amz-bucket-region": info.locationConstraint || ctx.region });
}

export async function deleteBucket(ctx: RequestContext): Promise<void> {
  await ctx.storage.deleteBucket(ctx.bucket);
  ctx.res.writeHead(204);
  ctx.res.end();
}

export async function getBucketLocation(ctx: RequestContext): Promise<void> {
  const info = await ctx.storage.requireBucket(ctx.bucket);
  // us-east-1 is reported as an empty LocationConstraint, as S3 does.
  const constraint = info.locationConstraint === "us-east-1" ? "" : info.locationConstraint;
  sendXml(ctx, 200, renderLocation(constraint));
}

export async function getBucketVersioning(ctx: RequestContext): Promise<void> {
  await ctx.storage.requireBucket(ctx.bucket);
  sendXml(ctx, 200, renderVersioning());
}

// Continuation tokens are opaque to clients; ours name the last key or common prefix returned.
function encodeToken(last: NonNullable<ListPage["last"]>): string {
  return Buffer.from(
    JSON.stringify(last.kind === "key" ? { k: last.value } : { p: last.value }),
    "utf8",
  ).toString("base64url");
}

function decodeToken(token: string): { after?: string; afterPrefix?: string } {
  try {
    const parsed = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as {
      k?: unknown;
      p?: unknown;
    };
    if (typeof parsed.k === "string") return { after: parsed.k };
    if (typeof parsed.p === "string") return { afterPrefix: parsed.p };
  } catch {
    // fall through
  }
  throw invalidArgument("The continuation token provided is incorrect", {
    ArgumentName: "continuation-token",
  });
}

export async function listObjectsV2(ctx: RequestContext): Promise<void> {
  const prefix = ctx.query.get("prefix") ?? "";
  const delimiter = ctx.query.get("delimiter") ?? "";
  const maxKeys = parseMaxKeys(ctx, "max-keys");
  const encodingType = parseEncodingType(ctx);
  const startAfter = ctx.query.get("start-after");
  const continuationToken = ctx.query.get("continuation-token");
  // An empty token is a first page (echoed back empty), as on S3.
  const position =
    continuationToken !== undefined && continuationToken !== ""
      ? decodeToken(continuationToken)
      : startAfter
        ? { after: startAfter }
        : {};
  const page = await ctx.storage.listObjects(ctx.bucket, { prefix, delimiter, maxKeys, ...position });
  sendXml(
    ctx,
    200,
    renderListObjectsV2({
      bucket: ctx.bucket,
      prefix,
      delimiter,
      maxKeys,
      page,
      ...(encodingType ? { encodingType } : {}),
      ...(startAfter !== undefined ? { startAfter } : {}),
      ...(continuationToken !== undefined ? { continuationToken } : {}),
      ...(page.isTruncated && page.last ? { nextContinuationToken: encodeToken(page.last) } : {}),
      ...(ctx.query.get("fetch-owner") === "true" ? { owner: ctx.owner } : {}),
    }),
  );
}

export async function listObjectsV1(ctx: RequestContext): Promise<void> {
  const prefix = ctx.query.get("prefix") ?? "";
  const delimiter = ctx.query.get("delimiter") ?? "";
  const maxKeys = parseMaxKeys(ctx, "max-keys");
  const encodingType = parseEncodingType(ctx);
  const marker = ctx.query.get("marker") ?? "";
  // A marker that is a rolled-up common prefix (as NextMarker returns them) continues after
  // everything under that prefix.
  const markerIsPrefix =
    delimiter !== "" &&
    marker.startsWith(prefix) &&
    marker.endsWith(delimiter) &&
    marker.indexOf(delimiter, prefix.length) === marker.length - delimiter.length;
  const position = marker === "" ? {} : markerIsPrefix ? { afterPrefix: marker } : { after: marker };
  const page = await ctx.storage.listObjects(ctx.bucket, { prefix, delimiter, maxKeys, ...position });
  sendXml(
    ctx,
    200,
    renderListObjectsV1({
      bucket: ctx.bucket,
      prefix,
      delimiter,
      maxKeys,
      marker,
      owner: ctx.owner,
      page,
      ...(encodingType ? { encodingType } : {}),
      ...(page.isTruncated && delimiter !== "" && page.last ? { nextMarker: page.last.value } : {}),
    }),
  );
}

export async function deleteObjects(ctx: RequestContext): Promise<void> {
  await ctx.storage.requireBucket(ctx.bucket);
  const hasIntegrityHeader =
    header(ctx.req, "content-md5") !== undefined ||
    Object.keys(ctx.req.headers).some((h) => h.startsWith("x-amz-checksum-")) ||
    header(ctx.req, "x-amz-trailer") !== undefined;
  if (!hasIntegrityHeader) throw invalidRequest("Missing required header for this request: Content-MD5");
  const root = parseXml(await readXmlBody(ctx));
  if (root.name !== "Delete") throw malformedXml();
  const objects = childElements(root, "Object");
  if (objects.length === 0 || objects.length > MAX_DELETE_KEYS) throw malformedXml();
  const quiet = childText(root, "Quiet")?.trim().toLowerCase() === "true";
  const deleted: string[] = [];
  const errors: Array<{ key: string; code: string; message: string }> = [];
  for (const object of objects) {
    const key = childText(object, "Key");
    if (key === undefined) throw malformedXml();
    const versionId = childText(object, "VersionId");
    const etag = childText(object, "ETag")?.trim();
    const mtime = childText(object, "LastModifiedTime")?.trim();
    const size = childText(object, "Size")?.trim();
    try {
      if (key === "" || Buffer.byteLength(key) > 1024) throw invalidArgument("Invalid key");
      if (versionId !== undefined && versionId !== "null")
        throw invalidArgument("Invalid version id specified");
      const conditions = deleteConditions({ ifMatch: etag, lastModified: mtime, size }, () => malformedXml());
      await ctx.storage.deleteObject(ctx.bucket, key, conditions);
      if (!quiet) deleted.push(key);
    } catch (err) {
      if (!(err instanceof S3Error)) throw err;
      errors.push({ key, code: err.code, message: err.message });
    }
  }
  sendXml(ctx, 200, renderDeleteResult(deleted, errors));
}

export async function listMultipartUploads(ctx: RequestContext): Promise<void> {
  const prefix = ctx.query.get("prefix") ?? "";
  const keyMarker = ctx.query.get("key-marker") ?? "";
  const uploadIdMarker = ctx.query.get("upload-id-marker") ?? "";
  const maxUploads = parseMaxKeys(ctx, "max-uploads");
  const matching = (await ctx.storage.uploads.listUploads(ctx.bucket)).filter((u) =>
    u.key.startsWith(prefix),
  );
  let start = 0;
  if (keyMarker !== "") {
    // Continue after (key-marker, upload-id-marker), or after every upload of key-marker.
    const markerIndex =
      uploadIdMarker === ""
        ? -1
        : matching.findIndex((u) => u.key === keyMarker && u.uploadId === uploadIdMarker);
    start =
      markerIndex >= 0
        ? markerIndex + 1
        : matching.findIndex((u) => Buffer.compare(Buffer.from(u.key), Buffer.from(keyMarker)) > 0);
    if (start < 0) start = matching.length;
  }
  const all = matching.slice(start);
  const uploads = all.slice(0, maxUploads);
  sendXml(
    ctx,
    200,
    renderListMultipartUploads({
      bucket: ctx.bucket,
      prefix,
      keyMarker,
      uploadIdMarker,
      maxUploads,
      owner: ctx.owner,
      uploads,
      isTruncated: all.length > uploads.length,
    }),
  );
}
