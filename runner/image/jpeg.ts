// What a JPEG's frame header (SOFn) declares, read from the file without decoding it, and the least
// number of bytes of coded data such a frame needs: a plausibility check of the declared size.
//
// In a Huffman-coded JPEG every 8x8 block of every component gets at least one Huffman code (its
// DC difference), and no Huffman code is shorter than one bit; a lossless JPEG codes every sample
// with at least one bit. So a frame of B blocks cannot fit in fewer than B/8 bytes. A file smaller
// than that has lost its data or lies about its size (a small JPEG whose SOF was rewritten to claim
// 10000x9999): libjpeg would "decode" it by filling the missing blocks with grey, after a warning.
// Arithmetic-coded frames can code a flat block in almost nothing, so they are not bounded here.
import { open } from "node:fs/promises";

export interface JpegFrame {
  /** The SOF marker (0xc0–0xcf, without 0xc4, 0xc8, 0xcc). */
  marker: number;
  width: number;
  height: number;
  components: Array<{ h: number; v: number }>;
}

// Markers without a length: TEM and RSTn (standalone), and SOI/EOI.
const STANDALONE = (m: number) => m === 0x01 || (m >= 0xd0 && m <= 0xd9);
const SOF = (m: number) => m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;
const SOS = 0xda;
/** Segments read before giving up (a header of thousands of segments is not a photo's). */
const MAX_SEGMENTS = 1000;

/** The frame header of a JPEG (a file, or its bytes), or undefined when it has none before its first scan. */
export async function readJpegFrame(input: string | Buffer): Promise<JpegFrame | undefined> {
  if (Buffer.isBuffer(input)) {
    return scanFrame(input.length, async (into, position) =>
      position >= input.length
        ? 0
        : input.copy(into, 0, position, Math.min(input.length, position + into.length)),
    );
  }
  const file = await open(input, "r");
  try {
    const { size } = await file.stat();
    return await scanFrame(
      size,
      async (into, position) => (await file.read(into, 0, into.length, position)).bytesRead,
    );
  } finally {
    await file.close();
  }
}

/** Reads up to `into.length` bytes at `position`; the count read. */
type ReadAt = (into: Buffer, position: number) => Promise<number>;

async function scanFrame(size: number, read: ReadAt): Promise<JpegFrame | undefined> {
  const head = Buffer.alloc(4);
  let at = 2; // after SOI
  for (let i = 0; i < MAX_SEGMENTS && at + 4 <= size; i++) {
    await read(head, at);
    if (head[0] !== 0xff) return undefined;
    const marker = head[1]!;
    if (marker === 0xff) {
      at += 1; // fill byte
      continue;
    }
    if (STANDALONE(marker)) {
      at += 2;
      continue;
    }
    if (marker === SOS) return undefined;
    const length = head.readUInt16BE(2);
    if (SOF(marker)) {
      const body = Buffer.alloc(Math.max(0, length - 2));
      const bytesRead = await read(body, at + 4);
      if (bytesRead < 6) return undefined;
      const height = body.readUInt16BE(1);
      const width = body.readUInt16BE(3);
      const count = body[5]!;
      const components: JpegFrame["components"] = [];
      for (let c = 0; c < count && 6 + c * 3 + 1 < bytesRead; c++) {
        const sampling = body[6 + c * 3 + 1]!;
        components.push({ h: sampling >> 4, v: sampling & 0x0f });
      }
      return { marker, width, height, components };
    }
    at += 2 + length;
  }
  return undefined;
}

/**
 * The fewest bytes the coded data of this frame can take, or undefined when the frame gives no
 * bound (arithmetic coding, hierarchical frames, a height of 0 given later in a DNL segment).
 */
export function minimumCodedBytes(frame: JpegFrame): number | undefined {
  const { marker, width, height, components } = frame;
  if (width <= 0 || height <= 0 || components.length === 0) return undefined;
  if (components.some((c) => c.h < 1 || c.v < 1)) return undefined;
  if (marker === 0xc3) return Math.floor((width * height * components.length) / 8); // lossless
  if (marker !== 0xc0 && marker !== 0xc1 && marker !== 0xc2) return undefined;
  const hMax = Math.max(...components.map((c) => c.h));
  const vMax = Math.max(...components.map((c) => c.v));
  let blocks = 0;
  for (const c of components) {
    const w = Math.ceil((width * c.h) / hMax);
    const h = Math.ceil((height * c.v) / vMax);
    blocks += Math.ceil(w / 8) * Math.ceil(h / 8);
  }
  return Math.floor(blocks / 8);
}
