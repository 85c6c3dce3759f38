// Decoder for the "aws-chunked" content encoding that SDKs use for streaming uploads:
//
//   <hex-size>[;chunk-signature=<sig>]\r\n<data>\r\n ... 0[;chunk-signature=<sig>]\r\n
//   [<trailer-name>:<value>\r\n ...][x-amz-trailer-signature:<sig>\r\n]\r\n
//
// It emits only the object bytes, collects the trailing headers (x-amz-checksum-*) and, for
// STREAMING-AWS4-HMAC-SHA256-PAYLOAD(-TRAILER), verifies every chunk signature (each chains from
// the previous one, starting at the request's seed signature) and the trailer signature. Data is
// passed through without buffering whole chunks; a bad signature fails the stream, which makes the
// caller discard the temp file, so unverified bytes never become a visible object.

import { createHash, type Hash } from "node:crypto";
import { Transform, type TransformCallback } from "node:stream";
import { incompleteBody, invalidRequest, signatureDoesNotMatch } from "./errors.js";
import { sha256Hex, signaturesEqual } from "./sigv4.js";

const MAX_LINE = 8 * 1024;
const MAX_TRAILER_LINES = 32;

export interface ChunkSigning {
  seedSignature: string;
  /** Expected signature of a chunk given the previous signature and the chunk's SHA-256 (hex). */
  chunk(previousSignature: string, chunkSha256Hex: string): string;
  /** Expected trailer signature given the previous signature and the trailer block's SHA-256. */
  trailer(previousSignature: string, trailerSha256Hex: string): string;
}

export interface AwsChunkedOptions {
  /** Present for signed streaming payloads; every chunk must then carry a valid chunk-signature. */
  signing?: ChunkSigning;
  /** STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER: the trailer block must be signed. */
  signedTrailer?: boolean;
}

type State = "size" | "data" | "data-crlf" | "trailer" | "done";

export class AwsChunkedDecoder extends Transform {
  /** Trailing headers by lower-cased name (valid once the stream has finished). */
  readonly trailers = new Map<string, string>();
  /** Number of object bytes emitted. */
  decodedLength = 0;

  private state: State = "size";
  private line: Buffer[] = [];
  private lineLength = 0;
  private remaining = 0;
  private crlfSeen = 0;
  private chunkHash: Hash | undefined;
  private chunkSig = "";
  private previousSignature: string;
  private trailerLines = 0;
  private trailerVerified = false;

  constructor(private readonly options: AwsChunkedOptions = {}) {
    super();
    this.previousSignature = options.signing?.seedSignature ?? "";
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      this.consume(chunk);
      callback();
    } catch (err) {
      callback(err as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    // Tolerate a missing final CRLF after the last chunk / trailers: everything is accounted for.
    if (this.state === "trailer" && this.lineLength > 0) {
      try {
        this.handleTrailerLine(this.takeLine());
      } catch (err) {
        callback(err as Error);
        return;
      }
    }
    if (this.state !== "done" && this.state !== "trailer") {
      callback(incompleteBody("The request body terminated unexpectedly"));
      return;
    }
    if (this.options.signedTrailer && !this.trailerVerified) {
      callback(signatureDoesNotMatch({ Detail: "missing x-amz-trailer-signature" }));
      return;
    }
    this.state = "done";
    callback();
  }

  private consume(buf: Buffer): void {
    let off = 0;
    while (off < buf.length) {
      switch (this.state) {
        case "size":
        case "trailer": {
          const nl = buf.indexOf(0x0a, off);
          const end = nl < 0 ? buf.length : nl;
          this.lineLength += end - off;
          if (this.lineLength > MAX_LINE) throw invalidRequest("aws-chunked: header line too long");
          this.line.push(buf.subarray(off, end));
          off = nl < 0 ? buf.length : nl + 1;
          if (nl >= 0) {
            const line = this.takeLine();
            if (this.state === "size") this.handleSizeLine(line);
            else this.handleTrailerLine(line);
          }
          break;
        }
        case "data": {
          const n = Math.min(this.remaining, buf.length - off);
          const slice = buf.subarray(off, off + n);
          this.chunkHash?.update(slice);
          this.decodedLength += n;
          this.push(slice);
          this.remaining -= n;
          off += n;
          if (this.remaining === 0) {
            this.finishChunk();
            this.state = "data-crlf";
            this.crlfSeen = 0;
          }
          break;
        }
        case "data-crlf": {
          const expected = this.crlfSeen === 0 ? 0x0d : 0x0a;
          if (buf[off] !== expected) throw invalidRequest("aws-chunked: chunk data not followed by CRLF");
          off++;
          if (++this.crlfSeen === 2) this.state = "size";
          break;
        }
        case "done": {
          // Only stray line terminators may follow the final CRLF.
          const b = buf[off];
          if (b !== 0x0d && b !== 0x0a) throw invalidRequest("aws-chunked: data after the final chunk");
          off++;
          break;
        }
      }
    }
  }

  private takeLine(): string {
    let line = Buffer.concat(this.line).toString("latin1");
    this.line = [];
    this.lineLength = 0;
    if (line.endsWith("\r")) line = line.slice(0, -1);
    return line;
  }

  private handleSizeLine(line: string): void {
    const semi = line.indexOf(";");
    const sizeHex = (semi < 0 ? line : line.slice(0, semi)).trim();
    if (!/^[0-9a-fA-F]{1,12}$/.test(sizeHex)) throw invalidRequest("aws-chunked: invalid chunk size");
    const size = parseInt(sizeHex, 16);
    let signature: string | undefined;
    if (semi >= 0) {
      for (const ext of line.slice(semi + 1).split(";")) {
        const eq = ext.indexOf("=");
        if (eq > 0 && ext.slice(0, eq).trim() === "chunk-signature") signature = ext.slice(eq + 1).trim();
      }
    }
    if (this.options.signing) {
      if (signature === undefined) throw signatureDoesNotMatch({ Detail: "missing chunk-signature" });
      this.chunkSig = signature;
      this.chunkHash = createHash("sha256");
    }
    if (size === 0) {
      this.finishChunk();
      this.state = "trailer";
      return;
    }
    this.remaining = size;
    this.state = "data";
  }

  private finishChunk(): void {
    const signing = this.options.signing;
    if (!signing || !this.chunkHash) return;
    const expected = signing.chunk(this.previousSignature, this.chunkHash.digest("hex"));
    this.chunkHash = undefined;
    if (!signaturesEqual(expected, this.chunkSig))
      throw signatureDoesNotMatch({ Detail: "chunk signature mismatch" });
    this.previousSignature = expected;
  }

  private handleTrailerLine(line: string): void {
    if (line === "") {
      if (this.options.signedTrailer && !this.trailerVerified) {
        throw signatureDoesNotMatch({ Detail: "missing x-amz-trailer-signature" });
      }
      this.state = "done";
      return;
    }
    if (++this.trailerLines > MAX_TRAILER_LINES)
      throw invalidRequest("aws-chunked: too many trailing headers");
    const colon = line.indexOf(":");
    if (colon <= 0) throw invalidRequest("aws-chunked: malformed trailing header");
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === "x-amz-trailer-signature") {
      const signing = this.options.signing;
      if (!signing) return;
      // The signed trailer block is every trailing header as "name:value\n".
      let block = "";
      for (const [n, v] of this.trailers) block += `${n}:${v}\n`;
      const expected = signing.trailer(this.previousSignature, sha256Hex(block));
      if (!signaturesEqual(expected, value))
        throw signatureDoesNotMatch({ Detail: "trailer signature mismatch" });
      this.trailerVerified = true;
      return;
    }
    if (this.trailerVerified)
      throw invalidRequest("aws-chunked: trailing header after the trailer signature");
    this.trailers.set(name, value);
  }
}
