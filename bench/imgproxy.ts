// imgproxy as a point of comparison for the runner benchmarks, when IMGPROXY_BIN names its binary
// (docs/development.md, "imgproxy for the benchmarks", says how to build one).
// Without it every imgproxy figure is skipped.
//
// It serves the benchmark's source from local disk (IMGPROXY_LOCAL_FILESYSTEM_ROOT, the `local://`
// scheme), so its figures have no object store in them: a request is file → libvips → HTTP answer.
// Unsigned URLs (no IMGPROXY_KEY), listening on 127.0.0.1 only, IMGPROXY_WORKERS as the benchmark
// asks (its own default is 2 × the cores).
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { basename, dirname } from "node:path";

export const IMGPROXY_BIN_ENV = "IMGPROXY_BIN";

export function imgproxyBinary(): string | undefined {
  return process.env[IMGPROXY_BIN_ENV] || undefined;
}

/** What imgproxy is asked for: the same box as image_resize's bench (cover = imgproxy's `fill`). */
export interface ImgproxyResize {
  width: number;
  height: number;
  /** `fill` crops to the box as image_resize's `cover` does; `fit` stays inside it (height 0: any). */
  type: "fill" | "fit";
  format: "jpg" | "avif" | "png";
  quality: number;
}

/** The path of the imgproxy URL resizing `file` (under the root it was started with). */
export function imgproxyPath(file: string, r: ImgproxyResize): string {
  return `/insecure/rs:${r.type}:${r.width}:${r.height}/q:${r.quality}/plain/local:///${basename(file)}@${r.format}`;
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, "close");
  return port;
}

export interface Imgproxy {
  url: string;
  /** The process started (the binary, or a wrapper around it). */
  pid: number | undefined;
  /** GETs a path; the answer's bytes (throws on any status but 200). */
  get(path: string): Promise<Buffer>;
  /** SIGTERM to the process (or to `pid`, imgproxy itself under a wrapper), SIGKILL after 5 s. */
  stop(pid?: number): Promise<void>;
}

/** Starts imgproxy serving the files of `file`'s directory; resolves once it answers /health. */
export async function startImgproxy(
  binary: string,
  file: string,
  options: { workers: number; env?: NodeJS.ProcessEnv; binaryArgs?: string[] },
): Promise<Imgproxy> {
  const port = await freePort();
  const child: ChildProcess = spawn(binary, options.binaryArgs ?? [], {
    env: {
      PATH: process.env.PATH,
      IMGPROXY_BIND: `127.0.0.1:${port}`,
      IMGPROXY_LOCAL_FILESYSTEM_ROOT: dirname(file),
      IMGPROXY_WORKERS: String(options.workers),
      IMGPROXY_LOG_LEVEL: "error",
      ...options.env,
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const exited = once(child, "exit");
  const url = `http://127.0.0.1:${port}`;
  const get = async (path: string) => {
    const res = await fetch(url + path);
    const body = Buffer.from(await res.arrayBuffer());
    if (res.status !== 200)
      throw new Error(`imgproxy answered ${res.status} for ${path}: ${body.toString()}`);
    return body;
  };
  for (let tries = 0; ; tries++) {
    if (child.exitCode !== null) throw new Error(`imgproxy exited at start (${child.exitCode})`);
    const ok = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (tries > 200) {
      child.kill("SIGKILL");
      throw new Error("imgproxy did not answer /health within 10 s");
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    pid: child.pid,
    get,
    stop: async (pid?: number) => {
      if (child.exitCode === null) {
        if (pid) process.kill(pid, "SIGTERM");
        else child.kill("SIGTERM");
      }
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** `jobs` requests, `concurrency` at a time; seconds taken and the last answer's size. */
export async function imgproxyRound(
  proxy: Imgproxy,
  path: string,
  jobs: number,
  concurrency: number,
): Promise<{ jobs: number; seconds: number; outputBytes: number }> {
  let next = 0;
  let outputBytes = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < jobs) {
      next++;
      outputBytes = (await proxy.get(path)).length;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { jobs, seconds: (performance.now() - started) / 1000, outputBytes };
}
