// The Kubernetes API clients the executor works through, made once from a kubeconfig (in-cluster, or
// the one KUBECONFIG names) by whoever starts the executor, and handed to it: the executor builds no
// client of its own.
import {
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  makeInformer,
  type Informer,
  type KubernetesObject,
  type ListPromise,
  type ObjectCache,
} from "@kubernetes/client-node";

/** An informer with its cache; `latestResourceVersion` says whether its first list has arrived. */
export type CachedInformer<T extends KubernetesObject> = Informer<T> &
  ObjectCache<T> & { latestResourceVersion?: () => string };

export interface KubernetesClients {
  batch: BatchV1Api;
  core: CoreV1Api;
  coordination: CoordinationV1Api;
  /** An informer of the objects at `path` with `labelSelector`, listed by `list`. */
  informer<T extends KubernetesObject>(
    path: string,
    list: ListPromise<T>,
    labelSelector: string,
  ): CachedInformer<T>;
}

export function loadKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}

export function kubernetesClients(kc: KubeConfig = loadKubeConfig()): KubernetesClients {
  return {
    batch: kc.makeApiClient(BatchV1Api),
    core: kc.makeApiClient(CoreV1Api),
    coordination: kc.makeApiClient(CoordinationV1Api),
    informer: (path, list, labelSelector) => makeInformer(kc, path, list, labelSelector),
  };
}
