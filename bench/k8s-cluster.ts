// The Kubernetes benchmark's view of the test cluster (bench/k8s.ts): watches of its collections, the
// project's image on the node, and namespaces removed between parts.
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  CoreV1Api,
  Watch,
  type KubeConfig,
  type KubernetesObject,
  type V1Pod,
} from "@kubernetes/client-node";
import type { TestCluster } from "../test/k8s/support/cluster.js";
import { kubeConfigFrom } from "../test/k8s/support/cluster-stack.js";
import { log, sleep, waitUntil } from "./k8s-common.js";

export type WatchEvent = "ADDED" | "MODIFIED" | "DELETED";

/**
 * Lists, then watches a collection from that list's resourceVersion; the watch is resumed from the
 * last resourceVersion seen (bookmarks on) when it ends, and the list is redone when the server answers
 * 410 Gone. Objects found by a (re)list are reported as ADDED.
 */
export async function watchCollection<T extends KubernetesObject>(
  kc: KubeConfig,
  path: string,
  list: () => Promise<{ items: T[]; metadata?: { resourceVersion?: string } }>,
  handler: (event: WatchEvent, obj: T) => void,
): Promise<{ stop(): Promise<void> }> {
  const watch = new Watch(kc);
  let resourceVersion = "";
  let stopped = false;
  let abort: AbortController | undefined;
  const relist = async () => {
    const listed = await list();
    for (const obj of listed.items) handler("ADDED", obj);
    resourceVersion = listed.metadata?.resourceVersion ?? "";
  };
  await relist();
  const loop = (async () => {
    while (!stopped) {
      let gone = false;
      const ended = await new Promise<unknown>((resolve) => {
        watch
          .watch(
            path,
            { resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 60 },
            (phase: string, obj: T & { code?: number }) => {
              if (phase === "ERROR") {
                gone = obj.code === 410;
                return;
              }
              if (obj.metadata?.resourceVersion) resourceVersion = obj.metadata.resourceVersion;
              if (phase === "ADDED" || phase === "MODIFIED" || phase === "DELETED") handler(phase, obj);
            },
            resolve,
          )
          .then((a) => {
            abort = a;
            if (stopped) a.abort();
          })
          .catch(resolve);
      });
      if (stopped) break;
      if (gone) await relist().catch(() => sleep(200));
      else if (ended) await sleep(200);
    }
  })();
  return {
    async stop() {
      stopped = true;
      abort?.abort();
      await loop;
    },
  };
}

/** Watches the pods of `namespace` (watchCollection), calling `onPod` for each event of a named pod. */
export function watchPods(
  kc: KubeConfig,
  namespace: string,
  onPod: (event: WatchEvent, name: string, pod: V1Pod) => void,
): Promise<{ stop(): Promise<void> }> {
  const core = kc.makeApiClient(CoreV1Api);
  return watchCollection<V1Pod>(
    kc,
    `/api/v1/namespaces/${namespace}/pods`,
    () => core.listNamespacedPod({ namespace }),
    (event, pod) => {
      const name = pod.metadata?.name;
      if (name) onPod(event, name, pod);
    },
  );
}

/** A container of the pod has started: it runs, or it ran. */
export const containerStarted = (pod: V1Pod): boolean =>
  pod.status?.containerStatuses?.some((c) => c.state?.running || c.state?.terminated?.startedAt) ?? false;

/** How containerd names a Docker reference: media-service:dev → docker.io/library/media-service:dev. */
function containerdRef(ref: string): string {
  const first = ref.split("/")[0]!;
  if (!ref.includes("/")) return `docker.io/library/${ref}`;
  return /[.:]/.test(first) || first === "localhost" ? ref : `docker.io/${ref}`;
}

/**
 * Makes sure the node's containerd has the image under the name pods use. The node loads images from
 * `docker save` archives cached by image id, and an archive keeps the tag it was first saved under: an
 * image saved earlier as media-service:<hash> and named media-service:dev now is loaded under the
 * former, and every pod fails with ErrImageNeverPull. Then the image is saved under its name and
 * imported again (its layers are already there).
 */
export async function ensureImage(cluster: TestCluster): Promise<void> {
  const want = containerdRef(cluster.image);
  const has = async () => (await cluster.node.ctr(["images", "ls", "-q"])).split("\n").includes(want);
  if (await has()) return;
  log(`the node has no image named ${want}: importing it again under that name`);
  const dir = await mkdtemp(join(tmpdir(), "media-service-bench-image-"));
  try {
    const archive = join(dir, "image.tar");
    await promisify(execFile)("docker", ["save", "-o", archive, cluster.image], { maxBuffer: 16 << 20 });
    await cluster.node.ctr(["images", "import", "--snapshotter", "overlayfs", archive]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  if (!(await has())) throw new Error(`the node's containerd still has no image ${want}`);
}

/** Deletes a namespace (if still there) and waits until it is gone, so the next part starts clean. */
export async function removeNamespace(cluster: TestCluster, namespace: string): Promise<void> {
  const core = kubeConfigFrom(cluster.cp.kubeconfigPath).makeApiClient(CoreV1Api);
  await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  const gone = await waitUntil(
    async () => ((await core.readNamespace({ name: namespace }).catch(() => undefined)) ? undefined : true),
    180_000,
    250,
  );
  if (!gone) log(`namespace ${namespace} still terminating after 180 s; going on`);
}
