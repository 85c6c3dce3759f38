import { StoreBase } from "./base.js";

/** The previews' cache (api/previews.ts): a cache, not a record, bounded by lua/preview.lua. */
export abstract class Previews extends StoreBase {
  /** A cached preview of a job's source or output (lua/preview.lua), or null when there is none. */
  async cachedPreview(id: string, of: "source" | "output"): Promise<Buffer | null> {
    return this.redis.getBuffer(this.keys.preview(id, of));
  }

  /**
   * Caches a preview for `ttlMs`, keeping at most `maxEntries` previews (the oldest go first); how
   * many were deleted to make room.
   */
  async cachePreview(
    id: string,
    of: "source" | "output",
    bytes: Buffer,
    ttlMs: number,
    maxEntries: number,
  ): Promise<number> {
    return Number(await this.script("preview", id, of, bytes, ttlMs, maxEntries));
  }
}
