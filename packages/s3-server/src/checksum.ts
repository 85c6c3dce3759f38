// The checksum algorithms of S3's "flexible checksums" (x-amz-checksum-<algorithm>), computed
// incrementally so request bodies of any size can be checked while they stream to disk.
// CRC32 uses zlib.crc32 where the running Node has it (20.15+/22.2+) and a table otherwise; CRC32C
// and CRC64NVME have no built-in implementation, so they are table driven here (byte at a time,
// several hundred MB/s, which is plenty for a local object store).

import { createHash } from "node:crypto";
import zlib from "node:zlib";

export const CHECKSUM_ALGORITHMS = ["crc32", "crc32c", "crc64nvme", "sha1", "sha256"] as const;
export type ChecksumAlgorithm = (typeof CHECKSUM_ALGORITHMS)[number];

/** Size in bytes of each algorithm's digest, used to validate client-provided base64 values. */
const DIGEST_BYTES: Record<ChecksumAlgorithm, number> = {
  crc32: 4,
  crc32c: 4,
  crc64nvme: 8,
  sha1: 20,
  sha256: 32,
};

export function parseChecksumAlgorithm(value: string): ChecksumAlgorithm | undefined {
  const lower = value.trim().toLowerCase();
  return (CHECKSUM_ALGORITHMS as readonly string[]).includes(lower)
    ? (lower as ChecksumAlgorithm)
    : undefined;
}

/** "crc32" -> "CRC32" as used in XML element names (ChecksumCRC32) and error messages. */
export function algorithmLabel(algorithm: ChecksumAlgorithm): string {
  return algorithm.toUpperCase();
}

/** True when `value` is base64 of exactly as many bytes as the algorithm's digest. */
export function isValidChecksumValue(algorithm: ChecksumAlgorithm, value: string): boolean {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value) || value.length % 4 !== 0) return false;
  return Buffer.from(value, "base64").length === DIGEST_BYTES[algorithm];
}

export interface Checksummer {
  update(chunk: Uint8Array): void;
  digest(): Buffer;
}

function crcTable32(reversedPoly: number): Uint32Array {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ reversedPoly : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
}

let crc32Table: Uint32Array | undefined;
let crc32cTable: Uint32Array | undefined;

class TableCrc32 implements Checksummer {
  private crc = 0xffffffff;
  constructor(private readonly table: Uint32Array) {}
  update(chunk: Uint8Array): void {
    const table = this.table;
    let c = this.crc;
    for (let i = 0; i < chunk.length; i++) c = table[(c ^ chunk[i]!) & 0xff]! ^ (c >>> 8);
    this.crc = c;
  }
  digest(): Buffer {
    const out = Buffer.alloc(4);
    out.writeUInt32BE((this.crc ^ 0xffffffff) >>> 0);
    return out;
  }
}

type NativeCrc32 = (data: Uint8Array, value?: number) => number;
const nativeCrc32: NativeCrc32 | undefined =
  typeof (zlib as { crc32?: unknown }).crc32 === "function" ? zlib.crc32 : undefined;

class NativeCrc32Checksummer implements Checksummer {
  private crc = 0;
  constructor(private readonly fn: NativeCrc32) {}
  update(chunk: Uint8Array): void {
    this.crc = this.fn(chunk, this.crc);
  }
  digest(): Buffer {
    const out = Buffer.alloc(4);
    out.writeUInt32BE(this.crc >>> 0);
    return out;
  }
}

// CRC-64/NVME: reflected polynomial 0x9a6c9329ac4bc9b5, init and xorout all ones. JavaScript has no
// fast 64-bit integers, so the register is kept as two 32-bit halves.
let crc64Tables: { lo: Uint32Array; hi: Uint32Array } | undefined;

function crc64NvmeTables(): { lo: Uint32Array; hi: Uint32Array } {
  if (crc64Tables) return crc64Tables;
  const polyHi = 0x9a6c9329;
  const polyLo = 0xac4bc9b5;
  const lo = new Uint32Array(256);
  const hi = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let l = n;
    let h = 0;
    for (let k = 0; k < 8; k++) {
      const carry = l & 1;
      l = ((l >>> 1) | ((h & 1) << 31)) >>> 0;
      h = h >>> 1;
      if (carry) {
        l = (l ^ polyLo) >>> 0;
        h = (h ^ polyHi) >>> 0;
      }
    }
    lo[n] = l;
    hi[n] = h;
  }
  crc64Tables = { lo, hi };
  return crc64Tables;
}

class Crc64Nvme implements Checksummer {
  private lo = 0xffffffff;
  private hi = 0xffffffff;
  private readonly tables = crc64NvmeTables();
  update(chunk: Uint8Array): void {
    const tLo = this.tables.lo;
    const tHi = this.tables.hi;
    let lo = this.lo;
    let hi = this.hi;
    for (let i = 0; i < chunk.length; i++) {
      const idx = (lo ^ chunk[i]!) & 0xff;
      lo = (((lo >>> 8) | (hi << 24)) ^ tLo[idx]!) >>> 0;
      hi = ((hi >>> 8) ^ tHi[idx]!) >>> 0;
    }
    this.lo = lo;
    this.hi = hi;
  }
  digest(): Buffer {
    const out = Buffer.alloc(8);
    out.writeUInt32BE((this.hi ^ 0xffffffff) >>> 0, 0);
    out.writeUInt32BE((this.lo ^ 0xffffffff) >>> 0, 4);
    return out;
  }
}

class HashChecksummer implements Checksummer {
  private readonly hash;
  constructor(algorithm: "sha1" | "sha256") {
    this.hash = createHash(algorithm);
  }
  update(chunk: Uint8Array): void {
    this.hash.update(chunk);
  }
  digest(): Buffer {
    return this.hash.digest();
  }
}

/**
 * `portable` forces the table implementation of CRC32 even where zlib.crc32 exists (tests use it to
 * check the fallback that Node < 20.15 runs).
 */
export function createChecksummer(
  algorithm: ChecksumAlgorithm,
  options: { portable?: boolean } = {},
): Checksummer {
  switch (algorithm) {
    case "crc32":
      if (nativeCrc32 && !options.portable) return new NativeCrc32Checksummer(nativeCrc32);
      crc32Table ??= crcTable32(0xedb88320);
      return new TableCrc32(crc32Table);
    case "crc32c":
      crc32cTable ??= crcTable32(0x82f63b78);
      return new TableCrc32(crc32cTable);
    case "crc64nvme":
      return new Crc64Nvme();
    case "sha1":
    case "sha256":
      return new HashChecksummer(algorithm);
  }
}

/** Base64 checksum of in-memory data (used for composite multipart checksums). */
export function checksumBase64(algorithm: ChecksumAlgorithm, ...chunks: Uint8Array[]): string {
  const c = createChecksummer(algorithm);
  for (const chunk of chunks) c.update(chunk);
  return c.digest().toString("base64");
}
