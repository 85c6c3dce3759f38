// The ffmpeg and ffprobe the image ships (scripts/build-ffmpeg.sh: Debian's source configured with
// only what the runner uses, linking 27 libraries where Debian's own links 215), taken out of the
// image that scripts/build-image.sh builds, for benchmarks that measure the runner as it runs in a
// container. Copied once per image into the benchmark cache: the two programs and the image's own
// libav*/libsw* libraries beside them (under names Debian's ffmpeg shares, which is why they are not
// put on the machine's library path), each program started through a two-line wrapper that gives it
// that directory; the codec libraries (libx264, libdav1d, …) are the machine's, the same Debian 12
// packages the image installs.
import { execFile } from "node:child_process";
import { chmod, mkdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { CACHE_DIR } from "./fixtures.js";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("..", import.meta.url));

export interface ImageFfmpeg {
  /** The image the programs came from (media-service:<content tag>). */
  image: string;
  ffmpeg: string;
  ffprobe: string;
}

/** Builds the image if the tree changed (scripts/build-image.sh) and gives its ffmpeg and ffprobe. */
export async function imageFfmpeg(): Promise<ImageFfmpeg> {
  const { stdout } = await run("bash", [join(ROOT, "scripts", "build-image.sh")], {
    cwd: ROOT,
    maxBuffer: 64 * 1024 * 1024,
  });
  const image = stdout.trim().split("\n").pop()!;
  const dir = join(CACHE_DIR, `image-ffmpeg-${image.replace(/[^a-zA-Z0-9.-]/g, "_")}`);
  const programs = { ffmpeg: join(dir, "ffmpeg"), ffprobe: join(dir, "ffprobe") };
  if (await exists(programs.ffprobe)) return { image, ...programs };

  const tmp = `${dir}.${process.pid}.tmp`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(join(tmp, "lib"), { recursive: true });
  try {
    // As root inside (the image runs as an unprivileged user), copying into a directory of the host.
    await run("docker", [
      ...["run", "--rm", "--user", "0", "--entrypoint", "sh", "-v", `${tmp}:/out`, image, "-c"],
      "cp -a /usr/local/bin/ffmpeg /usr/local/bin/ffprobe /out/lib/ && " +
        "cp -a /usr/local/lib/libav*.so* /usr/local/lib/libsw*.so* /out/lib/ && " +
        `chown -R ${process.getuid?.() ?? 0} /out`,
    ]);
    for (const name of ["ffmpeg", "ffprobe"] as const) {
      const wrapper = join(tmp, name);
      await writeFile(
        wrapper,
        `#!/bin/sh\nLD_LIBRARY_PATH="$(dirname "$0")/lib" exec "$(dirname "$0")/lib/${name}" "$@"\n`,
      );
      await chmod(wrapper, 0o755);
    }
    // Every library it needs resolves on this machine, or the wrapper says which is missing.
    await run(programs.ffprobe.replace(dir, tmp), ["-hide_banner", "-version"]);
    await rm(dir, { recursive: true, force: true });
    await rename(tmp, dir);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw new Error(`the image's ffmpeg (${image}) does not run here: ${(err as Error).message}`);
  }
  return { image, ...programs };
}

async function exists(path: string): Promise<boolean> {
  try {
    return (await stat(path)).size > 0;
  } catch {
    return false;
  }
}
