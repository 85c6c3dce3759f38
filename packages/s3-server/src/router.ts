// Maps a path-style request (method, bucket, key, query parameters) to the S3 operation that
// handles it. Sub-resources this server does not implement get 501 NotImplemented rather than
// being mistaken for a plain object or bucket request; unknown query parameters (such as the
// SDK's x-id) are ignored, as S3 ignores them.

import type { RequestContext } from "./context.js";
import { invalidArgument, invalidBucketName, methodNotAllowed, notImplemented } from "./errors.js";
import * as bucketOps from "./ops-bucket.js";
import * as multipartOps from "./ops-multipart.js";
import * as objectOps from "./ops-object.js";

export interface Route {
  operation: string;
  handler: (ctx: RequestContext) => Promise<void>;
}

const UNSUPPORTED_BUCKET_SUBRESOURCES = [
  "accelerate",
  "acl",
  "analytics",
  "cors",
  "encryption",
  "intelligent-tiering",
  "inventory",
  "lifecycle",
  "logging",
  "metadataTable",
  "metrics",
  "notification",
  "object-lock",
  "ownershipControls",
  "policy",
  "policyStatus",
  "publicAccessBlock",
  "replication",
  "requestPayment",
  "session",
  "tagging",
  "versions",
  "website",
];

const UNSUPPORTED_OBJECT_SUBRESOURCES = [
  "acl",
  "legal-hold",
  "renameObject",
  "restore",
  "retention",
  "select",
  "tagging",
  "torrent",
];

function unsupported(query: Map<string, string>, names: string[]): string | undefined {
  return names.find((name) => query.has(name));
}

function unsupportedOperation(what: string) {
  return notImplemented(`The ${what} operation is not implemented by the embedded S3 server.`);
}

export function route(
  method: string,
  bucket: string,
  key: string,
  query: Map<string, string>,
  hasCopySource: boolean,
): Route {
  if (bucket === "") {
    if (key !== "") throw invalidBucketName("");
    if (method === "GET") return { operation: "ListBuckets", handler: bucketOps.listBuckets };
    throw methodNotAllowed(method);
  }

  if (key === "") {
    const sub = unsupported(query, UNSUPPORTED_BUCKET_SUBRESOURCES);
    switch (method) {
      case "GET":
        if (query.has("location"))
          return { operation: "GetBucketLocation", handler: bucketOps.getBucketLocation };
        if (query.has("versioning"))
          return { operation: "GetBucketVersioning", handler: bucketOps.getBucketVersioning };
        if (query.has("uploads"))
          return { operation: "ListMultipartUploads", handler: bucketOps.listMultipartUploads };
        if (sub) throw unsupportedOperation(`bucket ?${sub}`);
        if (query.has("list-type")) {
          if (query.get("list-type") !== "2")
            throw invalidArgument("Invalid List Type specified in Request", { ArgumentName: "list-type" });
          return { operation: "ListObjectsV2", handler: bucketOps.listObjectsV2 };
        }
        return { operation: "ListObjects", handler: bucketOps.listObjectsV1 };
      case "HEAD":
        return { operation: "HeadBucket", handler: bucketOps.headBucket };
      case "PUT":
        if (sub || query.has("versioning"))
          throw unsupportedOperation(`bucket ?${sub ?? "versioning"} (PUT)`);
        return { operation: "CreateBucket", handler: bucketOps.createBucket };
      case "DELETE":
        if (sub) throw unsupportedOperation(`bucket ?${sub} (DELETE)`);
        return { operation: "DeleteBucket", handler: bucketOps.deleteBucket };
      case "POST":
        if (query.has("delete")) return { operation: "DeleteObjects", handler: bucketOps.deleteObjects };
        throw unsupportedOperation("POST object (browser form upload)");
      default:
        throw methodNotAllowed(method);
    }
  }

  const sub = unsupported(query, UNSUPPORTED_OBJECT_SUBRESOURCES);
  switch (method) {
    case "GET":
      if (query.has("uploadId")) return { operation: "ListParts", handler: multipartOps.listParts };
      if (sub) throw unsupportedOperation(`object ?${sub}`);
      if (query.has("attributes"))
        return { operation: "GetObjectAttributes", handler: objectOps.getObjectAttributes };
      return { operation: "GetObject", handler: objectOps.getObject };
    case "HEAD":
      if (sub || query.has("attributes")) throw unsupportedOperation(`object ?${sub ?? "attributes"} (HEAD)`);
      return { operation: "HeadObject", handler: objectOps.getObject };
    case "PUT":
      if (query.has("partNumber") || query.has("uploadId")) {
        return hasCopySource
          ? { operation: "UploadPartCopy", handler: multipartOps.uploadPartCopy }
          : { operation: "UploadPart", handler: multipartOps.uploadPart };
      }
      if (sub) throw unsupportedOperation(`object ?${sub} (PUT)`);
      if (hasCopySource) return { operation: "CopyObject", handler: objectOps.copyObject };
      return { operation: "PutObject", handler: objectOps.putObject };
    case "DELETE":
      if (query.has("uploadId"))
        return { operation: "AbortMultipartUpload", handler: multipartOps.abortMultipartUpload };
      if (sub) throw unsupportedOperation(`object ?${sub} (DELETE)`);
      return { operation: "DeleteObject", handler: objectOps.deleteObject };
    case "POST":
      if (query.has("uploads"))
        return { operation: "CreateMultipartUpload", handler: multipartOps.createMultipartUpload };
      if (query.has("uploadId"))
        return { operation: "CompleteMultipartUpload", handler: multipartOps.completeMultipartUpload };
      throw unsupportedOperation(`object POST ?${sub ?? [...query.keys()].join("&")}`);
    default:
      throw methodNotAllowed(method);
  }
}
