// Sorted in-memory index of one bucket's keys, the basis of ListObjects(V2). Objects live on disk
// under hashed names (see layout.ts), so listing in key order needs this index; it is built from
// the metadata files the first time a bucket is listed and then kept current by every write.
// Keys are ordered by their UTF-8 bytes, which is S3's order (JavaScript's UTF-16 string order
// differs for characters outside the BMP).

export interface IndexEntry {
  key: string;
  size: number;
  etag: string;
  lastModified: string;
}

interface Slot {
  bytes: Buffer;
  entry: IndexEntry;
}

export interface ListQuery {
  prefix: string;
  delimiter: string;
  maxKeys: number;
  /** Return only keys strictly greater than this key. */
  after?: string;
  /** Skip every key that starts with this common prefix (continuing after a rolled-up prefix). */
  afterPrefix?: string;
}

export interface ListPage {
  contents: IndexEntry[];
  commonPrefixes: string[];
  isTruncated: boolean;
  /** The last key or common prefix returned, for building the next marker / continuation token. */
  last?: { kind: "key" | "prefix"; value: string };
}

const utf8 = (s: string) => Buffer.from(s, "utf8");

function startsWith(bytes: Buffer, prefix: Buffer): boolean {
  return bytes.length >= prefix.length && bytes.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
}

export class KeyIndex {
  private slots: Slot[] = [];

  static fromEntries(entries: IndexEntry[]): KeyIndex {
    const index = new KeyIndex();
    index.slots = entries
      .map((entry) => ({ bytes: utf8(entry.key), entry }))
      .sort((a, b) => a.bytes.compare(b.bytes));
    return index;
  }

  get size(): number {
    return this.slots.length;
  }

  /** First position whose key is >= bytes. */
  private lowerBound(bytes: Buffer): number {
    let lo = 0;
    let hi = this.slots.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.slots[mid]!.bytes.compare(bytes) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** First position whose key is > bytes. */
  private upperBound(bytes: Buffer): number {
    let lo = 0;
    let hi = this.slots.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.slots[mid]!.bytes.compare(bytes) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** First position after every key that starts with `prefix` (keys sharing a prefix are contiguous). */
  private afterPrefix(prefix: Buffer): number {
    let lo = this.lowerBound(prefix);
    let hi = this.slots.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (startsWith(this.slots[mid]!.bytes, prefix)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  upsert(entry: IndexEntry): void {
    const bytes = utf8(entry.key);
    const i = this.lowerBound(bytes);
    const slot = this.slots[i];
    if (slot && slot.bytes.equals(bytes)) slot.entry = entry;
    else this.slots.splice(i, 0, { bytes, entry });
  }

  remove(key: string): void {
    const bytes = utf8(key);
    const i = this.lowerBound(bytes);
    if (this.slots[i]?.bytes.equals(bytes)) this.slots.splice(i, 1);
  }

  list(query: ListQuery): ListPage {
    const prefix = utf8(query.prefix);
    let i = this.lowerBound(prefix);
    if (query.after !== undefined) i = Math.max(i, this.upperBound(utf8(query.after)));
    if (query.afterPrefix !== undefined) i = Math.max(i, this.afterPrefix(utf8(query.afterPrefix)));

    const page: ListPage = { contents: [], commonPrefixes: [], isTruncated: false };
    if (query.maxKeys <= 0) return page;
    let count = 0;
    while (i < this.slots.length) {
      const slot = this.slots[i]!;
      if (!startsWith(slot.bytes, prefix)) break;
      if (count === query.maxKeys) {
        page.isTruncated = true;
        break;
      }
      const key = slot.entry.key;
      if (query.delimiter !== "") {
        const at = key.indexOf(query.delimiter, query.prefix.length);
        if (at >= 0) {
          const common = key.slice(0, at + query.delimiter.length);
          page.commonPrefixes.push(common);
          page.last = { kind: "prefix", value: common };
          count++;
          i = this.afterPrefix(utf8(common));
          continue;
        }
      }
      page.contents.push(slot.entry);
      page.last = { kind: "key", value: key };
      count++;
      i++;
    }
    return page;
  }
}
