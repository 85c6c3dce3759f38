// What the embedded store keeps, as data: the metadata of buckets, objects, uploads and parts, the
// conditions of writes and deletes, and the rules on bucket names, ETags and ids that every part of
// the store (layout.ts, record.ts, storage.ts, uploads.ts) and the request handlers share.

import { randomBytes } from "node:crypto";
import type { ChecksumAlgorithm } from "./checksum.js";

export const MIN_PART_SIZE = 5 * 1024 * 1024;

export type ChecksumType = "FULL_OBJECT" | "COMPOSITE";

export interface StoredChecksum {
  algorithm: ChecksumAlgorithm;
  /** Base64 digest; composite checksums carry a "-<parts>" suffix like S3's. */
  value: string;
  type: ChecksumType;
}

/** What a write supplies besides the bytes. */
export interface ObjectAttributes {
  contentType: string;
  /** Stored representation headers by lower-case name (content-encoding, cache-control, ...). */
  headers: Record<string, string>;
  /** x-amz-meta-* values by lower-case name without the prefix. */
  userMetadata: Record<string, string>;
}

export interface ObjectMeta extends ObjectAttributes {
  key: string;
  size: number;
  /** Quoted ETag as sent in headers. */
  etag: string;
  /** ISO 8601 time of the write. */
  lastModified: string;
  checksum?: StoredChecksum;
  /** Sizes of the parts of an object assembled by a multipart upload (for GET ?partNumber). */
  partSizes?: number[];
  /** Base64 checksums (checksum.algorithm) of those parts, when every part had one. */
  partChecksums?: string[];
}

/** What CompleteMultipartUpload answers. */
export interface CompletedUpload {
  etag: string;
  checksum?: StoredChecksum;
}

export interface BucketInfo {
  name: string;
  created: string;
  locationConstraint: string;
}

export interface UploadMeta extends ObjectAttributes {
  uploadId: string;
  key: string;
  initiated: string;
  checksumAlgorithm?: ChecksumAlgorithm;
  checksumType?: ChecksumType;
}

export interface PartMeta {
  partNumber: number;
  etag: string;
  size: number;
  lastModified: string;
  checksum?: { algorithm: ChecksumAlgorithm; value: string };
}

export interface WriteConditions {
  /** If-Match: the current object's ETag must match ("*" = must exist). */
  ifMatch?: string;
  /** If-None-Match: "*" = the key must not exist. */
  ifNoneMatch?: string;
}

/** Preconditions of a DeleteObject / DeleteObjects entry; a missing object is not an error. */
export interface DeleteConditions {
  /** If-Match / <ETag>: the current object's ETag must match ("*" = any). */
  ifMatch?: string;
  /** x-amz-if-match-last-modified-time / <LastModifiedTime>, ms since the epoch (whole seconds compared). */
  lastModified?: number;
  /** x-amz-if-match-size / <Size>. */
  size?: number;
}

export interface CompletePart {
  partNumber: number;
  etag: string;
  checksum?: string;
}

/** A fresh id: temp files, staging directories and multipart uploads. */
export const randomId = () => randomBytes(16).toString("hex");
/** The shape of a randomId(); an upload id of any other shape names no upload. */
export const ID_RE = /^[0-9a-f]{32}$/;

export function unquoteEtag(etag: string): string {
  return etag
    .trim()
    .replace(/^W\//, "")
    .replace(/^"(.*)"$/, "$1");
}

/** Whether an If-Match / If-None-Match list ("*" or ETags, comma-separated) names `etag`. */
export function etagMatches(list: string, etag: string): boolean {
  const tags = list.split(",").map(unquoteEtag);
  return tags.includes("*") || tags.includes(unquoteEtag(etag));
}

/** S3 bucket naming rules (general purpose buckets). */
export function isValidBucketName(name: string): boolean {
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name)) return false;
  if (name.includes("..") || name.includes(".-") || name.includes("-.")) return false;
  if (/^\d+\.\d+\.\d+\.\d+$/.test(name)) return false;
  if (/^(xn--|sthree-|amzn-s3-demo-)/.test(name)) return false;
  if (/(-s3alias|--ol-s3|\.mrap|--x-s3|--table-s3)$/.test(name)) return false;
  return true;
}
