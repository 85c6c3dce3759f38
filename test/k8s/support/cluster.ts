// The test cluster: the control plane (with kube-scheduler) and one real node running the project's
// image, built from the Dockerfile by scripts/build-image.sh (at once when nothing changed).
// MEDIA_K8S_IMAGE names an image to use instead (it must exist in the local Docker Engine).
import { execFile } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startControlPlane, type ControlPlane } from "./control-plane.js";
import { startNode, type RealNode } from "./node.js";

const execFileP = promisify(execFile);
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

export interface TestCluster {
  cp: ControlPlane;
  node: RealNode;
  /** The project's image, as pods name it (e.g. media-service:3f2a…). */
  image: string;
  stop(): Promise<void>;
}

let built: Promise<string> | undefined;

/** The project's image reference, built from the working tree's Dockerfile once per test process. */
export function projectImage(): Promise<string> {
  if (process.env.MEDIA_K8S_IMAGE) return Promise.resolve(process.env.MEDIA_K8S_IMAGE);
  built ??= execFileP("bash", [join(ROOT, "scripts/build-image.sh")], {
    cwd: ROOT,
    maxBuffer: 64 << 20,
  }).then(
    ({ stdout }) => {
      const ref = stdout.trim().split("\n").pop() ?? "";
      if (!ref) throw new Error("scripts/build-image.sh printed no image reference");
      return ref;
    },
    (err: { stderr?: string; message: string }) => {
      throw new Error(
        `scripts/build-image.sh failed:\n${(err.stderr ?? err.message).split("\n").slice(-30).join("\n")}`,
      );
    },
  );
  return built;
}

export async function startTestCluster(options: { log?: (m: string) => void } = {}): Promise<TestCluster> {
  const image = await projectImage();
  const cp = await startControlPlane({ scheduler: true, log: options.log });
  try {
    const node = await startNode({ cp, images: [image], log: options.log });
    return {
      cp,
      node,
      image,
      async stop() {
        await node.stop();
        await cp.stop();
      },
    };
  } catch (err) {
    await cp.stop();
    throw err;
  }
}
