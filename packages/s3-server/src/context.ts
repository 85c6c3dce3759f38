// Per-request state handed to the operation handlers, and the helpers that write responses.

import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import type { Logger } from "pino";
import type { AuthResult } from "./sigv4.js";
import type { Storage } from "./storage.js";
import type { Owner } from "./xml.js";

export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  requestId: string;
  /** Bucket from the path ("" for service-level requests). */
  bucket: string;
  /** Decoded object key ("" for bucket-level requests). */
  key: string;
  /** Decoded query parameters (first value of each name). */
  query: Map<string, string>;
  auth: AuthResult;
  storage: Storage;
  owner: Owner;
  region: string;
  log: Logger;
  /** Operation name for the request log line. */
  operation: string;
  /**
   * Must be called before reading the request body: answers "Expect: 100-continue" now that the
   * request has been authenticated and validated.
   */
  beginBody(): void;
}

/** Bodies up to this size are read into memory (XML documents). */
export const MAX_XML_BODY = 4 * 1024 * 1024;
/** S3's single PUT limit. */
export const MAX_OBJECT_SIZE = 5 * 1024 * 1024 * 1024;

export function sendXml(
  ctx: RequestContext,
  status: number,
  xml: string,
  headers: OutgoingHttpHeaders = {},
): void {
  const body = Buffer.from(xml, "utf8");
  ctx.res.writeHead(status, { ...headers, "Content-Type": "application/xml", "Content-Length": body.length });
  ctx.res.end(ctx.req.method === "HEAD" ? undefined : body);
}

export function sendEmpty(ctx: RequestContext, status: number, headers: OutgoingHttpHeaders = {}): void {
  ctx.res.writeHead(status, { ...headers, "Content-Length": 0 });
  ctx.res.end();
}
