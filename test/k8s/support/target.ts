// The cluster a scenario runs on. By default the test cluster (control plane and one real node, the
// project's image loaded into it); with MEDIA_K8S_KUBECONFIG, an existing cluster instead (kind, as
// test/e2e/kind.sh runs it), whose nodes already have the image MEDIA_K8S_IMAGE and whose NodePorts
// the test process reaches at MEDIA_K8S_NODE_ADDRESS. The scenarios only use what every cluster has:
// the API, NodePort Services, helm.
import { startTestCluster, type TestCluster } from "./cluster.js";

export interface Target {
  kubeconfigPath: string;
  /** The project's image as pods name it (repository:tag). */
  image: string;
  /** Where NodePort Services of the cluster answer the test process. */
  nodeAddress: string;
  /** The test cluster, when the target is ours (containerd of the node, its relays). */
  cluster?: TestCluster;
  stop(): Promise<void>;
}

export async function startTarget(): Promise<Target> {
  const kubeconfigPath = process.env.MEDIA_K8S_KUBECONFIG;
  if (kubeconfigPath) {
    const image = process.env.MEDIA_K8S_IMAGE;
    const nodeAddress = process.env.MEDIA_K8S_NODE_ADDRESS;
    if (!image || !nodeAddress) {
      throw new Error("MEDIA_K8S_KUBECONFIG needs MEDIA_K8S_IMAGE and MEDIA_K8S_NODE_ADDRESS too");
    }
    return { kubeconfigPath, image, nodeAddress, stop: async () => {} };
  }
  const cluster = await startTestCluster();
  return {
    kubeconfigPath: cluster.cp.kubeconfigPath,
    image: cluster.image,
    nodeAddress: cluster.node.ip,
    cluster,
    stop: () => cluster.stop(),
  };
}

/** Splits an image reference into the chart's repository and tag. */
export function imageValues(image: string): { repository: string; tag: string } {
  const slash = image.lastIndexOf("/");
  const colon = image.lastIndexOf(":");
  if (colon <= slash) return { repository: image, tag: "latest" };
  return { repository: image.slice(0, colon), tag: image.slice(colon + 1) };
}
