// Multipart upload operations: CreateMultipartUpload, UploadPart, UploadPartCopy,
// CompleteMultipartUpload, AbortMultipartUpload and ListParts.

import { createHash } from "node:crypto";
import { pipeline } from "node:stream/promises";
import {
  createChecksummer,
  isValidChecksumValue,
  parseChecksumAlgorithm,
  type ChecksumAlgorithm,
} from "./checksum.js";
import { MAX_OBJECT_SIZE, MAX_XML_BODY, sendEmpty, sendXml, type RequestContext } from "./context.js";
import {
  entityTooLarge,
  invalidArgument,
  invalidRange,
  invalidRequest,
  malformedXml,
  maxMessageLengthExceeded,
} from "./errors.js";
import { header, objectAttributesFromRequest } from "./http.js";
import {
  checkCopySourceConditions,
  checksumHeaders,
  parseCopySource,
  writeConditions,
} from "./ops-object.js";
import { readPayload } from "./payload.js";
import { receiveBody } from "./ops-object.js";
import { uriEncode } from "./sigv4.js";
import type { ChecksumType, CompletedUpload, CompletePart } from "./model.js";
import { childElements, childText, parseXml } from "./xml-parse.js";
import {
  renderCompleteMultipartUpload,
  renderCopyPartResult,
  renderInitiateMultipartUpload,
  renderListParts,
} from "./xml.js";

const MAX_PART_NUMBER = 10000;

function partNumberParam(ctx: RequestContext): number {
  const raw = ctx.query.get("partNumber") ?? "";
  const n = /^\d{1,5}$/.test(raw) ? Number(raw) : 0;
  if (n < 1 || n > MAX_PART_NUMBER) {
    throw invalidArgument("Part number must be an integer between 1 and 10000, inclusive", {
      ArgumentName: "partNumber",
      ArgumentValue: raw,
    });
  }
  return n;
}

function uploadIdParam(ctx: RequestContext): string {
  return ctx.query.get("uploadId") ?? "";
}

export async function createMultipartUpload(ctx: RequestContext): Promise<void> {
  const attributes = objectAttributesFromRequest(ctx.req);
  const algorithmRaw = header(ctx.req, "x-amz-checksum-algorithm");
  const typeRaw = header(ctx.req, "x-amz-checksum-type")?.toUpperCase();
  let checksum: { algorithm: ChecksumAlgorithm; type: ChecksumType } | undefined;
  if (algorithmRaw !== undefined) {
    const algorithm = parseChecksumAlgorithm(algorithmRaw);
    if (!algorithm) throw invalidRequest("Checksum algorithm provided is unsupported.");
    if (typeRaw !== undefined && typeRaw !== "FULL_OBJECT" && typeRaw !== "COMPOSITE") {
      throw invalidRequest("Value for x-amz-checksum-type header is invalid.");
    }
    // S3's defaults: CRC64NVME only exists as a full-object checksum, the others default to composite.
    const type: ChecksumType = typeRaw ?? (algorithm === "crc64nvme" ? "FULL_OBJECT" : "COMPOSITE");
    if (type === "FULL_OBJECT" && (algorithm === "sha1" || algorithm === "sha256")) {
      throw invalidRequest(
        `The FULL_OBJECT checksum type cannot be used with the ${algorithm.toUpperCase()} checksum algorithm.`,
      );
    }
    if (type === "COMPOSITE" && algorithm === "crc64nvme") {
      throw invalidRequest(
        "The COMPOSITE checksum type cannot be used with the CRC64NVME checksum algorithm.",
      );
    }
    checksum = { algorithm, type };
  } else if (typeRaw !== undefined) {
    throw invalidRequest(
      "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.",
    );
  }
  const upload = await ctx.storage.uploads.createUpload(ctx.bucket, ctx.key, attributes, checksum);
  sendXml(
    ctx,
    200,
    renderInitiateMultipartUpload(ctx.bucket, ctx.key, upload.uploadId),
    checksum
      ? { "x-amz-checksum-algorithm": checksum.algorithm.toUpperCase(), "x-amz-checksum-type": checksum.type }
      : {},
  );
}

export async function uploadPart(ctx: RequestContext): Promise<void> {
  const partNumber = partNumberParam(ctx);
  const uploadId = uploadIdParam(ctx);
  const upload = await ctx.storage.uploads.getUpload(ctx.bucket, uploadId, ctx.key);
  await receiveBody(ctx, upload.checksumAlgorithm, async (temp, result) => {
    if (
      upload.checksumAlgorithm &&
      result.checksum &&
      result.checksum.algorithm !== upload.checksumAlgorithm
    ) {
      throw invalidRequest(
        `Checksum Type mismatch occurred, expected checksum Type: ${upload.checksumAlgorithm}, actual checksum Type: ${result.checksum.algorithm}`,
      );
    }
    const part = await ctx.storage.uploads.commitPart(ctx.bucket, uploadId, ctx.key, partNumber, temp, {
      size: result.size,
      etag: `"${result.md5.toString("hex")}"`,
      ...(result.checksum ? { checksum: result.checksum } : {}),
    });
    sendEmpty(ctx, 200, { ETag: part.etag, ...checksumHeaders(part.checksum) });
  });
}

export async function uploadPartCopy(ctx: RequestContext): Promise<void> {
  const partNumber = partNumberParam(ctx);
  const uploadId = uploadIdParam(ctx);
  const source = parseCopySource(header(ctx.req, "x-amz-copy-source")!);
  const upload = await ctx.storage.uploads.getUpload(ctx.bucket, uploadId, ctx.key);
  const { meta: src, handle } = await ctx.storage.openObject(source.bucket, source.key);
  const temp = await ctx.storage.createTemp();
  try {
    checkCopySourceConditions(ctx, src);
    let start = 0;
    let end = src.size - 1;
    const rangeRaw = header(ctx.req, "x-amz-copy-source-range");
    if (rangeRaw !== undefined) {
      const m = /^bytes=(\d+)-(\d+)$/.exec(rangeRaw.trim());
      if (!m)
        throw invalidArgument(
          "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy",
        );
      start = Number(m[1]);
      end = Number(m[2]);
      if (start > end || end >= src.size) throw invalidRange(src.size);
    }
    if (end - start + 1 > MAX_OBJECT_SIZE) throw entityTooLarge(MAX_OBJECT_SIZE);
    const md5 = createHash("md5");
    const checksummer = upload.checksumAlgorithm ? createChecksummer(upload.checksumAlgorithm) : undefined;
    let size = 0;
    if (end >= start) {
      await pipeline(
        handle.createReadStream({ start, end, autoClose: false, highWaterMark: 256 * 1024 }),
        async function* (chunks: AsyncIterable<Buffer>) {
          for await (const chunk of chunks) {
            md5.update(chunk);
            checksummer?.update(chunk);
            size += chunk.length;
            yield chunk;
          }
        },
        temp.stream,
      );
    } else {
      temp.stream.end();
      await new Promise<void>((resolve, reject) => temp.stream.once("finish", resolve).once("error", reject));
    }
    const checksum =
      checksummer && upload.checksumAlgorithm
        ? { algorithm: upload.checksumAlgorithm, value: checksummer.digest().toString("base64") }
        : undefined;
    const part = await ctx.storage.uploads.commitPart(ctx.bucket, uploadId, ctx.key, partNumber, temp, {
      size,
      etag: `"${md5.digest("hex")}"`,
      ...(checksum ? { checksum } : {}),
    });
    sendXml(ctx, 200, renderCopyPartResult(part.etag, part.lastModified, part.checksum));
  } finally {
    await handle.close();
    await temp.discard();
  }
}

export async function completeMultipartUpload(ctx: RequestContext): Promise<void> {
  const uploadId = uploadIdParam(ctx);
  const host = header(ctx.req, "host") ?? "localhost";
  const location = `http://${host}/${ctx.bucket}/${uriEncode(ctx.key, true)}`;
  const reply = (done: CompletedUpload) =>
    sendXml(
      ctx,
      200,
      renderCompleteMultipartUpload(location, ctx.bucket, ctx.key, done.etag, done.checksum),
      checksumHeaders(done.checksum),
    );
  const readBody = async () => {
    ctx.beginBody();
    const { body } = await readPayload(ctx.req, {
      auth: ctx.auth,
      maxSize: MAX_XML_BODY,
      tooLarge: maxMessageLengthExceeded,
      checksumHeadersDescribeObject: true,
    });
    return body;
  };
  // A repeat of a completion that succeeded (an SDK retrying after a lost answer) gets its answer.
  const upload = await ctx.storage.uploads.uploadOrCompletion(ctx.bucket, uploadId, ctx.key);
  if (!("uploadId" in upload)) {
    await readBody();
    return reply(upload);
  }
  const conditions = writeConditions(ctx);
  const body = await readBody();
  const root = parseXml(body.toString("utf8"));
  if (root.name !== "CompleteMultipartUpload") throw malformedXml();
  const checksumElement = upload.checksumAlgorithm
    ? `Checksum${upload.checksumAlgorithm.toUpperCase()}`
    : undefined;
  const parts: CompletePart[] = childElements(root, "Part").map((part) => {
    const numberText = childText(part, "PartNumber")?.trim() ?? "";
    const etag = childText(part, "ETag");
    if (!/^\d{1,5}$/.test(numberText) || etag === undefined) throw malformedXml();
    const partNumber = Number(numberText);
    if (partNumber < 1 || partNumber > MAX_PART_NUMBER)
      throw invalidArgument("Part number must be an integer between 1 and 10000, inclusive");
    const checksum = checksumElement ? childText(part, checksumElement)?.trim() : undefined;
    return { partNumber, etag, ...(checksum ? { checksum } : {}) };
  });
  if (parts.length === 0) throw malformedXml();
  let fullObjectChecksum: string | undefined;
  let compositeChecksum: string | undefined;
  if (upload.checksumAlgorithm && upload.checksumType === "FULL_OBJECT") {
    fullObjectChecksum = header(ctx.req, `x-amz-checksum-${upload.checksumAlgorithm}`)?.trim();
    if (
      fullObjectChecksum !== undefined &&
      !isValidChecksumValue(upload.checksumAlgorithm, fullObjectChecksum)
    ) {
      throw invalidRequest(`Value for x-amz-checksum-${upload.checksumAlgorithm} header is invalid.`);
    }
  } else if (upload.checksumAlgorithm) {
    // COMPOSITE: the checksum of the part checksums, with or without S3's "-<parts>" suffix;
    // checked against the one computed on completion (storage.uploads.completeUpload).
    compositeChecksum = header(ctx.req, `x-amz-checksum-${upload.checksumAlgorithm}`)?.trim();
  }
  const done = await ctx.storage.uploads.completeUpload(ctx.bucket, uploadId, ctx.key, parts, {
    conditions,
    ...(fullObjectChecksum !== undefined ? { fullObjectChecksum } : {}),
    ...(compositeChecksum !== undefined ? { compositeChecksum } : {}),
  });
  reply(done);
}

export async function abortMultipartUpload(ctx: RequestContext): Promise<void> {
  await ctx.storage.uploads.abortUpload(ctx.bucket, uploadIdParam(ctx), ctx.key);
  ctx.res.writeHead(204);
  ctx.res.end();
}

export async function listParts(ctx: RequestContext): Promise<void> {
  const uploadId = uploadIdParam(ctx);
  const markerRaw = ctx.query.get("part-number-marker") ?? "0";
  const maxRaw = ctx.query.get("max-parts") ?? "1000";
  if (!/^\d+$/.test(markerRaw))
    throw invalidArgument("Invalid part-number-marker", {
      ArgumentName: "part-number-marker",
      ArgumentValue: markerRaw,
    });
  if (!/^\d+$/.test(maxRaw))
    throw invalidArgument("Invalid max-parts", { ArgumentName: "max-parts", ArgumentValue: maxRaw });
  const marker = Number(markerRaw);
  const maxParts = Math.min(Number(maxRaw), 1000);
  const upload = await ctx.storage.uploads.getUpload(ctx.bucket, uploadId, ctx.key);
  const all = (await ctx.storage.uploads.listParts(ctx.bucket, uploadId, ctx.key)).filter(
    (p) => p.partNumber > marker,
  );
  const parts = all.slice(0, maxParts);
  sendXml(
    ctx,
    200,
    renderListParts({
      bucket: ctx.bucket,
      key: ctx.key,
      upload,
      owner: ctx.owner,
      partNumberMarker: marker,
      maxParts,
      parts,
      isTruncated: all.length > parts.length,
    }),
  );
}
