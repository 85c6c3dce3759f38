// Rendering of S3 XML response documents, by hand: every value goes through escapeXml, and keys in
// listings can be URL-encoded (encoding-type=url) the way S3 does it, which is how clients such as
// the aws cli list keys that contain characters XML 1.0 cannot carry.

import type { ChecksumAlgorithm } from "./checksum.js";
import type { IndexEntry, ListPage } from "./keyindex.js";
import type { BucketInfo, ObjectMeta, PartMeta, StoredChecksum, UploadMeta } from "./model.js";

const NS = "http://s3.amazonaws.com/doc/2006-03-01/";

export interface Owner {
  id: string;
  displayName: string;
}

/**
 * Escape text for element content / attribute values. Characters XML 1.0 does not allow are
 * written as numeric references, as S3 does (clients that care use encoding-type=url).
 */
// Matching control characters is the point of this pattern.
// eslint-disable-next-line no-control-regex
const XML_ESCAPED = /[&<>"'\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g;

export function escapeXml(value: string): string {
  return value.replace(XML_ESCAPED, (c) => {
    switch (c) {
      case "&":
        return "&amp;";
      case "<":
        return "&lt;";
      case ">":
        return "&gt;";
      case '"':
        return "&quot;";
      case "'":
        return "&apos;";
      default:
        return `&#x${c.charCodeAt(0).toString(16).toUpperCase()};`;
    }
  });
}

/** S3's encoding-type=url: percent-encoding (a space as %20, '+' as %2B) with '/' kept. */
export function urlEncodeKey(value: string): string {
  return encodeURIComponent(value)
    .replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase())
    .replace(/%2F/g, "/");
}

type Scalar = string | number | boolean;

/** <name>escaped value</name>, or nothing when the value is undefined. */
function el(name: string, value: Scalar | undefined): string {
  if (value === undefined) return "";
  return `<${name}>${escapeXml(String(value))}</${name}>`;
}

/** <name>children</name> where children is already XML. */
function node(name: string, ...children: string[]): string {
  return `<${name}>${children.join("")}</${name}>`;
}

function doc(root: string, ...children: string[]): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<${root} xmlns="${NS}">${children.join("")}</${root}>`;
}

function owner(o: Owner): string {
  return node("Owner", el("ID", o.id), el("DisplayName", o.displayName));
}

function checksumElements(
  checksum: { algorithm: ChecksumAlgorithm; value: string; type?: string } | undefined,
): string {
  if (!checksum) return "";
  return (
    el(`Checksum${checksum.algorithm.toUpperCase()}`, checksum.value) + el("ChecksumType", checksum.type)
  );
}

export function renderError(
  code: string,
  message: string,
  resource: string,
  requestId: string,
  detail: Record<string, string>,
): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n${node(
    "Error",
    el("Code", code),
    el("Message", message),
    ...Object.entries(detail).map(([k, v]) => el(k, v)),
    el("Resource", resource),
    el("RequestId", requestId),
  )}`;
}

export function renderListBuckets(
  o: Owner,
  buckets: BucketInfo[],
  page: { continuationToken?: string; prefix?: string } = {},
): string {
  return doc(
    "ListAllMyBucketsResult",
    owner(o),
    node("Buckets", ...buckets.map((b) => node("Bucket", el("Name", b.name), el("CreationDate", b.created)))),
    el("ContinuationToken", page.continuationToken),
    el("Prefix", page.prefix),
  );
}

export function renderLocation(constraint: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<LocationConstraint xmlns="${NS}">${escapeXml(constraint)}</LocationConstraint>`;
}

export function renderVersioning(): string {
  return doc("VersioningConfiguration");
}

function contents(entry: IndexEntry, encode: (s: string) => string, o: Owner | undefined): string {
  return node(
    "Contents",
    el("Key", encode(entry.key)),
    el("LastModified", entry.lastModified),
    el("ETag", entry.etag),
    el("Size", entry.size),
    o ? owner(o) : "",
    el("StorageClass", "STANDARD"),
  );
}

export interface ListV2Render {
  bucket: string;
  prefix: string;
  delimiter: string;
  maxKeys: number;
  startAfter?: string;
  continuationToken?: string;
  nextContinuationToken?: string;
  encodingType?: "url";
  owner?: Owner;
  page: ListPage;
}

export function renderListObjectsV2(r: ListV2Render): string {
  const enc = r.encodingType === "url" ? urlEncodeKey : (s: string) => s;
  return doc(
    "ListBucketResult",
    el("Name", r.bucket),
    el("Prefix", enc(r.prefix)),
    r.delimiter !== "" ? el("Delimiter", enc(r.delimiter)) : "",
    el("MaxKeys", r.maxKeys),
    el("KeyCount", r.page.contents.length + r.page.commonPrefixes.length),
    el("IsTruncated", r.page.isTruncated),
    el("EncodingType", r.encodingType),
    el("ContinuationToken", r.continuationToken),
    el("NextContinuationToken", r.nextContinuationToken),
    el("StartAfter", r.startAfter === undefined ? undefined : enc(r.startAfter)),
    ...r.page.contents.map((c) => contents(c, enc, r.owner)),
    ...r.page.commonPrefixes.map((p) => node("CommonPrefixes", el("Prefix", enc(p)))),
  );
}

export interface ListV1Render {
  bucket: string;
  prefix: string;
  delimiter: string;
  maxKeys: number;
  marker: string;
  nextMarker?: string;
  encodingType?: "url";
  owner: Owner;
  page: ListPage;
}

export function renderListObjectsV1(r: ListV1Render): string {
  const enc = r.encodingType === "url" ? urlEncodeKey : (s: string) => s;
  return doc(
    "ListBucketResult",
    el("Name", r.bucket),
    el("Prefix", enc(r.prefix)),
    el("Marker", enc(r.marker)),
    el("NextMarker", r.nextMarker === undefined ? undefined : enc(r.nextMarker)),
    el("MaxKeys", r.maxKeys),
    r.delimiter !== "" ? el("Delimiter", enc(r.delimiter)) : "",
    el("IsTruncated", r.page.isTruncated),
    el("EncodingType", r.encodingType),
    ...r.page.contents.map((c) => contents(c, enc, r.owner)),
    ...r.page.commonPrefixes.map((p) => node("CommonPrefixes", el("Prefix", enc(p)))),
  );
}

export function renderCopyObjectResult(
  etag: string,
  lastModified: string,
  checksum?: StoredChecksum,
): string {
  return doc(
    "CopyObjectResult",
    el("ETag", etag),
    el("LastModified", lastModified),
    checksumElements(checksum),
  );
}

export function renderCopyPartResult(
  etag: string,
  lastModified: string,
  checksum?: { algorithm: ChecksumAlgorithm; value: string },
): string {
  return doc(
    "CopyPartResult",
    el("ETag", etag),
    el("LastModified", lastModified),
    checksumElements(checksum),
  );
}

export function renderInitiateMultipartUpload(bucket: string, key: string, uploadId: string): string {
  return doc("InitiateMultipartUploadResult", el("Bucket", bucket), el("Key", key), el("UploadId", uploadId));
}

export function renderCompleteMultipartUpload(
  location: string,
  bucket: string,
  key: string,
  etag: string,
  checksum?: StoredChecksum,
): string {
  return doc(
    "CompleteMultipartUploadResult",
    el("Location", location),
    el("Bucket", bucket),
    el("Key", key),
    el("ETag", etag),
    checksumElements(checksum),
  );
}

export function renderDeleteResult(
  deleted: string[],
  errors: Array<{ key: string; code: string; message: string }>,
): string {
  return doc(
    "DeleteResult",
    ...deleted.map((key) => node("Deleted", el("Key", key))),
    ...errors.map((e) => node("Error", el("Key", e.key), el("Code", e.code), el("Message", e.message))),
  );
}

export interface ListPartsRender {
  bucket: string;
  key: string;
  upload: UploadMeta;
  owner: Owner;
  partNumberMarker: number;
  maxParts: number;
  parts: PartMeta[];
  isTruncated: boolean;
}

export function renderListParts(r: ListPartsRender): string {
  const last = r.parts[r.parts.length - 1];
  return doc(
    "ListPartsResult",
    el("Bucket", r.bucket),
    el("Key", r.key),
    el("UploadId", r.upload.uploadId),
    node("Initiator", el("ID", r.owner.id), el("DisplayName", r.owner.displayName)),
    owner(r.owner),
    el("StorageClass", "STANDARD"),
    el("PartNumberMarker", r.partNumberMarker),
    el("NextPartNumberMarker", last ? last.partNumber : r.partNumberMarker),
    el("MaxParts", r.maxParts),
    el("IsTruncated", r.isTruncated),
    el("ChecksumAlgorithm", r.upload.checksumAlgorithm?.toUpperCase()),
    el("ChecksumType", r.upload.checksumType),
    ...r.parts.map((p) =>
      node(
        "Part",
        el("PartNumber", p.partNumber),
        el("LastModified", p.lastModified),
        el("ETag", p.etag),
        el("Size", p.size),
        checksumElements(p.checksum),
      ),
    ),
  );
}

export interface ListUploadsRender {
  bucket: string;
  prefix: string;
  keyMarker: string;
  uploadIdMarker: string;
  maxUploads: number;
  owner: Owner;
  uploads: UploadMeta[];
  isTruncated: boolean;
}

export function renderListMultipartUploads(r: ListUploadsRender): string {
  const last = r.uploads[r.uploads.length - 1];
  return doc(
    "ListMultipartUploadsResult",
    el("Bucket", r.bucket),
    el("KeyMarker", r.keyMarker),
    el("UploadIdMarker", r.uploadIdMarker),
    el("NextKeyMarker", last?.key),
    el("NextUploadIdMarker", last?.uploadId),
    el("Prefix", r.prefix),
    el("MaxUploads", r.maxUploads),
    el("IsTruncated", r.isTruncated),
    ...r.uploads.map((u) =>
      node(
        "Upload",
        el("Key", u.key),
        el("UploadId", u.uploadId),
        node("Initiator", el("ID", r.owner.id), el("DisplayName", r.owner.displayName)),
        owner(r.owner),
        el("StorageClass", "STANDARD"),
        el("Initiated", u.initiated),
        el("ChecksumAlgorithm", u.checksumAlgorithm?.toUpperCase()),
      ),
    ),
  );
}

/** GetObjectAttributes: the attributes asked for; ObjectParts only for multipart objects. */
export function renderObjectAttributes(
  meta: ObjectMeta,
  wanted: Set<string>,
  page: { maxParts: number; marker: number },
): string {
  let parts = "";
  if (wanted.has("ObjectParts") && meta.partSizes) {
    const all = meta.partSizes.map((size, i) => ({ number: i + 1, size, checksum: meta.partChecksums?.[i] }));
    const after = all.filter((p) => p.number > page.marker);
    const shown = after.slice(0, page.maxParts);
    const truncated = after.length > shown.length;
    parts = node(
      "ObjectParts",
      el("PartsCount", all.length),
      el("PartNumberMarker", page.marker),
      el("NextPartNumberMarker", shown.length ? shown[shown.length - 1]!.number : page.marker),
      el("MaxParts", page.maxParts),
      el("IsTruncated", truncated),
      ...shown.map((p) =>
        node(
          "Part",
          el("PartNumber", p.number),
          el("Size", p.size),
          p.checksum !== undefined && meta.checksum
            ? el(`Checksum${meta.checksum.algorithm.toUpperCase()}`, p.checksum)
            : "",
        ),
      ),
    );
  }
  return doc(
    "GetObjectAttributesResponse",
    wanted.has("ETag") ? el("ETag", meta.etag.replace(/^"|"$/g, "")) : "",
    wanted.has("Checksum") && meta.checksum ? node("Checksum", checksumElements(meta.checksum)) : "",
    parts,
    wanted.has("StorageClass") ? el("StorageClass", "STANDARD") : "",
    wanted.has("ObjectSize") ? el("ObjectSize", meta.size) : "",
  );
}
