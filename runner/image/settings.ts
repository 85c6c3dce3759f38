// Process-wide sharp (libvips) settings for the runner. Imported for its side effects by every
// module that opens an image, so they are in place before the first pipeline runs.
import { availableParallelism } from "node:os";
import sharp from "sharp";

// A runner process executes exactly one job and then exits, so libvips' operation
// cache can never be hit by a later request: it would only keep decoded tiles in memory and the
// source file open. Off.
sharp.cache(false);

// libvips sizes its worker pool from the host's core count. In a pod with a CPU limit that is the
// node's cores, far more than the quota, and the threads would only fight for it. Node's
// availableParallelism() (libuv ≥ 1.49, Node ≥ 22) honours the CPU affinity mask and the cgroup CPU
// quota. An operator's VIPS_CONCURRENCY, read by libvips itself, still wins.
if (!process.env.VIPS_CONCURRENCY) {
  sharp.concurrency(Math.max(1, availableParallelism()));
}

export { sharp };
