// The test cluster's addresses, in one place: the Service range the API server hands out, the cluster
// DNS address in it, the pod range the node's CNI bridge assigns from, and the host address that pods
// and the API server share (the node's InternalIP).
import { networkInterfaces } from "node:os";

export const SERVICE_CIDR = "10.0.0.0/24";
/** The `kubernetes` Service: the first address of the Service range. */
export const KUBERNETES_SERVICE_IP = "10.0.0.1";
/** The `kube-dns` Service (CoreDNS), the kubelet's clusterDNS. */
export const CLUSTER_DNS_IP = "10.0.0.10";
export const CLUSTER_DOMAIN = "cluster.local";
/** The node's pods (host-local IPAM on the CNI bridge); the bridge itself is the first address. */
export const POD_CIDR = "10.244.0.0/24";
export const POD_GATEWAY = "10.244.0.1";
/** kube-proxy's clusterCIDR: traffic from outside it to a Service is masqueraded. */
export const CLUSTER_CIDR = "10.244.0.0/16";

const VIRTUAL = /^(lo|docker\d*|br-|veth|cni|msn|virbr|ifb|kube|flannel|cali|tun|tap)/;

/**
 * The host's own IPv4 address on its first real interface: where the API server advertises itself
 * (the kubernetes Service's endpoint), the node's InternalIP, and where services on the host are
 * reachable from pods. MEDIA_K8S_NODE_IP overrides it.
 */
export function hostAddress(): string {
  const fromEnv = process.env.MEDIA_K8S_NODE_IP;
  if (fromEnv) return fromEnv;
  for (const [name, addresses] of Object.entries(networkInterfaces())) {
    if (VIRTUAL.test(name)) continue;
    const v4 = addresses?.find((a) => a.family === "IPv4" && !a.internal);
    if (v4) return v4.address;
  }
  throw new Error(
    "no non-loopback IPv4 address on this machine for the test node (set MEDIA_K8S_NODE_IP to one)",
  );
}
